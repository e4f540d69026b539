"""The completion floor: how long after the GPU finished a caller hears of it, and which
points of an N sweep are that floor rather than work.

A sample of N units with one wait takes its issue time, the GPU's time and the completion
latency. Where that latency has a floor which less work does not shorten (a page hears of
finished work when Chromium's GPU process next polls, about 2 ms after a flush), a sample
whose work is shorter than the floor is the floor: its wall time does not grow with N, and
a slope fitted through such points is the floor's noise, not a unit's cost (issue 55: a
page's fused loop at 2,795 and 2,805 µs for N = 1 and 16).

A process's floor for a case is the median over rounds of its synced sample (N = 1) less
that sample's issue time and one unit's time: its GPU time (its timestamp twin's at N = 1)
where one was measured, else its wall time between the sweep's two largest N (`top_unit`:
where those two lie on the floor too it is about 0, and the floor then takes all of the
synced sample). An N whose median wall time is under FLOOR_MULTIPLE floors is on the
floor: the slope is fitted through the other N, and not at all where fewer than two
remain. Pure: numpy only.
"""

from __future__ import annotations

import numpy as np

#: A point of the sweep counts as work where its median wall time is at least this many
#: completion floors: at least half of it is then beyond the floor.
FLOOR_MULTIPLE = 2.0
#: Points a slope needs.
LEAST_POINTS = 2


def completion_floor(wall_1: np.ndarray, issue_1: np.ndarray,
                     gpu_1: np.ndarray | None = None) -> np.ndarray:
    """Per round: the synced sample's wall time less its issue time and, where given (paired
    by round), its unit's GPU time (ns)."""
    rounds = len(wall_1) if gpu_1 is None else min(len(wall_1), len(gpu_1))
    floor = wall_1[:rounds] - issue_1[:rounds]
    return floor if gpu_1 is None else floor - gpu_1[:rounds]


def top_unit(n: np.ndarray, walls: np.ndarray) -> float:
    """One unit's wall time between the sweep's two largest N (medians over rounds, never
    below 0): the unit's time where no GPU time was measured."""
    if len(n) < 2 or not walls.size:
        return 0.0
    medians = np.nanmedian(walls[:, -2:], axis=0)
    return max(0.0, float((medians[1] - medians[0]) / (n[-1] - n[-2])))


def off_floor(walls: np.ndarray, floor_ns: float) -> np.ndarray:
    """Per N (the columns of `walls`, rounds x N): whether its median wall time lies at
    least FLOOR_MULTIPLE floors up. Every N where the floor is not a positive number."""
    medians = np.nanmedian(walls, axis=0) if walls.size else np.empty(walls.shape[1])
    if not np.isfinite(floor_ns) or floor_ns <= 0:
        return np.ones(walls.shape[1], dtype=bool)
    return medians >= FLOOR_MULTIPLE * floor_ns


def fitted(keep: np.ndarray) -> bool:
    """Whether enough points lie off the floor to fit a slope through them."""
    return int(keep.sum()) >= LEAST_POINTS
