"""Plain words for the tables' short terms (present/glossary.py), as the summary grid, a
report and `compare` caption them, on a committed run."""

from __future__ import annotations

from conftest import ROOT, in_process

from gpuoverhead.present import console, glossary, render
from gpuoverhead.present import report as reporting
from gpuoverhead.results import read

#: An H200 run of the default suite: every layer, GPU times, PyTorch beside WebGPU.
RUN = ROOT / "results/h200/default"
#: An H200 A/A test's halves.
AA = ROOT / "results/h200/regimes-check/selftest"
#: Terms a newcomer met and could not place (issue 56).
UNPLACED = ("naive readback", "api/ref.", "fixed wait", "naive/submit", "bound")


def test_the_summary_grid_says_what_each_short_term_it_shows_means():
    """`api/ref.`, `fixed wait`, `naive readback`, the `bound` column and `naive/*`
    (inflation) had no word of explanation: the grid's caption has a line for each."""
    rs = read.load(RUN)
    grid = console.summary_grid(rs.summary[rs.summary["methodology"] != "fusion"])
    lines = str(grid.caption).splitlines()
    for term in UNPLACED:
        assert sum(line.startswith(term) for line in lines) == 1, (term, lines)
    assert len(lines) == len(set(lines))  # a meaning shared by two terms (naive/*) once
    assert "1.00x: the process around it adds nothing" in grid.caption


def test_a_report_and_compare_caption_the_terms_they_show(tmp_path):
    """A report's `inflation` row and compare's metric names (`first_round_ns`, ...)."""
    rs = read.load(RUN)
    table = reporting.build([rs], None, None)
    assert render.words(table).splitlines()[-1].startswith("inflation: naive over the wall")
    assert render.words(table) in str(render.terminal(table).caption)
    assert "\n- inflation: naive over" in render.markdown(table)
    compared = in_process("compare", "--markdown", *(str(AA / half) for half in "ab"))
    assert compared.returncode == 0, compared.stderr
    assert "\n\n- latency_ns: one op submitted" in compared.stdout
    assert "\n- first_round_ns: " in compared.stdout and "\n- every metric: docs/schema.md\n" \
        in compared.stdout
    said = glossary.caption(["first_round_ns", "per_dispatch_ns", "inflation"], "see docs")
    assert said.splitlines()[0].startswith("first_round_ns: a naive op in the first warm-up")
    assert said.splitlines()[-1] == "see docs" and len(said.splitlines()) == 3
    assert glossary.caption(["per_dispatch_ns"], "see docs") == ""  # nothing to explain
