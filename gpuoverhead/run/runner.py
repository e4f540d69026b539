"""Run a plan: each job in its worker processes, its estimates, its files rewritten at once.

An interrupted run keeps every job that finished; a job whose output check fails in any
process is recorded as an error and contributes no rows.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from gpuoverhead.analysis import combine, drift, pairs
from gpuoverhead.analysis.samples import GroupSamples
from gpuoverhead.analysis.series import Key, Series, series
from gpuoverhead.browser.worker import BROWSER_SAMPLE_SHARE
from gpuoverhead.errors import UserError
from gpuoverhead.gpu.implementations import CHROMIUM
from gpuoverhead.results import tables
from gpuoverhead.results.schema import RUN_JSON, SAMPLE_COLUMNS, SUMMARY_COLUMNS, RunRecord
from gpuoverhead.results.write import write_json, write_run
from gpuoverhead.run import checks, environment, noise, worker
from gpuoverhead.run.budget import Schedule, process_cap_s
from gpuoverhead.run.plan import Job, Plan, RunOptions, prepare


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

    @property
    def failed(self) -> bool:
        return bool(self.record.errors)


@dataclass
class _Files:
    """The run folder's tables so far; `save` rewrites all of them. A run that replaces an
    older one (--force) writes beside it and takes its place only once it has a finished
    benchmark to put there: an interrupted start does not destroy the old results."""

    folder: Path
    record: RunRecord
    replaces: Path | None = None
    samples: list[pd.DataFrame] = field(default_factory=list)
    summaries: list[pd.DataFrame] = field(default_factory=list)

    def summary(self) -> pd.DataFrame:
        return tables.with_ratio_to_fastest(_concat(self.summaries, SUMMARY_COLUMNS))

    def save(self, status: str) -> None:
        self.record.status = status
        if status != "running":
            self.record.finished = environment.now_iso()
        write_run(self.folder, _concat(self.samples, SAMPLE_COLUMNS), self.summary(),
                  self.record.as_json())
        if self.replaces is not None and (self.summaries or status == "complete"):
            old = self.replaces.with_name(f".{self.replaces.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            self.replaces.rename(old)
            self.folder.rename(self.replaces)
            shutil.rmtree(old, ignore_errors=True)
            self.folder, self.replaces = self.replaces, None

    def abandon(self) -> None:
        """An interrupted run with nothing finished leaves the results it would replace."""
        if self.replaces is not None and not self.summaries:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = self.replaces


def run(options: RunOptions, reporter: Reporter) -> RunResult:
    started = time.monotonic()
    plan = prepare(options)
    run_id = options.run_id or environment.new_run_id()
    target = options.out_root / run_id
    if target.exists() and not options.force:
        raise UserError(f"{target} already exists; choose another --run-id, or pass --force "
                        "to overwrite it")
    replaces = target if options.force and (target / RUN_JSON).is_file() else None
    staging = target.with_name(f".{run_id}.new") if replaces else target
    if replaces:
        shutil.rmtree(staging, ignore_errors=True)
    seed = options.seed if options.seed is not None else secrets.randbits(32)
    record = _record(plan, options, run_id, seed)
    files = _Files(staging, record, replaces)
    seeding = _Seeding(seed, np.random.default_rng(seed), time.time_ns())
    schedule = _schedule(plan, started)
    try:
        _make_folder(staging)  # made here: an interrupt from now on leaves a readable run
        files.save("running")
        reporter.run_started(_what_runs(plan, target, schedule))
        first = 0
        for index, jobs in enumerate(plan.benchmarks):
            _benchmark(plan, index, jobs, files, reporter, seeding, options.stall_timeout_s,
                       schedule, first)
            first += len(jobs) * plan.processes
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):
            files.save("interrupted")
        files.abandon()
    except OSError as exc:  # a full disk, a folder removed under the run
        record.errors.append(f"cannot write results: {exc.strerror or exc}")
        record.status, record.finished = "failed", environment.now_iso()
        with contextlib.suppress(OSError):  # run.json alone may still fit
            write_json(files.folder / RUN_JSON, record.as_json())
        raise UserError(f"cannot write results to {files.folder}: {exc.strerror or exc}; "
                        "what was written before stays readable") from None
    else:
        state, noisy = noise.check()
        record.noise["after"] = state
        record.warnings += [w + " (at the end of the run)" for w in noisy]
        if schedule.left_s() < 0:
            record.warnings.append(
                f"the run took {schedule.limit_s - schedule.left_s():.0f} s, beyond its time "
                f"limit of {schedule.limit_s:g} s: start-up or rounds took longer than expected")
        files.save("failed" if record.errors else "complete")
    return RunResult(files.folder, record, files.summary(), time.monotonic() - started)


def _record(plan: Plan, options: RunOptions, run_id: str, seed: int) -> RunRecord:
    """run.json as the run starts: the plan, the machine's state, the warnings so far."""
    suite = plan.suite
    record = environment.record(run_id, options.argv, suite.path, suite.name, suite.sha256,
                                seed, plan.processes)
    record.adapters = plan.adapters
    record.time_limit_s = plan.time_limit_s
    record.layers = {"native": plan.native}
    record.warnings += plan.notes
    state, noisy = noise.check()
    record.noise = {"before": state}
    record.warnings += noisy + environment.clock_warnings(record.host["clocks"])
    record.warnings += [f"{device} is a CPU (software) adapter: its figures describe a driver "
                        "running on the CPU, not a GPU" for device in plan.software]
    return record


