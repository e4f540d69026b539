"""`gpuoverhead history` over three committed H100 runs of the default suite, given out of
time order: the runs come back in the order they started, each figure's values and
intervals are the runs' own, and the plot has one line with interval bars per
implementation in each headline figure's panel."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, in_process

from gpuoverhead import metrics
from gpuoverhead.present import history as past
from gpuoverhead.present.plots import plt
from gpuoverhead.results import read

#: Started 2026-11-25 11:45, 2026-11-23 07:40 and 2026-11-27 14:19: not in time order.
RUNS = [ROOT / "results" / r for r in ("h100/default", "swiftshader/default",
                                       "h200/processes-3")]


@pytest.fixture(scope="module")
def history() -> past.History:
    return past.build(read.load_all([str(r) for r in RUNS]))


def test_runs_in_time_order_with_their_own_estimates(history):
    started = sorted(json.loads((r / "run.json").read_text())["started"] for r in RUNS)
    points = history.points
    order = points.drop_duplicates("position").sort_values("position")
    assert list(order["started"]) == started
    assert {f.metric for f in history.figures} <= set(metrics.HEADLINE)
    assert {f.label for f in history.figures} >= {"naive", "submit", "pass", "dispatch"}
    for run in RUNS:
        summary = pd.read_parquet(run / "summary.parquet")
        mine = summary[summary.process.isna() & (summary.benchmark == "empty")
                       & (summary.metric == "per_dispatch_ns") & (summary.encoding == "submit")
                       & (summary.layer == "wrapper") & (summary.implementation == "wgpu-native")
                       & (summary.sync == "wait")]
        started = json.loads((run / "run.json").read_text())["started"]
        got = points[(points.figure == "submit") & (points.implementation == "wgpu-native")
                     & (points.started == started)]
        assert len(mine) == len(got) == 1
        assert (got.value.iat[0], got.low.iat[0], got.high.iat[0]) == pytest.approx(
            (mine.value.iat[0], mine.ci_low.iat[0], mine.ci_high.iat[0]))


def test_plot_draws_a_line_with_interval_bars_per_implementation(history):
    fig = past.plot(history)
    try:
        panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
        assert [ax.get_title() for ax in panels] == [f.label for f in history.figures]
        for ax in panels:
            mine = history.points[history.points.figure == ax.get_title()]
            lines = ax.containers  # one ErrorbarContainer per implementation
            assert len(lines) == mine.groupby(["adapter", "backend", "implementation"]).ngroups
            for bars in lines:
                x = bars.lines[0].get_xdata()
                assert list(x) == sorted(x) and len(bars.lines[2]) == 1  # the interval bars
        assert len(fig.legends) == 1
    finally:
        plt.close(fig)


def test_command_writes_table_points_and_plot(tmp_path):
    outputs = [tmp_path / f"h.{s}" for s in ("md", "csv", "png")]
    proc = in_process("history", *map(str, RUNS), *(a for p in outputs for a in ("-o", str(p))))
    assert proc.returncode == 0, proc.stderr
    md = outputs[0].read_text()
    assert md.count("History of `empty`") == len(pd.read_csv(outputs[1]).figure.unique())
    image = plt.imread(outputs[2])
    # Distinct colours counted as one integer a pixel (np.unique over rows sorts them: 9 s).
    pixels = np.round(image * 255).astype(np.uint64).reshape(-1, image.shape[2])
    colours = np.unique(pixels @ (256 ** np.arange(image.shape[2], dtype=np.uint64)))
    assert image.shape[0] > 800 and len(colours) > 50
    bad = in_process("history", str(RUNS[0]), "-o", str(tmp_path / "h.txt"))
    assert bad.returncode == 2 and ".md, .csv, .png, .svg" in bad.stderr
