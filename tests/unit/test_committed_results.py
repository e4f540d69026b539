"""Every committed result set reads: `show`, `report` and `compare`, as a user runs them on
the repository's own `results/` (older schema versions included)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from typer.testing import CliRunner

from gpuoverhead.cli import app
from gpuoverhead.present import compare as comparing
from gpuoverhead.results import read

FOLDERS = sorted(p.parent for p in (ROOT / "results").rglob("run.json"))
#: What a copy of a set multiplies every time by: far beyond compare's 5% threshold.
FACTOR = 2.0


def test_there_are_committed_sets():
    assert len(FOLDERS) >= 10


def _slowed(folder: Path, to: Path) -> Path:
    """A copy of a set whose times (ns estimates with their intervals, and the raw samples'
    times) are FACTOR times longer; ratios, rates and shares are left as they were."""
    to.mkdir()
    shutil.copy(folder / "run.json", to / "run.json")
    summary = pd.read_parquet(folder / "summary.parquet")
    times = summary["unit"] == "ns"
    for column in ("value", "ci_low", "ci_high"):
        summary.loc[times, column] *= FACTOR
    summary.to_parquet(to / "summary.parquet", index=False)
    samples = pd.read_parquet(folder / "samples.parquet")
    for column in ("wall_ns", "issue_ns", "gpu_ns"):  # older sets lack the later ones
        if column in samples:
            samples[column] = samples[column] * FACTOR
    samples.to_parquet(to / "samples.parquet", index=False)
    return to


def _expected(base: pd.DataFrame, table: pd.DataFrame) -> pd.Series:
    """The verdict each compared row must get, from the base set's own intervals: both
    sets have the same relative widths, so NEW/BASE has the half-width sqrt(2) x that of
    one on logs, around FACTOR for a time and 1 for anything else. A time is `slower` where
    that interval excludes 1 (unless the rank test on its samples says p >= alpha), else
    `unsure` (a change of x2 is never `same`); anything else is `same` where the interval
    lies within x1.5 either way, else `unsure`."""
    rows = table.merge(base[comparing.KEY + ["ci_low", "ci_high"]], on=comparing.KEY,
                       how="left", validate="one_to_one")
    with np.errstate(divide="ignore", invalid="ignore"):
        half = math.sqrt(2) * np.log(rows["ci_high"] / rows["ci_low"]) / 2
    bounded = (rows["base"] > 0) & (rows["ci_low"] > 0) & np.isfinite(half)
    time = rows["unit"] == "ns"
    blocked = rows["p_value"].notna() & (rows["p_value"] >= comparing.ALPHA)
    slower = time & bounded & (FACTOR * np.exp(-half) > 1) & ~blocked
    same = ~time & bounded & (half <= math.log(comparing.RESOLVABLE))
    return pd.Series(np.select([slower, same], ["slower", "same"], "unsure"),
                     index=table.index)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_committed_set_shows_and_compare_finds_its_times_doubled(folder, tmp_path):
    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(folder)])
    assert shown.exit_code == 0, shown.output
    slow = _slowed(folder, tmp_path / "slow")
    base = read.load(folder)
    table = comparing.compare(base, read.load(slow))
    judged = base.summary[~base.summary.metric.isin(comparing.DIAGNOSTICS)]
    assert len(table) == len(judged)  # every estimate paired with its own copy, once
    times = table["unit"] == "ns"
    assert np.allclose(table.loc[times, "ratio"].dropna(), FACTOR)
    assert np.allclose(table.loc[~times, "ratio"].dropna(), 1.0)
    expected = _expected(judged, table)
    wrong = table.assign(expected=expected)[table["verdict"] != expected]
    assert wrong.empty, wrong[["case", "metric", "call", "verdict", "expected", "ratio_low",
                               "ratio_high", "p_value"]].head(10).to_string()
    assert (expected == "slower").sum() >= 10
    # What a user sees: the CLI on the same pair, and its gate at 50% on the slower ones.
    gated = runner.invoke(app, ["compare", str(folder), str(slow), "--fail-above", "50"])
    assert gated.exit_code == 1, gated.output
    assert f"{(expected == 'slower').sum()} estimates got slower by more than 50" in \
        gated.output


def test_all_committed_sets_report_together():
    result = CliRunner().invoke(app, ["report", str(ROOT / "results")])
    assert result.exit_code == 0, result.output
    assert "NVIDIA H100" in result.output
