"""Where a worker process's time goes before its first sample, per job of a suite: the real
worker path (the plan's jobs, a spawned process, the driver's `prepare`), each step timed.

Steps: `interpreter` (from the parent's spawn to the worker's first line: a fresh Python, and
unpickling the task, which imports what it names), `imports` (the worker module and the
drivers), `enumerate` (adapter enumeration, every call), `device` (device requests),
`pipelines` (pipelines, targets, a workload's build and numpy check), `native` (loading the
C loop), `other` (the rest of `prepare`), `first sample` (clock calibration and one op).
`total` is the parent's wall time from spawn to the worker's exit (teardown included), and
`cpu` the worker's CPU seconds (user plus system) from its start to its first sample.

Run from the repository root:
`python benchmarks/speed/worker_start.py [--suite configs/ci.yaml] [--repeat 2] [--profile JOB]
[IMPLEMENTATION...]` (default: the default suite, every WebGPU implementation installed).
`--profile JOB` prints the 25 costliest calls (cumulative CPU time) of the first job whose
label contains JOB, instead of the table.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEPS = ("interpreter", "imports", "enumerate", "device", "pipelines", "native", "other",
         "first sample")


def _timed(step: str, marks: dict[str, float], fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, adding the seconds of each call to `marks[step]`."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        t0 = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            marks[step] = marks.get(step, 0.0) + time.monotonic() - t0

    return wrapped


def _instrument(marks: dict[str, float]) -> None:
    """Wrap the start-up steps where the worker path calls them."""
    from gpuoverhead.drivers import webgpu
    from gpuoverhead.gpu import adapters, bindings
    from gpuoverhead.gpu.layers import native
    from gpuoverhead.workloads import registry as workloads

    adapters.discover = _timed("enumerate", marks, adapters.discover)
    bindings.Binding.request_device = _timed("device", marks, bindings.Binding.request_device)
    for name in ("compile_pipeline", "build_targets"):
        setattr(webgpu, name, _timed("pipelines", marks, getattr(webgpu, name)))
    workloads.build = _timed("pipelines", marks, workloads.build)
    native.load = _timed("native", marks, native.load)


def _quick() -> Any:
    """The worker's quick cffi types where this version of the package has them."""
    try:
        from gpuoverhead.run.quick_types import quick_types
    except ImportError:
        return contextlib.nullcontext()
    return quick_types()


def _child(spawned: float, job: Any, profile: bool, conn: Any) -> None:
    """The worker's start-up as `worker.measure` does it, up to and including one sample."""
    began = time.monotonic()  # CLOCK_MONOTONIC is system-wide on Linux: comparable
    marks = {"interpreter": began - spawned}
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile(time.process_time)
        prof.enable()
    t0 = time.monotonic()
    import numpy as np

    from gpuoverhead.drivers import registry
    from gpuoverhead.run import worker  # noqa: F401
    from gpuoverhead.run.rounds import timer_cost_ns
    marks["imports"] = time.monotonic() - t0
    _instrument(marks)
    t0 = time.monotonic()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quick())  # as worker.measure does it, sampling included
        prepared = stack.enter_context(registry.get(job.driver).prepare(
            job, np.random.default_rng(0)))
        spent = sum(marks.get(s, 0.0) for s in ("enumerate", "device", "pipelines", "native"))
        marks["other"] = time.monotonic() - t0 - spent
        t0 = time.monotonic()
        timer_cost_ns()
        case = prepared.group.cases[0]
        prepared.ops[case](case.n_values[0])
        marks["first sample"] = time.monotonic() - t0
        usage = resource.getrusage(resource.RUSAGE_SELF)
        marks["cpu"] = usage.ru_utime + usage.ru_stime
    if prof is not None:
        import io
        import pstats

        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(25)
        marks["profile"] = out.getvalue()  # type: ignore[assignment]
    conn.send(marks)


def _spawn(job: Any, profile: bool = False) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    began = time.monotonic()
    proc = ctx.Process(target=_child, args=(began, job, profile, child))
    proc.start()
    child.close()
    marks = parent.recv()
    proc.join()
    marks["total"] = time.monotonic() - began
    return marks


def _jobs(suite: Path, names: list[str]) -> list[Any]:
    from gpuoverhead.run.plan import RunOptions, prepare

    asked = {"webgpu": tuple(names) if names else None}
    plan = prepare(RunOptions(suite, Path("/tmp"), implementations=asked))
    return [j for jobs in plan.benchmarks for j in jobs]


def main() -> None:
    from gpuoverhead.resources import DEFAULT_SUITE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("implementations", nargs="*")
    parser.add_argument("--suite", type=Path, default=Path(DEFAULT_SUITE))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--profile")
    args = parser.parse_args()
    jobs = _jobs(args.suite, args.implementations)
    if args.profile:
        job = next(j for j in jobs if args.profile in f"{j.group.id} {j.label}")
        print(_spawn(job, profile=True)["profile"])
        return
    print(f"{'job':40s} " + " ".join(f"{s[:11]:>11s}" for s in (*STEPS, "total", "cpu")))
    for job in jobs:
        for _ in range(args.repeat):
            marks = _spawn(job)
            name = f"{job.group.id} {job.label}"[:40]
            print(f"{name:40s} " + " ".join(f"{marks.get(s, 0.0):11.3f}"
                                            for s in (*STEPS, "total", "cpu")), flush=True)


if __name__ == "__main__":
    main()
