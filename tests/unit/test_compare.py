"""compare on synthetic result sets: known values, known noise, so every verdict is known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from gpuoverhead.present import compare as comparing
from gpuoverhead.present.compare import compare
from gpuoverhead.results.columns import SCHEMA_VERSION
from gpuoverhead.results.read import load

CASES = [("empty/naive/wait", "latency_ns", 200_000.0),
         ("empty/sequential/submit/wrapper", "per_dispatch_ns", 100_000.0),
         ("empty/sequential/dispatch/wrapper", "per_dispatch_ns", 10_000.0)]


def _result_set(folder: Path, factor: float, seed: int,
                processes: tuple[float, ...] = ()) -> Path:
    """A run folder whose estimates are `factor` times CASES' values, ±1% intervals, and
    whose raw samples scatter 1% around them (seeded); with `processes`, also a row of
    each process's own estimate (that factor times the estimate)."""
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
        summary += [{**summary[-1], "value": v * f, "ci_low": v * f * 0.99,
                     "ci_high": v * f * 1.01, "process": i} for i, f in enumerate(processes)]
        n = 1 if metric == "latency_ns" else 256
        walls = v * n * rng.normal(1.0, 0.01, 200)
        samples += [{**keys, "phase": "measure", "process": k % max(len(processes), 1),
                     "n_dispatches": n, "wall_ns": int(w), "gpu_ns": pd.NA}
                    for k, w in enumerate(walls)]
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


def test_runs_of_several_processes_are_weighed_by_their_processes(tmp_path):
    """Where both runs have processes of their own, their spread sets the interval (Welch
    on logs), not the ±1% each run claims for its median: processes in two modes (x6) are
    no change a comparison can call, and three tight processes 20% slower still are one."""
    modes = compare(load(_result_set(tmp_path / "a", 1.0, 1, (1.0, 1.0, 6.0))),
                    load(_result_set(tmp_path / "b", 6.0, 2, (1 / 6, 1.0, 1.0))))
    assert (modes.verdict == "unsure").all(), modes[["case", "verdict"]]
    assert np.allclose(modes.ratio, 6 ** (1 / 3))  # the geometric means' ratio
    assert (modes.ratio_high / modes.ratio_low > 100).all()
    slow = compare(load(_result_set(tmp_path / "c", 1.0, 3, (0.99, 1.0, 1.01))),
                   load(_result_set(tmp_path / "d", 1.2, 4, (0.99, 1.0, 1.01))))
    assert (slow.verdict == "slower").all(), slow[["case", "verdict"]]
    assert ((slow.ratio_low > 1.15) & (slow.ratio_high < 1.25)).all()


def test_an_aa_says_which_estimates_not_same_had_two_modes_and_which_spread(tmp_path):
    """Latency samples at 0.4 or 2.4 ms, each process with its own share of the late ones
    (medians on both sides): the A/A lines count that estimate as two modes and say them;
    the per-dispatch estimates are counted apart (with no spread recorded here)."""
    sets = []
    for name, seed, spread in (("a", 1, (1.0, 1.0, 1.6, 1.0, 1.0, 1.0)),
                               ("b", 2, (1.0, 1.0, 1.0, 0.6, 1.0, 1.0))):
        folder = _result_set(tmp_path / name, 1.0, seed, spread)
        samples = pd.read_parquet(folder / "samples.parquet")
        latency = samples["case"] == "empty/naive/wait"
        rng = np.random.default_rng(seed)
        late = rng.random(latency.sum()) < np.resize([0.2, 0.35, 0.5, 0.65, 0.8, 0.5], 200)
        samples.loc[latency, "wall_ns"] = np.where(late, 2_400_000, 400_000)
        samples.to_parquet(folder / "samples.parquet")
        sets.append(load(folder))
    table = compare(*sets)
    assert table.loc[table["case"] == "empty/naive/wait", "modes"].str.match(
        r"400 µs \(\d+%\) or 2400 µs \(\d+%\)").all()
    assert (table.loc[table["case"] != "empty/naive/wait", "modes"] == "").all()
    lines = comparing.aa_lines(table.assign(verdict="unsure"))
    assert "of the 3 headline estimates not 'same', 1 had samples in two modes" in lines[-1]
    assert "(e.g. wgpu-native empty/naive/wait: 400 µs" in lines[-1]
    assert "; 0 of the other 2 had processes whose medians ranged over 25%" in lines[-1]


def test_six_processes_a_run_are_judged_by_their_processes_not_their_pooled_samples(tmp_path):
    """Six processes a run whose values interleave (the new ones 10% higher, ranks mixed:
    exact Mann-Whitney p 0.015 over processes) while the pooled samples differ beyond doubt:
    the processes are the units, so no change is called (a pooled p called it `slower`)."""
    base = _result_set(tmp_path / "a", 1.0, 1, (0.94, 0.97, 1.0, 1.02, 1.05, 1.08))
    new = _result_set(tmp_path / "b", 1.1, 2,
                      tuple(x / 1.06 for x in (0.99, 1.03, 1.06, 1.09, 1.12, 1.16)))
    table = compare(load(base), load(new))
    assert (table.ratio_low > 1).all()  # the 95% interval alone would call it
    assert ((table.p_value > 0.01) & (table.p_value < 0.02)).all(), table.p_value
    assert (table.verdict == "unsure").all(), table[["case", "verdict"]]
