"""Result files, each replaced atomically so that a reader never sees a half-written one
(gpuoverhead/whole_files.py): a run killed at any moment leaves the previous complete
version."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from gpuoverhead.results.columns import RUN_JSON, SAMPLES, STATES, SUMMARY
from gpuoverhead.whole_files import atomic

#: What starts a formula in a spreadsheet (OWASP's CSV injection list: = + - @, a tab, a
#: carriage return), and the full-width = + - @ that some spreadsheets read as those.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: A number written as text (what a spreadsheet reads as that number, never a formula).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def inert(cell: str) -> str:
    """A text cell as a spreadsheet must show it, as text: one that starts a formula, also
    after spaces or line breaks (`=HYPERLINK(...)`, `+cmd|...`, ` @SUM(...)`), gets a
    leading `'` (OWASP's advice); a number written as text and the placeholder `-` (an
    estimate without an encoding, a unit of an error row) stay as they are."""
    if cell.startswith(FORMULA_STARTS) or cell.lstrip(" \t\r\n").startswith(FORMULA_STARTS):
        return cell if cell == "-" or _NUMBER.fullmatch(cell) else "'" + cell
    return cell


def inert_text(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with each text cell `inert`: what every CSV that gpuoverhead writes holds (a
    result set may come from anyone; its strings reach the CSV of a run, report or history).
    Each column's distinct values are looked at once (a run's samples repeat a few), missing
    ones left out by the test for text, not a `dropna` first (a masked copy of each column:
    most of this function's time on a run's small tables)."""
    changed = {}
    for name, column in table.items():
        if column.dtype == object or pd.api.types.is_string_dtype(column):
            found = {v: inert(v) for v in column.unique() if isinstance(v, str)}
            if mapping := {v: s for v, s in found.items() if s != v}:
                changed[name] = column.replace(mapping)
    return table.assign(**changed) if changed else table


def write_table(folder: Path, name: str, table: pd.DataFrame) -> None:
    """`name`.parquet (zstd: a quarter smaller than the default snappy for a run's samples)
    and `name`.csv in `folder` (its text cells `inert`; the Parquet file keeps them as
    they are)."""
    atomic(folder / f"{name}.parquet", lambda p: table.to_parquet(
        p, index=False, compression="zstd", compression_level=9))
    atomic(folder / f"{name}.csv", lambda p: inert_text(table).to_csv(p, index=False))


def write_json(path: Path, data: dict[str, Any]) -> None:
    atomic(path, lambda p: p.write_text(json.dumps(data, indent=2, default=str) + "\n",
                                         encoding="utf-8"))


def write_run(folder: Path, samples: pd.DataFrame, summary: pd.DataFrame,
              run_info: dict[str, Any], states: pd.DataFrame | None = None) -> None:
    """All five files of a run folder, and `states` where it has rows; run.json last, so it
    never names unwritten data."""
    write_table(folder, SAMPLES, samples)
    write_table(folder, SUMMARY, summary)
    if states is not None and not states.empty:
        write_table(folder, STATES, states)
    else:  # a folder written again (--force) keeps no states of the run before
        for stale in (folder / f"{STATES}.parquet", folder / f"{STATES}.csv"):
            stale.unlink(missing_ok=True)
    write_json(folder / RUN_JSON, run_info)

