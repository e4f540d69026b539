"""What limited a run's precision, said at its end: per implementation, its widest figure
of those the suite's target is for (analysis/series.STOP_METRICS, every layer) whose
interval is wider than the target, whether its processes differed or each process's own
samples varied, and what would narrow it.

Processes that differ beyond their own noise (the range of their medians more than twice a
process's own half-width) are narrowed by more processes of the same length; a process's own
noise by longer processes (a larger `budget_s`: a time limit only cuts a process's share);
a process left out as far off its job's others (analysis/odd.py) points at a CPU. Each
remedy is stated in the options of the command that made the run (`run`, or `selftest` for
an A/A run's halves), with the time it takes: about twice the run's, for an interval about
1/sqrt(2) as wide or better.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead.analysis.series import STOP_METRICS, precise_enough
from gpuoverhead.cases import FUSION, REFERENCE

#: A process's own half-width this share of the range of the processes' medians or more: the
#: range is what that noise alone would make (three medians of noise sigma range 1.7 sigma).
WITHIN_SHARE = 0.5
#: The figures in words.
_PER = {"latency_ns": "latency", "per_dispatch_ns": "per op",
        "cpu_per_dispatch_ns": "CPU time per op", "per_unit_ns": "per unit",
        "token_ns": "per token", "step_ns": "per step"}
#: Where a figure was issued from, where not the Python wrapper.
_LAYER = {"raw": " through the raw FFI", "native": " in the native C loop"}


def limits(summary: pd.DataFrame, benchmarks: list[dict[str, Any]], limit_s: float | None,
           aa: bool = False) -> list[str]:
    """One line per implementation whose widest figure missed the target; `benchmarks` is
    run.json's, `aa` whether the run is a half of an A/A run (`selftest`)."""
    if summary.empty or "rel_ci" not in summary:
        return []
    rows = summary[summary["process"].isna() & summary["metric"].isin(STOP_METRICS)
                   & (summary["ci_level"] > 0)]
    wide = [math.isfinite(r.rel_ci) and r.rel_ci > r.target_rel_ci and not precise_enough(
        (r.ci_high - r.ci_low) / 2, r.value, r.target_rel_ci) for r in rows.itertuples()]
    rows = rows[np.array(wide, dtype=bool)]
    left = {(b["id"], b["implementation"]) for b in benchmarks
            if any("left_out" in p for p in b.get("processes", []))}
    lines = []
    for impl, mine in rows.groupby("implementation", sort=False):
        worst = mine.loc[mine["rel_ci"].idxmax()]
        more = f" (and {len(mine) - 1} more of its figures)" if len(mine) > 1 else ""
        lines.append(f"{impl}, {_what(worst)} ±{worst.rel_ci:.0%} against the suite's target of "
                     f"±{worst.target_rel_ci:.0%}{more}: "
                     + _why(worst, bool(_jobs_of(worst) & left), limit_s, aa))
    return lines


def _jobs_of(row: Any) -> set[tuple[str, str]]:
    """What run.json may call the job a summary row came from, (id, implementation): its
    group's id is its benchmark and element count, a decode step's with its cache length, a
    matmul's its benchmark alone (cases.Group.id); its label the family's, with
    ` reference` for the reference loop (drivers/base.Job.label). Only one of the ids is
    a benchmark's."""
    label = row.family + (f" {REFERENCE}" if row.variant == REFERENCE else "")
    group = f"{row.benchmark}/elements={row.elements}"
    return {(i, label) for i in (group, f"{group}/k={row.k}", f"{row.benchmark}/matmul")}


def _what(row: Any) -> str:
    """The figure in words: 'naive latency', 'submit CPU time per op in the native C loop',
    'fused per token of decode'."""
    per = _PER.get(row.metric, row.metric)
    if row.methodology == "naive":
        what = f"naive {per}" + (" with readback" if row.sync == "readback" else "")
    elif row.methodology == FUSION:
        what = f"{row.variant} {per} of {row.benchmark}"
    else:
        what = f"{row.encoding if row.encoding not in ('', '-') else 'sequential'} {per}"
    where = " in the reference loop" if row.variant == REFERENCE else _LAYER.get(row.layer, "")
    return what + where


def _why(row: pd.Series, left_out: bool, limit_s: float | None, aa: bool) -> str:
    spread, within, count = row.rel_spread_between, row.rel_ci_within, int(row.processes)
    if left_out:
        return ("a process far slower than its job's others was left out (its warning says "
                "which CPU): a quieter CPU set narrows it (--affinity, without that CPU)")
    if count < 2 or not math.isfinite(spread):
        ask = "--processes 3" + (f" --time-limit {3 * limit_s:g}" if limit_s and not aa else "")
        return (f"one process, whose own interval was ±{within:.0%} of the figure: more "
                f"processes give an interval over processes ({ask}"
                + (", about three times the time)" if aa else ")"))
    if within >= WITHIN_SHARE * spread:
        # A process's length is the suite's budget_s shared by the suite's `processes` (or
        # those asked); a time limit only cuts it (run/budget.py), and one longer than the
        # suite's buys processes: with both twice the suite's, the same count runs, each twice
        # as long, whether the count was the suite's, asked or bought (run/plan.py `_counts`;
        # `--processes {count}` with budget_s twice was twice as long only where the count was
        # the one sharing the budget). An A/A run's limit is scaled from the suite's.
        longer = "budget_s" + (" and time_limit_s" if limit_s else "") + " twice the suite's"
        if limit_s and not aa:
            longer += f", --time-limit {2 * limit_s:g} where the run had one"
        return (f"each process alone pinned it only to ±{within:.0%} (its own interval: the "
                f"noise within it), against {spread:.0%} between the processes' medians: "
                f"longer processes narrow it ({longer}, about twice the time)")
    # Under a time limit a longer one buys processes as long (run/plan.py `_counts`);
    # without one, more processes share the suite's budget unless it grows too. An A/A
    # run's processes are each as long as a plain run's, however many (`selftest`).
    more = (f"--processes {2 * count}" if aa else f"--time-limit {2 * limit_s:g}" if limit_s
            else f"--processes {2 * count} and a budget_s twice the suite's")
    return (f"its {count} processes differed by {spread:.0%} of the figure, each within "
            f"±{within:.0%}: more processes as long narrow it ({more}, about twice the time)")
