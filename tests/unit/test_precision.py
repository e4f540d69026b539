"""run/precision.py: the end of a run says, per implementation, what limited its widest
headline figure: processes that differed, a process's own noise, or a process left out."""

from __future__ import annotations

import pandas as pd

from gpuoverhead.run.precision import limits


def _row(impl: str, metric: str, rel: float, spread: float, within: float, processes: int = 3,
         encoding: str = "submit", sync: str = "wait") -> dict:
    return {"benchmark": "empty", "elements": 1, "implementation": impl, "process": None,
            "metric": metric, "layer": "wrapper", "ci_level": 0.95, "rel_ci": rel,
            "target_rel_ci": 0.02, "rel_spread_between": spread, "rel_ci_within": within,
            "processes": processes, "encoding": encoding, "sync": sync}


def test_each_implementation_gets_one_line_for_its_widest_figure_and_its_cause():
    summary = pd.DataFrame([
        _row("dawn", "per_dispatch_ns", 0.21, 0.40, 0.05),  # processes differ: more of them
        _row("dawn", "latency_ns", 0.10, 0.20, 0.04),
        _row("wgpu-native", "latency_ns", 0.19, 0.15, 0.18, sync="readback"),  # own noise
        _row("wgpu-native", "per_dispatch_ns", 0.015, 0.01, 0.01),  # within target: not said
        _row("torch-eager", "per_dispatch_ns", 0.30, 0.9, 0.05, processes=3, encoding="-"),
        _row("numpy-cpu", "per_dispatch_ns", 0.05, float("nan"), 0.05, processes=1)])
    benchmarks = [{"id": "empty/elements=1", "implementation": "torch-eager",
                   "processes": [{"process": 0}, {"process": 1, "left_out": "3.40x"}]}]
    lines = limits(summary, benchmarks, 80.0)
    assert len(lines) == 4
    assert lines[0].startswith("dawn, submit per op ±21% against the suite's target of ±2% "
                               "(and 1 more of its headline figures): its 3 processes "
                               "differed by 40%")
    assert "more processes as long narrow it (--time-limit 160, about twice" in lines[0]
    unlimited = limits(summary, benchmarks, None)[0]
    assert "(--processes 6 and a budget_s twice the suite's, about twice" in unlimited
    assert lines[1].startswith("wgpu-native, naive latency with readback ±19%")
    assert "each process alone pinned it only to ±18% (its own interval" in lines[1]
    assert "--processes 3 --time-limit 160" in lines[1]
    assert lines[2].startswith("torch-eager, sequential per op") and "quieter CPU set" in lines[2]
    assert lines[3].startswith("numpy-cpu") and "one process" in lines[3]


def test_a_run_within_its_target_says_nothing():
    assert limits(pd.DataFrame([_row("dawn", "latency_ns", 0.01, 0.02, 0.01)]), [], None) == []
    assert limits(pd.DataFrame(), [], None) == []
