"""Breakdown: the CPU time of each call of one `submit` operation, timed in place.

Each sample is one operation and its wait with the clock read between calls; the parts
(create encoder, begin pass, set pipeline, set bind group, dispatch, end pass, finish,
submit, wait, release) are kept per sample. The clock's own cost is measured once per run
and subtracted in the estimates, not here, so the samples stay raw observations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead import records
from gpuoverhead.analysis.series import Key, Out, Series, View
from gpuoverhead.cases import Case
from gpuoverhead.gpu.layers import raw, wrapper
from gpuoverhead.gpu.targets import Target

CALLS = records.CALLS


#: The name a suite's `methodologies` asks for it by.
SUITE_NAME = "breakdown"


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """One `submit` operation per layer that makes the calls in Python (not the C loop)."""
    if SUITE_NAME not in cfg["methodologies"]:
        return []
    return [replace(base, methodology=SUITE_NAME, layer=layer, n_values=(1,))
            for layer in dict.fromkeys(cfg["layers"]) if layer != "native"]


def claims(case: Case) -> bool:
    return case.methodology == SUITE_NAME


def operation(target: Target, case: Case, native: object = None
              ) -> Callable[[int], tuple[int, ...]]:
    timed = raw.build(target)[1] if case.layer == "raw" else (lambda: wrapper.breakdown(target))
    return lambda n: timed()


def series(view: View, index: int, case: Case, out: Out) -> None:
    """Latency of the whole op, and each call's time less the clock's own cost."""
    pos, walls, times = view.measured(index)
    out[Key(case, "latency_ns", "ns", "median")] = Series(walls, times, walls.size)
    parts = np.array([view.samples.parts[p] for p in pos], dtype=float)
    for j, call in enumerate(CALLS):
        out[Key(case, "call_ns", "ns", "median - clock cost", call)] = Series(
            parts[:, j] - view.cal.timer_ns, times, parts.shape[0])


def derive(out: Out, view: View) -> None:
    """Nothing derives from a breakdown."""
