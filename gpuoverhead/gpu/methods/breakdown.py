"""Breakdown: the CPU time of each call of one `submit` operation, timed in place.

Each sample is one operation and its wait with the clock read between calls; the parts
(create encoder, begin pass, set pipeline, set bind group, dispatch, end pass, finish,
submit, wait, release) are kept per sample. The clock's own cost is measured once per run
and subtracted in the estimates, not here, so the samples stay raw observations.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuoverhead import records
from gpuoverhead.gpu.kernels import Target
from gpuoverhead.gpu.layers import raw, wrapper
from gpuoverhead.suite.model import Case

CALLS = records.CALLS


def operation(target: Target, case: Case) -> Callable[[int], tuple[int, ...]]:
    timed = raw.build(target)[1] if case.layer == "raw" else (lambda: wrapper.breakdown(target))
    return lambda n: timed()
