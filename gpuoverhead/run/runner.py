"""Run a plan: each job in its worker processes, its estimates, its files rewritten at once.

An interrupted run keeps every job that finished and estimates the others from the worker
processes that had run; a job whose output check fails in any process is recorded as an
error and contributes no rows.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from gpuoverhead import interrupts
from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Job
from gpuoverhead.errors import UserError
from gpuoverhead.results.columns import RUN_JSON, RunRecord
from gpuoverhead.results.write import write_json
from gpuoverhead.run import again, checks, cpus, environment, noise, precision, startups, worker
from gpuoverhead.run.budget import FINISH_S, HANDBACK_S, Budget, Schedule, Slot, process_cap_s
from gpuoverhead.run.files import RunFolder, check_free, open_all
from gpuoverhead.run.finish import finish, partners
from gpuoverhead.run.passes import half_of
from gpuoverhead.run.plan import (
    MAX_TIME_LIMIT_S,
    Plan,
    RunOptions,
    check_options,
    implementations_line,
    plural,
    prepare,
)


class Reporter(Protocol):
    """What the runner tells the user while it works (present/progress implements it)."""

    def run_started(self, lines: list[str]) -> None: ...
    def benchmark_started(self, label: str, index: int, total: int, seconds: float) -> None: ...
    def progress(self, done_s: float, info: str) -> None: ...
    def benchmark_done(self, label: str, summary: pd.DataFrame | None, errors: list[str]
                       ) -> None: ...


@dataclass
class RunResult:
    folder: Path
    record: RunRecord
    summary: pd.DataFrame
    #: Wall-clock seconds from the command's start to the results written.
    seconds: float = 0.0
    #: Every folder written: the run's, or an A/A run's two halves (RunOptions.halves).
    folders: list[Path] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.record.errors)


def run(options: RunOptions, reporter: Reporter) -> RunResult:
    """Plan, measure each benchmark in its worker processes, finish its rows, write them;
    the caller presents the result."""
    started = options.started
    check_options(options)  # a plain run id, before it names a folder
    run_id = options.run_id or environment.new_run_id()
    ids = [f"{run_id}-{half}" for half in "ab"] if options.halves else [run_id]
    check_free([options.out_root / i for i in ids], options.force)  # before drivers start
    plan = prepare(options)
    recorded = startups.load()
    schedule = _schedule(plan, started, recorded)
    # Once nothing the user gave can fail: an error leaves the caller's CPUs as they were.
    chosen_cpus, cpu_lines = cpus.choose(options.affinity)
    seed = options.seed if options.seed is not None else secrets.randbits(32)
    each = plan.processes // len(ids)
    folders = open_all([(options.out_root / i, _record(plan, options, i, seed, each,
                                                       chosen_cpus)) for i in ids], options.force)
    seeding = _Seeding(seed, np.random.default_rng(seed), time.time_ns())
    try:
        interrupts.check()
        for files in folders:
            files.save("running")  # from now on an interrupt leaves a readable run
        reporter.run_started(cpu_lines + _what_runs(plan, folders[0].folder, schedule,
                                                      recorded))
        try:
            _measure(plan, schedule, folders, reporter, seeding, options.stall_timeout_s)
        finally:  # what an interrupted run measured is as good a guess
            startups.save(recorded, schedule.startups)
    except KeyboardInterrupt:
        for files in folders:
            with contextlib.suppress(OSError):
                files.save("interrupted")
            files.abandon()
    except OSError as exc:  # a full disk, a folder removed under the run
        for files in folders:
            record = files.record()
            record.errors.append(f"cannot write results: {exc.strerror or exc}")
            record.status, record.finished = "failed", environment.now_iso()
            with contextlib.suppress(OSError):  # run.json alone may still fit
                write_json(files.folder / RUN_JSON, record.as_json())
        raise UserError(f"cannot write results to {folders[0].folder}: "
                        f"{exc.strerror or exc}; what was written before stays readable"
                        ) from None
    else:
        for files in folders:
            _closing_notes(files.start, schedule, files.summary(), files.skipped())
            if not options.quick:  # a smoke run's precision is not what it is for
                files.start.precision = precision.limits(files.summary(),
                                                         files.start.benchmarks,
                                                         schedule.limit_s, plan.halves > 1)
            files.save("failed" if files.record().errors else
                       "partial" if files.skipped() else "complete")
    finally:  # the run ids are free again
        for files in folders:
            files.release()
    files = folders[0]
    return RunResult(files.folder, files.record(), files.summary(),
                     time.monotonic() - started, [f.folder for f in folders])


def _closing_notes(record: RunRecord, schedule: Schedule, summary: pd.DataFrame,
                   skipped: list[str]) -> None:
    """The machine's state at the end, a CPU that measured slower than the others, the jobs
    the time limit left out, and a time limit that was not kept."""
    state, noisy = noise.check()
    record.noise["after"] = state
    record.warnings += [w + " (at the end of the run)" for w in noisy]
    record.warnings += checks.cpu_warnings(record.benchmarks, summary)
    if skipped:
        record.warnings.append(f"partial: the time limit of {schedule.limit_s:g} s left out "
                               f"{plural(len(skipped), 'job')} ({', '.join(skipped)}); a longer "
                               "--time-limit measures them (run.json says why each did not start)")
    if schedule.left_s() < 0:
        record.warnings.append(f"the run took {schedule.limit_s - schedule.left_s():.1f} s, "
                               f"beyond its time limit of {schedule.limit_s:g} s: start-up or "
                               "rounds took longer than expected")


def _record(plan: Plan, options: RunOptions, run_id: str, seed: int, processes: int,
            chosen_cpus: dict) -> RunRecord:
    """run.json as the run starts: the plan, the machine's state, the warnings so far."""
    suite = plan.suite
    record = environment.record(run_id, options.argv, suite.path, suite.name, suite.sha256,
                                seed, processes)
    record.adapters = plan.adapters
    record.host["cpus"] = chosen_cpus
    record.time_limit_s = plan.time_limit_s
    record.layers = plan.layers
    record.planned = [jobs[0].group.id for jobs in plan.benchmarks]
    record.warnings += plan.notes
    state, noisy = noise.check()
    record.noise = {"before": state}
    record.warnings += noisy + environment.clock_warnings(record.host["clocks"])
    return record