def _schedule(plan: Plan, started: float) -> Schedule:
    """Every worker process of the run in the order it runs: benchmark, process, job."""
    slots = [(process_cap_s(j.group.sampling.budget_per_case_s, len(j.group.cases),
                            plan.processes), f"{j.group.id} {j.label}")
             for jobs in plan.benchmarks for _ in range(plan.processes) for j in jobs]
    return Schedule([c for c, _ in slots], [k for _, k in slots], plan.time_limit_s, started)


def _what_runs(plan: Plan, folder: Path, schedule: Schedule) -> list[str]:
    """The run's first lines: what will be measured, how long it may take, where it goes."""
    adapters = sorted({f"{a.get('device')} ({a.get('backend')}, {a.get('implementation')})"
                       for a in plan.adapters})
    most = (f"at most {schedule.most_s():.0f} s (its time limit)" if plan.time_limit_s
            else f"about {schedule.most_s():.0f} s at most")
    return [f"measuring {len(plan.benchmarks)} benchmarks of {plan.suite.name} on "
            f"{'; '.join(adapters)}, {plan.processes} process{'es' if plan.processes > 1 else ''} "
            f"each, {len(schedule.caps)} worker processes in all: {most}; "
            f"results in {folder}"]


@dataclass(frozen=True)
class _Seeding:
    seed: int
    rng: np.random.Generator
    run_start_ns: int


def _benchmark(plan: Plan, index: int, jobs: list[Job], files: _Files, reporter: Reporter,
               seeding: _Seeding, stall_timeout_s: float, schedule: Schedule, first: int
               ) -> None:
    """One suite group: its jobs' worker processes alternate in time (process 0 of every
    job, then process 1, ...), so that a slow period of the machine hits all of them; then
    each job's rows, and the ratios between jobs from time-adjacent pairs. Its worker
    processes are the schedule's slots from `first` on."""
    group = jobs[0].group
    slots = range(first, first + len(jobs) * plan.processes)
    reporter.benchmark_started(f"{group.id} ({', '.join(j.label for j in jobs)})", index,
                               len(plan.benchmarks),
                               sum(schedule.budget(s).process_s for s in slots))
    outcomes: list[list[worker.Outcome]] = [[] for _ in jobs]
    first_row, spent = len(files.summaries), 0.0
    for p in range(plan.processes):
        for j, job in enumerate(jobs):
            slot = first + p * len(jobs) + j
            budget = schedule.budget(slot)
            if job.adapter.implementation == CHROMIUM:
                budget = replace(budget, sample_share=BROWSER_SAMPLE_SHARE)

            def on_round(process: int, rounds: int, elapsed: float, share: float,
                         before: float = spent, label: str = job.label) -> None:
                left = schedule.left_s()
                reporter.progress(before + min(elapsed, share), f"{label}, process "
                                  f"{process + 1}/{plan.processes}, {rounds} rounds"
                                  + (f", {max(0, left):.0f} s left" if math.isfinite(left)
                                     else ""))

            limits = {} if job.reference else plan.limits.get(job.adapter, {})
            task = worker.Task(job.group, job.adapter, budget,
                               worker.seeds(seeding.seed, index, p, j), p,
                               plan.native is not None, limits,
                               plan.browser if job.adapter.implementation == CHROMIUM else None)
            outcomes[j].append(worker.run(task, on_round, stall_timeout_s))
            schedule.done(slot, outcomes[j][-1].seconds, budget)
            spent += budget.process_s
    done = [_job_rows(job, found, files, seeding) for job, found in zip(jobs, outcomes,
                                                                         strict=True)]
    _pair_rows(jobs, done, files)
    files.save("running")
    errors = [e for job, found in zip(jobs, outcomes, strict=True)
              for e in (f"{job.label}: {o.error}" for o in found if o.error)]
    reporter.benchmark_done(group.id, _concat(files.summaries[first_row:], None), errors)


