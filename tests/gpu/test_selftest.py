"""The A/A self-test: two runs made of alternate worker processes of one run, so that they
share whatever the machine did while it ran (a run after another differed by 10-12% across
the board on the H100 VM), compared estimate by estimate."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import BACKEND, gpuoverhead, write_suite

SUITE = """
name: aa
time_limit_s: 40
defaults:
  n_sweep: [1, 8]
  budget_s: 0.2
  min_rounds: 6
  methodologies: [naive, sequential]
  encodings: [dispatch]
  layers: [wrapper]
benchmarks:
  - name: empty
    kernel: empty
    elements: 1
"""


@pytest.mark.slow
def test_selftest_compares_the_even_and_odd_processes_of_one_interleaved_run(tmp_path):
    suite = write_suite(tmp_path, SUITE)
    proc = gpuoverhead("selftest", "--suite", str(suite), "--backend", BACKEND,
                       "--implementation", "wgpu-native", "--processes", "2",
                       "--out", str(tmp_path / "out"), timeout=200)
    assert proc.returncode in (0, 1), proc.stderr  # 1: under 95% `same` on this adapter
    assert "A/A, headline" in proc.stdout, proc.stdout
    halves = sorted((tmp_path / "out").iterdir())
    assert [h.name[-2:] for h in halves] == ["-a", "-b"]
    infos = [json.loads((h / "run.json").read_text()) for h in halves]
    assert [i["processes"] for i in infos] == [2, 2]
    # Each process its budget as in a run of 3 (the default): 4 cases x 0.2 s / 3, and the
    # time limit the suite's for each half, scaled to 2 processes of that budget.
    assert infos[0]["time_limit_s"] == pytest.approx(2 * 40 * 2 / 3)
    budgets = [p["budget_s"] for i in infos for b in i["benchmarks"] for p in b["processes"]]
    assert max(budgets) == pytest.approx(0.2 * 4 / 3, abs=1e-3)  # run.json: ms
    ran = [[p["process"] for b in i["benchmarks"] for p in b["processes"]] for i in infos]
    assert ran[0] and all(p % 2 == 0 for p in ran[0]) and all(p % 2 == 1 for p in ran[1])
    # A per-process estimate names its process as run.json and the samples do.
    for half, numbers in zip(halves, ran, strict=True):
        rows = pd.read_parquet(half / "summary.parquet", columns=["process"])["process"]
        assert set(rows.dropna().astype(int)) == set(numbers)
    # The halves' samples interleave in time: each half's first sample comes before the
    # other's last.
    starts = [pd.read_parquet(h / "samples.parquet", columns=["elapsed_ns"])["elapsed_ns"]
              for h in halves]
    assert starts[0].min() < starts[1].min() < starts[0].max() < starts[1].max()
