"""Student t's quantile and two-sided p as the estimates use them, without scipy.special:
its import costs ~0.3 CPU-s (its array-API layer brings numpy.f2py and numpy.testing),
which a run's parent paid for four constants, for a drift's p (three of four tiny runs on
lavapipe had a drift) and for the interval of a trimmed mean (samples in two modes)."""

from __future__ import annotations

import math
import statistics

#: scipy.special.stdtrit(df, 0.975) bit for bit (tests/unit/test_student_t.py), at the
#: degrees of freedom of the t interval over two to five processes (stats.ORDER_MIN).
QUANTILES_975 = {1: 12.706204736174694, 2: 4.302652729749462, 3: 3.1824463052837078,
                 4: 2.7764451051977934}


def quantile(df: int, p: float) -> float:
    """Student t's `p` quantile (0.5 < p < 1) at `df` degrees of freedom, as
    scipy.special.stdtrit gives it: kept bit for bit, else `_two_tails` solved for
    2 (1 - p) by Newton's method from the normal's quantile (below the root of that
    decreasing convex function, as the t's tails are heavier, so every step lands below it
    too), within 1e-12 of scipy's up to 1,000 degrees of freedom and 1e-8 to a million; nan
    below one degree of freedom."""
    if p == 0.975 and df in QUANTILES_975:
        return QUANTILES_975[df]
    if not df >= 1:
        return math.nan
    tails = 2.0 * (1.0 - p)
    density = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    t = statistics.NormalDist().inv_cdf(p)
    for _ in range(200):
        gap = _two_tails(t, df) - tails
        step = gap / (2.0 * density * (1.0 + t * t / df) ** (-(df + 1) / 2))
        t += step
        if step <= 1e-15 * t:
            return t
    raise ArithmeticError(f"Student t's quantile did not converge at df={df}, p={p}")


#: Student t's two-sided critical |t| at p 0.001 (drift's limit) at some degrees of freedom,
#: scipy's rounded down (tests/unit/test_student_t.py): at those degrees of freedom or fewer,
#: a smaller |t| has a larger p, since the t's tails are heavier the fewer they are.
CRITICAL_0001 = {6: 5.958, 7: 5.407, 8: 5.041, 9: 4.78, 10: 4.586, 12: 4.317, 14: 4.14,
                 16: 4.014, 18: 3.921, 20: 3.849, 25: 3.725, 30: 3.645, 40: 3.55, 50: 3.496,
                 60: 3.46, 80: 3.416, 100: 3.39, 150: 3.356, 200: 3.339, 300: 3.323, 500: 3.31,
                 1000: 3.3}


def two_sided_p(t: float, df: int, at_most: float) -> float | None:
    """Student t's two-sided p of `t` at `df` degrees of freedom (2 stdtr(df, -|t|), as
    scipy gives it: `_two_tails`) where it is `at_most` or less, else None. Most are ruled
    out by a bound: at p 0.001 by the critical |t| kept for the fewest degrees of freedom at
    or over `df`, else by the standard normal's p, which the t's exceeds at every t (its
    density is below the normal's at 0 and crosses it once a side)."""
    if at_most == 0.001 and abs(t) < next((c for d, c in CRITICAL_0001.items() if d >= df), 0.0):
        return None
    if math.erfc(abs(t) / math.sqrt(2.0)) > at_most:
        return None
    p = _two_tails(abs(t), df)
    return p if p <= at_most else None


def _two_tails(t: float, df: int) -> float:
    """P(|T| > t) for t > 0: the regularized incomplete beta I_x(df/2, 1/2) at
    x = df / (df + t^2), by its continued fraction (Numerical Recipes' betai), which
    converges fast where x < (a + 1) / (a + b + 2), as wherever p is at most 0.05: within
    1e-12 of scipy's stdtr relative to p up to 1,000 degrees of freedom, 1e-9 to a million
    (math.lgamma's rounding at large a; tests/unit/test_student_t.py)."""
    if not math.isfinite(t * t):
        return 0.0
    a, b = df / 2.0, 0.5
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 - a * math.log1p(t * t / df) + b * math.log(t * t / (df + t * t)))
    x = df / (df + t * t)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The incomplete beta's continued fraction by the modified Lentz method."""
    tiny = 1e-300

    def kept(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1.0 / kept(1.0 - (a + b) * x / (a + 1.0))
    fraction = d
    for m in range(1, 10_000):
        for step in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                     -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 / kept(1.0 + step * d)
            c = kept(1.0 + step / c)
            fraction *= d * c
        if abs(d * c - 1.0) < 1e-16:
            return fraction
    raise ArithmeticError(f"the incomplete beta did not converge at a={a}, b={b}, x={x}")
