"""An interrupted run keeps every benchmark it finished, in readable files."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, only_run_folder, read_run, write_suite

SUITE = (
    "defaults: {n_sweep: [1, 2, 4], budget_s: 0.6, target_rel_ci: 0.0001, min_rounds: 3,"
    " warmup_max_rounds: 2}\n"
    "benchmarks:\n"
    "  - {name: first, kernel: empty}\n"
    "  - {name: second, kernel: add_one, elements: 256}\n"
    "  - {name: third, kernel: add_one, elements: 512}\n"
    "  - {name: fourth, kernel: empty, elements: 64}\n"
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_keeps_finished_benchmarks(tmp_path, signum):
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-m", "gpuoverhead", "run", "--suite", str(write_suite(tmp_path, SUITE)),
         "--backend", "vulkan", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        finished = _wait_for_finished_benchmarks(out, child)
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted: results in" in stderr
    samples, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "interrupted" and info["finished"]
    done = [b["benchmark"] for b in info["benchmarks"] if b["status"] == "ok"]
    assert done[: len(finished)] == finished and len(done) < 4
    assert list(summary.benchmark.unique()) == done
    assert list(samples.benchmark.unique()) == done


def _wait_for_finished_benchmarks(out, child) -> list[str]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        runs = list(out.glob("*/run.json")) if out.exists() else []
        if runs:
            benchmarks = json.loads(runs[0].read_text())["benchmarks"]  # replaced atomically
            if benchmarks:
                return [b["benchmark"] for b in benchmarks]
        time.sleep(0.05)
    raise AssertionError("no benchmark finished in time")
