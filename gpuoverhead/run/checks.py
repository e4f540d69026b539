"""What a finished group's samples say about the measurement itself, as run.json entries and
warnings: the GPU timer, warm-up, precision against the target, trends over time."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from gpuoverhead.analysis.combine import Row
from gpuoverhead.analysis.floor import FLOOR_MULTIPLE
from gpuoverhead.analysis.off_floor import floor_points
from gpuoverhead.analysis.samples import backwards_stamps, gpu_timer
from gpuoverhead.analysis.series import STOP_METRICS, View, precise_enough
from gpuoverhead.cases import Group
from gpuoverhead.metrics import HEADLINE
from gpuoverhead.present import note_words
from gpuoverhead.present.note_words import (  # the kinds of note said once (said_once)
    CUT,
    DRIFT,
    FLOOR,
    FLOORED,
    GPU_STATE,
    IMPRECISE,
    MODES,
    SHORT,
    UNSETTLED,
)
from gpuoverhead.run import telemetry
from gpuoverhead.run.budget import SAMPLE_SHARE
from gpuoverhead.run.rounds import OVERRUN
from gpuoverhead.run.worker import Outcome


def process_entry(outcome: Outcome) -> dict[str, Any]:
    """run.json's record of one worker process: how sampling ended, clocks, device notes."""
    s, cal = outcome.samples, outcome.calibration
    entry = {"process": outcome.process, "budget_s": round(outcome.budget_s, 3),
             "seconds": round(outcome.seconds, 3),
             "rounds": s.rounds, "warmup_rounds": s.warmup_rounds,
             "warmup_settled": s.warmup_settled, "stop": s.stop,
             "n_cut": {s.cases[i].id: list(n) for i, n in s.cut.items()},
             "clock_cost_ns": cal.timer_ns, "timestamp_period_ns": cal.tick_ns,
             "python_step_ns": s.python_step_ns, **outcome.device_notes}
    timer = gpu_timer(s, cal.tick_ns) if cal.tick_ns else None
    if timer is not None:
        entry.update(gpu_timer_resolution_ns=timer.resolution_ns,
                     gpu_timer_quantized=timer.quantized)
    return entry


def timer_warnings(group: Group, outcomes: list[Outcome]) -> list[str]:
    """The GPU timer's quantization, and output checks skipped."""
    warnings = []
    for o in outcomes:
        timer = gpu_timer(o.samples, o.calibration.tick_ns) if o.calibration.tick_ns else None
        if timer is not None and timer.quantized:
            warnings.append(f"{group.id}: GPU timestamps are quantized to "
                            f"{timer.resolution_ns:.0f} ns; gpu_ns is no more precise than that")
            break
    backwards = sum(backwards_stamps(o.samples) for o in outcomes)
    if backwards:
        warnings.append(f"{group.id}: {backwards} GPU timestamp pairs end before they begin; "
                        "those samples have no GPU time")
    unchecked = [u for o in outcomes for u in o.device_notes.get("unchecked", [])]
    if unchecked:
        warnings.append(f"{group.id}: {len(unchecked)} output checks against numpy were "
                        f"skipped, e.g. {unchecked[0]}")
    return warnings


def floor_notes(group: Group, label: str, outcomes: list[Outcome]) -> list[tuple[str, str]]:
    """Fusion slopes fitted above a completion floor (methods/fusion.py): the N each
    process left out as the floor (FLOOR), and the cases left with no slope because
    fewer than two of the N it measured lay above it (FLOORED)."""
    notes = []
    for o in outcomes:
        view = View(o.samples, o.calibration, o.clock_offset_ns)
        for case, (left, floor_ns, sloped) in floor_points(view).items():
            kind = FLOOR if sloped else FLOORED
            notes.append((kind, f"{case.id} ({label}) process {o.process}: N = "
                                f"{', '.join(map(str, left))} under {FLOOR_MULTIPLE:g}x its "
                                f"{floor_ns / 1e3:,.0f} µs floor"))
    return notes


