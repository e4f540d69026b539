"""run/precision.py: the end of a run says, per implementation, what limited its widest
figure: processes that differed, a process's own noise, or a process left out. Fed the
names production writes: committed runs' summaries and run.json, whose `implementation` is
a job's label (`torch`, `wgpu-native reference`) where the summary names what it measured
(`torch-eager`, `wgpu-native`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from gpuoverhead.run.precision import limits

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _committed(name: str) -> tuple[pd.DataFrame, list[dict], float]:
    info = json.loads((RESULTS / name / "run.json").read_text())
    return pd.read_parquet(RESULTS / name / "summary.parquet"), info["benchmarks"], \
        info["time_limit_s"]


def _left_out(benchmarks: list[dict], label: str) -> list[dict]:
    """run.json's entries with the second process of `label`'s job left out."""
    marked = copy.deepcopy(benchmarks)
    entry = next(b for b in marked if b["implementation"] == label)
    entry["processes"][1]["left_out"] = "3.40x the median of the job's processes kept"
    return marked


def _line(lines: list[str], impl: str) -> str:
    return next(line for line in lines if line.startswith(f"{impl}, "))


@pytest.mark.parametrize(("run", "label", "said"), [
    ("h200/default", "torch", "torch-eager"),  # a PyTorch job measures torch-eager
    ("h200/default", "wgpu-native reference", "wgpu-native"),  # its widest: reference loop
    ("h200/decode", "torch", "torch-eager"),  # a decode step's id: .../k=128
])
def test_a_process_left_out_is_said_for_the_job_production_names(run, label, said):
    summary, benchmarks, limit = _committed(run)
    plain = _line(limits(summary, benchmarks, limit), said)
    assert "quieter CPU set" not in plain
    marked = _line(limits(summary, _left_out(benchmarks, label), limit), said)
    assert marked.split(": ")[0] == plain.split(": ")[0]  # the same figure
    assert marked.endswith("a process far slower than its job's others was left out (its "
                           "warning says which CPU): a quieter CPU set narrows it "
                           "(--affinity, without that CPU)")


def test_a_process_left_out_of_another_job_is_not_said():
    """Dawn's widest figure is its product job's (through the raw FFI): a process left out
    of its reference loop's job is not what limited it, one of the product's is."""
    summary, benchmarks, limit = _committed("h200/default")
    lines = limits(summary, _left_out(benchmarks, "dawn reference"), limit)
    assert not any("quieter CPU set" in line for line in lines)
    lines = limits(summary, _left_out(benchmarks, "dawn"), limit)
    assert [line.split(",")[0] for line in lines if "quieter CPU set" in line] == ["dawn"]


def test_the_widest_figure_is_taken_over_every_layer_and_cpu_time():
    """The H200 run's widest figures were a CPU time through the raw FFI (Dawn) and one of
    the reference loop (wgpu-native), not the wrapper's wall times a line once named."""
    summary, benchmarks, limit = _committed("h200/default")
    lines = limits(summary, benchmarks, limit)
    assert _line(lines, "dawn").startswith(
        "dawn, dispatch CPU time per op through the raw FFI ±63% against the suite's target "
        "of ±2% (and 27 more of its figures): each process alone pinned it only to ±26% (its "
        "own interval: the noise within it), against 48% between the processes' medians: "
        "longer processes narrow it (budget_s and time_limit_s twice the suite's, --time-limit "
        "160 where the run had one, about twice the time)")
    assert _line(lines, "wgpu-native").startswith(
        "wgpu-native, dispatch CPU time per op in the reference loop ±77%")
    assert "more processes as long narrow it (--time-limit 160" in _line(lines, "wgpu-native")
    decode = limits(*_committed("h200/decode"))
    assert _line(decode, "wgpu-native").startswith(
        "wgpu-native, unfused per token of decode ±39%")


def test_an_aa_half_is_told_the_options_selftest_has():
    """selftest has no --time-limit: its halves' limit is the suite's scaled, each process
    as long as one of a plain run's three."""
    summary, benchmarks, limit = _committed("h200-x4/selftest/a")
    lines = limits(summary, benchmarks, limit, aa=True)
    assert len(lines) == 3 and not any("--time-limit" in line for line in lines)
    assert _line(lines, "dawn").endswith(
        "its 6 processes differed by 40% of the figure, each within ±4%: more processes as "
        "long narrow it (--processes 12, about twice the time)")


def _row(impl: str, family: str, metric: str, rel: float, spread: float, within: float,
         processes: int = 3, encoding: str = "submit", sync: str = "wait",
         layer: str = "wrapper") -> dict:
    return {"benchmark": "empty", "elements": 1, "k": 0, "implementation": impl,
            "family": family, "variant": "", "process": None, "metric": metric,
            "layer": layer, "methodology": "naive" if metric == "latency_ns" else "sequential",
            "ci_level": 0.95, "value": 50_000.0, "ci_low": 50_000.0 * (1 - rel),
            "ci_high": 50_000.0 * (1 + rel), "rel_ci": rel, "target_rel_ci": 0.02,
            "rel_spread_between": spread, "rel_ci_within": within, "processes": processes,
            "encoding": encoding, "sync": sync}


