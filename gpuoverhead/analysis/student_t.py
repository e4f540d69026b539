"""Student t's quantile and two-sided p as the estimates use them, importing scipy.special
only where a figure needs it: its import costs ~0.3 CPU-s (its array-API layer brings
numpy.f2py and numpy.testing), which every run's parent paid for four constants and for
p-values that a bound settles."""

from __future__ import annotations

import math

#: scipy.special.stdtrit(df, 0.975) bit for bit (tests/unit/test_student_t.py), at the
#: degrees of freedom of the t interval over two to five processes (stats.ORDER_MIN).
QUANTILES_975 = {1: 12.706204736174694, 2: 4.302652729749462, 3: 3.1824463052837078,
                 4: 2.7764451051977934}


def quantile(df: int, p: float) -> float:
    """Student t's `p` quantile at `df` degrees of freedom: scipy.special.stdtrit's."""
    if p == 0.975 and df in QUANTILES_975:
        return QUANTILES_975[df]
    from scipy.special import stdtrit

    return stdtrit(df, p)


#: Student t's two-sided critical |t| at p 0.001 (drift's limit) at some degrees of freedom,
#: scipy's rounded down (tests/unit/test_student_t.py): at those degrees of freedom or fewer,
#: a smaller |t| has a larger p, since the t's tails are heavier the fewer they are.
CRITICAL_0001 = {6: 5.958, 7: 5.407, 8: 5.041, 9: 4.78, 10: 4.586, 12: 4.317, 14: 4.14,
                 16: 4.014, 18: 3.921, 20: 3.849, 25: 3.725, 30: 3.645, 40: 3.55, 50: 3.496,
                 60: 3.46, 80: 3.416, 100: 3.39, 150: 3.356, 200: 3.339, 300: 3.323, 500: 3.31,
                 1000: 3.3}


def two_sided_p(t: float, df: int, at_most: float) -> float | None:
    """Student t's two-sided p of `t` at `df` degrees of freedom (2 stdtr(df, -|t|), as
    scipy gives it) where it is `at_most` or less, else None. Most are ruled out without
    scipy: at p 0.001 by the critical |t| kept for the fewest degrees of freedom at or over
    `df`, else by the standard normal's p, which the t's exceeds at every t (its density
    is below the normal's at 0 and crosses it once a side)."""
    if at_most == 0.001 and abs(t) < next((c for d, c in CRITICAL_0001.items() if d >= df), 0.0):
        return None
    if math.erfc(abs(t) / math.sqrt(2.0)) > at_most:
        return None
    from scipy.special import stdtr

    p = float(2.0 * stdtr(df, -abs(t)))
    return p if p <= at_most else None
