"""The compile time limit (workloads/torch_ops.deadline) on builds whose truth is known, no
torch needed: a build past it is its case's error row naming the limit, a failure that
swallowed the alarm or wrapped it still says so, a RecursionError is a row too, and the
process's timer and SIGALRM handler are left as they were."""

from __future__ import annotations

import contextlib
import signal
import time

import numpy as np
import pytest

from gpuoverhead.cases import Case, Group, Kernel, Sampling
from gpuoverhead.torch_forms import COMPILE, EAGER
from gpuoverhead.workloads.torch_ops import CompileTimeout, built, deadline, work

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no SIGALRM")


def _left_as_it_was(handler: object) -> None:
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_block_past_its_limit_raises_and_the_timer_is_cancelled():
    handler = signal.getsignal(signal.SIGALRM)
    start = time.monotonic()
    with pytest.raises(CompileTimeout, match=r"did not finish within 0\.05 s"), deadline(0.05):
        time.sleep(5)
    assert time.monotonic() - start < 1
    _left_as_it_was(handler)
    with deadline(5):  # one that ends in time leaves nothing armed
        pass
    _left_as_it_was(handler)


def test_an_alarm_swallowed_or_wrapped_is_still_the_limit():
    """Code under the limit that catches the alarm and fails otherwise (as a compiler
    wrapping it would) fails as the limit; one that swallows it gets the next, a second
    later, rather than compiling on."""
    with pytest.raises(CompileTimeout) as raised, deadline(0.05):
        try:
            time.sleep(5)
        except BaseException as exc:
            raise RuntimeError("backend failed") from exc
    assert isinstance(raised.value.__cause__, RuntimeError)
    start = time.monotonic()
    with pytest.raises(CompileTimeout), deadline(0.05):
        with contextlib.suppress(BaseException):
            time.sleep(5)
        time.sleep(5)
    assert time.monotonic() - start < 2


def _group(*units: tuple[str, int]) -> Group:
    kernel = Kernel("k", None, "", "all")  # type: ignore[arg-type]
    cases = tuple(Case("b", "k", 1, 1, "fusion", "dispatch", "wait", (1, 2), "wrapper", form,
                       "fused", k) for form, k in units)
    # Half a second: a build that recurses to Python's limit takes a millisecond, but a busy
    # machine can hold its process off the CPU for tens of them (it ran past 0.05 s there).
    return Group("b", kernel, 1, 1, Sampling(1.0, 0.5, 3, 3, 1), cases, 8, "loop",
                 compile_limit_s=0.5)


def test_builds_past_the_limit_or_recursing_are_rows_and_the_others_run():
    """A compile case that takes longer than `compile_limit_s`, and one whose build
    recurses without end, are recorded with their messages and left out; an eager case
    that takes as long has no limit and is kept."""
    group = _group((COMPILE, 1), (COMPILE, 2), (EAGER, 3))
    slow, eager, recursing = group.cases[0], group.cases[2], group.cases[1]

    def recurse() -> None:
        recurse()

    units = {slow: lambda: lambda: time.sleep(5), recursing: lambda: recurse,
             eager: lambda: lambda: time.sleep(0.6)}  # past the limit
    outputs = {c: work(lambda: np.zeros(1), lambda: None, lambda n: np.zeros(1), True)
               for c in group.cases}
    notes: dict = {}
    kept, ops, _ = built(group, units, outputs, lambda: None, notes)
    assert kept.cases == (eager,)
    found = notes["torch_fusion_build_s"]
    assert found[slow.id] == {"error": "CompileTimeout: torch.compile did not finish within "
                                       "0.5 s (compile_limit_s)"}
    assert found[recursing.id]["error"].startswith("RecursionError")
    assert found[eager.id] >= 0.6
