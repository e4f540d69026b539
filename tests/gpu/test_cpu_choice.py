"""A run leaves out a CPU that a busy process slows, and says so (run/cpus.py)."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
from conftest import BACKEND, gpuoverhead, only_run_folder, write_suite


def _hog(cpu: int) -> None:
    """The busy process: on `cpu` alone, and where this user may, ahead of the run (which
    the tests start at RUN_NICE) and of anything else there, so that the probe finds that
    CPU the slower however busy the other is (another test, another process)."""
    os.sched_setaffinity(0, {cpu})
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, -20)  # the highest, above RUN_NICE


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs to pin a busy process to one of them")
@pytest.mark.slow
def test_a_run_leaves_out_the_cpu_a_busy_process_holds_and_says_so(tmp_path):
    busy_cpu = max(os.sched_getaffinity(0))
    # The smallest run that measures (the probe comes before any suite's benchmarks): the
    # busy process holds a CPU for as long as it lasts, 5 s here against 15-18 s of --quick.
    suite = write_suite(tmp_path, "defaults: {n_sweep: [1, 2], budget_s: 0.05, min_rounds: 3,"
                        " warmup_max_rounds: 1, methodologies: [sequential], layers: [wrapper],"
                        " gpu_timestamps: false}\n"
                        "benchmarks:\n  - {name: a, kernel: empty}\n")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: _hog(busy_cpu))
    try:
        proc = gpuoverhead("run", "--suite", str(suite), "--processes", "1", "--backend",
                           BACKEND, "--implementation", "wgpu-native",
                           "--out", str(tmp_path / "out"),
                           env={"XDG_CACHE_HOME": str(tmp_path / "cache")})  # probe afresh
    finally:
        busy.kill()
        busy.wait()
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith(f"CPU {busy_cpu} ")]
    assert said and "slower than the other CPUs" in said[0] and "the run uses CPUs" in said[0]
    info = json.loads((only_run_folder(tmp_path / "out") / "run.json").read_text())
    assert info["host"]["cpus"]["slow"] == [busy_cpu]
    ran = {c for b in info["benchmarks"] for p in b["processes"] for c in p["cpus"]}
    assert ran and busy_cpu not in ran
