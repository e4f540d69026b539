"""The terminal's grid of what one op costs at each cadence (methods/cadence.py)."""

from __future__ import annotations

import math

import pandas as pd
from rich.table import Table

from gpuoverhead.cases import CADENCE
from gpuoverhead.present import format as fmt

#: A cadence case's gap in its id (cases.Case.id).
_GAP = r"/gap=([0-9.e+-]+)ms/"


def settled(seconds: float) -> str:
    """When a level settled, in words: '3.2 s', 'not settled' (a process was still moving
    as it ended), '' where nothing settles."""
    if math.isnan(seconds):
        return ""
    return "not settled" if math.isinf(seconds) else f"{seconds:.1f} s"


def cadence_grid(summary: pd.DataFrame) -> Table | None:
    """Per implementation, encoding and layer, the wall time per op of a burst at each gap
    (back to back first), over processes, after the level settled; the last line of each
    implementation says when the levels settled (the latest of its rows at that gap)."""
    rows = summary[(summary["methodology"] == CADENCE) & summary["process"].isna()
                   & (summary["metric"] == "burst_per_op_ns")]
    if rows.empty:
        return None
    gap_of = rows["case"].str.extract(_GAP)[0].astype(float)
    gaps = sorted(gap_of.unique())
    table = Table(title="What one op costs at a cadence (µs per op of a burst, wall time, "
                        "after the level settled; gap: idle time between bursts)")
    for name in ("benchmark", "impl.", "encoding", "layer"):
        table.add_column(name)
    for gap in gaps:
        table.add_column("back to back" if gap == 0 else f"{gap:g} ms gaps", justify="right")
    for (bench, impl), part in rows.groupby(["benchmark", "implementation"], sort=False):
        label = str(bench)
        for (encoding, layer), cells in part.groupby(["encoding", "layer"], sort=False):
            shown = []
            for gap in gaps:
                hit = cells[gap_of.loc[cells.index] == gap]
                shown.append("—" if hit.empty else fmt.with_ci(
                    hit.iloc[0].value, hit.iloc[0].ci_low, hit.iloc[0].ci_high, "time",
                    hit.iloc[0].ci_level))
            table.add_row(label, str(impl), str(encoding), str(layer), *shown)
            label = ""
        latest = [part[gap_of == gap]["settled_s"].max() for gap in gaps]
        table.add_row("", "", "settled after", "", *(settled(s) for s in latest))
        table.add_section()
    return table
