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

Processes differ more than rounds within a process do, so intervals over processes are t
intervals on the process medians (or log ratios), which hold their coverage for two or three
processes; every Estimate says its real coverage (`level`) and what its interval is (`kind`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

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
    med = float(np.median(values))
    if values.size < 6:
        level = 1.0 - 2.0 * 0.5 ** values.size if values.size > 1 else 0.0
        return Estimate(med, float(values.min()), float(values.max()), int(values.size),
                        level, f"{kind} (observed range)")
    below = _median_rank(int(values.size))
    ordered = np.sort(values)
    return Estimate(med, float(ordered[below]), float(ordered[values.size - 1 - below]),
                    int(values.size), CONFIDENCE, kind)


@lru_cache(maxsize=4096)
def _median_rank(n: int) -> int:
    """0-based index of the lower order statistic of the exact 95% interval of a median:
    the largest j with P(Binomial(n, 1/2) <= j) <= 2.5% (the interval scipy's quantile_test
    gives, computed here because worker processes would otherwise import scipy.stats, a
    second of start-up each, for this alone). n >= 6."""
    i = np.arange(1, n + 1)
    log_choose = np.concatenate([[0.0], np.cumsum(np.log((n - i + 1) / i))])
    cdf = np.cumsum(np.exp(log_choose - n * math.log(2.0)))
    return int(np.flatnonzero(cdf <= (1 - CONFIDENCE) / 2)[-1])


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean of a few values with its Student t 95% interval (len - 1 degrees of freedom)."""
    from scipy import stats as sps  # here, not at import: worker processes never need it

    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    half = float(sps.t.ppf(0.5 + CONFIDENCE / 2, values.size - 1)
                 * values.std(ddof=1) / math.sqrt(values.size))
    return mean, mean - half, mean + half


def process_median_ci(groups: list[np.ndarray]) -> Estimate:
    """The median a process sees, over processes. Values of one process vary less than
    processes do (driver state, memory placement, clocks), so with several processes the
    estimate is the mean of their medians with a t interval over processes (P - 1 degrees
    of freedom), which covers at 95% even for P = 2 or 3 where resampling processes does
    not. One process: its median with the within-process interval, said so in `kind`."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if len(groups) <= 1:
        return median_ci(groups[0] if groups else np.array([]))
    medians = np.array([np.median(g) for g in groups])
    mean, low, high = t_interval(medians)
    return Estimate(mean, low, high, int(sum(g.size for g in groups)), CONFIDENCE,
                    f"{BETWEEN}: mean of {len(groups)} process medians, t interval")


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
    """median(top) / median(bottom); +inf where the denominator's median is not positive
    (the data bound the ratio from below only), nan where neither median is."""
    t, b = float(np.median(top)), float(np.median(bottom))
    if b > 0:
        return t / b
    return math.inf if t > 0 else math.nan


def ratio_ci(groups: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator
             ) -> Estimate:
    """Ratio of medians of paired values (numerator, denominator per round).

    One process: median(top) / median(bottom) with a paired bootstrap over rounds (a
    within-process interval). Several: each process's ratio, and their geometric mean with
    a t interval on the logs over processes. A ratio whose denominator's median is not
    positive has no upper bound: the interval then reaches +inf."""
    groups = [(np.asarray(t, dtype=float), np.asarray(b, dtype=float)) for t, b in groups
              if len(t)]
    if not groups:
        return Estimate(math.nan, math.nan, math.nan, 0, 0.0, "no values")
    count = int(sum(t.size for t, _ in groups))
    if len(groups) > 1:
        ratios = np.array([median_ratio(t, b) for t, b in groups])
        kind = f"{BETWEEN}: geometric mean of {len(groups)} process ratios, t interval on logs"
        if np.all(np.isfinite(ratios) & (ratios > 0)):
            mean, low, high = t_interval(np.log(ratios))
            return Estimate(math.exp(mean), math.exp(low), math.exp(high), count,
                            CONFIDENCE, kind)
        top = np.concatenate([t for t, _ in groups])
        bottom = np.concatenate([b for _, b in groups])
        return Estimate(median_ratio(top, bottom), math.nan, math.inf, count, 0.0,
                        f"{BETWEEN}: unbounded (a process's denominator median is not "
                        "positive)")
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
    """The trend of `values` over `times` if it is strong and significant, else None."""
    from scipy import stats as sps

    values, times = np.asarray(values, dtype=float), np.asarray(times, dtype=float)
    if values.size < 8 or np.ptp(values) == 0:
        return None
    result = sps.spearmanr(times, values)
    rho, p = float(result.statistic), float(result.pvalue)
    if not (abs(rho) >= DRIFT_MIN_RHO and p <= DRIFT_MAX_P):
        return None
    order = np.argsort(times)
    quarter = max(1, values.size // 4)
    first, last = np.median(values[order[:quarter]]), np.median(values[order[-quarter:]])
    return Drift(rho, p, float((last - first) / np.median(values)))
