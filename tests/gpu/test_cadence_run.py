"""The cadence on lavapipe (configs/ci.yaml's `cadence` benchmark in the shared CI run): its
cases are measured and estimated in processes of their own, each burst after its gap, with
the regime and when the level settled recorded. Lavapipe's own numbers are not checked:
its threads sleep between bursts, a mechanism of its own (issue 54)."""

from __future__ import annotations

import math

import numpy as np
from conftest import read_run

from gpuoverhead.analysis.states import EITHER, FAST, SLOW, split_regime
from gpuoverhead.cases import BACK_TO_BACK


def test_each_gap_is_estimated_in_processes_of_its_own(ci_run):
    _, folder = ci_run
    samples, summary, info = read_run(folder)
    rows = summary[summary.process.isna() & (summary.methodology == "cadence")]
    assert set(rows.regime) == {"bursts back to back", "bursts 30 ms apart"}
    assert set(rows.metric) == {"burst_per_op_ns", "burst_cpu_per_op_ns"}
    assert len(rows) == 2 * 2 * 2  # gaps x layers x metrics
    assert (rows.value > 0).all() and (rows.ci_low >= 0).all() and (rows.ci_high > rows.value).all()
    # When each level settled: a time into the process, or inf where one still moved.
    assert rows.settled_s.map(lambda s: s >= 0 and not math.isnan(s)).all()
    # Every other row names the interleaved rounds' regime and settles nothing; a CPU state
    # may follow it where the machine's Python speed flipped during the run (states.py).
    other = summary[summary.methodology != "cadence"]
    parts = [split_regime(r) for r in other.regime]
    assert {base for base, _ in parts} == {BACK_TO_BACK} and other.settled_s.isna().all()
    assert {state for _, state in parts} <= {None, FAST, SLOW, EITHER}
    jobs = [b for b in info["benchmarks"] if b["benchmark"] == "cadence"]
    assert sorted(b["id"] for b in jobs) == ["cadence/elements=1/gap=0ms",
                                             "cadence/elements=1/gap=30ms"]
    for job in jobs:
        for p in job["processes"]:
            assert p["stop"] in ("budget", "short") and p["warmup_rounds"] == 1
            assert len(p["python_step_ns"]) == p["rounds"] + 1
            levels = p["settling"]
            assert len(levels) == 2 * 2  # layers x metrics
            for found in levels.values():
                assert len(found["age_s"]) == len(found["level_us"]) >= 1
                assert found["age_s"] == sorted(found["age_s"])


def test_bursts_30_ms_apart_wait_their_gap_and_back_to_back_ones_do_not(ci_run):
    _, folder = ci_run
    samples, _, _ = read_run(folder)
    for gap, least, most in ((30, 30e6, None), (0, 0, 5e6)):
        mine = samples[samples.case.str.contains(f"/cadence/gap={gap}ms/") & (samples.call == "")]
        for _, one in mine.groupby("process"):
            one = one.sort_values("elapsed_ns")
            idle = one.elapsed_ns.to_numpy()[1:] - (one.elapsed_ns + one.wall_ns).to_numpy()[:-1]
            assert idle.min() >= least
            if most is not None:
                assert np.median(idle) < most


def test_the_terminal_shows_the_cadence_grid(ci_run):
    proc, _ = ci_run
    assert "What one op costs at a cadence" in proc.stdout
    assert "30 ms gaps" in proc.stdout and "settled after" in proc.stdout
