"""Robust estimators with distribution-free 95% confidence intervals.

Sequential cases are sampled in interleaved rounds, each round measuring every N of the
sweep once. Each round therefore yields its own Theil-Sen fit (slope = per-dispatch cost,
intercept = fixed cost), from points taken close together in time, so slow drift of clocks
or queue state cancels within a round. The estimate is the median over rounds, and its CI
comes from order statistics (the binomial CI of a median), which needs no bootstrap and no
assumption about the shape of the distribution.
"""

from __future__ import annotations

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
