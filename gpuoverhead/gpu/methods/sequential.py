"""Sequential: N operations issued back to back, one wait at the end.

Per-dispatch cost is the slope of wall time against N (see `stats.round_fits`); CPU cost
per dispatch the slope of issue time, read before the wait. Encodings:
- `submit`: each operation has its own encoder, compute pass and submit;
- `pass`: one encoder holding N compute passes, one submit;
- `dispatch`: one compute pass holding N operations, one submit.
Pipeline and bind group are set for every dispatch in every encoding, as a real workload
whose dispatches differ would do, so encodings differ only in encoder, pass and submit calls.
The layer (wrapper, raw, native) decides what issues the calls; the wait is always the same.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

from gpuoverhead.gpu.kernels import Target
from gpuoverhead.gpu.layers import issuer
from gpuoverhead.suite.model import Case


def operation(target: Target, case: Case, native: Any) -> Callable[[int], tuple[int]]:
    """`op(n)`: issue n operations, read the clock, wait. The clock read between the last
    submit and the wait is the sample's issue time (CPU cost), apart from its completion."""
    issue, wait, clock = issuer(target, case.layer, case.encoding, native), target.wait, \
        perf_counter_ns

    def op(n: int) -> tuple[int]:
        issue(n)
        issued = clock()
        wait()
        return (issued,)

    return op
