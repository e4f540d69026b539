"""Worker processes: each measures one group on a device of its own, in a fresh process.

The parent spawns one worker after another (never two at once: they would share the GPU
and the CPU), sends it a Task, relays its progress, and gets back its raw samples and its
calibration. A fresh process per measurement is how between-process variation (driver
state, memory placement, clocks) becomes visible instead of hidden in one process's CI.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from functools import partial
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.analysis.samples import Calibration, GroupSamples
from gpuoverhead.analysis.series import worst_rel_ci
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.gpu import adapters, implementations, methods
from gpuoverhead.gpu import fusion_patterns as fusion
from gpuoverhead.gpu.kernels import build_targets, compile_pipeline
from gpuoverhead.gpu.methods import fusion as fusion_method
from gpuoverhead.gpu.wait import waiter
from gpuoverhead.run.budget import Budget
from gpuoverhead.run.rounds import sample_group, timer_cost_ns
from gpuoverhead.suite.model import TIMESTAMPS, Case, Group

#: How long the parent waits for a worker's next message before it checks that it lives.
_POLL_S = 0.2
#: Seconds a worker may take to start, open its device and compile, beyond --stall-timeout.
STARTUP_S = 120.0


@dataclass(frozen=True)
class Task:
    """What one worker process measures, on which adapter (matched by its description)."""

    group: Group
    adapter: adapters.AdapterInfo
    budget: Budget
    seed: tuple[int, ...]
    process: int
    native: bool
    required_limits: dict[str, int]
    #: The browser a `chromium` job starts (its own, fresh, per worker process).
    browser: str | None = None


@dataclass
class Outcome:
    """What a worker sends back: its samples and calibration, or the error that stopped it."""

    process: int
    samples: GroupSamples | None = None
    calibration: Calibration | None = None
    #: Epoch ns minus perf_counter ns in the worker, to put its samples on a shared clock.
    clock_offset_ns: int = 0
    error: str | None = None
    device_notes: dict[str, Any] = field(default_factory=dict)
    #: Seconds of measured rounds this process was given (run/budget.py).
    budget_s: float = 0.0
    #: Wall-clock seconds of the whole worker, start-up included (set by the parent).
    seconds: float = 0.0


def open_device(info: adapters.AdapterInfo, timestamps: bool,
                required_limits: dict[str, int], f16: bool = False
                ) -> tuple[Any, dict[str, Any]]:
    """A device on the adapter described by `info`, enumerated afresh in this process (a
    Dawn adapter serves one device only), with the implementation's notes on it."""
    implementations.get(info.implementation).only(info.backend)
    found = [f for f in adapters.discover([info.implementation])[0] if f.info == info]
    if not found:
        raise UserError(f"adapter {info.label} is gone")
    features = (["timestamp-query"] if timestamps else []) + (["shader-f16"] if f16 else [])
    impl = implementations.get(info.implementation)
    return impl.request_device(found[0].adapter, features, required_limits)


def measure(job: Task, send: Any) -> Outcome:
    """The worker's body: set up, sample, check outputs. Runs in the child process."""
    from gpuoverhead.gpu.layers import native as native_layer

    group = job.group
    impl = implementations.get(job.adapter.implementation)
    timestamps = any(c.sync == TIMESTAMPS for c in group.cases)
    device, notes = open_device(job.adapter, timestamps, job.required_limits,
                                group.precision == "f16")
    wait = waiter(device)
    loop = native_layer.load() if job.native else None
    if isinstance(loop, str):
        raise UserError(loop)
    cal = Calibration(timer_ns=timer_cost_ns(),
                      tick_ns=impl.tick_ns(device.queue) if timestamps else None)
    rng = np.random.default_rng(list(job.seed))
    notes = {**notes, "wait": wait.__name__}
    if group.fusion is not None:
        works = fusion.build(device, group, rng, wait)
        ops = {case: fusion_method.operation(works[case], device, wait, case.sync == TIMESTAMPS,
                                             case.encoding)
               for case in group.cases}
        return _sample(job, group, ops, partial(fusion.verify, works), cal, rng, send, notes)
    pipeline = compile_pipeline(device, group.kernel, group.workgroup_size)
    targets = build_targets(device, pipeline, group, rng, impl.name, wait)

    def verify(counts: dict[Case, int]) -> None:
        for case, target in targets.items():
            target.dispatched = counts[case]
            target.verify(case.id)

    ops = {case: methods.operation(targets[case], case, loop) for case in group.cases}
    return _sample(job, group, ops, verify, cal, rng, send, notes)


def measure_torch(job: Task, send: Any) -> Outcome:
    """The worker's body for the PyTorch baselines (same sampling, same output check)."""
    from gpuoverhead.pytorch import baseline as torch_baseline

    notes: dict[str, Any] = {}
    rng = np.random.default_rng(list(job.seed))
    if job.group.fusion is not None:
        from gpuoverhead.pytorch import fusion_patterns as torch_fusion

        group, ops, verify, cuda_events = torch_fusion.operations(job.group, rng, notes)
        # CUDA events give ns directly: one "tick" is one ns.
        cal = Calibration(timer_cost_ns(), 1.0 if cuda_events else None)
        return _sample(job, group, ops, verify, cal, rng, send, notes)
    group, ops, verify = torch_baseline.operations(job.group, rng, notes)
    return _sample(job, group, ops, verify, Calibration(timer_cost_ns(), None), rng, send, notes)


