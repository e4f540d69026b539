"""report and compare over real lavapipe runs, and copies of them made to look like others."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import (
    BACKEND,
    in_process,
    measured_adapter,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _copy(run: Path, to: Path, **rewrite: str) -> Path:
    """A copy of a run folder with some case columns rewritten (a 'run on another machine')."""
    shutil.copytree(run, to)
    for name in ("samples", "summary"):
        table = pd.read_parquet(to / f"{name}.parquet").assign(**rewrite)
        table.to_parquet(to / f"{name}.parquet", index=False)
        table.to_csv(to / f"{name}.csv", index=False)
    return to


def _slowed(run: Path, to: Path, factor: float) -> Path:
    """A copy of a run in which every time is `factor` times longer."""
    shutil.copytree(run, to)
    samples = pd.read_parquet(to / "samples.parquet")
    samples["wall_ns"] = (samples["wall_ns"] * factor).round().astype("int64")
    samples["gpu_ns"] = (samples["gpu_ns"].astype("Float64") * factor).round().astype("Int64")
    samples.to_parquet(to / "samples.parquet", index=False)
    summary = pd.read_parquet(to / "summary.parquet")
    times = summary["unit"] == "ns"
    for column in ("value", "ci_low", "ci_high"):
        summary.loc[times, column] *= factor
    summary.to_parquet(to / "summary.parquet", index=False)
    return to


def _another_run(run: Path, to: Path) -> Path:
    """A second run of the same adapter: a copy of `run` with every time 1.2x (each figure
    and bound of the two apart) under a run id and start of its own (report counts each run
    once, by those). It stands in for a second real run, which cost a run of its own (11
    CPU-s): what the merge is checked for is which bound and value it takes of which run's
    figures, and these differ by a known factor."""
    _slowed(run, to, 1.2)
    info = json.loads((to / "run.json").read_text())
    info["run_id"], info["started"] = f"{info['run_id']}-again", f"{info['started']}+1s"
    (to / "run.json").write_text(json.dumps(info))
    return to


def test_report_merges_runs_and_vendors(ci_run, tmp_path):
    _, first = ci_run
    fake = _copy(first, tmp_path / "sets" / "nv", vendor="nvidia", adapter="Imaginary GPU",
                 adapter_type="DiscreteGPU")
    # Read before the first (its folder's name sorts first): its low bound, the higher, is
    # not the merged one, nor is the first's high.
    second_run = _another_run(first, tmp_path / "sets" / "another")
    shutil.copytree(first, tmp_path / "sets" / "first")
    proc = in_process("report", str(tmp_path / "sets"), "-o", str(tmp_path / "r.md"),
                      "-o", str(tmp_path / "r.csv"))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "r.csv")
    assert len(table) == 2  # lavapipe (two runs merged) and the rewritten copy
    lava = table[table.vendor == measured_adapter()[1]].iloc[0]
    assert lava["runs"] == 2 and lava["backend"] == BACKEND
    assert table.loc[table.vendor == "nvidia", "adapter"].iat[0] == "Imaginary GPU"
    # A merged row spans the runs' intervals, lowest bound to highest, and says so.
    runs = [pd.read_parquet(r / "summary.parquet") for r in (first, second_run)]
    submit = [r[(r.benchmark == "empty") & r.process.isna() & (r.metric == "per_dispatch_ns")
                & (r.encoding == "submit") & (r.layer == "wrapper")] for r in runs]
    assert lava["submit low (ns)"] == min(float(r.ci_low.iat[0]) for r in submit)
    assert lava["submit high (ns)"] == max(float(r.ci_high.iat[0]) for r in submit)
    assert lava["submit (ns)"] == pytest.approx(np.median([r.value.iat[0] for r in submit]))
    # The rewritten copy is a row of its own: one run, the first run's own figures (its
    # copy's), not merged with the lavapipe runs it was copied from.
    nv = table[table.vendor == "nvidia"].iloc[0]
    copied = pd.read_parquet(fake / "summary.parquet")
    mine = copied[(copied.benchmark == "empty") & copied.process.isna()
                  & (copied.metric == "per_dispatch_ns") & (copied.encoding == "submit")
                  & (copied.layer == "wrapper")]
    assert nv["runs"] == 1 and len(mine) == 1
    assert (nv["submit (ns)"], nv["submit low (ns)"], nv["submit high (ns)"]) == \
        pytest.approx((mine.value.iat[0], mine.ci_low.iat[0], mine.ci_high.iat[0]))
    markdown = (tmp_path / "r.md").read_text()
    assert "span of their intervals" in markdown
    assert "| mesa" in markdown and "Imaginary GPU" in markdown
    assert "CPU (software) adapter" in markdown  # the footnote of the lavapipe row


def test_compare_flags_an_injected_slowdown_and_not_identical_data(ci_run, tmp_path):
    """The command on a real run; the verdicts themselves are tested on seeded synthetic
    sets (tests/unit/test_compare.py), where the noise is known."""
    _, base = ci_run
    slow = _slowed(base, tmp_path / "slow", 1.2)
    # Not the run against itself: every time 0.3% longer, well inside the gate.
    nudged = _slowed(base, tmp_path / "nudged", 1.003)
    same = in_process("compare", str(base), str(nudged), "--fail-above", "10", "--markdown")
    assert same.returncode == 0, same.stderr
    assert "slower" not in same.stdout and "faster" not in same.stdout
    assert "same" in same.stdout
    worse = in_process("compare", str(base), str(slow), "--fail-above", "10")
    assert worse.returncode == 1, worse.stdout
    assert "got slower by more than 10" in worse.stderr


def test_report_and_compare_refuse_broken_inputs(ci_run, tmp_path):
    _, run = ci_run
    broken = shutil.copytree(run, tmp_path / "broken")
    data = (broken / "summary.parquet").read_bytes()
    (broken / "summary.parquet").write_bytes(data[: len(data) // 2])
    proc = in_process("report", str(broken))
    assert proc.returncode == 2 and "not a readable Parquet file" in proc.stderr
    assert "Traceback" not in proc.stderr
    old = shutil.copytree(run, tmp_path / "old")
    info = json.loads((old / "run.json").read_text())
    info["schema_version"] = 0
    (old / "run.json").write_text(json.dumps(info))
    proc = in_process("compare", str(old), str(run))
    assert proc.returncode == 2 and "schema version 0, this gpuoverhead reads versions 1, 2" in \
        proc.stderr
    proc = in_process("report", str(tmp_path / "nothing-*"))
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install "
                                             "chromium); the HTML page is not rendered here")
def test_html_report_renders_in_headless_chromium(ci_run, tmp_path):
    _, run = ci_run
    page = tmp_path / "report.html"
    proc = in_process("report", str(run), "-o", str(page), "--plots", str(tmp_path / "plots"))
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in (tmp_path / "plots").iterdir()} == {
        "cost_decomposition.png", "cost_decomposition.svg", "wall_vs_n.png", "wall_vs_n.svg"}
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    # One browser both prints the DOM and takes the screenshot (a launch each cost ~1.5
    # CPU-s more).
    shot = tmp_path / "report.png"
    dom = subprocess.run(flags + ["--dump-dom", f"--screenshot={shot}", "--window-size=1400,1800",
                                  page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    assert 'id="overhead"' in dom and "<table" in dom and measured_adapter()[0] in dom
    # The header (the run behind the rows) and the run's warnings (lavapipe's software
    # adapter at least) are on the page.
    info = json.loads((run / "run.json").read_text())
    assert 'id="runs"' in dom and info["run_id"] in dom and info["started"] in dom
    assert f"Warnings of run {info['run_id']}" in dom and "CPU (software) adapter" in dom
    assert dom.count('src="data:image/png;base64,') == 2
    assert shot.stat().st_size > 20_000  # a page with a table and two plots, not a blank one
