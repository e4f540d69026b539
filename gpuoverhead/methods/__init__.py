"""Methodologies: how a case's operations are issued and waited for.

Each module offers `operation(target, case)`, a function `op(n)` that issues `n` operations
and waits as the methodology defines; the sampler times calls of `op` and nothing else.
An *operation* is always the same calls: set pipeline, set bind group, dispatch, plus the
encoder, pass and submit around them that the encoding dictates.
"""

from collections.abc import Callable

from gpuoverhead.methods import naive, sequential
from gpuoverhead.suite import Case
from gpuoverhead.workload import Target

Operation = Callable[[int], None]


def operation(target: Target, case: Case) -> Operation:
    """The timed operation of `case` on `target`."""
    module = naive if case.methodology == "naive" else sequential
    return module.operation(target, case)
