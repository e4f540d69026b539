"""The curated `results/`: every result folder the documents name is there, and one
`report results/*/*` renders the per-vendor table of every machine measured, nested folders
(an A/A test's halves, the fusion runs) included."""

from __future__ import annotations

import glob
import re
import subprocess

import pandas as pd
import pytest
from conftest import ROOT, in_process

#: The documents that quote result folders (CHANGELOG.md names the ones in the history).
DOCUMENTS = [ROOT / "README.md", ROOT / "results" / "README.md",
             *sorted((ROOT / "docs").glob("*.md"))]
#: `results/<machine>/<question>[/<part>]` as the documents write it.
FOLDER = re.compile(r"results/[a-z0-9-]+/[A-Za-z0-9._{},/-]*[A-Za-z0-9}]")
#: What follows a folder that left the tree: "`results/x` (in the history at commit C)",
#: "`results/x`, in the history at commit C" (the words may wrap onto the next line).
IN_HISTORY = re.compile(r"`?,?\s*\(?in\s+the\s+history\s+at\s+commit\s+([0-9a-f]{7,40})\b")


def _spelled_out(name: str) -> list[str]:
    """A folder name with `{a,b}` spelled out."""
    head, _, rest = name.partition("{")
    parts, _, tail = rest.partition("}")
    return [head + p + tail for p in parts.split(",")] if rest else [name]


def _named(text: str) -> list[str]:
    """The result folders a text names, `{a,b}` spelled out."""
    return [n for name in FOLDER.findall(text) for n in _spelled_out(name)]


def _quoted(text: str) -> list[tuple[str, str | None]]:
    """Each result folder a text names, with the commit it says holds it where it says the
    folder is in the history (None where it quotes it as in the tree)."""
    found = []
    for match in FOLDER.finditer(text):
        history = IN_HISTORY.match(text, match.end())
        found += [(n, history and history.group(1)) for n in _spelled_out(match.group())]
    return found


def _quotes() -> set[tuple[str, str, str | None]]:
    return {(doc.name, n, commit) for doc in DOCUMENTS
            for n, commit in _quoted(doc.read_text("utf-8"))}


def test_every_result_folder_the_documents_name_is_committed():
    """A folder quoted as in the tree is there; one that left it is quoted with the commit
    that holds it (checked against git below)."""
    named = _quotes()
    assert len(named) > 20
    missing = sorted(f"{doc}: {n}" for doc, n, commit in named
                     if commit is None and not (ROOT / n).is_dir()
                     and not (ROOT / n).is_file() and n not in ("results/REPORT.md",))
    assert missing == []


def test_a_folder_quoted_in_the_history_is_in_the_commit_it_names():
    """`git cat-file -e COMMIT:PATH` for each: a quote naming a commit that never held the
    folder (a typo, a commit of another branch, a path renamed) fails."""
    history = sorted((doc, n, commit) for doc, n, commit in _quotes() if commit)
    assert history, "the documents quote no folder in the history: the check below is idle"
    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                         capture_output=True, text=True, check=False)
    if git.returncode != 0 or git.stdout.strip() != "false":
        pytest.skip("not a whole git clone: the history cannot be read here")
    absent = [f"{doc}: {commit}:{n}" for doc, n, commit in history
              if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}:{n}"],
                                capture_output=True, check=False).returncode != 0]
    assert absent == []


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
    # h200: default, processes-3, processes-10, browser-default, cadence, both runs of
    # six-processes' selftest-b2b-refinished, both halves of regimes-check's selftest and
    # selftest-b2b and its plain run on another VM; h200-x4: default and both halves of
    # selftest
    assert (h200.loc[h200["implementation"] == "wgpu-native", "runs"] == 15).all()
