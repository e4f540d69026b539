"""The cadence methodology (methods/cadence.py): a gap a group, bursts at the gap for the
whole budget, and the figure of the bursts after the level settled."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gpuoverhead.analysis import combine
from gpuoverhead.analysis.samples import Calibration, GroupSamples
from gpuoverhead.cases import BACK_TO_BACK, CADENCE
from gpuoverhead.drivers import pytorch
from gpuoverhead.methods import cadence, series
from gpuoverhead.run.budget import Budget
from gpuoverhead.run.rounds import sample_group
from gpuoverhead.suite.expand import load_suite

SUITE = """name: t
defaults:
  methodologies: [naive, sequential, cadence]
  gaps_ms: [0, 16]
  burst: 32
  encodings: [submit, dispatch]
  layers: [wrapper, native]
  n_sweep: [1, 4]
benchmarks:
  - name: empty
    kernel: empty
"""


def _suite(tmp_path: Path, text: str = SUITE):
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return load_suite(path)


def test_each_gap_is_a_group_of_its_own_beside_the_interleaved_one(tmp_path):
    groups = _suite(tmp_path).groups
    assert [g.id for g in groups] == ["empty/elements=1", "empty/elements=1/gap=0ms",
                                      "empty/elements=1/gap=16ms"]
    assert [g.regime for g in groups] == [BACK_TO_BACK, "bursts back to back",
                                          "bursts 16 ms apart"]
    assert all(c.methodology != CADENCE for c in groups[0].cases)
    for group in groups[1:]:
        assert {c.methodology for c in group.cases} == {CADENCE}
        assert {c.gap_ms for c in group.cases} == {group.gap_ms}
        assert {c.n_values for c in group.cases} == {(32,)}
        assert len(group.cases) == 4  # 2 encodings x 2 layers
    assert groups[2].cases[0].id == "empty/elements=1/cadence/gap=16ms/submit/wrapper"
    # PyTorch measures the interleaved group only; a cadence has no torch twin.
    assert pytorch._cases(groups[0], "cpu") and pytorch._cases(groups[1], "cpu") == ()


def test_a_cadence_alone_has_no_ffi_floor_and_no_interleaved_group(tmp_path):
    text = SUITE.replace("naive, sequential, cadence", "cadence").replace(
        "wrapper, native", "wrapper, raw")
    groups = _suite(tmp_path, text).groups
    assert [g.gap_ms for g in groups] == [0.0, 16.0]


def _cadence_group(tmp_path, gap_ms: float):
    text = SUITE.replace("naive, sequential, cadence", "cadence").replace(
        "[0, 16]", f"[{gap_ms}]").replace("encodings: [submit, dispatch]", "encodings: [submit]")
    return _suite(tmp_path, text).groups[0]


def test_bursts_keep_their_gap_for_the_whole_budget_with_no_early_stop(tmp_path):
    group = _cadence_group(tmp_path, 20)
    calls: list[tuple[int, int]] = []

    def op_for(index: int):
        def op(n: int) -> tuple[int]:
            calls.append((index, time.perf_counter_ns()))
            return (time.perf_counter_ns(),)
        return op

    ops = {c: op_for(i) for i, c in enumerate(group.cases)}

    def never(samples):  # a cadence stops on its budget, never on its precision
        raise AssertionError("asked for its precision")

    began = time.monotonic()
    out = sample_group(group, ops, np.random.default_rng(0), Budget(0.5), never,
                       lambda *a: None, dict.fromkeys(group.cases, 0))
    took = time.monotonic() - began
    assert out.stop == "budget" and out.warmup_rounds == 1 and out.warmup_settled
    assert 0.5 <= took < 1.5
    starts = np.array([t for _, t in calls])
    assert np.diff(starts).min() >= 20e6  # each burst after the gap, round 0's too
    rec = np.array(out.records)
    size = cadence.BLOCK * len(group.cases)
    assert (rec[:size, 3] == 1).all()  # the warm-up round
    assert out.rounds >= 2 and len(out.python_step_ns) == out.rounds + 1
    # A round: each case a block of BLOCK bursts in a row, the first of each a warm-up one
    # (it pays for the case before it).
    for r in range(out.rounds):
        mine = rec[size:][rec[size:, 2] == r]
        assert len(mine) == cadence.BLOCK * len(group.cases)
        blocks = mine[:, 0].reshape(len(group.cases), cadence.BLOCK)
        assert (blocks == blocks[:, :1]).all()
        assert (mine[:, 3].reshape(blocks.shape) == [1] + [0] * (cadence.BLOCK - 1)).all()


def _ramp_samples(group, ramp_s: float, seconds: float = 10.0, seed: int = 0):
    """A cadence group's samples: one burst a round per case, 50 ms apart, each costing
    17 µs an op until `ramp_s` into the process and 33 µs after (2% noise)."""
    rng = np.random.default_rng(seed)
    samples = GroupSamples(group.cases)
    burst = group.cases[0].n_values[0]
    start = 1_000_000_000
    for r, t in enumerate(np.arange(0, seconds, 0.05)):
        for i in range(len(group.cases)):
            per_op = (17e3 if t < ramp_s else 33e3) * math.exp(0.02 * rng.standard_normal())
            t0 = start + int(t * 1e9) + i * 1000
            samples.records.append((i, burst, r, False, t0, int(per_op * burst)))
            samples.parts[len(samples.records) - 1] = (t0 + int(per_op * burst * 0.9),)
    samples.rounds = r + 1
    return samples


def test_the_figure_is_the_level_after_it_settled_and_when_is_kept(tmp_path):
    group = _cadence_group(tmp_path, 50)
    cal = Calibration(timer_ns=20.0, tick_ns=None)
    found = [series(_ramp_samples(group, ramp, seed=s), cal)
             for s, ramp in enumerate((3.0, 4.0, 5.0))]
    rows = {(r.key.case.layer, r.key.metric, r.process): r
            for r in combine.combine(found, np.random.default_rng(0))}
    wall = rows[("wrapper", "burst_per_op_ns", None)]
    assert abs(wall.estimate.value / 33e3 - 1) < 0.02  # the plateau, not the mix
    assert 3.0 <= wall.settled_s <= 5.7
    cpu = rows[("native", "burst_cpu_per_op_ns", None)]
    assert abs(cpu.estimate.value / (0.9 * 33e3) - 1) < 0.02
    assert 4.0 <= rows[("wrapper", "burst_per_op_ns", 2)].settled_s <= 5.7
    # A process still ramping as it ended: its figure's settling is said to be unknown.
    late = series(_ramp_samples(group, 9.0), cal)
    assert math.isinf(combine.settled_at([s for k, s in late.items()
                                          if k.metric == "burst_per_op_ns"]))


def test_the_grid_says_when_a_gaps_levels_settled():
    from gpuoverhead.present.cadence_grid import settled

    assert settled(pd.Series([1.0, 2.0, math.inf, math.nan])) == "1.5 s; 1 of 3 not settled"
    assert settled(pd.Series([3.25])) == "3.2 s"
    assert settled(pd.Series([math.inf, math.inf])) == "not settled"
    assert settled(pd.Series([math.nan])) == ""


def test_the_plot_draws_each_gaps_level_over_age_and_where_it_settled(tmp_path):
    from gpuoverhead.present import plots
    from gpuoverhead.results.read import ResultSet

    def process(settled: bool) -> dict:
        level = {"settled_s": 4.0, "settled": settled, "age_s": [0.0, 4.0, 8.0],
                 "level_us": [18.0, 36.0, 36.0]}
        return {"settling": {f"empty/elements=1/cadence/gap={g}ms/submit/native {m}": level
                             for g in (0, 16) for m in ("burst_per_op_ns",
                                                        "burst_cpu_per_op_ns")}}

    info = {"benchmarks": [{"benchmark": "empty", "implementation": impl,
                            "processes": [process(True), process(s)]}
                           for impl, s in (("wgpu-native", True), ("dawn", False))]}
    fig = plots.cadence_levels([ResultSet(tmp_path, info, pd.DataFrame())], "empty")
    try:
        assert [ax.get_title() for ax in fig.axes] == ["back to back", "16 ms gaps"]
        for ax in fig.axes:  # two jobs of two processes, one of them still moving: four
            # lines, and where the other's level settled
            lines = ax.get_lines()
            assert len(lines) == 4 + 1
            assert lines[-1].get_xdata()[0] == 4.0 and lines[-1].get_linestyle() == "--"
    finally:
        plots.plt.close(fig)
    assert plots.cadence_levels([ResultSet(tmp_path, info, pd.DataFrame())], "other") is None
