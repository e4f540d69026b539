"""The PyTorch builds' shared machinery (and a numpy build's, `built`): a workload's units
become timed ops (one unit per call, or its GPU time from CUDA events), each checked against
numpy once before sampling;
a compile or capture that fails is recorded as data and its case left out, never a crash.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.cases import TIMESTAMPS, Case, Group
from gpuoverhead.torch_forms import COMPILE, device_name
from gpuoverhead.workloads.work import Work, check, read_loop, units_op, verify_outputs

#: A workload's PyTorch build: (group, rng, device, torch) -> per case a maker of its unit
#: (called once: it compiles or captures), and per case its output as a Work.
Units = Callable[[Group, np.random.Generator, Any, Any], tuple[dict, dict]]


def operations(group: Group, units_of: Units, rng: np.random.Generator,
               notes: dict[str, Any], kind: str | None = None
               ) -> tuple[Group, dict[Case, Callable[[int], Any]],
                          Callable[[dict[Case, int]], list[str]], bool]:
    """The group as it runs on torch's device `kind` (None: the one torch finds), each
    case's timed op, the output check after sampling, and whether the ops return GPU times
    (CUDA events, in ns)."""
    import torch

    kind = kind or device_name()
    dev = torch.device(kind)
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is f32 (and f64) math
    sync = (torch.cuda.synchronize if kind == "cuda" else
            torch.mps.synchronize if kind == "mps" else (lambda: None))
    units, outputs = units_of(group, rng, dev, torch)
    if kind == "cpu":  # the CPU reference's figures depend on how many threads it used
        notes["torch_threads"] = torch.get_num_threads()
    group, ops, verify = built(group, units, outputs, sync, notes,
                               lambda unit: _timed(unit, sync, torch))
    if kind == "cuda" and any(c.implementation == COMPILE for c in group.cases):
        # Where CUDA graphs were skipped, torch-compile is Inductor's kernels launched one
        # by one: say so in run.json rather than only in a log line.
        from torch._dynamo.utils import counters

        notes["torch_compile_cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
    return group, ops, verify, kind == "cuda"


def built(group: Group, units: dict, outputs: dict, sync: Callable[[], None],
          notes: dict[str, Any], timed: Callable[[Callable[[], None]], Callable] | None = None
          ) -> tuple[Group, dict[Case, Callable[[int], Any]],
                     Callable[[dict[Case, int]], list[str]]]:
    """Each case's unit made (compiled, captured) and run once, checked against numpy, then
    wrapped as its timed op (`timed`: for GPU-timestamp cases); a case whose build fails is
    recorded in `notes` and left out."""
    ops: dict[Case, Callable[[int], Any]] = {}
    kept = []
    timings = notes.setdefault("torch_fusion_build_s", {})
    for case in group.cases:
        start = time.perf_counter()
        try:
            with deadline(group.compile_limit_s) if case.implementation == COMPILE \
                    else nullcontext():
                unit = units[case]()  # captures (a capture's warm-up runs a unit)
                outputs[case].reset()
                unit()  # compiles (torch.compile), and runs one unit on fresh inputs
                sync()
            if (readback := outputs[case].readback) is not None:
                readback[0]()  # a unit ends with its read (the hybrid's host stage)
        except (Exception, CompileTimeout) as exc:  # compile, capture failures are data
            timings[case.id] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            continue
        timings[case.id] = round(time.perf_counter() - start, 6)
        check(case, outputs[case], 1, "before sampling, one unit")
        ops[case] = (timed(unit) if timed and case.sync == TIMESTAMPS else
                     units_op(unit, sync) if readback is None else read_loop(unit, readback))
        kept.append(case)
    for case in kept:
        outputs[case].reset()

    def verify(counts: dict[Case, int]) -> list[str]:
        return verify_outputs({case: outputs[case] for case in kept}, counts)

    return replace(group, cases=tuple(kept)), ops, verify


class CompileTimeout(BaseException):
    """A torch.compile build that ran past the suite's `compile_limit_s`. A BaseException,
    as KeyboardInterrupt is: the import machinery and the compilers catch Exception (and
    OSError, TimeoutError's base) in many places and would swallow it, compiling on."""


#: Seconds between further alarms where the first was swallowed all the same.
_REPEAT_S = 1.0


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise CompileTimeout in the block once `seconds` have passed, and each `_REPEAT_S`
    after until it ends: an unrolled compile that would run for half an hour becomes its
    case's error row, not a worker stopped as stalled. Where Dynamo or Inductor catch it
    and fail otherwise (wrapped as BackendCompilerFailed, InductorError), the failure is
    still the time limit's. SIGALRM interrupts the main thread only (Inductor's compile
    workers run on; they are not what waits), and exists on POSIX only: on another
    thread, or on Windows, there is no limit."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not \
            threading.main_thread():
        yield
        return
    message = f"torch.compile did not finish within {seconds:g} s (compile_limit_s)"
    fired: list[int] = []

    def expire(signum: int, frame: Any) -> None:
        fired.append(signum)
        raise CompileTimeout(message)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT_S)
    try:
        yield
    except Exception as exc:  # CompileTimeout itself is no Exception: it goes on as it is
        if fired:
            raise CompileTimeout(message) from exc
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)


def _timed(unit: Callable[[], None], sync: Callable[[], None], torch: Any
           ) -> Callable[[int], tuple[int, int]]:
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def op(n: int) -> tuple[int, int]:
        begin.record()
        for _ in range(n):
            unit()
        end.record()
        sync()
        return 0, int(round(begin.elapsed_time(end) * 1e6))

    return op


def work(read: Callable[[], np.ndarray], reset: Callable[[], None],
          reference: Callable[[int], np.ndarray | None], exact: bool,
          done: list[int] | None = None) -> Work:
    return Work([], read, reset, reference, exact, done if done is not None else [0])


def compiled(fn: Callable[..., Any], torch: Any) -> Callable[..., Any]:
    return torch.compile(fn, dynamic=False)


def compiled_step(step: Callable[[], None], fixed: list[Any], torch: Any
                  ) -> Callable[[], None]:
    """A whole decode step through torch.compile: Inductor's fused kernels, replayed as CUDA
    graphs on CUDA (`reduce-overhead`), as an engine built on torch.compile runs it. The
    step writes its KV caches and logits in place; their addresses are marked static (as
    a static KV cache is) or CUDA graphs would be skipped for the mutated inputs."""
    for tensor in fixed:
        torch._dynamo.mark_static_address(tensor)
    return torch.compile(step, mode="reduce-overhead" if torch.cuda.is_available() else None,
                         dynamic=False, fullgraph=True)


def graph_of(steps: Callable[[], None], torch: Any) -> Callable[[], None]:
    """`steps` captured as one CUDA graph (after a warm-up run on a side stream, as torch
    asks); returns its replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        steps()
    torch.cuda.current_stream().wait_stream(stream)
    captured = torch.cuda.CUDAGraph()
    with torch.cuda.graph(captured):
        steps()
    return captured.replay


def graph_in_place(steps: Callable[[], None], x: Any, torch: Any) -> Callable[[], None]:
    """`steps`, which update the tensor `x` in place, as one CUDA graph's replay; `x` as it
    was before (capturing runs a unit, and the checks count units)."""
    saved = x.clone()
    replay = graph_of(steps, torch)
    x.copy_(saved)
    return replay
