"""A run's estimates made again from what it stored: its samples.parquet and run.json, with
the rules of this gpuoverhead, into a new folder (benchmarks/investigations/refinish.py).

A run's samples keep every timed call (its case, N, round, start and wall; its issue and GPU
time; a breakdown's calls) and run.json each worker process's record (its rounds, the
Python loop's readings, its clock's cost and the notes its driver made), which is all that
`finish` reads of a worker. The suite is found again by its sha256 (the estimates depend on
its groups), and each job by its driver's own `jobs`, so a case is the one that was
measured. What cannot be had again: a GPU timer's raw ticks (its resolution is read from the
durations), the bootstrap's draws (drawn again from the run's seed) and the warnings of
processes the time limit stopped (kept from the old run.json). Nothing is measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead.analysis.samples import Calibration, GroupSamples, issues
from gpuoverhead.cases import TIMESTAMPS, Sampling, Suite
from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Job, Offer
from gpuoverhead.errors import UserError
from gpuoverhead.present.note_words import read_back
from gpuoverhead.records import (
    CALLS,
    DISPATCHES_PER_UNIT,
    GPU_PER_DISPATCH_NS,
    READ_GB_S,
    AdapterInfo,
    Note,
)
from gpuoverhead.results.columns import ERROR, RUN_JSON, SKIPPED, RunRecord
from gpuoverhead.results.read import load
from gpuoverhead.results.write import write_json
from gpuoverhead.run import checks, precision
from gpuoverhead.run.files import Finished, RunFolder
from gpuoverhead.run.finish import finish
from gpuoverhead.run.worker import Outcome
from gpuoverhead.suite.expand import load_suite, quick

#: run.json's record of a worker process that `finish` writes, not the worker: made again.
MADE_BY_FINISH = ("left_out", "settling", "held_from_s", "moving", "gpu_timer_resolution_ns",
                  "gpu_timer_quantized")
#: run.json's record of a worker process that `checks.process_entry` takes from its outcome.
OF_THE_OUTCOME = ("process", "budget_s", "seconds", "rounds", "warmup_rounds",
                  "warmup_settled", "stop", "n_cut", "clock_cost_ns", "timestamp_period_ns",
                  "python_step_ns")


@dataclass
class Stored:
    """A run folder as it was written: run.json, its samples and the suite it ran."""

    folder: Path
    info: dict[str, Any]
    samples: pd.DataFrame
    summary: pd.DataFrame
    suite: Suite


def read(folder: Path, places: list[Path]) -> Stored:
    """A run folder and its suite: the path run.json names, else the suite of its name in
    one of `places`, whichever has the sha256 the run recorded (a UserError where none
    has)."""
    found = load(folder)
    info = found.info
    recorded = info.get("suite") or {}
    name = Path(str(recorded.get("name", ""))).name
    suites = [p / f"{name}.yaml" for p in places] if name else []
    for path in [Path(str(recorded.get("path", ""))), *suites]:
        if path.name and path.is_file():
            suite = load_suite(path)
            if suite.sha256 == recorded.get("sha256"):
                break
    else:
        raise UserError(f"{folder}: its suite {recorded.get('name')!r} (sha256 "
                        f"{str(recorded.get('sha256'))[:12]}...) is not among {len(suites) + 1} "
                        "paths tried: its estimates depend on the suite's groups")
    if "--quick" in info.get("argv", []):
        suite = quick(suite)
    summary = pd.concat([found.summary, found.per_process], ignore_index=True)
    return Stored(folder, info, found.samples(), summary, suite)


def benchmarks(stored: Stored) -> list[tuple[list[Job], list[list[Outcome]], list[dict]]]:
    """Per benchmark, in run.json's order, the jobs with whole processes, each one's
    outcomes, and the run.json entries of the others (failed, or left out by the time
    limit), kept as they were."""
    groups = {g.id: g for g in stored.suite.groups}
    found: dict[str, tuple[list[Job], list[list[Outcome]], list[dict]]] = {}
    for entry in stored.info.get("benchmarks", []):
        jobs, outcomes, kept = found.setdefault(entry["id"], ([], [], []))
        if entry.get("status") != "ok":
            kept.append(entry)
            continue
        if entry["id"] not in groups:
            raise UserError(f"{stored.folder}: its suite has no group {entry['id']!r}")
        job = _job(stored, groups[entry["id"]], entry)
        jobs.append(job)
        try:
            outcomes.append([_outcome(stored, job, p) for p in entry.get("processes", [])])
        except UserError as exc:
            raise UserError(f"{stored.folder}: {exc}") from None
    return list(found.values())


def _job(stored: Stored, group: Any, entry: dict[str, Any]) -> Job:
    """The job of a run.json entry, as its driver makes it from the suite's group on the
    adapter run.json describes."""
    label = entry["implementation"]
    name = label.removesuffix(" reference")
    adapter = next((a for a in stored.info.get("adapters", []) if a.get("implementation") ==
                    name), None)
    driver = next((d for d in registry.drivers() if name == d.FAMILY or
                   name in d.IMPLEMENTATIONS), None)
    if adapter is None or driver is None:
        raise UserError(f"{stored.folder}: no adapter or driver for {label!r}")
    info = AdapterInfo(**{k: adapter[k] for k in AdapterInfo.__dataclass_fields__})
    offer = Offer(info, settings={"f16": True, "layers": stored.info.get("layers") or {
        "native": None}})
    group = replace(group, sampling=Sampling(**entry["sampling"]))
    job = next((j for j in driver.jobs(group, offer, []) if j.label == label), None)
    if job is None:
        raise UserError(f"{stored.folder}: {driver.FAMILY} makes no job {label!r} of "
                        f"{group.id} here")
    return job


def _outcome(stored: Stored, job: Job, entry: dict[str, Any]) -> Outcome:
    """One worker process as it handed its samples back (run.json's record of it and its
    rows of the samples table)."""
    ids = {c.id: c for c in job.group.cases}
    rows = stored.samples[(stored.samples["family"] == job.adapter.implementation)
                          & stored.samples["case"].isin(ids)
                          & (stored.samples["process"] == entry["process"])]
    present = set(rows["case"])
    cases = tuple(c for c in job.group.cases if c.id in present)
    index = {c.id: i for i, c in enumerate(cases)}
    timed = rows[rows["call"] == ""]
    samples = GroupSamples(
        cases, records=[(index[r.case], int(r.n_dispatches), int(r.repetition),
                         r.phase == "warmup", int(r.elapsed_ns), int(r.wall_ns))
                        for r in timed.itertuples()],
        cut={index[c]: tuple(n) for c, n in entry.get("n_cut", {}).items() if c in index},
        warmup_rounds=entry["warmup_rounds"], warmup_settled=entry["warmup_settled"],
        rounds=entry["rounds"], stop=entry["stop"], python_step_ns=entry["python_step_ns"])
    tick = entry.get("timestamp_period_ns")
    samples.parts = _parts(samples, timed, rows[rows["call"] != ""], tick or 1.0)
    notes = {k: v for k, v in entry.items() if k not in MADE_BY_FINISH + OF_THE_OUTCOME}
    cal = Calibration(entry["clock_cost_ns"], tick, job.adapter.bandwidth_gb_s,
                      notes.get(READ_GB_S), notes.get(GPU_PER_DISPATCH_NS),
                      notes.get(DISPATCHES_PER_UNIT, {}))
    return Outcome(entry["process"], samples, cal, 0, device_notes=notes,
                   budget_s=entry.get("budget_s", 0.0), seconds=entry.get("seconds", 0.0))


def _parts(samples: GroupSamples, timed: pd.DataFrame, calls: pd.DataFrame,
           tick_ns: float) -> dict[int, tuple]:
    """What each sample's operation returned beside its wall time: the clock read before the
    wait (its start plus issue_ns), the GPU timestamps (from 0, gpu_ns / tick_ns; one that
    ran backwards as such), or a breakdown's calls (its rows with `call` set)."""
    parts: dict[int, tuple] = {}
    issue, gpu = (timed[c].to_numpy(dtype=float, na_value=np.nan) for c in ("issue_ns", "gpu_ns"))
    cases = np.array([r[0] for r in samples.records], dtype=int)
    for i, c in enumerate(samples.cases):
        if issues(c) and np.isnan(issue[cases == i]).all():
            raise UserError(f"its samples table holds no issue_ns of {c.id} (before "
                            "commit 5388a8b a cadence's was left out): its estimates cannot be "
                            "made again")
    for p, (case, *_, start, _) in enumerate(samples.records):
        c = samples.cases[case]
        if issues(c):
            parts[p] = (start + int(issue[p]) if np.isfinite(issue[p]) else math.nan,)
        elif c.sync == TIMESTAMPS:
            parts[p] = (0, gpu[p] / tick_ns) if np.isfinite(gpu[p]) else (1, 0)
    if not calls.empty:
        at = {(r.case, r.n_dispatches, r.repetition, r.phase, r.elapsed_ns): p
              for p, r in enumerate(timed.itertuples())}
        split: dict[int, list[int]] = {}
        for r in calls.itertuples():
            p = at[(r.case, r.n_dispatches, r.repetition, r.phase, r.elapsed_ns)]
            split.setdefault(p, [0] * len(CALLS))[CALLS.index(r.call)] = int(r.wall_ns)
        parts.update({p: tuple(v) for p, v in sorted(split.items())})
    return parts


