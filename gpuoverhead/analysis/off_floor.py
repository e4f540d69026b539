"""The completion floor of a process's fusion cases (analysis/floor.py has the rule): the
floor per round, which N of a sweep lie on it, and the slope's estimator that leaves them
out. Where a group has a timestamps twin, one unit's GPU time comes from it."""

from __future__ import annotations

import math

import numpy as np

from gpuoverhead.analysis import floor
from gpuoverhead.analysis.samples import by_round
from gpuoverhead.analysis.series import Key, Out, Series, View
from gpuoverhead.cases import FUSION, HOST_UNITS, TIMESTAMPS, Case

#: How a wait case's completion floor is made (analysis/floor.py).
FLOOR_ESTIMATOR = ("median N=1 wall less its issue time and one unit's time (its timestamps "
                   "twin's GPU time, else its wall slope between the two largest N)")
#: How a wait case's slope is fitted: through the N off its completion floor.
OFF_FLOOR = (f"round-median theil-sen over the N whose median wall is at least "
             f"{floor.FLOOR_MULTIPLE:g}x the completion floor")


def fit(view: View, case: Case, out: Out, n: tuple[int, ...], walls: np.ndarray,
        issue: np.ndarray, round_times: np.ndarray) -> np.ndarray:
    """Which N of a wait case's sweep lie off its completion floor (analysis/floor.py); the
    floor itself as the case's `completion_floor_ns`."""
    found, keep = _floor_of(view, case, n, walls, issue)
    out[Key(case, "completion_floor_ns", "ns", FLOOR_ESTIMATOR)] = Series(
        found, round_times[:found.size], found.size)
    return keep


def _floor_of(view: View, case: Case, n: tuple[int, ...], walls: np.ndarray,
              issue: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A wait case's completion floor per round, and which N (of `n`) lie off it."""
    unit = _gpu_at_one(view, case)
    if unit is None:
        unit = np.full(len(walls), floor.top_unit(np.array(n), walls))
    found = floor.completion_floor(walls[:, 0], issue[:, 0], unit)
    return found, floor.off_floor(walls, float(np.median(found)) if found.size else math.nan)


def floor_points(view: View) -> dict[Case, tuple[tuple[int, ...], float, bool]]:
    """Per wait case of one process whose sweep had points on its completion floor: those
    N (left out of its slope), the floor's median in ns, and whether the N it measured (its
    sweep, or what the probe left of it) kept enough off the floor for a slope."""
    found = {}
    for index, case in enumerate(view.samples.cases):
        n = view.n(index)
        if (case.methodology != FUSION or case.sync != "wait" or case.variant in HOST_UNITS
                or n[0] != 1):
            continue
        pos, walls, _ = view.measured(index)
        matrix = by_round(walls, n)
        if not matrix.size:
            continue
        per_round, keep = _floor_of(view, case, n, matrix, view.issue(pos, index))
        if not keep.all():
            found[case] = (tuple(np.array(n)[~keep].tolist()), float(np.median(per_round)),
                           floor.fitted(keep))
    return found


def _gpu_at_one(view: View, case: Case) -> np.ndarray | None:
    """The GPU time of one unit of `case`'s work per round: its timestamps twin at N = 1,
    where the group has one with a timer."""
    for j, other in enumerate(view.samples.cases):
        if other.sync == TIMESTAMPS and (other.k, other.variant, other.implementation) == (
                case.k, case.variant, case.implementation) and view.n(j)[0] == 1:
            gpu = view.gpu(view.measured(j)[0], j)
            return None if gpu is None else gpu[:, 0]
    return None
