"""Values are written by their row's display hint, never by guessing from a metric's name."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from rich.console import Console

from gpuoverhead import metrics
from gpuoverhead.present import format as fmt
from gpuoverhead.present.report import CROSSOVER_FIGURES, FIGURES
from gpuoverhead.present.workload_grids import (
    first_values,
    host_read_grid,
    token_loop_grid,
    token_parts_grid,
)


@pytest.mark.parametrize(("v", "hint", "want"), [
    (135_000.0, "time", "135.0"), (-5.0, "time", fmt.BELOW), (-2_100.0, "difference", "-2.1"),
    (2.08, "ratio", "2.08x"),
    (math.inf, "ratio", "∞"), (19.96, "rate", "19.96"), (0.21, "share", "21.0%"),
    (145.0, "size", "M 145"), (math.nan, "time", "—")])
def test_a_value_is_written_as_its_hint_says(v, hint, want):
    assert fmt.value(v, hint) == want


def test_every_hint_a_metric_declares_is_written_without_a_unit_of_another_hint():
    written = {hint: fmt.with_ci(0.5, 0.25, 0.75, hint) for hint in set(
        m.hint for m in metrics.METRICS.values()) - {"error"}}
    assert written == {"time": "0.0 [0.0–0.0]", "difference": "0.0 [0.0–0.0]",
                       "ratio": "0.50x [0.25–0.75]",
                       "rate": "0.5 [0.25–0.75]", "share": "50.0% [25.0%–75.0%]",
                       "size": "M 0 [0–1]"}


def test_every_report_figure_is_a_declared_metric():
    for figure in FIGURES + CROSSOVER_FIGURES:
        assert metrics.of(figure.metric).hint in metrics.HINTS


def test_the_token_loop_grid_shows_each_form_and_encodings_loop_figures():
    """A row per implementation, form and encoding: tokens/s synced, pipelined and from the
    slope, CPU per token of each loop, the step's GPU time and its floor multiple."""
    base = {"methodology": "fusion", "process": float("nan"), "benchmark": "decode",
            "elements": 896, "implementation": "dawn", "k": 128, "variant": "fused"}
    rows = [(enc, sync, metric, value) for enc in ("pass", "dispatch")
            for sync, metric, value in (("synced", "tokens_per_s", 400.0),
                                        ("pipelined", "tokens_per_s", 700.0),
                                        ("wait", "tokens_per_s", 650.0),
                                        ("synced", "cpu_per_token_ns", 1500e3),
                                        ("pipelined", "cpu_per_token_ns", 1200e3))]
    rows += [("dispatch", "timestamps", "gpu_ns", 1300e3),
             ("dispatch", "timestamps", "floor_multiple", 2.2)]
    summary = pd.DataFrame([{**base, "encoding": e, "sync": s, "metric": m, "value": v}
                            for e, s, m, v in rows]
                           + [{**base, "benchmark": "chain", "encoding": "dispatch",
                               "sync": "timestamps", "metric": "gpu_ns", "value": 1.0}])
    console = Console(width=200, record=True)
    console.print(token_loop_grid(summary))
    text = console.export_text()
    lines = [line for line in text.splitlines() if "decode 896" in line]
    assert len(lines) == 2 and "chain" not in text  # only benchmarks with a token loop
    for line in lines:
        assert all(cell in line for cell in ("400", "700", "650", "1500.0", "1200.0",
                                              "1300.0", "2.20x")), line
    assert token_loop_grid(summary[summary.sync == "wait"]) is None


def test_a_grids_cell_is_the_first_row_of_its_sync_and_metric():
    """As the boolean selection it replaced took `.iloc[0]`: the first row of a (sync,
    metric) wins over a later one, a missing value stays missing."""
    part = pd.DataFrame({"sync": ["wait", "synced", "wait", "synced"],
                         "metric": ["per_unit_ns", "per_unit_ns", "per_unit_ns", "gpu_ns"],
                         "value": [1.0, math.nan, 3.0, 4.0]})
    found = first_values(part)
    assert found.keys() == {("wait", "per_unit_ns"), ("synced", "per_unit_ns"),
                            ("synced", "gpu_ns")}
    assert found["wait", "per_unit_ns"] == 1.0 and math.isnan(found["synced", "per_unit_ns"])


