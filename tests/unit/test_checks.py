"""run/checks: a CPU whose processes measured slower is named (`cpu_warnings`), on synthetic
rows and on the committed H100 run where vCPU 14 made `submit` 3.3x slower; a latency whose
processes' medians split between two modes is noted (`mode_notes`)."""

from __future__ import annotations

import json

import pandas as pd
from conftest import ROOT

from gpuoverhead.run.checks import MODES, cpu_warnings, mode_notes

CASES = [f"g/elements=1/sequential/{e}/wrapper" for e in ("submit", "pass", "dispatch")]


def _run(slow_cpu_of: dict[tuple[str, int], float]) -> tuple[list[dict], pd.DataFrame]:
    """Two jobs of four processes, process p on CPU p; `slow_cpu_of[(case, p)]` multiplies
    that process's estimate."""
    benchmarks, rows = [], []
    for impl in ("wgpu-native", "dawn"):
        benchmarks.append({"id": "g/elements=1", "implementation": impl, "processes": [
            {"process": p, "cpu_most": p} for p in range(4)]})
        for case in CASES:
            for p in range(4):
                rows.append({"case": case, "implementation": impl, "family": "webgpu",
                             "variant": "", "metric": "per_dispatch_ns", "call": None,
                             "process": float(p),
                             "value": 1000.0 * (1 + p / 100) * slow_cpu_of.get((case, p), 1)})
    return benchmarks, pd.DataFrame(rows)


def test_a_cpu_whose_processes_ran_slow_is_named():
    slow = {(CASES[0], 3): 3.0, (CASES[1], 3): 2.0, (CASES[2], 3): 1.6}
    (warning,) = cpu_warnings(*_run(slow))
    assert warning.startswith("on CPU 3, 6 of 6 headline estimates") and "3.0x" in warning


def test_slowness_spread_over_cpus_names_none():
    slow = {(CASES[0], 0): 3.0, (CASES[1], 1): 3.0, (CASES[2], 2): 3.0, (CASES[0], 3): 3.0}
    assert cpu_warnings(*_run(slow)) == []
    assert cpu_warnings(*_run({})) == []


def test_the_committed_h100_run_names_vcpu_14():
    run = ROOT / "tests" / "data" / "h100-unpinned-selftest-a"  # an H100 A/A half, unpinned
    (warning,) = cpu_warnings(json.loads((run / "run.json").read_text())["benchmarks"],
                              pd.read_parquet(run / "summary.parquet"))
    assert "on CPU 14" in warning and "submit" in warning


def test_a_headline_estimate_in_two_modes_is_a_note_and_a_call_is_not():
    """The summary's `modes` (said by combine where it made a figure a trimmed mean,
    tests/unit/test_combine.py) gives one MODES note per headline estimate; a breakdown
    call in two modes is said in its row, not in a note."""
    case = "g/elements=1/naive/wait"
    said = "400 µs (50%) or 2400 µs (50%)"
    summary = pd.DataFrame([
        {"implementation": "chromium", "case": case, "metric": "latency_ns", "call": "",
         "process": pd.NA, "modes": said},
        {"implementation": "chromium", "case": case, "metric": "call_ns", "call": "submit",
         "process": pd.NA, "modes": "13 µs (51%) or 25 µs (49%)"},
        {"implementation": "chromium", "case": case, "metric": "per_dispatch_ns", "call": "",
         "process": pd.NA, "modes": ""}])
    ((kind, example),) = mode_notes(summary)
    assert kind == MODES and example == f"chromium {case} latency_ns: {said}"

