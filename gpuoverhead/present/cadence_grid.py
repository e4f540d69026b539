"""The terminal's grid of what one op costs at each cadence (methods/cadence.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from rich.table import Table

from gpuoverhead.cases import CADENCE
from gpuoverhead.present import format as fmt
from gpuoverhead.present.format import literal

#: A cadence case's gap in its id (cases.Case.id).
_GAP = r"/gap=([0-9.e+-]+)ms/"


def settled(seconds: pd.Series) -> str:
    """When the levels of one gap's rows settled, in words: the median over the rows whose
    processes all settled, and how many rows had a process still moving as it ended
    ('3.2 s', '2.1 s; 2 of 6 not settled', 'not settled')."""
    seconds = seconds.dropna()
    done = seconds[np.isfinite(seconds)]
    moving = len(seconds) - len(done)
    said = f"{done.median():.1f} s" if len(done) else ""
    if moving:
        said += ("; " if said else "") + (f"{moving} of {len(seconds)} not settled"
                                          if len(done) else "not settled")
    return said


def cadence_grid(summary: pd.DataFrame) -> Table | None:
    """Per implementation, encoding and layer, the wall time per op of a burst at each gap
    (back to back first), over processes, after the level settled; the last line of each
    implementation says when its rows at that gap settled (`settled`)."""
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
        label, who = literal(bench), literal(impl)  # names from a file: text, not markup
        for (encoding, layer), cells in part.groupby(["encoding", "layer"], sort=False):
            shown = []
            for gap in gaps:
                hit = cells[gap_of.loc[cells.index] == gap]
                shown.append("—" if hit.empty else fmt.with_ci(
                    hit.iloc[0].value, hit.iloc[0].ci_low, hit.iloc[0].ci_high, "time",
                    hit.iloc[0].ci_level))
            table.add_row(label, who, literal(encoding), literal(layer), *shown)
            label = who = ""
        table.add_row("", "", "settled after", "",
                      *(settled(part[gap_of == gap]["settled_s"]) for gap in gaps))
        table.add_section()
    return table