def test_each_implementation_gets_one_line_for_its_widest_figure_and_its_cause():
    summary = pd.DataFrame([
        _row("dawn", "dawn", "per_dispatch_ns", 0.21, 0.40, 0.05),  # processes differ
        _row("dawn", "dawn", "latency_ns", 0.10, 0.20, 0.04),
        _row("wgpu-native", "wgpu-native", "latency_ns", 0.19, 0.15, 0.18, sync="readback"),
        _row("wgpu-native", "wgpu-native", "per_dispatch_ns", 0.015, 0.01, 0.01),  # in target
        _row("torch-eager", "torch", "per_dispatch_ns", 0.30, 0.9, 0.05, encoding="-"),
        _row("numpy-cpu", "numpy-cpu", "per_dispatch_ns", 0.05, float("nan"), 0.05,
             processes=1),
        _row("dawn", "dawn", "cpu_per_dispatch_ns", 0.25, 0.4, 0.05, layer="native")])
    benchmarks = [{"id": "empty/elements=1", "implementation": "torch",
                   "processes": [{"process": 0}, {"process": 1, "left_out": "3.40x"}]}]
    lines = limits(summary, benchmarks, 80.0)
    assert len(lines) == 4
    assert lines[0].startswith("dawn, submit CPU time per op in the native C loop ±25% against "
                               "the suite's target of ±2% (and 2 more of its figures): its 3 "
                               "processes differed by 40%")
    assert "more processes as long narrow it (--time-limit 160, about twice" in lines[0]
    unlimited = limits(summary, benchmarks, None)[0]
    assert "(--processes 6 and a budget_s twice the suite's, about twice" in unlimited
    assert lines[1].startswith("wgpu-native, naive latency with readback ±19%")
    assert lines[1].endswith("each process alone pinned it only to ±18% (its own interval: the "
                             "noise within it), against 15% between the processes' medians: "
                             "longer processes narrow it (budget_s and time_limit_s twice the "
                             "suite's, --time-limit 160 where the run had one, about twice the "
                             "time)")
    assert lines[2].startswith("torch-eager, sequential per op") and "quieter CPU set" in lines[2]
    assert lines[3].startswith("numpy-cpu") and "one process" in lines[3]
    assert lines[3].endswith("(--processes 3 --time-limit 240)")
    aa = limits(summary, benchmarks, 320.0, aa=True)
    assert aa[1].endswith("longer processes narrow it (budget_s and time_limit_s twice the "
                          "suite's, about twice the time)")
    assert aa[3].endswith("(--processes 3, about three times the time)")


def test_a_run_within_its_target_says_nothing():
    within = _row("dawn", "dawn", "latency_ns", 0.01, 0.02, 0.01)
    assert limits(pd.DataFrame([within]), [], None) == []
    assert limits(pd.DataFrame(), [], None) == []
    # Wider than ±2% but within the absolute floor (10 ns) the stopping rule accepts.
    tiny = {**_row("dawn", "dawn", "per_dispatch_ns", 0.5, 0.02, 0.01), "value": 8.0,
            "ci_low": 4.0, "ci_high": 12.0}
    assert limits(pd.DataFrame([tiny]), [], None) == []


def test_the_advice_for_a_plain_run_of_the_default_suite_holds_under_its_plan():
    """The options said are what the plan (run/plan.py `_counts`) makes of them, for the
    default suite's six processes in 160 s and for a run whose longer --time-limit bought
    eleven: more processes as long (twice the limit: twice the processes, each as long) and
    longer processes (budget_s and time_limit_s twice: as many, each twice as long).
    `--processes 11` with budget_s twice, as once said, gave each of eleven 2 x 2.0 / 11 s a
    case where the run's had 2.0 / 6: 1.09x as long, not twice."""
    from gpuoverhead.run.plan import RunOptions, _counts

    def plan(suite_limit: float, budget: float, **options) -> tuple[int, float]:
        """Processes a job and each one's seconds a case, for the default suite (6)."""
        limit = options.get("time_limit_s") or suite_limit
        count, sharing, _ = _counts(RunOptions(suite=Path("s"), out_root=Path("o"),
                                               **options), limit, suite_limit, 6)
        return count, budget / sharing

    for asked, count in (({}, 6), ({"time_limit_s": 300.0}, 11)):
        limit = asked.get("time_limit_s", 160.0)
        ran = plan(160.0, 2.0, **asked)
        assert ran[0] == count
        spread = _row("dawn", "dawn", "latency_ns", 0.2, 0.4, 0.02, processes=count)
        more = limits(pd.DataFrame([spread]), [], limit)[0]
        assert more.endswith(f"(--time-limit {2 * limit:g}, about twice the time)"), more
        doubled = plan(160.0, 2.0, time_limit_s=2 * limit)
        assert doubled[0] == min(2 * count, 20) and doubled[1] == ran[1]  # MOST_PROCESSES
        noisy = _row("dawn", "dawn", "latency_ns", 0.2, 0.1, 0.2, processes=count)
        longer = limits(pd.DataFrame([noisy]), [], limit)[0]
        assert longer.endswith("(budget_s and time_limit_s twice the suite's, --time-limit "
                               f"{2 * limit:g} where the run had one, about twice the time)")
        # The suite's limit and budget doubled, and --time-limit where the run had one.
        again = plan(320.0, 4.0, **({"time_limit_s": 2 * limit} if asked else {}))
        assert again[0] == count and again[1] == pytest.approx(2 * ran[1])
