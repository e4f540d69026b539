"""`gpuoverhead history` over three committed H100 runs of the default suite, given out of
time order: the runs come back in the order they started, each figure's values and
intervals are the runs' own, and the plot has one line with interval bars per
implementation in each headline figure's panel."""

from __future__ import annotations

import json
from pathlib import Path
from subprocess import CompletedProcess

import pandas as pd
import pytest
from conftest import ROOT, in_process
from matplotlib.figure import Figure
from PIL import Image

from gpuoverhead import metrics
from gpuoverhead.present import history as past
from gpuoverhead.present.history import plot

#: Started 2026-11-25 11:45, 2026-11-23 07:40 and 2026-11-27 14:19: not in time order.
RUNS = [ROOT / "results" / r for r in ("h100/default", "swiftshader/default",
                                       "h200/processes-3")]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[past.History, Figure, list[Path], CompletedProcess]:
    """The command run once with a table, the points and the plot asked for: the history it
    built, the figure it drew (kept as `past.plot` hands it back), its outputs and what it
    said."""
    outputs = [tmp_path_factory.mktemp("history") / f"h.{s}" for s in ("md", "csv", "png")]
    drawn = []

    def kept(history: past.History) -> Figure:
        drawn.append((history, plot(history)))
        return drawn[-1][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(past, "plot", kept)
        proc = in_process("history", *map(str, RUNS),
                          *(a for p in outputs for a in ("-o", str(p))))
    assert len(drawn) == 1, proc.stderr
    return *drawn[0], outputs, proc


@pytest.fixture(scope="module")
def history(written) -> past.History:
    return written[0]


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


def test_plot_draws_a_line_with_interval_bars_per_implementation(written):
    history, fig = written[:2]  # closed once written, its artists kept
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


def test_command_writes_table_points_and_plot(written, tmp_path):
    outputs, proc = written[2:]
    assert proc.returncode == 0, proc.stderr
    md = outputs[0].read_text()
    assert md.count("History of `empty`") == len(pd.read_csv(outputs[1]).figure.unique())
    with Image.open(outputs[2]) as image:  # its distinct colours counted in C
        assert image.height > 800 and len(image.getcolors(1 << 24)) > 50
    bad = in_process("history", str(RUNS[0]), "-o", str(tmp_path / "h.txt"))
    assert bad.returncode == 2 and ".md, .csv, .png, .svg" in bad.stderr
