"""What a finished group's samples say about the measurement itself, as run.json entries and
warnings: the GPU timer, warm-up, precision against the target, trends over time."""

from __future__ import annotations

from typing import Any

import pandas as pd

from gpuoverhead.analysis.combine import Row
from gpuoverhead.analysis.samples import backwards_stamps, gpu_timer
from gpuoverhead.analysis.series import STOP_METRICS, precise_enough
from gpuoverhead.run.budget import SAMPLE_SHARE
from gpuoverhead.run.worker import Outcome
from gpuoverhead.suite.model import Group


def process_entry(outcome: Outcome) -> dict[str, Any]:
    """run.json's record of one worker process: how sampling ended, clocks, device notes."""
    s, cal = outcome.samples, outcome.calibration
    entry = {"process": outcome.process, "budget_s": round(outcome.budget_s, 3),
             "seconds": round(outcome.seconds, 3),
             "rounds": s.rounds, "warmup_rounds": s.warmup_rounds,
             "warmup_settled": s.warmup_settled, "stop": s.stop,
             "n_cut": {s.cases[i].id: list(n) for i, n in s.cut.items()},
             "clock_cost_ns": cal.timer_ns, "timestamp_period_ns": cal.tick_ns,
             **outcome.device_notes}
    timer = gpu_timer(s, cal.tick_ns) if cal.tick_ns else None
    if timer is not None:
        entry.update(gpu_timer_resolution_ns=timer.resolution_ns,
                     gpu_timer_quantized=timer.quantized)
    return entry


def timer_warnings(group: Group, outcomes: list[Outcome]) -> list[str]:
    """The GPU timer's quantization, output checks skipped, warm-up that did not settle."""
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
    cut = sorted({o.samples.cases[i].id: n for o in outcomes
                  for i, n in o.samples.cut.items()}.items())
    if cut:
        name, n = cut[0]
        warnings.append(f"{group.id}: the N sweep of {len(cut)} cases was cut short on this "
                        f"adapter (a sample at a larger N took over {SAMPLE_SHARE:.0%} of a "
                        f"process's budget), e.g. {name} at N = {', '.join(map(str, n))}")
    unsettled = [o for o in outcomes if not o.samples.warmup_settled]
    if unsettled:
        warnings.append(f"{group.id}: warm-up did not settle in {len(unsettled)} of "
                        f"{len(outcomes)} processes (stopped after at most "
                        f"{max(o.samples.warmup_rounds for o in unsettled)} rounds by "
                        f"warmup_max_rounds or by the warm-up's share of the budget)")
    return warnings


def precision_warnings(group: Group, summary: pd.DataFrame) -> list[str]:
    head = summary[summary["metric"].isin(STOP_METRICS) & summary["process"].isna()]
    half = (head["ci_high"] - head["ci_low"]) / 2
    target = group.sampling.target_rel_ci
    head = head[[not precise_enough(h, v, target) for h, v in zip(half, head["value"],
                                                                  strict=True)]]
    if head.empty or head["stop"].eq("converged").all():
        return []
    worst = head.loc[head["rel_ci"].idxmax()]
    if worst["rel_ci"] <= group.sampling.target_rel_ci:
        return []
    return [f"{group.id}: {worst['case']} {worst['metric']} is only known to "
            f"±{worst['rel_ci']:.1%} (target ±{group.sampling.target_rel_ci:.1%}) when sampling "
            f"stopped ({worst['stop']}): the machine is noisy or the budget too small"]


def drift_warnings(group: Group, implementation: str, found: list[dict[str, Any]]
                   ) -> list[str]:
    if not found:
        return []
    worst = max(found, key=lambda d: abs(d["change"]))
    return [f"{group.id} ({implementation}): {len(found)} trends over time (see drift in "
            f"run.json); largest: {worst['case']} {worst['metric']}, {worst['change']:+.1%} "
            f"first to last quarter ({worst['scope']})"]


#: Product / reference loop CPU cost per dispatch outside this range is warned about: the
#: product's process then costs more (or less) than the same calls do alone.
REFERENCE_RANGE = (0.85, 1.18)


def reference_warnings(group: Group, label: str, rows: list[Row]) -> list[str]:
    low, high = REFERENCE_RANGE
    return [f"{group.id} ({label}): {r.key.case.encoding} CPU cost per dispatch is "
            f"{r.estimate.value:.2f}x the reference loop's [{r.estimate.ci_low:.2f}–"
            f"{r.estimate.ci_high:.2f}], outside [{low}, {high}]: the same calls cost more "
            "inside the product's process than alone (see reference_ratio)"
            for r in rows if r.key.call == "cpu_per_dispatch_ns"
            and not low <= r.estimate.value <= high]