def _schedule(plan: Plan, started: float, recorded: dict[str, list[float]]) -> Schedule:
    """The run's worker processes, each job's start-up expected from earlier runs on this
    machine where there were any (run/startups.py), else from its driver's hint; a
    UserError before anything is measured where the time limit cannot hold the first process
    of any job (of some: the others are left out, run/breadth.py)."""
    def hint(job: Job) -> float:
        found = startups.expected(recorded, job)
        return registry.get(job.driver).setup_hint_s(job) if found is None else found

    jobs = [[(startups.key(j),
              process_cap_s(j.group.sampling.budget_per_case_s, len(j.group.cases),
                            plan.sharing), hint(j))
             for j in benchmark] for benchmark in plan.benchmarks]
    schedule = Schedule(jobs, plan.processes, plan.time_limit_s, started,
                        halves=plan.halves, partners=[partners(b) for b in plan.benchmarks])
    if len(schedule.leave_out()) < sum(map(len, jobs)):
        return schedule
    each = " in each half" if plan.halves > 1 else ""
    raise UserError(f"a time limit of {plan.time_limit_s:g} s cannot hold one worker process of "
                    f"any job{each}: after {_spent(schedule):.0f} s of planning, start-up alone is "
                    f"expected to take longer ({_source(plan, recorded)}); {_asking_all(schedule)}")


def _spent(schedule: Schedule) -> float:
    return (schedule.limit_s or 0.0) - schedule.left_s()


def _asking_all(schedule: Schedule) -> str:
    """The --time-limit to ask for that is expected to hold the first process of every job
    (never above the option's largest)."""
    needed = math.ceil((schedule.minimum_s() + _spent(schedule)) * 1.3)
    return f"ask for --time-limit {needed} or more (0: none)" if needed <= MAX_TIME_LIMIT_S \
        else (f"not even the largest --time-limit ({MAX_TIME_LIMIT_S}) can: ask for 0 (none) "
              "or fewer benchmarks")


def _source(plan: Plan, recorded: dict[str, list[float]]) -> str:
    """Where the start-ups expected come from."""
    known = sum(startups.expected(recorded, j) is not None for b in plan.benchmarks for j in b)
    jobs = sum(map(len, plan.benchmarks))
    if known == jobs:
        return f"all {jobs} jobs' start-ups as earlier runs here took"
    if not known:
        return "start-ups from the drivers' hints: no run here yet"
    return (f"{known} of {jobs} jobs' start-ups as earlier runs here took, the others from "
            "their drivers' hints")


