"""Trends over time: headline values that move over rounds or over the run's wall clock, and
what a process's life says of its figures.

Where a process's values trend over its rounds (state building up: +15-41% within one
process has been seen), "what a process costs" has no single value. Such a process is
handled, not only reported (`life`): its headline figures' level over its age is judged as a
cadence's is (analysis/settling.py: bins of its timeline, each with its neighbours, against
the level of its last third). Where most of them held from some age on, the process's
figures are those of its rounds from the median of those ages on (a start that had not
settled yet is left out); where most still moved in its last third, the process has no
level of its own and is left out of the estimates where as many others remain as the job's
interval needs (`enough`: never one of three; run/finish.py), said either way. On the H200
VM (2026-11-29) one default wgpu-native process of three read `submit` 15.5 µs through the C
loop for two thirds of its life and 21.5 after, its wrapper 52 then 80, while the other two
stayed at 15-16. The trend is still reported: per process, over the run's wall clock, and
pooled over the processes (many short processes may each be too short to show a trend that
all of them share).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuoverhead.analysis.samples import GroupSamples, records
from gpuoverhead.analysis.series import STOP_METRICS, Key, Series
from gpuoverhead.analysis.settling import settle
from gpuoverhead.analysis.stats import ORDER_MIN, Drift, drift, drift_within

#: The scope of a trend found within processes, pooled over them.
WITHIN_PROCESSES = "within processes over rounds, pooled: figures are whole-run medians"


def drifts(per_process: list[dict[Key, Series]]) -> list[dict[str, Any]]:
    """Trends of headline values over rounds (per process, and pooled over processes) and
    over the run's wall clock (all processes together), for run.json."""
    found = []
    keys = list(dict.fromkeys(k for p in per_process for k in p if k.metric in STOP_METRICS))
    for key in keys:
        present = [(i, p[key]) for i, p in enumerate(per_process) if key in p]
        trends = [(f"process {i} over rounds", drift(s.values, np.arange(s.values.size)))
                  for i, s in present]
        if len(present) > 1:
            trends.append(("all processes over wall-clock time",
                           drift(np.concatenate([s.values for _, s in present]),
                                 np.concatenate([s.times for _, s in present]))))
            trends.append((WITHIN_PROCESSES, drift_within([s.values for _, s in present])))
        found += [_entry(key, scope, d) for scope, d in trends if d is not None]
    return found


def _entry(key: Key, scope: str, d: Drift) -> dict[str, Any]:
    return {"case": key.case.id, "metric": key.metric, "scope": scope,
            "rho": round(d.rho, 3), "p": d.p, "change": round(d.change, 4)}


#: A process most of whose headline figures still moved in its last third has no level.
MOVING_SHARE = 0.5
#: Fewest processes a t interval is left with where a moving one is left out: over two it
#: is 3.6x as wide as over three at the same spread (t's 12.7 against 4.3).
LEAST_T = 3


def enough(processes: int) -> int:
    """Processes a job of `processes` must keep for the interval it has: as many as order
    statistics need where it has them (stats.ORDER_MIN), else LEAST_T. In the H200 session
    of 2026-11-29 leaving one moving process of three out made the job's intervals over the
    other two 3-10x as wide (selftest's wgpu-native: ±43-101% where the other half had
    ±5-10%)."""
    return ORDER_MIN if processes >= ORDER_MIN else LEAST_T
#: Fewer values than this in a figure are not judged (as a drift is not).
MIN_VALUES = 8


@dataclass(frozen=True)
class Life:
    """A process's headline figures over its life: the time (epoch ns) from which they held
    (the median of their settling times), the share of them still moving in its last third,
    and their median change from the first bin of its timeline to the last."""

    held_from_ns: float
    moving: float
    change: float
    start_ns: float

    @property
    def trends(self) -> bool:
        return self.moving > MOVING_SHARE

    @property
    def held_from_s(self) -> float:
        return (self.held_from_ns - self.start_ns) / 1e9


def life(found: dict[Key, Series]) -> Life | None:
    """How a process's headline figures (per round: STOP_METRICS, not a cadence's, which
    settles on its own) behaved over its life; None where none has MIN_VALUES values."""
    picked = [s for k, s in found.items() if k.metric in STOP_METRICS and s.settled is None
              and s.values.size >= MIN_VALUES]
    if not picked:
        return None
    start = min(float(s.times.min()) for s in picked)
    settled = [settle((s.times - start) / 1e9, s.values) for s in picked]
    changes = [f.level[-1][1] / f.level[0][1] - 1 for f in settled
               if len(f.level) > 1 and f.level[0][1] > 0]
    return Life(start + 1e9 * float(np.median([f.at_s for f in settled])),
                float(np.mean([not f.settled for f in settled])),
                float(np.median(changes)) if changes else math.nan, start)


def rounds_from(samples: GroupSamples, clock_offset_ns: int, from_ns: float) -> np.ndarray:
    """The measured rounds (their indexes) that began at or after `from_ns` (epoch ns)."""
    rec = records(samples)
    rec = rec[rec[:, 3] == 0]
    found = np.unique(rec[:, 2])
    starts = np.array([rec[rec[:, 2] == r, 4].min() + clock_offset_ns for r in found])
    return found[starts >= from_ns] if found.size else found
