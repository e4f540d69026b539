"""Robust estimators and intervals that cover what they say they cover.

Sequential cases are sampled in interleaved rounds, each round measuring every N of the
sweep once. Each round therefore yields its own Theil-Sen fit (slope = per-dispatch cost,
intercept = fixed cost), from points taken close together in time, so slow drift of clocks
or queue state cancels within a round. The estimate is the median over rounds, and its CI
comes from order statistics (the binomial CI of a median), which needs no bootstrap and no
assumption about the shape of the distribution.

A ratio of two such estimates (a fusion speedup, the inflation) is the ratio of their
medians, not the median of per-round ratios: one round's denominator slope can come out at
or below zero when it is small against the noise, and a per-round ratio would then have to
drop that round (biasing the ratio low) or divide by it.

Processes differ more than rounds within a process do, and not always politely: a few come
out twice as slow, some drift. Over several processes the estimand is the median, over fresh
processes, of what one process reports (its median, or ratio of medians), and its interval
(`between_processes`) uses only its order where six or more processes allow it. Positive
quantities are worked on the log scale, so their intervals never reach below zero. Every
Estimate says its real coverage (`level`) and what its interval is (`kind`);
gpuoverhead/analysis/coverage.py checks those claims in simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import combinations

import numpy as np

from gpuoverhead.analysis import student_t
from gpuoverhead.analysis.row_medians import median_rows

CONFIDENCE = 0.95
#: Samples whose modified z-score (Iglewicz and Hoaglin) exceeds this are flagged outliers.
OUTLIER_Z = 3.5


#: What an interval is: within one process, or over processes (what a new process would see).
WITHIN = "within one process"
BETWEEN = "between processes"


@dataclass(frozen=True)
class Estimate:
    """A value with an interval that covers the estimand with probability `level` (the
    exact coverage where fewer values cannot give 95%; 0 where there is no interval), of
    the `kind` said (how it was made)."""

    value: float
    ci_low: float
    ci_high: float
    n_samples: int
    level: float = CONFIDENCE
    kind: str = ""

    @property
    def rel_ci(self) -> float:
        """Half-width of the CI relative to the estimate (inf when the estimate is 0)."""
        if self.value == 0 or not np.isfinite(self.value):
            return float("inf")
        return (self.ci_high - self.ci_low) / 2 / abs(self.value)


def median_ci(values: np.ndarray) -> Estimate:
    """Median with the exact order-statistic 95% CI (see _median_rank). Under six
    values no pair of order statistics reaches 95%: the interval is then the observed range
    and `level` its real coverage, 1 - 2 * 0.5**n (n = 5: 93.75%, n = 3: 75%)."""
    values = np.asarray(values, dtype=float)
    kind = f"{WITHIN}: order statistics"
    if values.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, 0.0, kind)
    med = float(median_rows(values))  # np.median's, without importing numpy.ma
    if values.size < 6:
        level = 1.0 - 2.0 * 0.5 ** values.size if values.size > 1 else 0.0
        return Estimate(med, float(values.min()), float(values.max()), int(values.size),
                        level, f"{kind} (observed range)")
    below = _median_rank(int(values.size))
    ordered = np.sort(values)
    return Estimate(med, float(ordered[below]), float(ordered[values.size - 1 - below]),
                    int(values.size), CONFIDENCE, kind)


@lru_cache(maxsize=4096)
def _binomial_cdf(n: int) -> np.ndarray:
    """P(Binomial(n, 1/2) <= j) for j = 0..n, computed here because worker processes would
    otherwise import scipy.stats (a second of start-up each) for this alone."""
    i = np.arange(1, n + 1)
    log_choose = np.concatenate([[0.0], np.cumsum(np.log((n - i + 1) / i))])
    return np.cumsum(np.exp(log_choose - n * math.log(2.0)))


def _median_rank(n: int) -> int:
    """0-based index of the lower order statistic of the exact 95% interval of a median:
    the largest j with P(Binomial(n, 1/2) <= j) <= 2.5% (the interval scipy's quantile_test
    gives). n >= 6."""
    return int(np.flatnonzero(_binomial_cdf(n) <= (1 - CONFIDENCE) / 2)[-1])


#: Fewest values whose order statistics can bracket a median at 95% (1 - 2 * 0.5**6 > 95%).
ORDER_MIN = 6


@dataclass(frozen=True)
class Interval:
    """Estimates of one kind, one per row of the values they came from (vectorized so
    that coverage can be simulated over thousands of runs by the code that makes them)."""

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    kind: str


def between_processes(values: np.ndarray, positive: bool, what: str = "process medians"
                      ) -> Interval:
    """The centre of each row's per-process values (columns), with its interval over
    processes: the figure shown is the statistic the interval is built around. A positive
    quantity whose values are all above zero is worked on logs (never below zero); others
    linearly, a positive one's lower end then held at zero.
    Six or more processes: order statistics interpolated to 95% (Hettmansperger and
    Sheather 1986), which assume nothing of how processes differ (some slow, heavy tails,
    drift). Fewer, where no pair of order statistics reaches 95%: the t interval, which
    covers the median where process values are symmetric (on logs), and with two to five
    of them is wide enough to cover it in the asymmetric cases simulated too; with an
    unbounded value, the observed range and its exact coverage. The centre is the median,
    but for the t interval the mean (on logs: the geometric mean), which that interval is
    centred on: a median shown inside a mean's interval was off its centre by up to a third
    of its width with three processes."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    n = values.shape[1]
    log = positive and bool(np.all(np.isfinite(values) & (values > 0)))
    x = np.log(values) if log else values
    centre, name = np.median(x, axis=1), "median"
    if n >= ORDER_MIN:
        low, high = _order_bounds(np.sort(x, axis=1))
        level, how = CONFIDENCE, "interpolated order statistics"
    elif np.all(np.isfinite(x)):
        centre, name = x.mean(axis=1), "geometric mean" if log else "mean"
        low, high = _t_bounds(x)
        level, how = CONFIDENCE, "t interval"
    else:
        low, high = x.min(axis=1), x.max(axis=1)
        level, how = 1.0 - 2.0 * 0.5 ** n, "observed range"
    if log:
        centre, low, high = np.exp(centre), np.exp(low), np.exp(high)
        how += " on logs"
    elif positive:
        low = np.maximum(low, 0.0)
    return Interval(centre, low, high, level, f"{BETWEEN}: {name} of {n} {what}, {how}")