def _what_runs(plan: Plan, folder: Path, schedule: Schedule,
               recorded: dict[str, list[float]]) -> list[str]:
    """The run's first lines: what will be measured, how long it may take, where it goes."""
    adapters = sorted({f"{a.get('device')} ({a.get('backend')}, {a.get('implementation')})"
                       for a in plan.adapters})
    jobs = sum(len(j) for j in plan.benchmarks)
    p = plan.processes // plan.halves
    each = f" per job{' in each half' if plan.halves > 1 else ''}, {plural(jobs, 'job')}"
    if plan.time_limit_s and p > 1:
        how = (f"up to {p} processes{each}: at most {schedule.most_s():.0f} s (its time limit; "
               "fewer processes where start-up leaves no time for all)")
    elif plan.time_limit_s:  # a smoke run (--quick), or --processes 1
        sampling = plan.halves * sum(cap for caps in schedule.jobs for _, cap, _ in caps)
        how = (f"1 process{each}: about {sampling:.0f} s of sampling in all, start-up aside, "
               f"and at most {schedule.most_s():.0f} s (its time limit)")
    else:
        how = (f"{p} process{'es' if p > 1 else ''}{each}: about {schedule.most_s():.0f} s (no "
               "time limit: a process slow to reach min_rounds takes longer)")
    lines = [f"measuring {plural(len(plan.benchmarks), 'benchmark')} of {plan.suite.name} on "
             f"{'; '.join(adapters)}, {how}; results in {folder}", implementations_line(plan)]
    lines += [f"{a['implementation']}: {a['surface_layer']}" for a in plan.adapters
              if a.get("surface_layer")]  # the browser's Vulkan layer (browser/surface.py)
    if schedule.left_out:
        left = [f"{plan.benchmarks[b][j].group.id} ({plan.benchmarks[b][j].label})"
                for b, j in schedule.left_out]
        lines.append(f"the time limit holds the first process of {jobs - len(left)} of {jobs} "
                     f"jobs as expected ({_source(plan, recorded)}); these run only if time is "
                     f"left after the others: {', '.join(sorted(left))}; to hold them all, "
                     f"{_asking_all(schedule)}")
    return lines


@dataclass(frozen=True)
class _Seeding:
    seed: int
    rng: np.random.Generator
    run_start_ns: int


def _measure(plan: Plan, schedule: Schedule, folders: list[RunFolder], reporter: Reporter,
             seeding: _Seeding, stall_timeout_s: float) -> None:
    """Every worker process in the schedule's order; a benchmark's rows are finished and
    saved as soon as its last process has run (after the last pass that ran, at the latest,
    or at an interrupt, from the processes that had run: under a time limit no benchmark
    ends before the last pass), in each folder from its processes (`half_of`: a b b a)."""
    outcomes = [[[] for _ in jobs] for jobs in plan.benchmarks]
    finished: set[int] = set()

    def finish_all(b: int) -> None:
        started = time.monotonic()
        for half, files in enumerate(folders):
            mine = [[o for o in found if half_of(o.process, len(folders)) == half] or (
                [worker.Outcome(half, cut=True, error=LEFT_OUT)] if (b, j) in schedule.left_out
                else []) for j, found in enumerate(outcomes[b])]
            _finish(plan.benchmarks[b], mine, files, reporter, seeding)
        finished.add(b)
        schedule.finished(time.monotonic() - started)

    def finish_rest() -> None:
        for b in range(len(plan.benchmarks)):
            if b not in finished and (any(outcomes[b]) or any(
                    (b, j) in schedule.left_out for j in range(len(outcomes[b])))):
                finish_all(b)

    try:
        for slot in schedule.slots():
            interrupts.check()
            if slot.job == 0:
                _started(plan, schedule, slot, reporter)
            if schedule.fits(slot):
                outcomes[slot.benchmark][slot.job].append(
                    _process(plan, schedule, slot, reporter, seeding, stall_timeout_s))
            elif slot.process < schedule.whole:  # a partial pass's process is optional
                outcomes[slot.benchmark][slot.job].append(worker.Outcome(
                    slot.process, cut=True, error=_no_room(schedule, slot)))
            interrupts.check()
            if schedule.last(slot):
                _again(plan, schedule, slot, outcomes[slot.benchmark], reporter, seeding,
                       stall_timeout_s)
                finish_all(slot.benchmark)
        interrupts.check()
    except KeyboardInterrupt:  # the processes that ran are as good as a finished run's
        for files in folders:
            files.start.warnings.append(
                "interrupted: each benchmark not finished is estimated from the worker "
                "processes that had run (run.json's processes per benchmark)")
        finish_rest()
        raise
    finish_rest()
    more = [plan.benchmarks[b][j].label for b, j in sorted(schedule.partial)
            if len(outcomes[b][j]) > schedule.whole]
    for files in folders:
        files.start.warnings += _shortfall(plan, schedule, more)


