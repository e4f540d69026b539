"""Run a plan: each job in its worker processes, its estimates, its files rewritten at once.

An interrupted run keeps every job that finished; a job whose output check fails in any
process is recorded as an error and contributes no rows.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from gpuoverhead.analysis import combine, drift
from gpuoverhead.analysis.series import series
from gpuoverhead.errors import UserError
from gpuoverhead.gpu.adapters import AdapterInfo
from gpuoverhead.results import tables
from gpuoverhead.results.schema import SAMPLE_COLUMNS, RunRecord
from gpuoverhead.results.write import write_run
from gpuoverhead.run import checks, environment, noise, worker
from gpuoverhead.run.budget import Budget
from gpuoverhead.run.plan import Plan, RunOptions, prepare
from gpuoverhead.suite.model import Group


class Reporter(Protocol):
    """What the runner tells the user while it works (present/progress implements it)."""

    def group_started(self, group: Group, index: int, total: int, budget: Budget,
                      implementation: str) -> None: ...
    def round_done(self, process: int, rounds: int, elapsed_s: float, budget_s: float
                   ) -> None: ...
    def group_done(self, group: Group, summary: pd.DataFrame | None, error: str | None) -> None: ...


@dataclass
class RunResult:
    folder: Path
    record: RunRecord
    summary: pd.DataFrame

    @property
    def failed(self) -> bool:
        return bool(self.record.errors)


@dataclass
class _Files:
    """The run folder's tables so far; `save` rewrites all of them."""

    folder: Path
    record: RunRecord
    samples: list[pd.DataFrame] = field(default_factory=list)
    summaries: list[pd.DataFrame] = field(default_factory=list)

    def summary(self) -> pd.DataFrame:
        return tables.with_ratio_to_fastest(_concat(self.summaries, None))

    def save(self, status: str) -> None:
        self.record.status = status
        if status != "running":
            self.record.finished = environment.now_iso()
        write_run(self.folder, _concat(self.samples, SAMPLE_COLUMNS), self.summary(),
                  self.record.as_json())


def run(options: RunOptions, reporter: Reporter) -> RunResult:
    plan = prepare(options)
    run_id = options.run_id or environment.new_run_id()
    folder = _make_folder(options.out_root / run_id, options.force)
    seed = options.seed if options.seed is not None else secrets.randbits(32)
    suite = plan.suite
    record = environment.record(run_id, options.argv, suite.path, suite.name, suite.sha256,
                                seed, plan.processes)
    record.adapters = plan.adapters
    record.layers = {"native": plan.native}
    record.warnings += plan.notes
    state, noisy = noise.check()
    record.noise = {"before": state}
    record.warnings += noisy
    record.warnings += [f"{device} is a CPU (software) adapter: its figures describe a driver "
                        "running on the CPU, not a GPU" for device in plan.software]
    files = _Files(folder, record)
    files.save("running")
    rng, run_start = np.random.default_rng(seed), time.time_ns()
    try:
        for index, (group, adapter) in enumerate(plan.jobs):
            _job(plan, index, group, adapter, files, reporter, (seed, rng, run_start),
                 options.stall_timeout_s)
    except KeyboardInterrupt:
        files.save("interrupted")
    else:
        state, noisy = noise.check()
        record.noise["after"] = state
        record.warnings += [w + " (at the end of the run)" for w in noisy]
        files.save("failed" if record.errors else "complete")
    return RunResult(folder, record, files.summary())


def _job(plan: Plan, index: int, group: Group, adapter: AdapterInfo, files: _Files,
         reporter: Reporter, seeding: tuple[int, np.random.Generator, int],
         stall_timeout_s: float) -> None:
    """One group on one implementation: its processes one after another, then its rows."""
    seed, rng, run_start = seeding
    budget = Budget(group.sampling.budget_per_case_s, len(group.cases), plan.processes)
    reporter.group_started(group, index, len(plan.jobs), budget, adapter.implementation)
    record, run_id = files.record, files.record.run_id
    entry = {"id": group.id, "benchmark": group.benchmark, "elements": group.elements,
             "implementation": adapter.implementation}
    outcomes = [worker.run(worker.Job(group, adapter, budget,
                                      worker.seeds(seed, index, p), p, plan.native is not None,
                                      plan.limits.get(adapter, {})),
                           reporter.round_done, stall_timeout_s)
                for p in range(plan.processes)]
    errors = [o.error for o in outcomes if o.error]
    if errors:
        record.errors += [f"{group.id} ({adapter.implementation}): {e}" for e in errors]
        record.benchmarks.append({**entry, "status": "failed"})
        files.summaries.append(tables.error_row(run_id, adapter, group, errors[0]))
        reporter.group_done(group, None, errors[0])
        files.save("running")
        return
    per_process = [series(o.samples, o.calibration, o.clock_offset_ns) for o in outcomes]
    rows = pd.concat([tables.samples_table(run_id, adapter, o.samples, o.process, run_start,
                                           o.clock_offset_ns, o.calibration)
                      for o in outcomes], ignore_index=True)
    summary = tables.summary_table(run_id, adapter, group, combine.combine(per_process, rng),
                                   [o.samples for o in outcomes], rows)
    record.benchmarks.append({**entry, "status": "ok", "sampling": group.sampling.__dict__,
                              "processes": [checks.process_entry(o) for o in outcomes]})
    found = drift.drifts(per_process)
    record.drift += [{**d, "implementation": adapter.implementation} for d in found]
    record.warnings += (checks.timer_warnings(group, outcomes)
                        + checks.precision_warnings(group, summary)
                        + checks.drift_warnings(group, adapter.implementation, found))
    files.samples.append(rows)
    files.summaries.append(summary)
    files.save("running")
    reporter.group_done(group, summary, None)


def _concat(parts: list[pd.DataFrame], columns: list[str] | None) -> pd.DataFrame:
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns=columns or [])


def _make_folder(folder: Path, force: bool) -> Path:
    if folder.exists() and not force:
        raise UserError(f"{folder} already exists; choose another --run-id, or pass --force "
                        "to overwrite it")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write results to {folder}: {exc.strerror or exc}") from None
    return folder
