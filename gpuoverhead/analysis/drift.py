"""Trends over time: headline values that move over rounds or over the run's wall clock.

Where a process's values trend over its rounds (state building up: +15-41% within one
process has been seen), "what a process costs" has no single value. What the run reports
stays defined all the same: each process's median over all its measured rounds (the level
of the middle of its run, for a steady trend), then the median over processes. It depends
on how long the processes ran, which is why the trend is reported: per process, over the
run's wall clock, and pooled over the processes (many short processes may each be too
short to show a trend that all of them share).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuoverhead.analysis.series import STOP_METRICS, Key, Series
from gpuoverhead.analysis.stats import Drift, drift, drift_within

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
