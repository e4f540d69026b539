"""Every figure of the README's headline table, recomputed from the summary.parquet of the
result set its row names: a figure edited by hand, or a set moved or measured again without
the README following, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from conftest import ROOT

from gpuoverhead.present.report import APART, FIGURES

README = ROOT / "README.md"
#: The headline table's columns that are not figures.
KEYS = ("machine", "implementation", "result set")


def headline_rows(text: str) -> list[dict[str, str]]:
    """The rows of the README's headline table (the table under `## Results` whose header
    starts with `| machine | implementation |`), as {column: cell}."""
    section = text.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[:2] == ["machine", "implementation"] and header[-1] == "result set", header
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
            for line in lines[2:]]


def _rows(summary: pd.DataFrame, implementation: str, label: str) -> pd.DataFrame:
    """The summary rows over all processes that the report's column `label` shows for
    `implementation` (the empty kernel at 1 element, the reused cases, not the reference)."""
    figure = next(f for f in FIGURES if f.label == label)
    mask = ((summary["benchmark"] == "empty") & (summary["elements"] == 1)
            & (summary["implementation"] == implementation) & summary["process"].isna()
            & (summary["metric"] == figure.metric)
            & ~summary["variant"].fillna("").isin(APART))
    for column in ("methodology", "encoding", "sync", "layer"):
        if getattr(figure, column) is not None:
            mask &= summary[column] == getattr(figure, column)
    return summary[mask]


def _shown(value: float, low: float, high: float) -> str:
    """A time in ns as the README shows it: µs with one decimal, and its interval."""
    return f"{value / 1e3:.1f} [{low / 1e3:.1f}–{high / 1e3:.1f}]"


def mismatches(text: str) -> list[str]:
    """A line per README figure that its result set does not give, per row whose set is
    missing or of another machine, and per figure its set has that the README leaves out."""
    wrong = []
    for row in headline_rows(text):
        where = f"{row['machine']} {row['implementation']}"
        folder = ROOT / row["result set"].strip("`")
        if not (folder / "summary.parquet").is_file():
            wrong.append(f"{where}: no result set {row['result set']}")
            continue
        summary = pd.read_parquet(folder / "summary.parquet")
        adapters = set(summary.loc[summary["implementation"] == row["implementation"],
                                   "adapter"].dropna())
        if not any(row["machine"] in a for a in adapters):
            wrong.append(f"{where}: {row['result set']} measured it on {sorted(adapters)}")
        for label, cell in row.items():
            if label in KEYS:
                continue
            found = _rows(summary, row["implementation"], label)
            assert len(found) <= 1, (where, label, len(found))
            shown = "—" if found.empty else _shown(*found[["value", "ci_low", "ci_high"]]
                                                   .iloc[0].to_numpy(float))
            if shown != cell:
                wrong.append(f"{where} {label}: README {cell!r}, {row['result set']} {shown!r}")
    return wrong


def test_every_readme_figure_is_its_result_sets():
    rows = headline_rows(README.read_text(encoding="utf-8"))
    assert len(rows) >= 4 and {r["machine"] for r in rows} >= {"H100", "H200"}
    assert mismatches(README.read_text(encoding="utf-8")) == []


def test_a_changed_figure_or_folder_is_caught():
    text = README.read_text(encoding="utf-8")
    first = headline_rows(text)[0]
    cell = first["submit"]
    changed = re.sub(r"^\d+\.\d", lambda m: f"{float(m.group()) + 0.1:.1f}", cell)
    assert changed != cell
    wrong = mismatches(text.replace(f"| {cell} |", f"| {changed} |", 1))
    assert len(wrong) == 1 and "submit" in wrong[0] and changed in wrong[0], wrong
    moved = text.replace(first["result set"], "`results/nowhere`")
    assert any("no result set" in w for w in mismatches(moved))
    assert Path(ROOT / first["result set"].strip("`")).is_dir()
