"""run/checks: a CPU whose processes measured slower is named (`cpu_warnings`), on synthetic
rows and on the committed H100 run where vCPU 14 made `submit` 3.3x slower; a latency whose
processes' medians split between two modes is noted (`mode_notes`)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
from conftest import ROOT

from gpuoverhead.run.checks import MODES, cpu_warnings, mode_notes, modes_column

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


def test_a_latency_whose_process_medians_split_between_two_modes_is_a_note():
    """Six processes' naive latencies at 0.4 or 2.4 ms, each with its own share of the
    slow one (three medians each side): the summary row says its modes, and one MODES note
    names the estimate; the same samples with every share below half leave every median in
    one mode: none."""
    rng = np.random.default_rng(25)
    case = "g/elements=1/naive/wait"
    summary = pd.DataFrame([{"implementation": "chromium", "case": case,
                             "metric": "latency_ns", "call": "", "process": pd.NA}])

    def column(shares: list[float]) -> pd.Series:
        samples = pd.DataFrame([{"case": case, "call": "", "phase": "measure", "process": p,
                                 "n_dispatches": 1,
                                 "wall_ns": (2.4e6 if rng.random() < share else 0.4e6)
                                 * rng.lognormal(0, 0.03)}
                                for p, share in enumerate(shares) for _ in range(30)])
        return modes_column(samples, summary)

    said = column([0.2, 0.3, 0.4, 0.6, 0.7, 0.8])
    assert re.fullmatch(r"(39\d|40\d) µs \(\d+%\) or 2\d{3} µs \(\d+%\)", said[0]), said[0]
    ((kind, example),) = mode_notes(summary.assign(modes=said))
    assert kind == MODES and example == f"chromium {case} latency_ns: {said[0]}"
    assert list(column([0.1, 0.2, 0.3, 0.2, 0.25, 0.15])) == [""]

