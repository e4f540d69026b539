"""Re-finishing a run from what it stored (gpuoverhead/run/refinish.py, benchmarks/
refinish.py), on the shared CI run: under the rules that wrote it, every estimate comes back
as it was (so the samples table and run.json hold all that finishing reads), the new folder
says where it came from, and what cannot be re-finished is refused in one line."""

from __future__ import annotations

import json
import runpy
import shutil
import sys

import pandas as pd
import pytest
from conftest import ROOT, read_run

from gpuoverhead.errors import UserError
from gpuoverhead.resources import CONFIGS_DIR
from gpuoverhead.run import refinish

KEY = ["implementation", "family", "case", "metric", "call", "process"]
SCRIPT = ROOT / "benchmarks" / "investigations" / "refinish.py"


def _script(capsys, monkeypatch, *folders) -> tuple[int, str, str]:
    """benchmarks/investigations/refinish.py FOLDERS run as its command line runs it, in this
    process (a child's interpreter and imports cost ~1.5 CPU-s a call): its exit status,
    stdout and stderr."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *map(str, folders)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as end:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    said = capsys.readouterr()
    return end.value.code, said.out, said.err


def test_a_refinished_run_has_every_estimate_it_had(ci_run, tmp_path, capsys, monkeypatch):
    _, folder = ci_run
    code, out, err = _script(capsys, monkeypatch, folder, tmp_path / "again")
    assert code == 0, err
    assert f"{folder} -> {tmp_path / 'again'}" in out and "now: median ±" in out
    samples, summary, info = read_run(folder)
    samples_again, summary_again, info_again = read_run(tmp_path / "again")
    pd.testing.assert_frame_equal(samples, samples_again)
    # A cadence's issue time is in the samples now (a cadence of before cannot be re-made).
    cadence = samples[samples.methodology == "cadence"]
    assert len(cadence) and cadence.issue_ns.notna().all()
    both = summary.merge(summary_again, on=KEY, suffixes=("", "_again"), how="outer",
                         indicator=True)
    assert set(both["_merge"]) == {"both"}
    for column in ("value", "ci_low", "ci_high"):
        pd.testing.assert_series_equal(both[column], both[f"{column}_again"],
                                       check_names=False)
    assert (both.regime == both.regime_again).all()
    found = info_again["refinished"]
    assert found["from"] == {"folder": str(folder), "run_id": info["run_id"]}
    assert len(found["commit"]) >= 40 and "CPU states" in found["rules"]
    assert info_again["run_id"] == info["run_id"] and info_again["finished"] == info["finished"]
    assert [b["id"] for b in info_again["benchmarks"]] == [b["id"] for b in info["benchmarks"]]


def test_what_cannot_be_refinished_is_refused(ci_run, tmp_path, capsys, monkeypatch):
    _, folder = ci_run
    places = [CONFIGS_DIR]
    with pytest.raises(UserError, match="already exists"):
        refinish.refinish(refinish.read(folder, places), folder, {})
    # A suite not the one the run measured (its sha256 differs) is not used.
    moved = tmp_path / "run"
    shutil.copytree(folder, moved)
    info = json.loads((moved / "run.json").read_text())
    (moved / "run.json").write_text(json.dumps({**info, "suite": {
        **info["suite"], "sha256": "0" * 64}}))
    with pytest.raises(UserError, match="its suite 'ci' .* is not among 2 paths tried"):
        refinish.read(moved, places)
    # A cadence's samples without their issue time (a run of before commit 5388a8b).
    (moved / "run.json").write_text(json.dumps(info))
    samples = pd.read_parquet(moved / "samples.parquet")
    samples.loc[samples.methodology == "cadence", "issue_ns"] = pd.NA
    samples.to_parquet(moved / "samples.parquet")
    with pytest.raises(UserError, match="holds no issue_ns of cadence/"):
        refinish.benchmarks(refinish.read(moved, places))
    code, _, err = _script(capsys, monkeypatch, moved, tmp_path / "again")
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert not (tmp_path / "again").exists()
