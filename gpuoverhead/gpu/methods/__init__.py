"""Methodologies: how a case's operations are issued, waited for and timed.

`operation(target, case, native)` gives `op(n)`, which issues `n` operations and waits as
the case's methodology defines; the sampler times calls of `op` and nothing else. An op may
return parts of its sample (per-call times of a breakdown, GPU timestamps), which the
sampler keeps beside the wall time.
"""

from collections.abc import Callable
from typing import Any

from gpuoverhead.gpu.kernels import Target
from gpuoverhead.gpu.layers.raw import ffi_floor
from gpuoverhead.gpu.methods import breakdown, naive, sequential, timestamps
from gpuoverhead.suite.model import FFI_FLOOR, TIMESTAMPS, Case

Operation = Callable[[int], Any]


def operation(target: Target, case: Case, native: Any) -> Operation:
    """The timed operation of `case` on `target` (`native` is the loaded C loop, or None)."""
    if case.methodology == "naive":
        return naive.operation(target, case)
    if case.methodology == "breakdown":
        return breakdown.operation(target, case)
    if case.methodology == FFI_FLOOR:
        return ffi_floor(target)
    if case.sync == TIMESTAMPS:
        return timestamps.operation(target)
    return sequential.operation(target, case, native)
