"""Machine-readable results on committed runs: `report -o x.json` (Bencher Metric Format),
`-o x.ghab.json` (github-action-benchmark) and `compare --json`, each validated against its
documented JSON Schema and checked the way the services that read them check them."""

from __future__ import annotations

import html
import json
import math
import re

import jsonschema
import pandas as pd
import pytest
from conftest import ROOT, in_process

from gpuoverhead import metrics
from gpuoverhead.present import note_words
from gpuoverhead.present import report as reporting
from gpuoverhead.present.note_words import read_back
from gpuoverhead.records import Note
from gpuoverhead.results import read

SCHEMAS = ROOT / "docs" / "schemas"
#: A default run whose dawn `python (submit)` interval reaches below zero (-3758.8 ns).
NEGATIVE = ROOT / "tests/data/h100-negative-python"  # an H100 A/A half (run.json, summary)
#: A decode run: its figures are speedups, better when higher.
DECODE = ROOT / "results/h100/decode"
PAIR = [ROOT / f"results/h200/regimes-check/selftest/{s}" for s in "ab"]


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def _report(tmp_path, run, name: str) -> tuple[object, str]:
    out = tmp_path / name
    proc = in_process("report", str(run), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc.stderr


def _bencher_accepts(doc: object) -> None:
    """What Bencher's JSON adapter reads: benchmark -> measure -> value, optional bounds."""
    assert isinstance(doc, dict) and doc
    for measures in doc.values():
        assert isinstance(measures, dict) and measures
        for m in measures.values():
            assert set(m) in ({"value"}, {"value", "lower_value", "upper_value"}), m
            assert all(isinstance(v, float | int) and math.isfinite(v) for v in m.values())
            if "lower_value" in m:
                assert 0 <= m["lower_value"] <= m["upper_value"]


def _ghab_accepts(entries: object) -> None:
    """github-action-benchmark's custom tools reject an entry without name, unit or value."""
    assert isinstance(entries, list)
    for e in entries:
        assert isinstance(e.get("name"), str) and isinstance(e.get("unit"), str), e
        assert isinstance(e.get("value"), float | int), e


def test_bencher_json_validates_and_says_what_it_raised_to_zero(tmp_path):
    doc, stderr = _report(tmp_path, NEGATIVE, "x.json")
    jsonschema.validate(doc, _schema("bencher"))
    _bencher_accepts(doc)
    python = doc["empty/1/vulkan/dawn/NVIDIA H100 80GB HBM3"]["python (submit) [ns]"]
    assert python["lower_value"] == 0 < python["value"] < python["upper_value"]
    assert "stored lower bound -3758.8 ns: below zero, written as 0" in stderr
    # Units with the measure, value inside its interval wherever there is one.
    for measures in doc.values():
        for name, m in measures.items():
            assert re.fullmatch(r".+ \[(ns|ratio|1/s|M)\]", name), name
            if "lower_value" in m:
                assert m["lower_value"] <= m["value"] <= m["upper_value"], (name, m)


@pytest.mark.parametrize("run", [NEGATIVE, DECODE], ids=["default", "decode"])
def test_ghab_json_puts_each_figure_in_its_metrics_direction(tmp_path, run):
    doc, _ = _report(tmp_path, run, "x.ghab.json")
    jsonschema.validate(doc, _schema("ghab"))
    for entries in doc.values():
        _ghab_accepts(entries)
    built = reporting.build(read.load_all([str(run)]))
    better = {f.label: metrics.of(f.metric).better for f in built.figures}
    for tool, direction in (("customSmallerIsBetter", "lower"),
                            ("customBiggerIsBetter", "higher")):
        labels = {e["name"].rsplit(": ", 1)[1] for e in doc[tool]}
        assert labels == {label for label, b in better.items() if b == direction}, tool
    if run == DECODE:
        assert doc["customBiggerIsBetter"] and not doc["customSmallerIsBetter"]
    else:  # the bound raised to 0 says so where the chart shows it
        python = next(e for e in doc["customSmallerIsBetter"]
                      if e["name"] == "empty/1/vulkan/dawn/NVIDIA H100 80GB HBM3: python (submit)")
        assert python["range"].startswith("0 to ")
        assert "stored lower bound -3758.8 ns: below zero" in python["extra"]


def test_compare_json_validates_and_counts_its_estimates():
    proc = in_process("compare", *map(str, PAIR), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, _schema("compare"))
    assert sum(doc["verdicts"].values()) == len(doc["estimates"]) > 100
    assert {e["metric"] for e in doc["estimates"]} >= set(metrics.HEADLINE)


def test_docs_show_the_schemas_the_tests_load():
    text = (ROOT / "docs" / "schema.md").read_text()
    for path in SCHEMAS.glob("*.schema.json"):
        assert path.read_text().strip() in text, path.name


def test_an_unknown_output_suffix_lists_the_accepted_ones(tmp_path):
    proc = in_process("report", str(NEGATIVE), "-o", str(tmp_path / "x.xml"))
    assert proc.returncode == 2
    assert "unknown report format" in proc.stderr and ".ghab.json" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


#: Two committed runs on other machines: a CPU run with two software adapters and an
#: H200 pair (merged into one row per implementation).
SOFTWARE = ROOT / "results/swiftshader/default"


def test_report_notes_land_on_the_rows_they_are_about(tmp_path):
    """Each software adapter's warning marks its own row only: not the other adapter's of
    the same run, not PyTorch on the CPU, not the H100 rows of the other runs."""
    out = tmp_path / "r.csv"
    proc = in_process("report", str(SOFTWARE), *map(str, PAIR), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out, keep_default_na=False).set_index(["adapter", "implementation"])
    texts = table["note texts"]
    assert texts[("llvmpipe (LLVM 15.0.6, 256 bits)", "wgpu-native")].startswith(
        "llvmpipe (LLVM 15.0.6, 256 bits) is a CPU (software) adapter")
    assert "llvmpipe" not in texts[("SwiftShader Device (Subzero)", "chromium")]
    assert "SwiftShader Device (Subzero) is a CPU" in texts[("SwiftShader Device (Subzero)",
                                                            "chromium")]
    assert texts[("CPU", "torch-eager")] == ""
    h200 = table.loc["NVIDIA H200"]
    assert (h200["runs"] == 2).all()
    assert (h200["note texts"] == reporting.MERGED).all()


@pytest.mark.slow
def test_report_says_where_it_came_from_and_keeps_stored_bounds(tmp_path):
    paths = [tmp_path / f"r.{s}" for s in ("md", "html", "csv")]
    proc = in_process("report", str(NEGATIVE), str(SOFTWARE),
                      *(a for p in paths for a in ("-o", str(p))))
    assert proc.returncode == 0, proc.stderr
    md, page = paths[0].read_text(), paths[1].read_text()
    for run in (NEGATIVE, SOFTWARE):
        info = json.loads((run / "run.json").read_text())
        for text in (md, page):
            assert info["run_id"] in text and info["started"] in text
            assert f"{info['time_limit_s']:g} s" in text
            for adapter in info["adapters"]:
                assert html.escape(adapter["driver"]) in text
            assert html.escape(f"wgpu {info['packages']['wgpu']}") in text
            for warning in info["warnings"]:  # in the words of the run's last lines
                said = getattr(read_back(warning), "plain", warning)
                assert html.escape(said) in text or said in text, said[:60]
    table = pd.read_csv(paths[2]).set_index("implementation")
    assert table.loc["dawn", "python (submit) low (ns)"] == pytest.approx(-3758.80389)
    # The same bound in Markdown: Python's share is a cost, its bound stored below zero (by
    # code that kept it signed) reads as a time's does.
    assert "26.0 [below resolution–68.5]" in md


def test_a_report_says_a_run_s_warnings_as_the_run_s_last_lines_did():
    """Issue 56: a report printed run.json's text ("1 processes stopped warming up ...
    (warmup_max_rounds, ...)", "rel_spread_between and rel_ci_within") where the run's last
    lines had said the same in plain words; it says them in those words now, from the one
    table both read (present/note_words.py). Other warnings stay as they are."""
    info = json.loads((ROOT / "results/h200/processes-10/run.json").read_text())
    said = reporting.source(read.load(ROOT / "results/h200/processes-10")).warnings
    text = "\n".join(said)
    assert "1 process stopped warming up before its rounds took a steady time: the first " \
           "rounds measured may still carry start-up costs" in text
    assert "headline figures are less precise than their suite's target" in text
    for raw in ("1 processes", "rel_spread_between", "warmup_max_rounds, or"):
        assert raw in "\n".join(info["warnings"]) and raw not in text, raw
    others = [w for w in info["warnings"] if not isinstance(read_back(w), Note)]
    assert others and all(w in said for w in others)


@pytest.mark.parametrize("kind", note_words.DETAIL)
def test_each_kind_of_note_reads_back_into_the_words_the_run_said(kind):
    constants = {"share": "5%", "overrun": "2", "clock": "10%"}
    for count, example in ((1, "g process 2"), (3, "x: 480 µs (57%) or 3349 µs (43%); y")):
        note = note_words.note(kind, count, example, **constants)
        back = read_back(str(note))
        assert isinstance(back, Note) and back.kind == kind and back.plain == note.plain
    assert read_back("the machine is busy") == "the machine is busy"


def test_cost_decomposition_shows_intervals_and_the_measured_cpu_cost():
    """The stacked API + Python bars carry their intervals, and the CPU cost measured
    through the wrapper stands beside them (the parts are derived and need not add up)."""
    from matplotlib.container import BarContainer

    from gpuoverhead.present import plots

    summary = read.load(ROOT / "results/h100/default").summary
    fig = plots.decomposition(summary[summary.benchmark == "empty"])
    try:
        ax = fig.axes[0]
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        assert len(bars) == 2 * 3 * 2  # api and python, 3 encodings, dawn and wgpu-native
        assert all(c.errorbar is not None for c in bars)
        diamonds = sorted(round(y, 3) for line in ax.lines if line.get_marker() == "D"
                          for y in line.get_ydata())
        cpu = summary[(summary.metric == "cpu_per_dispatch_ns") & (summary.layer == "wrapper")
                      & (summary.variant != "reference") & (summary.benchmark == "empty")
                      & summary.implementation.isin(["dawn", "wgpu-native"])]
        assert diamonds == sorted(round(v / 1e3, 3) for v in cpu.value)
    finally:
        plots.plt.close(fig)


def test_an_older_set_keeps_its_intervals_of_unknown_coverage(tmp_path):
    """A schema-1 set has intervals whose coverage was never recorded (ci_level NaN):
    they are written, and the ghab range says that their coverage is unknown."""
    old = ROOT / "results/h100/fusion/wgpu-native"  # its figures are speedups
    doc, _ = _report(tmp_path, old, "x.json")
    jsonschema.validate(doc, _schema("bencher"))
    measures = [m for ms in doc.values() for m in ms.values()]
    assert measures and all("lower_value" in m for m in measures)
    ghab, _ = _report(tmp_path, old, "x.ghab.json")
    ranges = [e.get("range", "") for entries in ghab.values() for e in entries]
    assert ranges and all(r.endswith("(coverage unknown)") for r in ranges)


def test_cost_decomposition_draws_a_difference_below_zero_without_failing():
    """python_ns is a difference: below zero, its interval's lower end held at 0 lies above
    it, and matplotlib refuses a negative error bar (a CI run drew such a set)."""
    from gpuoverhead.present import plots

    summary = read.load(ROOT / "results/h100/default").summary.copy()
    python = summary.metric == "python_ns"
    summary.loc[python, "value"] = -900.0
    summary.loc[python, "ci_low"] = -2000.0
    assert plots.decomposition(summary) is not None