def test_the_token_parts_grid_shows_each_forms_gpu_time_and_its_parts_with_shares():
    """A row per implementation and form whose GPU time was taken apart: the GPU time, then
    the read floor, the dispatches and the kernels' excess, each with its interval and its
    share of the GPU time; a form without parts (PyTorch's) gets no row."""
    base = {"methodology": "fusion", "process": float("nan"), "benchmark": "decode",
            "elements": 896, "k": 128, "encoding": "dispatch", "sync": "timestamps",
            "ci_level": 0.95}
    parts = (("gpu_ns", 1150e3), ("read_floor_ns", 460e3), ("dispatch_gpu_ns", 230e3),
             ("kernel_excess_ns", 460e3))
    summary = pd.DataFrame([{**base, "implementation": impl, "variant": "fused", "metric": m,
                             "value": v, "ci_low": 0.9 * v, "ci_high": 1.1 * v}
                            for impl in ("wgpu-native", "torch-cuda-graph")
                            for m, v in parts if impl == "wgpu-native" or m == "gpu_ns"])
    console = Console(width=250, record=True)
    console.print(token_parts_grid(summary))
    lines = [line for line in console.export_text().splitlines() if "decode 896" in line]
    assert len(lines) == 1 and "wgpu-native" in lines[0], lines
    assert all(c in lines[0] for c in ("1150.0 [1035.0–1265.0]", "460.0 [414.0–506.0] (40%)",
                                       "230.0 [207.0–253.0] (20%)")), lines[0]
    assert token_parts_grid(summary[summary.metric == "gpu_ns"]) is None


def test_the_host_read_grid_shows_each_forms_unread_step_and_its_slowdowns():
    """A row per implementation and form of the recurrent step's loops: its step in the
    unread loop, the slowdowns reading every step and every 16 with their intervals, and
    the hybrid step's beside the unfused form; the decode grid does not take them."""
    base = {"methodology": "fusion", "process": float("nan"), "benchmark": "recurrent",
            "elements": 64, "implementation": "wgpu-native", "k": 1, "encoding": "dispatch",
            "ci_low": float("nan"), "ci_high": float("nan")}
    rows = [{**base, "variant": v, "sync": "never", "metric": "step_ns", "value": t}
            for v, t in (("unfused", 110e3), ("fused", 85e3))]
    rows += [{**base, "variant": v, "sync": s, "metric": "sync_slowdown", "value": x,
              "ci_low": x - 0.5, "ci_high": x + 0.5}
             for v, s, x in (("unfused", "synced", 3.25), ("unfused", "pipelined", 1.06),
                             ("fused", "synced", 4.58), ("fused", "pipelined", 1.07))]
    rows += [{**base, "variant": "hybrid", "sync": "synced", "metric": "hybrid_slowdown",
              "value": 2.5, "ci_low": 2.0, "ci_high": 3.0}]
    summary = pd.DataFrame(rows)
    console = Console(width=200, record=True)
    console.print(host_read_grid(summary))
    lines = [line for line in console.export_text().splitlines() if "recurrent 64" in line]
    assert len(lines) == 2
    assert all(c in lines[0] for c in ("unfused", "110.0", "3.25x [2.75–3.75]",
                                       "1.06x [0.56–1.56]", "2.50x [2.00–3.00]")), lines[0]
    assert all(c in lines[1] for c in ("fused", "85.0", "4.58x", "1.07x", "—")), lines[1]
    assert token_loop_grid(summary) is None
    assert host_read_grid(summary[summary.metric == "gpu_ns"]) is None
