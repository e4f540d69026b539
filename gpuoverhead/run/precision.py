"""What limited a run's precision, said at its end: per implementation, its widest headline
figure (metrics.HEADLINE) whose interval is wider than the suite's target, whether its
processes differed or each process's own samples varied, and what would narrow it.

Processes that differ beyond their own noise (the range of their medians more than twice a
process's own half-width) are narrowed by more processes of the same length; a process's own
noise by longer processes; a process left out as far off its job's others (analysis/odd.py)
points at a CPU. Each remedy is stated in the options that ask for it, with the time it
takes: about twice the run's, for an interval about 1/sqrt(2) as wide or better.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from gpuoverhead.metrics import HEADLINE

#: A process's own half-width this share of the range of the processes' medians or more: the
#: range is what that noise alone would make (three medians of noise sigma range 1.7 sigma).
WITHIN_SHARE = 0.5


def limits(summary: pd.DataFrame, benchmarks: list[dict[str, Any]], limit_s: float | None
           ) -> list[str]:
    """One line per implementation whose widest headline figure missed the target."""
    if summary.empty or "rel_ci" not in summary:
        return []
    rows = summary[summary["process"].isna() & summary["metric"].isin(HEADLINE)
                   & (summary["layer"] == "wrapper") & (summary["ci_level"] > 0)]
    rows = rows[rows["rel_ci"].apply(math.isfinite) & (rows["rel_ci"] > rows["target_rel_ci"])]
    left = {(b["id"], b["implementation"]) for b in benchmarks
            if any("left_out" in p for p in b.get("processes", []))}
    lines = []
    for impl, mine in rows.groupby("implementation", sort=False):
        worst = mine.loc[mine["rel_ci"].idxmax()]
        more = f" (and {len(mine) - 1} more of its headline figures)" if len(mine) > 1 else ""
        lines.append(f"{impl}, {_what(worst)} ±{worst.rel_ci:.0%} against the suite's target of "
                     f"±{worst.target_rel_ci:.0%}{more}: "
                     + _why(worst, (f"{worst.benchmark}/elements={worst.elements}", impl) in left,
                            limit_s))
    return lines


def _what(row: pd.Series) -> str:
    if row.metric == "latency_ns":
        return "naive latency" + (" with readback" if row.sync == "readback" else "")
    return f"{row.encoding} per op" if row.encoding not in ("", "-") else "sequential per op"


def _why(row: pd.Series, left_out: bool, limit_s: float | None) -> str:
    spread, within, count = row.rel_spread_between, row.rel_ci_within, int(row.processes)
    longer = (f"--time-limit {2 * limit_s:g}" if limit_s else "a budget_s twice the suite's")
    if left_out:
        return ("a process far slower than its job's others was left out (its warning says "
                "which CPU): a quieter CPU set narrows it (--affinity, without that CPU)")
    if count < 2 or not math.isfinite(spread):
        return (f"one process, whose own interval was ±{within:.0%} of the figure: more "
                "processes give an interval over processes (--processes 3"
                + (f" --time-limit {3 * limit_s:g})" if limit_s else ")"))
    if within >= WITHIN_SHARE * spread:
        return (f"each process alone pinned it only to ±{within:.0%} (its own interval: the "
                f"noise within it), against {spread:.0%} between the processes' medians: "
                f"longer processes narrow it (--processes {count} {longer}, about twice the "
                "time)")
    # Under a time limit a longer one buys processes as long (run/plan.py `_counts`);
    # without one, more processes share the suite's budget unless it grows too.
    more = (f"--time-limit {2 * limit_s:g}" if limit_s else
            f"--processes {2 * count} and a budget_s twice the suite's")
    return (f"its {count} processes differed by {spread:.0%} of the figure, each within "
            f"±{within:.0%}: more processes as long narrow it ({more}, about twice the time)")