Measured = tuple[list[dict[Key, Series]], list[GroupSamples]]


def _job_rows(job: Job, outcomes: list[worker.Outcome], files: _Files, seeding: _Seeding
              ) -> Measured | None:
    """One job's samples and estimates into the files' tables (or its error row); returns
    its per-process series and samples for the ratios between jobs, None where it failed."""
    group, adapter, record = job.group, job.adapter, files.record
    run_id = record.run_id
    entry = {"id": group.id, "benchmark": group.benchmark, "elements": group.elements,
             "implementation": job.label}
    errors = [o.error for o in outcomes if o.error]
    if errors:
        record.errors += [f"{group.id} ({job.label}): {e}" for e in errors]
        record.benchmarks.append({**entry, "status": "failed"})
        files.summaries.append(tables.error_row(run_id, adapter, group, errors[0]))
        return None
    per_process = [series(o.samples, o.calibration, o.clock_offset_ns) for o in outcomes]
    rows = pd.concat([tables.samples_table(run_id, adapter, o.samples, o.process,
                                           seeding.run_start_ns, o.clock_offset_ns,
                                           o.calibration) for o in outcomes], ignore_index=True)
    summary = tables.summary_table(run_id, adapter, group,
                                   combine.combine(per_process, seeding.rng),
                                   [o.samples for o in outcomes], rows)
    record.benchmarks.append({**entry, "status": "ok", "sampling": group.sampling.__dict__,
                              "processes": [checks.process_entry(o) for o in outcomes]})
    found = drift.drifts(per_process)
    record.drift += [{**d, "implementation": job.label} for d in found]
    record.warnings += (checks.timer_warnings(group, outcomes)
                        + checks.precision_warnings(group, summary)
                        + checks.drift_warnings(group, job.label, found))
    files.samples.append(rows)
    files.summaries.append(summary)
    return per_process, [o.samples for o in outcomes]


def _pair_rows(jobs: list[Job], done: list[Measured | None], files: _Files) -> None:
    """Ratios from time-adjacent process pairs: each implementation over the first one
    measured, and each product job over its reference loop (a warning where it leaves
    [0.85, 1.18] in CPU cost)."""
    measured = [(job, m) for job, m in zip(jobs, done, strict=True) if m is not None]
    webgpu = [(j, m) for j, m in measured if not j.reference
              and not j.adapter.implementation.startswith("torch")]
    rows: list[tuple[Job, Measured, list[combine.Row]]] = []
    for job, m in webgpu[1:]:
        first, theirs = webgpu[0][0].adapter.implementation, webgpu[0][1][0]
        rows.append((job, m, pairs.paired_ratios(m[0], theirs, first, "paired_ratio",
                                                 pairs.PAIRED, pairs.same_case)))
    for (job, m), (ref, ref_m) in zip(measured, measured[1:], strict=False):
        if ref.reference and not job.reference:
            match = pairs.reference_of({c.encoding: c for c in ref.group.cases})
            found = pairs.paired_ratios(m[0], ref_m[0], "reference loop", "reference_ratio",
                                        pairs.REFERENCED, match)
            rows.append((job, m, found))
            files.record.warnings += checks.reference_warnings(job.group, job.label, found)
    for job, m, found in rows:
        if found:
            files.summaries.append(tables.summary_table(
                files.record.run_id, job.adapter, job.group, found, m[1], None))


def _concat(parts: list[pd.DataFrame], columns: list[str] | None) -> pd.DataFrame:
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns=columns or [])


def _make_folder(folder: Path) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write results to {folder}: {exc.strerror or exc}") from None
    return folder
