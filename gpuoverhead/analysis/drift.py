"""Trends over time: headline values that move over rounds or over the run's wall clock."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuoverhead.analysis.series import STOP_METRICS, Key, Series
from gpuoverhead.analysis.stats import drift


def drifts(per_process: list[dict[Key, Series]]) -> list[dict[str, Any]]:
    """Trends of headline values over rounds (per process) and over the run's wall clock
    (all processes together), for run.json."""
    found = []
    keys = list(dict.fromkeys(k for p in per_process for k in p if k.metric in STOP_METRICS))
    for key in keys:
        present = [(i, p[key]) for i, p in enumerate(per_process) if key in p]
        scopes = [(f"process {i} over rounds", s.values, np.arange(s.values.size))
                  for i, s in present]
        if len(present) > 1:
            scopes.append(("all processes over wall-clock time",
                           np.concatenate([s.values for _, s in present]),
                           np.concatenate([s.times for _, s in present])))
        for scope, values, times in scopes:
            d = drift(values, times)
            if d is not None:
                found.append({"case": key.case.id, "metric": key.metric, "scope": scope,
                              "rho": round(d.rho, 3), "p": d.p, "change": round(d.change, 4)})
    return found

