"""Two runs compared: NEW / BASE of one estimate with a 95% interval, from each run's
per-process values where both have several (what `compare` and `selftest` judge by), else
from the two runs' own estimates. How often these intervals cover 1 when the two runs
measure the same thing is simulated in gpuoverhead/analysis/coverage.py (`aa_cell`)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from gpuoverhead.analysis.stats import CONFIDENCE, ORDER_MIN, Interval


def welch_ratio(base: np.ndarray, new: np.ndarray) -> Interval:
    """new / base of two runs from their processes' values (one row per comparison, one
    column per process): the ratio of the geometric means, with Welch's t interval on logs
    (Welch-Satterthwaite degrees of freedom). For two to five processes a run, where each
    run's own interval is a t interval on logs: combining those two intervals instead
    (`combined_ratio`, each with P - 1 degrees of freedom) is far wider than the
    two-sample interval, and, centred on the ratio of medians, calls a difference where
    processes fall in two modes (docs/methodology.md has the simulation). A value at or
    below zero, or unbounded, leaves it undetermined (nan)."""
    from scipy.special import stdtrit  # here, not at import: worker processes never need it

    b, n = (np.atleast_2d(np.asarray(v, dtype=float)) for v in (base, new))
    with np.errstate(invalid="ignore", divide="ignore"):
        lb, ln = np.log(b), np.log(n)
        vb, vn = lb.var(axis=1, ddof=1) / b.shape[1], ln.var(axis=1, ddof=1) / n.shape[1]
        se = np.sqrt(vb + vn)
        df = se ** 4 / (vb ** 2 / (b.shape[1] - 1) + vn ** 2 / (n.shape[1] - 1))
        half = stdtrit(np.where(se > 0, df, 1.0), 0.5 + CONFIDENCE / 2) * se
        centre = ln.mean(axis=1) - lb.mean(axis=1)
    return Interval(np.exp(centre), np.exp(centre - half), np.exp(centre + half),
                    CONFIDENCE, "Welch t interval on logs of the process values")


def combined_ratio(base: Interval, new: Interval) -> Interval:
    """new / base of two runs from their own estimates: the ratio of the values, the two
    intervals' half-widths combined on logs (delta method); nan where a value or a lower
    bound is not above zero."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (base.value > 0) & (new.value > 0) & (base.low > 0) & (new.low > 0)
        ratio = np.where(ok, new.value / base.value, math.nan)
        half = np.hypot(np.log(base.high / base.low) / 2, np.log(new.high / new.low) / 2)
    return Interval(ratio, ratio * np.exp(-half), ratio * np.exp(half), CONFIDENCE,
                    "ratio of the estimates, their intervals combined on logs")



def runs_ratio(base: np.ndarray, new: np.ndarray) -> Interval:
    """new / base of two runs from their processes' values (one row per comparison, one
    column per process; at least two a run). Where both runs have ORDER_MIN or more
    processes: the Hodges-Lehmann shift on logs (the median of every new / base pair) with
    its Mann-Whitney interval, exact wherever the two runs' processes come from the same
    distribution, whatever it is (two modes included); otherwise `welch_ratio`. A row
    with a value at or below zero is undetermined (nan), as in `welch_ratio`."""
    b, n = (np.atleast_2d(np.asarray(v, dtype=float)) for v in (base, new))
    m, k = b.shape[1], n.shape[1]
    if min(m, k) < ORDER_MIN:
        return welch_ratio(b, n)
    rows = max(len(b), len(n))
    b, n = np.broadcast_to(b, (rows, m)), np.broadcast_to(n, (rows, k))
    ok = (b > 0).all(axis=1) & (n > 0).all(axis=1)  # a value at or below zero: nan, its row
    found = np.full((3, rows), math.nan)
    if ok.any():
        shifts = np.sort((np.log(n[ok])[:, None, :] - np.log(b[ok])[:, :, None])
                         .reshape(-1, m * k), axis=1)
        rank = _shift_rank(m, k)
        found[:, ok] = np.exp([np.median(shifts, axis=1), shifts[:, rank - 1],
                               shifts[:, m * k - rank]])
    return Interval(*found, CONFIDENCE, "Hodges-Lehmann shift on logs, Mann-Whitney interval"
                    if ok.all() else "Hodges-Lehmann shift on logs, Mann-Whitney interval; "
                    "undetermined where a value is at or below zero")


@lru_cache(maxsize=256)
def _shift_rank(m: int, n: int) -> int:
    """The largest k whose (d_(k), d_(mn+1-k)) of the m n sorted pairwise differences
    covers the shift with at least 95%: P(U <= k - 1) <= 2.5% under Mann-Whitney's exact
    null distribution (counted, U from 0 to m n)."""
    # counts[j, u]: the orderings of i values of one sample and j of the other with U = u,
    # grown from i = 0 (U is 0 one way) to m.
    counts = np.zeros((n + 1, m * n + 1))
    counts[:, 0] = 1.0
    for _ in range(m):
        grown = np.zeros_like(counts)
        grown[0, 0] = 1.0
        for j in range(1, n + 1):
            grown[j] = grown[j - 1]
            grown[j, j:] += counts[j, : m * n + 1 - j]
        counts = grown
    cdf = np.cumsum(counts[n]) / counts[n].sum()
    return max(1, int(np.searchsorted(cdf, (1 - CONFIDENCE) / 2, side="right")))


def runs_p(base: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Two-sided p of no change between two runs' process values (one row per comparison,
    one column per process; at least two a run), on logs and by the same test as
    `runs_ratio`'s interval: Mann-Whitney (exact) where both have ORDER_MIN or more,
    Welch's t otherwise; nan in a row where a value is not a finite number above zero.
    Processes, not samples, are the units: a sample pool's p ignores that a run's samples
    share their process's offset, and an A/A then finds changes. Rows in one call, as
    compare judges them: scipy's own overhead is ~1 ms a call."""
    from scipy import stats as sps

    b, n = (np.atleast_2d(np.asarray(v, dtype=float)) for v in (base, new))
    found = np.full(max(len(b), len(n)), math.nan)
    if min(b.shape[1], n.shape[1]) < 2:
        return found
    ok = (np.isfinite(b) & (b > 0)).all(axis=1) & (np.isfinite(n) & (n > 0)).all(axis=1)
    if ok.any():
        lb, ln = np.log(b[ok]), np.log(n[ok])
        found[ok] = (sps.mannwhitneyu(lb, ln, alternative="two-sided", method="exact", axis=1)
                     if min(b.shape[1], n.shape[1]) >= ORDER_MIN
                     else sps.ttest_ind(lb, ln, equal_var=False, axis=1)).pvalue
    return found