def sampling_notes(group: Group, outcomes: list[Outcome], summary: pd.DataFrame
                   ) -> list[tuple[str, str]]:
    """What limited a group's sampling, as (kind, example) pairs to be said once per run:
    N sweeps cut by the probe, warm-up that did not settle, headline estimates that missed
    their precision target when sampling stopped."""
    notes = []
    cut = sorted({o.samples.cases[i].id: n for o in outcomes
                  for i, n in o.samples.cut.items()}.items())
    notes += [(CUT, f"{name} at N = {', '.join(map(str, n))}") for name, n in cut]
    notes += [(UNSETTLED, f"{group.id} process {o.process}") for o in outcomes
              if not o.samples.warmup_settled]
    notes += [(GPU_STATE, f"{group.id} process {o.process}: {said}") for o in outcomes
              if isinstance(state := o.device_notes.get("telemetry"), dict)
              and (said := telemetry.warning(state))]
    notes += [(SHORT, f"{group.id} process {o.process}: {o.samples.rounds} rounds in "
                      f"{o.sampling_s:.0f} s for a budget of {o.budget_s:.1f} s")
              for o in outcomes if o.samples.stop == "short"]
    head = summary[summary["metric"].isin(STOP_METRICS) & summary["process"].isna()]
    target = group.sampling.target_rel_ci
    for r in head.itertuples():
        if r.stop != "converged" and not precise_enough((r.ci_high - r.ci_low) / 2, r.value,
                                                        target) and r.rel_ci > target:
            notes.append((IMPRECISE, f"{r.case} {r.metric} ±{r.rel_ci:.0%} (target "
                                     f"±{target:.0%}, stopped by {r.stop}; {_limit(r)})"))
    return notes


