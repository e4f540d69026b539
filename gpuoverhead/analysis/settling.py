"""When a process's level settles: a figure over the process's age, and the age from which it
holds.

What one op costs depends on the regime the process is in, and a regime builds up over
seconds: on a lent H200 VM a plain C loop's `submit` cost 16-19 µs back to back for 10 s,
but with bursts 30 ms apart it cost 16-22 µs for about 3 s and then rose to 29-37 µs by
5-8 s (issue 54). So a figure at a cadence is taken after its level has settled, and that
age is measured, not assumed: the level over age is the median of each bin of the process's
timeline; the final level is the median over its last third; the level has settled from
the first bin after which every bin, taken with its two neighbours (the median of three
bins), lies within the tolerance of the final level. Where that is only inside the last
third, the level was still moving as the process ended: `settled` is False and the figure
is the level at its end, said so. The median of three keeps one disturbed bin from
deciding: on the H200 VM the last of 16 bins of one back-to-back process read 21.9 µs
against 19.1-19.5 in all the others, and taken alone it made that flat process
"still moving" and its figure that one bin's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Bins of a process's timeline (fewer where it has few values: at least MIN_PER_BIN each).
BINS = 16
MIN_PER_BIN = 3
#: How far (relative) a bin's median may lie from the final level once settled, at least;
#: more where the values scatter so that a bin's median would by noise alone (NOISE_Z of
#: its standard error, from the last third's spread and the bin's count).
TOLERANCE = 0.10
NOISE_Z = 2.5
#: The share of the timeline, at its end, whose values give the final level.
FINAL_SHARE = 1 / 3


@dataclass(frozen=True)
class Settling:
    """The age (s) from which a process's level held, whether it did before its last third,
    and the level over its age: (age at the bin's start in s, median of the bin)."""

    at_s: float
    settled: bool
    level: tuple[tuple[float, float], ...]

    def kept(self, ages_s: np.ndarray) -> np.ndarray:
        """Which values count towards the settled level: those from `at_s` on."""
        return ages_s >= self.at_s


def settle(ages_s: np.ndarray, values: np.ndarray) -> Settling:
    """When the level of `values` (taken at `ages_s`, seconds into the process) settled."""
    ok = np.isfinite(values) & np.isfinite(ages_s)
    ages, vals = ages_s[ok], values[ok]
    if vals.size == 0:
        return Settling(math.nan, False, ())
    order = np.argsort(ages, kind="stable")
    ages, vals = ages[order], vals[order]
    start, end = float(ages[0]), float(ages[-1])
    count = max(1, min(BINS, vals.size // MIN_PER_BIN))
    edges = np.linspace(start, end, count + 1)
    which = np.clip(np.searchsorted(edges, ages, side="right") - 1, 0, count - 1)
    counts = np.bincount(which, minlength=count)
    # Each bin's median from one sort by bin, then value: a np.median call a bin cost more
    # than the sort (the coverage simulations settle thousands of processes).
    ranked = vals[np.lexsort((vals, which))]
    ends = np.cumsum(counts)
    lows, highs = ranked[ends - (counts + 1) // 2], ranked[ends - counts // 2 - 1]
    bins = [(float(edges[b]), float((lows[b] + highs[b]) / 2), int(counts[b]))
            for b in np.flatnonzero(counts)]
    last_third = start + (1 - FINAL_SHARE) * (end - start)
    tail = vals[ages >= last_third]
    final = float(np.median(tail))
    sigma = 1.4826 * float(np.median(np.abs(tail - final)))
    at = bins[-1][0]
    for i in reversed(range(len(bins))):
        near = bins[max(0, min(i - 1, len(bins) - 3)):][:3]  # i and its neighbours
        ms = sorted(m for _, m, _ in near)
        median = (ms[(len(ms) - 1) // 2] + ms[len(ms) // 2]) / 2
        k = min(c for _, _, c in near)
        # A median's standard error is about 1.25 sigma / sqrt(k).
        if abs(median - final) > max(TOLERANCE * abs(final), NOISE_Z * 1.2533 * sigma / k ** 0.5):
            break
        at = bins[i][0]
    return Settling(at, at <= last_third, tuple((a, m) for a, m, _ in bins))