def _shortfall(plan: Plan, schedule: Schedule, more: list[str]) -> list[str]:
    """What the time limit left out: passes dropped, and the jobs (`more`: their labels)
    that ran one more process than the others in the time no whole pass fitted."""
    each = " in each half" if plan.halves > 1 else ""
    notes = []
    if schedule.dropped:
        notes.append(
            f"{schedule.whole // plan.halves} of {plan.processes // plan.halves} "
            f"processes per job{each} ran: the time left "
            f"after start-up could not hold the other {schedule.dropped} passes "
            f"({schedule.left_at_drop_s:.0f} s left, a pass expected to take about "
            f"{schedule.pass_s():.0f} s: its start-ups and least sampling; every process "
            "that ran measured at least its minimum rounds)")
    if more:
        notes.append(
            f"{len(more)} of {sum(map(len, plan.benchmarks))} jobs ran one more process{each} "
            f"than the others ({', '.join(sorted(set(more)))}): their start-up fitted in the "
            "time that no whole pass did")
    return notes


LEFT_OUT = ("not started: the time limit held its first process only if time was left after "
            "the other jobs' (as planned at the start), and none was")


def _no_room(schedule: Schedule, slot: Slot) -> str:
    """Why `slot` did not start, in the terms of the rule (Schedule.fits)."""
    return (f"not started: {max(0.0, schedule.deadline() - time.monotonic()):.1f} s were left "
            f"before the run's deadline (its time limit less {FINISH_S:g} s and the finishes "
            f"still to come), less than this process needs: about {schedule.setup_s(slot):.1f} "
            f"s of start-up, {schedule.least_s(slot) - schedule.setup_s(slot):.1f} s of least "
            f"sampling and {HANDBACK_S:g} s to hand back")


def _started(plan: Plan, schedule: Schedule, slot: Slot, reporter: Reporter) -> None:
    jobs = plan.benchmarks[slot.benchmark]
    passes = f", process {slot.process + 1} of each" if schedule.limit_s is not None else ""
    reporter.benchmark_started(
        f"{jobs[0].group.id} ({', '.join(j.label for j in jobs)}{passes})", slot.benchmark,
        len(plan.benchmarks), sum(schedule.budget(s).process_s
                                  for s in schedule.pass_of(slot.benchmark, slot.process)))


def _again(plan: Plan, schedule: Schedule, last: Slot, outcomes: list[list[worker.Outcome]],
           reporter: Reporter, seeding: _Seeding, stall_timeout_s: float) -> None:
    """Before a benchmark is finished, a fresh process in place of each far off the others
    (an A/A run's: one in each half at a time) where the time holds it (run/again.py)."""
    for j, found in enumerate(outcomes):
        for processes in again.odd(found, plan.halves):
            fresh = again.slots_for(schedule, last, j, found, processes) or []
            for slot, budget, notes in fresh:
                outcome = _process(plan, schedule, slot, reporter, seeding, stall_timeout_s,
                                   budget)
                outcome.device_notes.update(notes)
                found.append(outcome)


def _process(plan: Plan, schedule: Schedule, slot: Slot, reporter: Reporter,
             seeding: _Seeding, stall_timeout_s: float,
             budget: Budget | None = None) -> worker.Outcome:
    """One worker process of `slot` within its budget (the schedule's by default), deadline."""
    job = plan.benchmarks[slot.benchmark][slot.job]
    budget = budget or schedule.budget(slot)
    if (share := registry.get(job.driver).SAMPLE_SHARE) is not None:
        budget = replace(budget, sample_share=share)

    def on_round(process: int, rounds: int, elapsed: float, share: float) -> None:
        left = schedule.left_s()
        reporter.progress(min(elapsed, share), f"{job.label}, process {process + 1}/"
                          f"{schedule.processes}, {rounds} rounds"
                          + (f", {max(0, left):.0f} s left" if math.isfinite(left) else ""))

    task = worker.Task(job, budget, worker.seeds(seeding.seed, slot.benchmark, slot.process,
                                                 slot.job), slot.process)
    outcome = worker.run(task, on_round, stall_timeout_s, schedule.deadline())
    schedule.done(slot, outcome.seconds, outcome.sampling_s,
                  outcome.least_sampling_s(job.group.sampling.min_rounds))
    return outcome


def _finish(jobs: list[Job], outcomes: list[list[worker.Outcome]], files: RunFolder,
            reporter: Reporter, seeding: _Seeding) -> None:
    """A benchmark's rows (its jobs with a process in this folder) added whole and saved."""
    jobs, outcomes = [j for j, o in zip(jobs, outcomes, strict=True) if o], \
        [o for o in outcomes if o]
    if not jobs:
        return
    found = finish(files.start.run_id, jobs, outcomes, seeding.rng, seeding.run_start_ns)
    files.add(found)
    files.save("running")
    errors = [e for job, mine in zip(jobs, outcomes, strict=True)
              for e in (f"{job.label}: {o.error}" for o in mine if o.error and not o.cut)]
    summary = pd.concat(found.summaries, ignore_index=True) if found.summaries else None
    reporter.benchmark_done(jobs[0].group.id, summary, errors)