def mode_notes(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """The summary's estimates with two modes that split their processes' medians (said in
    `modes` where combine made them trimmed means: analysis/modes.py), as (MODES, example)
    notes."""
    found = summary[(summary["modes"].fillna("") != "") & summary["metric"].isin(HEADLINE)]
    return [(MODES, f"{r.implementation} {r.case} {r.metric}: {r.modes}")
            for r in found.itertuples()]


def _limit(row: Any) -> str:
    """Which variance component set an estimate's width: processes that differ (more
    processes narrow it) or noise within each (longer processes do)."""
    within, between = row.rel_ci_within, row.rel_spread_between
    if not (math.isfinite(within) and math.isfinite(between)):
        return f"±{within:.0%} within its one process" if math.isfinite(within) else \
            "no variance components"
    side = ("processes differ" if row.rel_ci > 2 * within / math.sqrt(row.processes)
            else "noise within processes")
    return f"{side}: {between:.0%} between process medians, ±{within:.0%} within one"


def said_once(notes: list[tuple[str, str]]) -> list[str]:
    """One warning per kind of sampling note, however many groups had it: run.json's says
    which columns to read, the terminal's (`Note.plain`) what the user can do; both are
    present/note_words.py's, which reads the first back into the second for reports."""
    by_kind: dict[str, list[str]] = {}
    for kind, example in notes:
        by_kind.setdefault(kind, []).append(example)
    return [note_words.note(kind, len(found), found[0], share=f"{SAMPLE_SHARE:.0%}",
                            overrun=f"{OVERRUN:g}", clock=f"{telemetry.CLOCK_CHANGE:.0%}")
            for kind, found in by_kind.items()]


def drift_notes(group: Group, implementation: str, found: list[dict[str, Any]]
                ) -> list[tuple[str, str]]:
    """A job's trends over time (analysis/drift.py) as DRIFT notes, said once per run, the
    largest first; run.json's `drift` keeps each in full."""
    return [(DRIFT, f"{group.id} ({implementation}) {d['case']} {d['metric']}, "
                    f"{d['change']:+.1%} first to last quarter")
            for d in sorted(found, key=lambda d: -abs(d["change"]))]


#: Product / reference loop CPU cost per dispatch outside this range is warned about: the
#: product's process then costs more (or less) than the same calls do alone.
REFERENCE_RANGE = (0.85, 1.18)


def reference_warnings(group: Group, label: str, rows: list[Row]) -> list[str]:
    """Where the product's CPU cost per dispatch differs from the reference loop's beyond
    doubt: the whole interval of their ratio outside REFERENCE_RANGE (one pair of processes,
    or a reference below the clock's resolution, gives no interval and no verdict)."""
    low, high = REFERENCE_RANGE
    return [f"{group.id} ({label}): {r.key.case.encoding} CPU cost per dispatch is "
            f"{r.estimate.value:.2f}x the reference loop's [{r.estimate.ci_low:.2f}–"
            f"{r.estimate.ci_high:.2f}], outside [{low}, {high}]: the same calls cost "
            f"{'more' if r.estimate.value > high else 'less'} inside the product's process "
            "than alone (see reference_ratio)"
            for r in rows if r.key.call == "cpu_per_dispatch_ns"
            and math.isfinite(r.estimate.ci_low) and math.isfinite(r.estimate.ci_high)
            and (r.estimate.ci_low > high or r.estimate.ci_high < low)]


#: A CPU is named when at least `SLOW_CPU_ROWS` headline estimates of the processes that ran
#: mostly on it are `SLOW_CPU` times their job's median, a share of its estimates four times
#: the other CPUs' share.
SLOW_CPU = 1.5
SLOW_CPU_ROWS = 3


def cpu_warnings(benchmarks: list[dict[str, Any]], summary: pd.DataFrame) -> list[str]:
    """A CPU on which the run's processes measured slower than on the others: each process's
    headline estimates over its job's median of the same estimate, by the CPU the process
    ran on most (run.json `cpu_most`). On the lent H100 VM one vCPU made `submit` 3.5x
    slower (and nothing else); without this a user sees only wide intervals."""
    if summary.empty or "process" not in summary:
        return []
    rows = summary[summary["process"].notna() & summary["metric"].isin(HEADLINE)]
    by_cpu: dict[int, list[tuple[float, str]]] = {}
    for entry in benchmarks:
        cpus = {p.get("process"): p.get("cpu_most") for p in entry.get("processes", [])}
        mine = rows[rows["case"].str.startswith(f"{entry.get('id')}/")
                    & _labelled(rows, entry.get("implementation"))]
        for (case, metric, _), same in mine.groupby(["case", "metric", "call"], dropna=False):
            median = same["value"].median()
            for r in same.itertuples():
                if median > 0 and (cpu := cpus.get(int(r.process))) is not None:
                    by_cpu.setdefault(cpu, []).append((r.value / median, f"{case} {metric}"))
    warnings = []
    for cpu, found in sorted(by_cpu.items()):
        slow = sorted((x for x in found if x[0] >= SLOW_CPU), reverse=True)
        others = [x for c, f in by_cpu.items() if c != cpu for x in f]
        elsewhere = sum(x[0] >= SLOW_CPU for x in others) / max(len(others), 1)
        if len(slow) >= SLOW_CPU_ROWS and len(slow) / len(found) >= 4 * elsewhere:
            warnings.append(
                f"on CPU {cpu}, {len(slow)} of {len(found)} headline estimates of the processes "
                f"that ran mostly there were {SLOW_CPU:g}x their job's median or more (e.g. "
                f"{slow[0][1]} {slow[0][0]:.1f}x), against {elsewhere:.0%} on the other CPUs: "
                f"that CPU is slower for these calls; --affinity can leave it out")
    return warnings


def _labelled(rows: pd.DataFrame, label: Any) -> pd.Series:
    """Which summary rows belong to the run.json benchmark entry labelled `label` (an
    implementation or a family; '... reference' for the reference loop's job)."""
    reference = rows["variant"] == "reference"
    return (reference & (rows["implementation"] + " reference" == label)) | \
        (~reference & ((rows["implementation"] == label) | (rows["family"] == label)))
