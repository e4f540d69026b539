"""The curated `results/`: every result folder the documents name is there, and one
`report results/*/*` renders the per-vendor table of every machine measured, nested folders
(an A/A test's halves, the fusion runs) included."""

from __future__ import annotations

import glob
import re

import pandas as pd
import pytest
from conftest import ROOT, in_process

#: The documents that quote result folders (CHANGELOG.md names the ones in the history).
DOCUMENTS = [ROOT / "README.md", ROOT / "results" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]
#: `results/<machine>/<question>[/<part>]` as the documents write it.
FOLDER = re.compile(r"results/[a-z0-9-]+/[A-Za-z0-9._{},/-]*[A-Za-z0-9}]")


def _named(text: str) -> list[str]:
    """The result folders a text names, `{a,b}` spelled out."""
    found = []
    for name in FOLDER.findall(text):
        head, _, rest = name.partition("{")
        parts, _, tail = rest.partition("}")
        found += [head + p + tail for p in parts.split(",")] if rest else [name]
    return found


def test_every_result_folder_the_documents_name_is_committed():
    named = {(doc.name, n) for doc in DOCUMENTS for n in _named(doc.read_text("utf-8"))}
    assert len(named) > 20
    missing = sorted(f"{doc}: {n}" for doc, n in named
                     if not (ROOT / n).is_dir() and not (ROOT / n).is_file()
                     and n not in ("results/REPORT.md",))
    assert missing == []


def test_the_results_readme_lists_every_committed_set_and_only_those():
    """Its table names folders without `results/` (the check above cannot see them): each
    named is there, and every run folder (a run.json) is under one named."""
    text = (ROOT / "results" / "README.md").read_text("utf-8")
    cells = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    named = {n.removeprefix("results/") for cell in cells
             for n in _named(" ".join(f"results/{c}" for c in re.findall(r"`([^`]+)`", cell)))}
    assert sorted(n for n in named if not (ROOT / "results" / n).exists()) == []
    runs = {str(p.parent.relative_to(ROOT / "results"))
            for p in (ROOT / "results").rglob("run.json")}
    assert sorted(r for r in runs if not any(r == n or r.startswith(n + "/")
                                             for n in named)) == []


@pytest.mark.slow
def test_report_over_every_machine_folder_has_a_row_per_adapter(tmp_path):
    out = tmp_path / "report.csv"
    folders = sorted(glob.glob(str(ROOT / "results" / "*" / "*")))
    proc = in_process("report", *folders, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out, keep_default_na=False)
    measured = set()
    for summary in (ROOT / "results").rglob("summary.parquet"):
        rows = pd.read_parquet(summary, columns=["benchmark", "elements", "adapter"])
        measured |= set(rows.loc[(rows.benchmark == "empty") & (rows.elements == 1), "adapter"])
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA H200"} <= measured
    assert set(table["adapter"]) == measured
    h200 = table[table["adapter"] == "NVIDIA H200"]
    # h200: default, default-final, limit300, processes-3, processes-10, browser-default,
    # cadence, the first call's default and cadence, and both halves of selftest-again and of
    # selftest-b2b (its re-finished copies are the same runs, counted once), both halves of
    # six-processes' selftest and selftest-b2b, of six-processes-2's and -3's selftest-b2b
    # and of six-processes-4's selftest, of six-processes-5's selftest-b2b and selftest,
    # of abba's selftest and of regimes-check's selftest and selftest-b2b; h200-x4: default
    # and both halves of selftest
    assert (h200.loc[h200["implementation"] == "wgpu-native", "runs"] == 36).all()