def refinish(stored: Stored, target: Path, why: dict[str, Any]) -> dict[str, Any]:
    """The run's estimates made again into `target` (a new folder): its samples and rows
    of this gpuoverhead's `finish`, the jobs not re-finished (failed, or left out) as they
    were; run.json as it was but for what finishing writes, and `refinished` (`why`: from
    which run, by which commit and rules). Returns run.json."""
    info = stored.info
    record = RunRecord(**{k: info[k] for k in RunRecord.__dataclass_fields__ if k in info})
    ids = {e["id"] for e in info.get("benchmarks", [])}
    record = replace(record, benchmarks=[], drift=[], precision=[],
                     warnings=[w for w in info.get("warnings", []) if _kept(w, ids)])
    if target.exists():
        raise UserError(f"{target} already exists: re-finishing writes a new folder")
    found = benchmarks(stored)
    files = RunFolder.open(target, record, False)
    try:
        rng = np.random.default_rng(info.get("seed"))
        for jobs, outcomes, kept in found:
            if jobs:
                files.add(finish(info["run_id"], jobs, outcomes, rng, 0))
            files.start.benchmarks.extend(kept)
        files.add(Finished(summaries=[_kept_rows(stored, files.start.benchmarks)]))
        files.start.warnings += checks.cpu_warnings(files.record().benchmarks,
                                                    files.summary())
        aa = "selftest" in info.get("argv", []) and "--back-to-back" not in info.get("argv",
                                                                                   [])
        files.start.precision = precision.limits(files.summary(), files.record().benchmarks,
                                                 info.get("time_limit_s"), aa)
        files.save(info.get("status", "complete"))
        out = {**files.record().as_json(), "finished": info.get("finished"),
               "refinished": why}
        write_json(target / RUN_JSON, out)
    finally:
        files.release()
    return out


def _kept(warning: str, ids: set[str]) -> bool:
    """Whether a warning of the old run.json stays: not one that finishing makes again (a
    job's, a sampling note, a slow CPU's), or one of processes the time limit stopped."""
    if "stopped at, or not started for, the run's time limit" in warning:
        return True
    if isinstance(read_back(warning), Note) or warning.startswith("on CPU "):
        return False
    return not any(warning.startswith((f"{i} (", f"{i}:")) for i in ids)


def _kept_rows(stored: Stored, entries: list[dict[str, Any]]) -> pd.DataFrame:
    """The old summary's error rows of the jobs kept as they were."""
    s = stored.summary
    kept = {(e["id"], e["implementation"].removesuffix(" reference")) for e in entries
            if e.get("status") != "ok"}
    mine = [(c, f) in kept for c, f in zip(s["case"], s["family"], strict=True)]
    return s[np.array(mine, dtype=bool) & s["metric"].isin([ERROR, SKIPPED]).to_numpy()]

