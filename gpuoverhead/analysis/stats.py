"""Robust estimators with distribution-free 95% confidence intervals.

Sequential cases are sampled in interleaved rounds, each round measuring every N of the
sweep once. Each round therefore yields its own Theil-Sen fit (slope = per-dispatch cost,
intercept = fixed cost), from points taken close together in time, so slow drift of clocks
or queue state cancels within a round. The estimate is the median over rounds, and its CI
comes from order statistics (the binomial CI of a median), which needs no bootstrap and no
assumption about the shape of the distribution.

A ratio of two such estimates (a fusion speedup, the inflation) is the ratio of their
medians, not the median of per-round ratios: one round's denominator slope can come out at
or below zero when it is small against the noise, and a per-round ratio would then have to
drop that round (biasing the ratio low) or divide by it. Its CI is a paired bootstrap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import stats as sps

CONFIDENCE = 0.95
#: Samples whose modified z-score (Iglewicz and Hoaglin) exceeds this are flagged outliers.
OUTLIER_Z = 3.5


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float
    n_samples: int

    @property
    def rel_ci(self) -> float:
        """Half-width of the CI relative to the estimate (inf when the estimate is 0)."""
        if self.value == 0 or not np.isfinite(self.value):
            return float("inf")
        return (self.ci_high - self.ci_low) / 2 / abs(self.value)


def median_ci(values: np.ndarray) -> Estimate:
    """Median with the exact order-statistic 95% CI (scipy's quantile test)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    ci = sps.quantile_test(values, q=float(np.median(values)), p=0.5).confidence_interval(
        CONFIDENCE
    )
    # With very few values the exact interval is unbounded; report the observed range.
    low = ci.low if np.isfinite(ci.low) else values.min()
    high = ci.high if np.isfinite(ci.high) else values.max()
    return Estimate(float(np.median(values)), float(low), float(high), int(values.size))


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


#: Bootstrap resamples for CIs that combine processes.
BOOTSTRAP_RESAMPLES = 2000
#: Drift is reported when a rank correlation with time is at least this strong ...
DRIFT_MIN_RHO = 0.3
#: ... and this unlikely under no trend (strict, since many cases are tested at once).
DRIFT_MAX_P = 0.001


def hierarchical_median_ci(groups: list[np.ndarray], rng: np.random.Generator) -> Estimate:
    """Median of all values with a CI that includes between-process variation.

    Two-level bootstrap: resample processes with replacement, then values within each chosen
    process, and take the pooled median; the CI is the 2.5-97.5 percentile of those medians.
    With one process this is the order-statistic CI of `median_ci`.
    """
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if len(groups) <= 1:
        return median_ci(groups[0] if groups else np.array([]))
    pooled = np.concatenate(groups)
    medians = np.empty(BOOTSTRAP_RESAMPLES)
    sizes = np.array([len(g) for g in groups])
    for b in range(BOOTSTRAP_RESAMPLES):
        picks = rng.integers(0, len(groups), len(groups))
        medians[b] = np.median(np.concatenate(
            [groups[p][rng.integers(0, sizes[p], sizes[p])] for p in picks]))
    low, high = np.percentile(medians, [2.5, 97.5])
    value = float(np.median(pooled))
    return Estimate(value, float(min(low, value)), float(max(high, value)), int(pooled.size))


def median_ratio(top: np.ndarray, bottom: np.ndarray) -> float:
    """median(top) / median(bottom); +inf where the denominator's median is not positive
    (the data bound the ratio from below only), nan where neither median is."""
    t, b = float(np.median(top)), float(np.median(bottom))
    if b > 0:
        return t / b
    return math.inf if t > 0 else math.nan


def hierarchical_ratio_ci(groups: list[tuple[np.ndarray, np.ndarray]],
                          rng: np.random.Generator) -> Estimate:
    """Ratio of the pooled medians of paired values (numerator, denominator per round), with
    a bootstrap CI that resamples processes (when there are several), then rounds within
    each, keeping a round's numerator and denominator together. The upper bound is +inf when
    resampled denominators reach zero."""
    groups = [(np.asarray(t, dtype=float), np.asarray(b, dtype=float)) for t, b in groups
              if len(t)]
    if not groups:
        return Estimate(math.nan, math.nan, math.nan, 0)
    top = np.concatenate([t for t, _ in groups])
    bottom = np.concatenate([b for _, b in groups])
    value = median_ratio(top, bottom)
    if len(groups) == 1:
        picks = rng.integers(0, top.size, (BOOTSTRAP_RESAMPLES, top.size))
        tops, bottoms = np.median(top[picks], axis=1), np.median(bottom[picks], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(bottoms > 0, tops / np.where(bottoms > 0, bottoms, 1.0),
                              np.where(tops > 0, math.inf, math.nan))
    else:
        ratios = np.empty(BOOTSTRAP_RESAMPLES)
        for i in range(BOOTSTRAP_RESAMPLES):
            chosen = [groups[p] for p in rng.integers(0, len(groups), len(groups))]
            rows = [(t[r], b[r]) for t, b in chosen for r in [rng.integers(0, t.size, t.size)]]
            ratios[i] = median_ratio(np.concatenate([t for t, _ in rows]),
                                     np.concatenate([b for _, b in rows]))
    ratios = ratios[~np.isnan(ratios)]
    if not ratios.size or math.isnan(value):
        return Estimate(value, math.nan, math.nan, int(top.size))
    # No interpolation: a quantile next to an infinite ratio stays a ratio that was seen.
    low, high = np.quantile(ratios, [0.025, 0.975], method="inverted_cdf")
    return Estimate(value, float(min(low, value)), float(max(high, value)), int(top.size))


@dataclass(frozen=True)
class Drift:
    """A monotone trend of values against time: Spearman's rho, its p-value, and the change
    from the first to the last quarter of the values relative to their median."""

    rho: float
    p: float
    change: float


def drift(values: np.ndarray, times: np.ndarray) -> Drift | None:
    """The trend of `values` over `times` if it is strong and significant, else None."""
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
