"""Worker processes: each measures one group on a device of its own, in a fresh process.

The parent spawns one worker after another (never two at once: they would share the GPU
and the CPU), sends it a Task, relays its progress, and gets back its raw samples and its
calibration. A fresh process per measurement is how between-process variation (driver
state, memory placement, clocks) becomes visible instead of hidden in one process's CI.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby
from multiprocessing import resource_tracker
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead import interrupts
from gpuoverhead.analysis.samples import Calibration, GroupSamples
from gpuoverhead.cases import CADENCE
from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Job, Prepared
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.methods import worst_rel_ci
from gpuoverhead.records import DISPATCHES_PER_UNIT, GPU_PER_DISPATCH_NS, READ_GB_S
from gpuoverhead.run import telemetry
from gpuoverhead.run.budget import Budget
from gpuoverhead.run.quick_types import quick_types
from gpuoverhead.run.rounds import sample_group, timer_cost_ns
from gpuoverhead.torch_forms import COMPILE

#: How long the parent waits for a worker's next message before it checks that it lives.
_POLL_S = 0.2
#: Seconds an interrupted run waits for its running worker's rounds (`_wind_down`).
GRACE_S = 3.0
#: Seconds a worker may take to start, open its device and compile, beyond --stall-timeout.
STARTUP_S = 120.0


@dataclass(frozen=True)
class Task:
    """What one worker process measures: a job, its budget, its seed and process number."""

    job: Job
    budget: Budget
    seed: tuple[int, ...]
    process: int


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
    #: Seconds of sampling (warm-up and measured rounds), the rest being start-up.
    sampling_s: float = 0.0
    #: Stopped at the run's deadline (its time limit): left out, not a failure.
    cut: bool = False

    def least_sampling_s(self, min_rounds: int) -> float:
        """What warm-up and the least measured rounds (the suite's `min_rounds`) took of
        its sampling."""
        if self.samples is None:
            return 0.0
        if any(c.methodology == CADENCE for c in self.samples.cases):
            return self.sampling_s  # a cadence needs its whole timeline to settle
        done = self.samples.warmup_rounds + self.samples.rounds
        return self.sampling_s * (self.samples.warmup_rounds + min_rounds) / max(1, done)


def measure(task: Task, send: Any) -> Outcome:
    """The worker's body: its driver prepares the ops; they are sampled, outputs checked."""
    rng = np.random.default_rng(list(task.seed))
    with quick_types(), registry.get(task.job.driver).prepare(task.job, rng) as prepared:
        return _sample(task, prepared, rng, send)


def _sample(task: Task, prepared: Prepared, rng: np.random.Generator, send: Any) -> Outcome:
    """Interleaved sampling with progress sent to the parent, then the output check."""
    group = prepared.group
    cal = Calibration(timer_ns=timer_cost_ns(), tick_ns=prepared.tick_ns,
                      bandwidth_gb_s=task.job.adapter.bandwidth_gb_s,
                      read_gb_s=prepared.notes.get(READ_GB_S),
                      gpu_per_dispatch_ns=prepared.notes.get(GPU_PER_DISPATCH_NS),
                      dispatches=prepared.notes.get(DISPATCHES_PER_UNIT, {}))
    counts = dict.fromkeys(group.cases, 0)

    def progress(samples: GroupSamples, elapsed: float, budget: float) -> None:
        send(("round", task.process, samples.rounds, elapsed, budget))

    send(("ready",))
    offset = time.time_ns() - perf_counter_ns()
    precision = partial(worst_rel_ci, cal=cal, target_rel=group.sampling.target_rel_ci)
    cpus: list[int] = []
    gpu, missing = telemetry.open_for(task.job.adapter.device)
    energy, joules = telemetry.per_sample(gpu, bool(group.fusion)), {}
    before = gpu.read() if gpu else {}
    began = time.monotonic()
    samples = sample_group(group, prepared.ops, rng, task.budget, precision, progress, counts,
                           cpus, energy, joules)
    sampling_s = time.monotonic() - began
    if samples.stop == "interrupted":
        return _interrupted(task, prepared, samples, cal, offset, counts, cpus, sampling_s)
    by_case = {c.id: (j, counts[c]) for c, j in joules.items()}
    state = telemetry.summary(before, gpu.read(), sum(counts.values()), by_case) if gpu \
        else missing
    notes = {**prepared.notes, **cpu_notes(cpus), "telemetry": state}
    if unchecked := prepared.verify(counts):
        notes = {**notes, "unchecked": unchecked}
    return Outcome(task.process, samples, cal, offset, device_notes=notes,
                   budget_s=task.budget.process_s, sampling_s=sampling_s)


def _interrupted(task: Task, prepared: Prepared, samples: GroupSamples, cal: Calibration,
                 offset: int, counts: dict, cpus: list[int], sampling_s: float) -> Outcome:
    """What a worker asked to stop hands back: its rounds, once its outputs check; nothing
    (a KeyboardInterrupt) where the check fails, since a stop may have cut a unit short."""
    try:
        unchecked = prepared.verify(counts)
    except Exception:  # noqa: BLE001 - any failure: the rounds cannot be vouched for
        raise KeyboardInterrupt from None
    notes = {**prepared.notes, **cpu_notes(cpus), "telemetry": "not read: interrupted",
             **({"unchecked": unchecked} if unchecked else {})}
    return Outcome(task.process, samples, cal, offset, device_notes=notes,
                   budget_s=task.budget.process_s, sampling_s=sampling_s)


def cpu_notes(cpus: list[int]) -> dict[str, Any]:
    """run.json's record of where a worker ran while it sampled: the distinct CPUs seen at
    round starts, the most frequent, how often it changed between rounds, how many CPUs it
    was allowed, and the CPU of every round as runs of [cpu, rounds] (warm-up rounds first,
    the order of the samples' rounds; -1 where the OS does not say). A slow period that
    follows one CPU (or a migration) thus shows against the samples of its rounds."""
    known = [c for c in cpus if c >= 0]
    getaffinity = getattr(os, "sched_getaffinity", None)
    return {"cpus": sorted(set(known)),
            "cpu_most": Counter(known).most_common(1)[0][0] if known else None,
            "cpu_changes": sum(a != b for a, b in zip(known, known[1:], strict=False)),
            "cpu_affinity": len(getaffinity(0)) if getaffinity is not None else None,
            "cpu_runs": [[cpu, len(list(run))] for cpu, run in groupby(cpus)]}


def _asked_to_stop(signum: int, frame: object) -> None:
    """SIGINT or SIGHUP in a worker. The first only asks it to stop at its next safe point:
    as it starts (`_child`), or at the next sample, outside any timed call and driver call,
    so that the rounds measured come back. Raised at once, a KeyboardInterrupt lands where
    the worker happens to be, in a driver's callback too (requesting the device), which
    prints "Exception ignored" and fails the benchmark; and the parent stops a worker still
    preparing after GRACE_S. Ctrl-C and a hang-up reach the whole process group and the
    parent sends one more: one within ECHO_S of the first is that echo; a later one is a
    second Ctrl-C, and raises."""
    global _first_stop
    now = time.monotonic()
    interrupts.request(signum)
    if _first_stop is not None and now - _first_stop > ECHO_S:
        raise KeyboardInterrupt
    _first_stop = _first_stop or now


#: When the worker was first asked to stop (monotonic), and how soon after it a SIGINT is
#: the same stop's echo.
_first_stop: float | None = None
ECHO_S = 1.0


#: The signals that ask a worker to stop: Ctrl-C and a closed terminal reach the whole
#: process group, and the parent asks with SIGINT (`_wind_down`).
STOPS = tuple(s for s in (signal.SIGINT, interrupts.SIGHUP) if s is not None)
#: Whether signals can be held back (blocked): not on Windows.
_MASKS = hasattr(signal, "pthread_sigmask")


@contextlib.contextmanager
def _stops_held() -> Iterator[None]:
    """Hold back STOPS while a worker is spawned: the child inherits them blocked, so that
    one sent while its interpreter starts and imports waits for `_child`'s handler instead
    of raising (a traceback) inside an import. The parent gets its own when they return."""
    if not _MASKS:
        yield
        return
    resource_tracker.ensure_running()  # its first start unblocks SIGINT when it returns
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _child(task: Task, conn: Any) -> None:
    for signum in STOPS:
        signal.signal(signum, _asked_to_stop)

    def send(message: tuple) -> None:
        try:
            conn.send(message)
        except (BrokenPipeError, EOFError, OSError):  # the parent is gone: leave quietly
            os._exit(0)

    try:
        if _MASKS:  # a stop sent while it started lands here, in its handler
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
        interrupts.check()
        outcome = measure(task, send)
    except KeyboardInterrupt:
        return
    except (IntegrityError, UserError) as exc:
        outcome = Outcome(task.process, error=str(exc))
    except MemoryError:  # the machine's or the process's memory limit, not a bug
        outcome = Outcome(task.process, error="out of memory in the worker process (its "
                          "memory limit, or the machine's, is below what the case needs)")
    except Exception:  # a bug or a driver failure: report it whole, the parent goes on
        outcome = Outcome(task.process, error=traceback.format_exc(limit=5).strip())
    send(("done", outcome))
    conn.close()
    gc.freeze()  # as cli.main ends: its interpreter's end looks for no reference cycles


def run(task: Task, on_round: Any, stall_timeout_s: float = float("inf"),
        deadline: float = float("inf")) -> Outcome:
    """Spawn a worker for `task`, relay its progress to `on_round`, return its outcome.

    A worker that finishes no round for `stall_timeout_s` (a GPU wait that never returns,
    a kernel that runs far too long) is stopped and its task reported as failed; the clock
    starts when it has set up (start-up, device and pipelines get STARTUP_S more, and each
    torch.compile its `compile_limit_s`: `startup_allowance_s`). A
    KeyboardInterrupt in the parent (Ctrl-C, SIGTERM, SIGHUP) stops the worker before it goes on.
    One still running at `deadline` (monotonic; the run's time limit) is stopped and `cut`.
    """
    began = time.monotonic()
    outcome = _run(task, on_round, stall_timeout_s, deadline)
    outcome.seconds = time.monotonic() - began
    return outcome


def startup_allowance_s(job: Job) -> float:
    """Seconds a worker may take beyond --stall-timeout before its first round: STARTUP_S,
    and each torch.compile case's time limit (each may take that long and still be a
    result, its case's error row, rather than the whole worker stopped as stalled)."""
    group = job.group
    return STARTUP_S + group.compile_limit_s * sum(c.implementation == COMPILE
                                                   for c in group.cases)


def _run(task: Task, on_round: Any, stall_timeout_s: float, deadline: float) -> Outcome:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(task, child), daemon=True)
    with _stops_held():
        proc.start()
    child.close()
    last, limit = time.monotonic(), stall_timeout_s + startup_allowance_s(task.job)
    try:
        while True:
            interrupts.check()
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
            if time.monotonic() > deadline:
                _stop(proc)
                return Outcome(task.process, cut=True, error=(
                    f"worker process {task.process} was stopped at the run's time limit"))
            if time.monotonic() - last > limit:
                _stop(proc)
                return Outcome(task.process, error=(
                    f"worker process {task.process} finished no round in {stall_timeout_s:g} s "
                    "(a GPU wait that does not return, or a kernel that runs far too long); "
                    "it was stopped (--stall-timeout)"))
    except KeyboardInterrupt:
        handed = _wind_down(proc, parent)
        if handed is None:
            raise
        return handed
    except BaseException:
        _stop(proc)
        raise
    proc.join()
    interrupts.check()  # it ended as the run was asked to stop: the stop's, not a failure
    return Outcome(task.process, error=f"worker process {task.process} died "
                                      f"(exit code {proc.exitcode}) before reporting")


def _wind_down(proc: Any, parent: Any) -> Outcome | None:
    """The run was interrupted while `proc` ran: ask it to stop (SIGINT) and wait up to
    GRACE_S for the rounds it measured; None (and the worker stopped) where none come."""
    if os.name == "posix" and proc.pid is not None:  # Windows: its console's Ctrl-C alone
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGINT)
    until = time.monotonic() + GRACE_S
    while time.monotonic() < until and proc.is_alive():
        if parent.poll(_POLL_S):
            try:
                kind, *payload = parent.recv()
            except (EOFError, OSError):
                break
            if kind == "done" and payload[0].samples is not None and not payload[0].error:
                proc.join()
                return payload[0]
    _stop(proc)
    return None


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