@lru_cache(maxsize=256)
def _interpolation(n: int) -> tuple[int, float]:
    """k (1-based) of the narrowest pair (x_(k), x_(n+1-k)) that covers the median with at
    least 95%, and the weight of the next narrower pair (x_(k+1), x_(n-k)) that brings the
    coverage to 95% (Hettmansperger and Sheather's lambda, as in Wilcox's `sint`).
    n >= ORDER_MIN."""
    cdf = _binomial_cdf(n)
    k = _median_rank(n) + 1
    wide, narrow = 1.0 - 2.0 * cdf[k - 1], 1.0 - 2.0 * cdf[k]
    share = (wide - CONFIDENCE) / (wide - narrow)
    return k, (n - k) * share / (k + (n - 2 * k) * share)


def _order_bounds(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interpolated order-statistic bounds of each row (sorted); where one of the two order
    statistics is unbounded the outer one is kept."""
    n = ordered.shape[1]
    k, weight = _interpolation(n)

    def mix(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            mixed = weight * inner + (1.0 - weight) * outer
        return np.where(np.isfinite(outer) & np.isfinite(inner), mixed, outer)

    return (mix(ordered[:, k - 1], ordered[:, k]),
            mix(ordered[:, n - k], ordered[:, n - k - 1]))


def _t_bounds(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Student t 95% bounds of each row's mean (columns - 1 degrees of freedom)."""
    n = x.shape[1]
    t = student_t.quantile(n - 1, 0.5 + CONFIDENCE / 2)
    half = t * x.std(axis=1, ddof=1) / math.sqrt(n)
    mean = x.mean(axis=1)
    return mean - half, mean + half


def over_processes(values: np.ndarray, positive: bool, what: str, count: int) -> Estimate:
    """One estimate over processes from their values (see between_processes); a value
    that is undetermined (nan: a ratio of two medians at or below zero) leaves the
    estimate without an interval."""
    values = np.asarray(values, dtype=float)
    if np.isnan(values).any():
        return Estimate(math.nan, math.nan, math.nan, count, 0.0,
                        f"{BETWEEN}: undetermined (a ratio of two medians at or below zero)")
    found = between_processes(values, positive, what)
    return Estimate(float(found.value[0]), float(found.low[0]), float(found.high[0]), count,
                    found.level, found.kind)


def held_at_zero(est: Estimate) -> Estimate:
    """A positive quantity's estimate (a cost, a ratio of costs) as one a cost can have: its
    interval's lower end held at zero (single values can fall below it, the quantity
    cannot), and so its value where the estimate itself fell below (a slope lost in the
    wait's noise: said in its kind); an interval wholly below zero is none."""
    if est.ci_low < 0:
        est = replace(est, ci_low=0.0)
    if est.value < 0:  # the noise outweighs the slope: the nearest cost is 0
        est = replace(est, value=0.0, kind=f"{est.kind}; not resolved: its estimate fell "
                                           f"below zero ({est.value:.4g}), held at 0")
    if est.ci_high < 0:
        est = replace(est, ci_low=math.nan, ci_high=math.nan, level=0.0,
                      kind=f"{est.kind}; no interval: it lay wholly below zero")
    return est


def process_median_ci(groups: list[np.ndarray], positive: bool) -> Estimate:
    """The median a process sees, over processes: the median of their medians with its
    interval over processes (`between_processes`). One process: its median with the
    within-process interval, said so in `kind`."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if len(groups) <= 1:
        return median_ci(groups[0] if groups else np.array([]))
    medians = np.array([np.median(g) for g in groups])
    return over_processes(medians, positive, "process medians",
                          int(sum(g.size for g in groups)))


def round_fits(n_values: np.ndarray, walls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Theil-Sen slope and intercept of each round.

    `walls` has one row per round and one column per N of `n_values`. The slope of a round
    is the median of its pairwise slopes; its intercept the median of y - slope * N.
    """
    x = np.asarray(n_values, dtype=float)
    y = np.asarray(walls, dtype=float)
    pairs = [(i, j) for i, j in combinations(range(x.size), 2) if x[i] != x[j]]
    pairwise = np.stack([(y[:, j] - y[:, i]) / (x[j] - x[i]) for i, j in pairs], axis=1)
    slopes = np.median(pairwise, axis=1)
    intercepts = np.median(y - slopes[:, None] * x[None, :], axis=1)
    return slopes, intercepts


def outlier_flags(values: np.ndarray) -> np.ndarray:
    """True where the modified z-score |0.6745 (x - median) / MAD| exceeds OUTLIER_Z."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.zeros(0, dtype=bool)
    med = np.median(values)
    mad = np.median(np.abs(values - med))
    if mad == 0:
        return values != med
    return np.abs(0.6745 * (values - med) / mad) > OUTLIER_Z


#: Bootstrap resamples for a ratio's within-process CI.
BOOTSTRAP_RESAMPLES = 2000
#: Drift is reported when a rank correlation with time is at least this strong ...
DRIFT_MIN_RHO = 0.3
#: ... and this unlikely under no trend (strict, since many cases are tested at once).
DRIFT_MAX_P = 0.001


def median_ratio(top: np.ndarray, bottom: np.ndarray) -> float:
    """median(top) / median(bottom) (see ratio_of)."""
    return ratio_of(float(np.median(top)), float(np.median(bottom)))


def ratio_of(top: float, bottom: float) -> float:
    """top / bottom; +inf where the denominator is not positive (the data bound the ratio
    from below only), nan where neither is."""
    if bottom > 0:
        return top / bottom
    return math.inf if top > 0 else math.nan


def ratio_ci(groups: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator
             ) -> Estimate:
    """Ratio of medians of paired values (numerator, denominator per round).

    One process: median(top) / median(bottom) with a paired bootstrap over rounds (a
    within-process interval). Several: each process's ratio, and their median with its
    interval over processes (`between_processes`). A ratio whose denominator's median is
    not positive has no upper bound: the interval then reaches +inf."""
    groups = [(np.asarray(t, dtype=float), np.asarray(b, dtype=float)) for t, b in groups
              if len(t)]
    if not groups:
        return Estimate(math.nan, math.nan, math.nan, 0, 0.0, "no values")
    count = int(sum(t.size for t, _ in groups))
    if len(groups) > 1:
        ratios = np.array([median_ratio(t, b) for t, b in groups])
        return over_processes(ratios, True, "process ratios", count)
    top, bottom = groups[0]
    value = median_ratio(top, bottom)
    picks = rng.integers(0, top.size, (BOOTSTRAP_RESAMPLES, top.size))
    tops, bottoms = np.median(top[picks], axis=1), np.median(bottom[picks], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(bottoms > 0, tops / np.where(bottoms > 0, bottoms, 1.0),
                          np.where(tops > 0, math.inf, math.nan))
    ratios = ratios[~np.isnan(ratios)]
    kind = f"{WITHIN}: paired bootstrap over rounds"
    if not ratios.size or math.isnan(value):
        return Estimate(value, math.nan, math.nan, count, 0.0, kind)
    # No interpolation: a quantile next to an infinite ratio stays a ratio that was seen.
    low, high = np.quantile(ratios, [0.025, 0.975], method="inverted_cdf")
    return Estimate(value, float(low), float(high), count, CONFIDENCE, kind)


@dataclass(frozen=True)
class Drift:
    """A monotone trend of values against time: Spearman's rho, its p-value, and the change
    from the first to the last quarter of the values relative to their median."""

    rho: float
    p: float
    change: float


def drift(values: np.ndarray, times: np.ndarray) -> Drift | None:
    """The trend of `values` over `times` if it is strong and significant, else None: its p
    (two-sided, by the t approximation on n - 2 degrees of freedom, as scipy's spearmanr)
    only where rho is strong enough, and scipy's only where the normal's p does not rule it
    out (student_t.two_sided_p): a run's parent otherwise imports scipy for it alone."""
    values, times = np.asarray(values, dtype=float), np.asarray(times, dtype=float)
    if values.size < 8 or np.ptp(values) == 0:
        return None
    rho = _spearman(times, values)
    if not abs(rho) >= DRIFT_MIN_RHO:  # nan too
        return None
    df = values.size - 2
    t = rho * math.sqrt(df / ((1.0 + rho) * (1.0 - rho))) if abs(rho) < 1.0 else math.inf
    if (p := student_t.two_sided_p(t, df, DRIFT_MAX_P)) is None:
        return None
    return Drift(rho, p, _change(values[np.argsort(times)]))


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho of `y` against `x`: scipy.stats.spearmanr's, without importing
    scipy.stats (about 1.5 s of CPU at the end of every run) for it."""
    if not (np.isfinite(x).all() and np.isfinite(y).all()):  # as scipy's: nan propagates
        return math.nan
    rx, ry = (_ranks(v) - (v.size + 1) / 2 for v in (x, y))
    scale = math.sqrt((rx @ rx) * (ry @ ry))
    return float(np.clip(rx @ ry / scale, -1.0, 1.0)) if scale else math.nan


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given the mean of the ranks they span (scipy.stats.rankdata's
    'average')."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], values.size]
    ranks = np.empty(values.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def _change(ordered: np.ndarray) -> float:
    """The median of the last quarter of time-ordered values over that of the first, less 1
    (a time that falls cannot fall by more than all of it: over the median of all, a
    torch-cpu process whose first rounds were slow read -288%); where the first quarter's
    median is not above zero, the difference over the median of all, in size."""
    quarter = max(1, ordered.size // 4)
    first, last = np.median(ordered[:quarter]), np.median(ordered[-quarter:])
    if first > 0:
        return float(last / first - 1)
    return float((last - first) / abs(np.median(ordered)))


def _rank_trend(ranks: np.ndarray) -> float:
    """Spearman's rho of ranks against their order (scipy's spearmanr, 50x faster)."""
    order = np.arange(ranks.size) - (ranks.size - 1) / 2
    ranks = ranks - ranks.mean()
    return float(order @ ranks / math.sqrt((order @ order) * (ranks @ ranks)))


def drift_within(groups: list[np.ndarray]) -> Drift | None:
    """A trend over rounds that processes share, each group being one process's values in
    round order. Each process's Spearman rho (variance 1 / (n - 1) under no trend) is
    pooled with weight n - 1, so that many short processes, none long enough to show it
    alone, still do; the change is the median of the processes' changes."""
    groups = [np.asarray(g, dtype=float) for g in groups]
    groups = [g for g in groups if g.size >= 3 and np.ptp(g) > 0]
    weights = np.array([g.size - 1.0 for g in groups])
    if weights.sum() < 8:
        return None
    rhos = np.array([_rank_trend(_ranks(g)) for g in groups])
    rho = float(weights @ rhos / weights.sum())
    p = math.erfc(abs(weights @ rhos) / math.sqrt(weights.sum()) / math.sqrt(2.0))
    if not (abs(rho) >= DRIFT_MIN_RHO and p <= DRIFT_MAX_P):
        return None
    return Drift(rho, p, float(np.median([_change(g) for g in groups])))
