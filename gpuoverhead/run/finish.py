"""What a finished benchmark adds to its run: per job its estimates and sample rows (or an
error row), run.json's entry, drift and warnings; then the ratios between jobs measured
alternately in time. Nothing here measures or writes: `finish` returns one record.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead.analysis import combine, drift, pairs, states
from gpuoverhead.analysis.odd import FAR, odd_processes
from gpuoverhead.analysis.samples import GroupSamples
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.analysis.stats import Estimate, over_processes
from gpuoverhead.cases import Group
from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Job
from gpuoverhead.present.note_words import MIXED
from gpuoverhead.results import tables
from gpuoverhead.results.columns import SKIPPED
from gpuoverhead.run import checks, cpu_split
from gpuoverhead.run.again import AGAIN_FOR
from gpuoverhead.run.files import Finished
from gpuoverhead.run.worker import Outcome
from gpuoverhead.workloads import registry as workloads

#: A job's per-process series, samples and process numbers (as run.json counts them).
Measured = tuple[list[dict[Key, Series]], list[GroupSamples], list[int]]


def finish(run_id: str, jobs: list[Job], outcomes: list[list[Outcome]],
           rng: np.random.Generator, run_start_ns: int) -> Finished:
    """The benchmark's record: each job's part, then the paired ratios between jobs."""
    out = Finished()
    cpu = states.find([o.samples for job, found in zip(jobs, outcomes, strict=True)
                       if job.group.gap_ms is None for o in found
                       if o.samples is not None and not o.cut and not o.error])
    measured = [_job(run_id, job, found, rng, run_start_ns, out,
                     cpu if job.group.gap_ms is None else None)
                for job, found in zip(jobs, outcomes, strict=True)]
    _pairs(run_id, jobs, measured, out)
    return out


def _job(run_id: str, job: Job, outcomes: list[Outcome], rng: np.random.Generator,
         run_start_ns: int, out: Finished, cpu: states.States | None = None
         ) -> Measured | None:
    """One job's samples and estimates (or its error row) into `out`; returns its
    per-process series and samples for the ratios between jobs, None where it failed. With
    `cpu` (its benchmark's two CPU states) a figure the state moves is of the kept state's
    rounds where every process has min_rounds of them (run/cpu_split.py)."""
    group, adapter = job.group, job.adapter
    entry = {"id": group.id, "benchmark": group.benchmark, "elements": group.elements,
             "implementation": job.label}
    found = _whole(run_id, job, outcomes, entry, out)
    if found is None:
        return None
    outcomes = found
    least = group.sampling.min_rounds
    state = cpu_split.split(cpu, outcomes, least)
    every = list(state.figures)
    beside = {s: list(f) for s, f in state.beside.items()}
    lives = _lives(group, outcomes, state, every, least, beside)
    rows = pd.concat([tables.samples_table(run_id, adapter, o.samples, o.process,
                                           run_start_ns, o.clock_offset_ns, o.calibration)
                      for o in outcomes], ignore_index=True)
    left_out = _left_out(f"{group.id} ({job.label})", outcomes, every, lives, out.warnings)
    # Left out of the estimates; an empty place keeps the pairs between jobs in step.
    per_process = [{} if i in left_out else s for i, s in enumerate(every)]
    kept = [o for i, o in enumerate(outcomes) if i not in left_out]
    numbers = [o.process for o in kept]
    estimates = combine.combine([s for s in per_process if s], rng)
    built, failed = _builds(job, kept)
    summary = tables.summary_table(run_id, adapter, group,
                                   estimates + workloads.per_op_rows(group, estimates) + built,
                                   [o.samples for o in kept], numbers, rows)
    summary["regime"] = state.regime(group.regime)
    states_rng = rng.spawn(1)[0]  # the headline's draws stay those of a run without these
    out.states.extend(t for s, f in beside.items()
                      if (t := _in_state(run_id, job, s, f, outcomes, left_out, states_rng))
                      is not None)
    if state.mixed:
        out.sampling.append((MIXED, f"{group.id} ({job.label}) {state.mixed}"))
    for case, message in failed:
        out.summaries.append(tables.error_row(run_id, adapter, group, message, case))
        out.warnings.append(f"{case.id} ({job.label}): left out, its build failed: {message}")
    out.entries.append({**entry, "status": "ok", "sampling": group.sampling.__dict__,
                        **cpu_split.record(state, outcomes),
                        "processes": [{**checks.process_entry(o), **(
                            {"left_out": left_out[i]} if i in left_out else {}),
                                       **_settling(every[i]), **_life(lives[i])}
                                      for i, o in enumerate(outcomes)]})
    trends = drift.drifts([s for s in per_process if s])
    out.drift.extend({**d, "implementation": job.label} for d in trends)
    out.warnings.extend(checks.timer_warnings(group, outcomes))
    out.sampling.extend(checks.sampling_notes(group, outcomes, summary)
                        + checks.mode_notes(summary) + checks.drift_notes(group, job.label, trends)
                        + checks.floor_notes(group, job.label, kept))
    out.samples.append(rows)
    out.summaries.append(summary)
    return per_process, [o.samples for o in kept], numbers


def _whole(run_id: str, job: Job, outcomes: list[Outcome], entry: dict[str, Any],
           out: Finished) -> list[Outcome] | None:
    """The processes that ran whole, or None where none did (the time limit left the job
    out: skipped) or one failed (an error), each said in `out`."""
    group = job.group
    cut = [o for o in outcomes if o.cut]
    if len(cut) == len(outcomes):  # no process ran whole: the time limit left the job out
        out.skipped.append(f"{group.id} ({job.label})")
        out.entries.append({**entry, "status": "skipped (time limit)"})
        out.summaries.append(tables.error_row(run_id, job.adapter, group, cut[0].error or
                                              "stopped at the run's time limit",
                                              metric=SKIPPED))
        return None
    if cut:  # stopped at the time limit: left out, said so
        outcomes = [o for o in outcomes if not o.cut]
        out.warnings.append(f"{group.id} ({job.label}): {len(cut)} worker process(es) "
                            "stopped at, or not started for, the run's time limit: left out")
    errors = [o.error for o in outcomes if o.error]
    if errors:
        out.errors.extend(f"{group.id} ({job.label}): {e}" for e in errors)
        out.entries.append({**entry, "status": "failed"})
        out.summaries.append(tables.error_row(run_id, job.adapter, group, errors[0]))
        return None
    return outcomes


def _lives(group: Group, outcomes: list[Outcome], state: cpu_split.Split,
           every: list[dict[Key, Series]], least: int,
           beside: dict[str, list[dict[Key, Series] | None]]) -> list[drift.Life | None]:
    """Each process's life (analysis/drift.py `life`; none for a cadence, which settles on
    its own); where its headline figures held only from some age on, its figures (in
    `every`, and each state's in `beside`) become those of its rounds from then, where
    `least` rounds are left."""
    lives = [None if group.gap_ms is not None else drift.life(s) for s in every]
    for i, (o, life) in enumerate(zip(outcomes, lives, strict=True)):
        if life is None or life.trends or life.held_from_s <= 0:
            continue
        rounds = drift.rounds_from(o.samples, o.clock_offset_ns, life.held_from_ns)
        later = state.of(o, i, rounds, least)
        if later is not None:
            every[i] = later
        for s, figures in beside.items():
            later = state.of(o, i, rounds, least, s) if figures[i] is not None else None
            if later is not None:
                figures[i] = later
    return lives


def _in_state(run_id: str, job: Job, state: str, figures: list[dict[Key, Series] | None],
              outcomes: list[Outcome], left_out: dict[int, str], rng: np.random.Generator
              ) -> pd.DataFrame | None:
    """A job's estimates in one CPU state beside its headline (run/cpu_split.py `beside`):
    over its processes with figures in that state and not left out of the headline, where
    drift.LEAST_T remain; rows as the summary's, with `cpu_state`."""
    used = [i for i, f in enumerate(figures) if f and i not in left_out]
    if len(used) < drift.LEAST_T:
        return None
    group = job.group
    estimates = combine.combine([figures[i] for i in used], rng)
    table = tables.summary_table(run_id, job.adapter, group,
                                 estimates + workloads.per_op_rows(group, estimates),
                                 [outcomes[i].samples for i in used],
                                 [outcomes[i].process for i in used], None)
    return table.assign(regime=states.in_state(group.regime, state), cpu_state=state)


def _life(found: drift.Life | None) -> dict[str, Any]:
    """run.json's record of a process's life: from when its headline figures held (s into
    its sampling) and the share of them still moving in its last third."""
    if found is None:
        return {}
    return {"held_from_s": round(found.held_from_s, 3), "moving": round(found.moving, 3)}


def _left_out(job: str, outcomes: list[Outcome], every: list[dict[Key, Series]],
              lives: list[drift.Life | None], warnings: list[str]) -> dict[int, str]:
    """The processes left out of a job's estimates, each with why (run.json's `left_out`),
    said in `warnings`: those whose figures still moved in their last third where as many
    others remain as the job's interval needs (analysis/drift.py `life`, `enough`), and
    those far slower than the others (analysis/odd.py)."""
    reasons: dict[int, str] = {}
    moving = [i for i, f in enumerate(lives) if f is not None and f.trends]
    if moving:
        said = ", ".join(f"{outcomes[i].process} ({lives[i].change:+.0%})" for i in moving)
        rest, needs = len(outcomes) - len(moving), drift.enough(len(outcomes))
        warnings.append(f"{job}: worker process {said} still moved in its last third (most of "
                        "its headline figures; first to last part of its life): no level of "
                        + (f"its own, kept in the samples, left out of the estimates ({rest} "
                           "others remain)" if rest >= needs else
                           f"its own, yet kept in the estimates: without "
                           f"{'it' if len(moving) == 1 else 'them'} {rest} would remain, "
                           f"fewer than the {needs} the job's interval needs"))
        if rest >= needs:
            reasons.update({i: "its figures still moved in its last third" for i in moving})
    odd = dict(odd_processes([{} if i in reasons else s for i, s in enumerate(every)]))
    if odd:
        warnings.append(_odd_warning(job, outcomes, odd))
        reasons.update({i: f"{level:.2f}x the median of the job's processes kept"
                        for i, level in odd.items()})
    return reasons


def _settling(found: dict[Key, Series]) -> dict[str, Any]:
    """run.json's record of a process's levels that settle (a cadence): per case and
    metric, when it settled (s into the process), whether before its last third, and the
    level over its age (the start of each bin, s; its median, µs)."""
    out = {f"{k.case.id} {k.metric}": {
        "settled_s": round(s.settled.at_s, 3), "settled": s.settled.settled,
        "age_s": [round(a, 3) for a, _ in s.settled.level],
        "level_us": [round(v / 1e3, 3) for _, v in s.settled.level]}
        for k, s in found.items() if s.settled is not None}
    return {"settling": out} if out else {}


def _odd_warning(job: str, outcomes: list[Outcome], odd: dict[int, float]) -> str:
    """What a user should know of the processes left out (analysis/odd.py)."""
    said = ", ".join(f"{outcomes[i].process} ({level:.1f}x"
                     + (f", mostly on CPU {cpu})" if (cpu := outcomes[i].device_notes.get(
                         "cpu_most")) is not None else ")") for i, level in odd.items())
    fresh = {o.device_notes[AGAIN_FOR]: o.process for o in outcomes
             if AGAIN_FOR in o.device_notes}
    again = [f"{outcomes[i].process} in {fresh[outcomes[i].process]}" for i in odd
             if outcomes[i].process in fresh]
    return (f"{job}: worker process {said} measured far slower than the job's "
            f"others (over {FAR:g}x the median of those kept, and beyond their spread): kept in "
            "the samples, left out of the estimates"
            + (f", measured again in a fresh process ({', '.join(again)})" if again else
               ", not measured again (the time left did not hold another process)")
            + "; a CPU slower at these calls is the usual cause (--affinity leaves it out)")


def _pairs(run_id: str, jobs: list[Job], done: list[Measured | None], out: Finished) -> None:
    """Ratios from time-adjacent process pairs: each compared implementation over the first
    one measured, each product job over its reference loop (a warning where it leaves
    [0.85, 1.18] in CPU cost), and every job over the CPU reference where it ran."""
    measured = [(job, m) for job, m in zip(jobs, done, strict=True) if m is not None]
    compared = [(j, m) for j, m in measured if not j.reference
                and registry.get(j.driver).COMPARED]
    rows: list[tuple[Job, Measured, list[combine.Row]]] = []
    for job, m in compared[1:]:
        first, theirs = compared[0][0].adapter.implementation, compared[0][1][0]
        rows.append((job, m, pairs.paired_ratios(m[0], theirs, first, "paired_ratio",
                                                 pairs.PAIRED, pairs.same_case)))
    for (job, m), (ref, ref_m) in zip(measured, measured[1:], strict=False):
        if ref.reference and not job.reference:
            match = pairs.reference_of({c.encoding: c for c in ref.group.cases})
            found = pairs.paired_ratios(m[0], ref_m[0], "reference loop", "reference_ratio",
                                        pairs.REFERENCED, match)
            rows.append((job, m, found))
            out.warnings.extend(checks.reference_warnings(job.group, job.label, found))
    rows += _cpu_ratios(measured) + _taxes(measured)
    for job, m, found in rows:
        if found:
            out.summaries.append(tables.summary_table(run_id, job.adapter, job.group, found,
                                                      m[1], m[2], None))


def partners(jobs: list[Job]) -> list[tuple[int, ...]]:
    """Per job of a benchmark, the jobs its ratios are paired with as `_pairs` makes them
    (the first compared implementation, its reference loop, the CPU reference, what its
    browser tax is over): a process of it adds a pair only beside one of theirs."""
    compared = [i for i, j in enumerate(jobs) if not j.reference
                and registry.get(j.driver).COMPARED]
    cpu = [i for i, j in enumerate(jobs) if j.label == registry.CPU_REFERENCE]
    found = []
    for i, job in enumerate(jobs):
        mine: set[int] = set()
        if not job.reference:
            mine.update(compared[:1] if i in compared[1:] else [])
            mine.update([i + 1] if i + 1 < len(jobs) and jobs[i + 1].reference else [])
            mine.update(c for c in cpu if c != i)
            mine.update(k for k, t in enumerate(jobs) if not t.reference and
                        t.adapter.implementation in registry.get(job.driver).TAX_OVER)
        found.append(tuple(sorted(mine)))
    return found


def _taxes(measured: list[tuple[Job, Measured]]
           ) -> list[tuple[Job, Measured, list[combine.Row]]]:
    """Each job's per-unit, synced and GPU time over that of each implementation its
    family's `TAX_OVER` names (pairs.TAXES: `browser_tax`, `browser_tax_synced`,
    `browser_tax_gpu`, the browser over native WebGPU, `call` naming the implementation
    divided by), process pair by process pair."""
    return [(job, m, [row for metric, compared in pairs.TAXES.items()
                      for row in pairs.paired_ratios(m[0], tm[0], theirs.adapter.implementation,
                                                     metric, compared,
                                                     pairs.same_id(theirs.group.cases),
                                                     theirs.adapter.implementation)])
            for job, m in measured if not job.reference
            for theirs, tm in measured if not theirs.reference
            and theirs.adapter.implementation in registry.get(job.driver).TAX_OVER]


def _cpu_ratios(measured: list[tuple[Job, Measured]]
                ) -> list[tuple[Job, Measured, list[combine.Row]]]:
    """Each other job's per-unit time over the CPU reference's (`cpu_ratio`, below 1 where
    it beats the CPU), process pair by process pair: what the crossover H is read from."""
    cpu = next(((j, m) for j, m in measured if j.label == registry.CPU_REFERENCE), None)
    if cpu is None:
        return []
    match = pairs.cpu_reference_of(cpu[0].group.cases)
    return [(job, m, pairs.paired_ratios(m[0], cpu[1][0], registry.CPU_REFERENCE, "cpu_ratio",
                                          pairs.ON_CPU, match))
            for job, m in measured if job is not cpu[0] and not job.reference]


#: Where a worker's notes hold each case's build (compile, capture) in seconds, or its
#: error (workloads/torch_ops.built).
BUILDS = "torch_fusion_build_s"


def _builds(job: Job, outcomes: list[Outcome]) -> tuple[list[combine.Row], list[tuple]]:
    """Each case's build time (torch.compile's compile, a CUDA graph's capture, and one
    unit run) over processes, as `build_ns`; and the cases whose build failed, with the
    first message: a compile that fails is a result, not a crashed benchmark."""
    found: dict[str, list] = {}
    for o in outcomes:
        for case_id, took in o.device_notes.get(BUILDS, {}).items():
            found.setdefault(case_id, []).append(took)
    cases = {c.id: c for c in job.group.cases}
    rows, failed = [], []
    for case_id, took in found.items():
        times = np.array([t * 1e9 for t in took if not isinstance(t, dict)])
        errors = [t["error"] for t in took if isinstance(t, dict)]
        if errors:
            failed.append((cases[case_id], errors[0]))
        if len(times):
            rows.append(combine.Row(Key(cases[case_id], "build_ns", "ns",
                                        "wall time of the build and one unit, per process"),
                                    over_processes(times, True, "process builds", len(times))
                                    if len(times) > 1 else
                                    Estimate(float(times[0]), math.nan, math.nan, 1, 0.0,
                                             "one process's build: no interval")))
    return rows, failed
