"""compare on synthetic result sets: known values, known noise, so every verdict is known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from gpuoverhead.present.compare import compare
from gpuoverhead.results.columns import SCHEMA_VERSION
from gpuoverhead.results.read import load

CASES = [("empty/naive/wait", "latency_ns", 200_000.0),
         ("empty/sequential/submit/wrapper", "per_dispatch_ns", 100_000.0),
         ("empty/sequential/dispatch/wrapper", "per_dispatch_ns", 10_000.0)]


def _result_set(folder: Path, factor: float, seed: int) -> Path:
    """A run folder whose estimates are `factor` times CASES' values, ±1% intervals, and
    whose raw samples scatter 1% around them (seeded)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    summary, samples = [], []
    for case, metric, value in CASES:
        v = value * factor
        keys = {"implementation": "wgpu-native", "benchmark": "empty", "elements": 1,
                "case": case, "call": ""}
        summary.append({**keys, "metric": metric, "unit": "ns", "value": v,
                        "ci_low": v * 0.99, "ci_high": v * 1.01, "process": pd.NA,
                        "methodology": "sequential", "variant": ""})
        n = 1 if metric == "latency_ns" else 256
        walls = v * n * rng.normal(1.0, 0.01, 200)
        samples += [{**keys, "phase": "measure", "n_dispatches": n, "wall_ns": int(w),
                     "gpu_ns": pd.NA} for w in walls]
    pd.DataFrame(summary).astype({"process": "Int64"}).to_parquet(folder / "summary.parquet")
    pd.DataFrame(samples).astype({"gpu_ns": "Int64"}).to_parquet(folder / "samples.parquet")
    (folder / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION}))
    return folder


def test_a_slowdown_of_20_percent_is_slower_everywhere_and_the_same_run_is_same(tmp_path):
    base = load(_result_set(tmp_path / "base", 1.0, 1))
    slow = compare(base, load(_result_set(tmp_path / "slow", 1.2, 2)))
    assert (slow.verdict == "slower").all(), slow[["case", "verdict"]]
    assert np.allclose(slow.ratio, 1.2)
    assert ((slow.ratio_low > 1.15) & (slow.ratio_high < 1.25)).all()
    again = compare(base, load(_result_set(tmp_path / "again", 1.0, 3)))
    assert (again.verdict == "same").all(), again[["case", "verdict"]]


def test_a_change_within_the_noise_is_not_called_a_change(tmp_path):
    base = load(_result_set(tmp_path / "base", 1.0, 4))
    table = compare(base, load(_result_set(tmp_path / "new", 1.01, 5)), threshold=0.05)
    assert not table.verdict.isin(["slower", "faster"]).any(), table[["case", "verdict"]]