def measure_browser(job: Task, send: Any) -> Outcome:
    """The worker's body for a browser: a fresh browser and page, the cases timed in it."""
    from gpuoverhead.browser import worker as browser

    assert job.browser is not None
    timestamps = any(c.sync == TIMESTAMPS for c in job.group.cases)
    with browser.page(job.browser, job.group.kernel.source) as (_, tab):
        ops, verify, timed = browser.operations(job.group, tab)
        if timestamps and not timed:
            raise UserError(f"{job.adapter.label}: the page got no timestamp-query feature")
        # The page returns GPU times in ns: one "tick" is one ns.
        cal = Calibration(timer_cost_ns(), 1.0 if timed else None)
        rng = np.random.default_rng(list(job.seed))
        return _sample(job, job.group, ops, verify, cal, rng, send, {})


def _sample(job: Task, group: Group, ops: dict[Case, Any], verify: Any, cal: Calibration,
            rng: np.random.Generator, send: Any, notes: dict[str, Any]) -> Outcome:
    """Interleaved sampling with progress sent to the parent, then the output check."""
    counts = dict.fromkeys(group.cases, 0)

    def progress(samples: GroupSamples, elapsed: float, budget: float) -> None:
        send(("round", job.process, samples.rounds, elapsed, budget))

    send(("ready",))
    offset = time.time_ns() - perf_counter_ns()
    precision = partial(worst_rel_ci, cal=cal, target_rel=group.sampling.target_rel_ci)
    samples = sample_group(group, ops, rng, job.budget, precision, progress, counts)
    unchecked = verify(counts)
    if unchecked:
        notes = {**notes, "unchecked": unchecked}
    return Outcome(job.process, samples, cal, offset, device_notes=notes,
                   budget_s=job.budget.process_s)


def _child(job: Task, conn: Any) -> None:
    body = measure_torch if job.adapter.implementation.startswith("torch") else \
        measure_browser if job.browser else measure
    if job.browser:  # a stop from the parent ends the browser too (see browser/chromium.py)
        signal.signal(signal.SIGTERM, _interrupted)

    def send(message: tuple) -> None:
        try:
            conn.send(message)
        except (BrokenPipeError, EOFError, OSError):  # the parent is gone: leave quietly
            os._exit(0)

    try:
        outcome = body(job, send)
    except KeyboardInterrupt:
        return
    except (IntegrityError, UserError) as exc:
        outcome = Outcome(job.process, error=str(exc))
    except Exception:  # a bug or a driver failure: report it whole, the parent goes on
        outcome = Outcome(job.process, error=traceback.format_exc(limit=5).strip())
    send(("done", outcome))
    conn.close()


def _interrupted(*_: Any) -> None:
    raise KeyboardInterrupt


def run(job: Task, on_round: Any, stall_timeout_s: float = float("inf")) -> Outcome:
    """Spawn a worker for `job`, relay its progress to `on_round`, return its outcome.

    A worker that finishes no round for `stall_timeout_s` (a GPU wait that never returns,
    a kernel that runs far too long) is stopped and its job reported as failed; the clock
    starts when it has set up (start-up, device and pipelines get STARTUP_S more). A
    KeyboardInterrupt in the parent (Ctrl-C, SIGTERM) stops the worker before it goes on.
    """
    began = time.monotonic()
    outcome = _run(job, on_round, stall_timeout_s)
    outcome.seconds = time.monotonic() - began
    return outcome


def _run(job: Task, on_round: Any, stall_timeout_s: float) -> Outcome:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(job, child), daemon=True)
    proc.start()
    child.close()
    last, limit = time.monotonic(), stall_timeout_s + STARTUP_S
    try:
        while True:
            if parent.poll(_POLL_S):
                try:
                    kind, *payload = parent.recv()
                except EOFError:
                    break
                if kind == "done":
                    proc.join()
                    return payload[0]
                last, limit = time.monotonic(), stall_timeout_s
                if kind == "round":
                    on_round(*payload)
            elif not proc.is_alive():
                break
            elif time.monotonic() - last > limit:
                _stop(proc)
                return Outcome(job.process, error=(
                    f"worker process {job.process} finished no round in {stall_timeout_s:g} s "
                    "(a GPU wait that does not return, or a kernel that runs far too long); "
                    "it was stopped (--stall-timeout)"))
    except BaseException:
        _stop(proc)
        raise
    proc.join()
    return Outcome(job.process, error=f"worker process {job.process} died "
                                      f"(exit code {proc.exitcode}) before reporting")


def _stop(proc: Any) -> None:
    """Terminate a worker; kill it if a driver call keeps it from exiting."""
    proc.terminate()
    proc.join(2.0)
    if proc.is_alive():
        proc.kill()
        proc.join()


def seeds(run_seed: int, benchmark: int, process: int, job: int) -> tuple[int, ...]:
    """The interleaving seed of one worker: derived from the run's recorded seed."""
    return (run_seed, benchmark, process, job)

