"""Methodologies, one module each: which cases it claims, how its operation is issued,
waited for and timed, and which estimates its samples give (series per process, and what
derives from them). `METHODS` is the one list that both the worker (operations) and the
analysis (series) pick from, so the two can never disagree.

`operation(target, case, native)` gives `op(n)`, which issues `n` operations and waits as
the case's methodology defines; the sampler times calls of `op` and nothing else. An op may
return parts of its sample (per-call times of a breakdown, GPU timestamps), which the
sampler keeps beside the wall time. A fusion case's op is made from its workload's units
(`fusion.operation`, by the WebGPU driver).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from gpuoverhead.analysis.samples import Calibration, GroupSamples
from gpuoverhead.analysis.series import STOP_METRICS, Out, View, precise_enough
from gpuoverhead.analysis.stats import median_ci
from gpuoverhead.cases import Case
from gpuoverhead.gpu.targets import Target
from gpuoverhead.methods import (
    breakdown,
    cadence,
    ffi_floor,
    fusion,
    naive,
    sequential,
    timestamps,
)

Operation = Callable[[int], Any]
#: Every methodology, in the order a kernel benchmark's cases are laid out (the
#: registration). Each has `SUITE_NAME` (what a suite's `methodologies` names it by, or None),
#: `cases(base, cfg)` (a kernel benchmark's cases of it), `claims(case)` (exactly one claims
#: each case), `operation`, `series` and `derive`.
METHODS: tuple[ModuleType, ...] = (naive, sequential, timestamps, breakdown, ffi_floor, fusion,
                                   cadence)
#: The methodologies a suite may name.
SUITE_NAMES: tuple[str, ...] = tuple(m.SUITE_NAME for m in METHODS if m.SUITE_NAME)


def method_of(case: Case) -> ModuleType:
    (method,) = (m for m in METHODS if m.claims(case))
    return method


def operation(target: Target, case: Case, native: Any) -> Operation:
    """The timed operation of `case` on `target` (`native` is the loaded C loop, or None)."""
    return method_of(case).operation(target, case, native)


def series(samples: GroupSamples, cal: Calibration, clock_offset_ns: int = 0,
           rounds: np.ndarray | None = None) -> Out:
    """Per estimate, the per-round (or per-sample) values of one process (of its measured
    `rounds`, where given: analysis/states.py): each case's methodology makes its own, then
    each methodology derives what spans cases."""
    view = View(samples, cal, clock_offset_ns, rounds)
    out: Out = {}
    for index, case in enumerate(samples.cases):
        method_of(case).series(view, index, case, out)
    for method in METHODS:
        method.derive(out, view)
    return out


def worst_rel_ci(samples: GroupSamples, cal: Calibration, target_rel: float) -> float:
    """Largest relative CI half-width among one process's headline estimates, 0 for those
    that are precise enough by the absolute floor."""
    rels = []
    for key, s in series(samples, cal).items():
        if key.metric in STOP_METRICS:
            est = median_ci(np.asarray(s.values))
            half = (est.ci_high - est.ci_low) / 2
            rels.append(0.0 if precise_enough(half, est.value, target_rel) else est.rel_ci)
    return max(rels, default=float("inf"))
