"""A run leaves out a CPU that a busy process slows, and says so (run/cpus.py)."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
from conftest import BACKEND, ROOT, measuring_first, only_run_folder, write_suite


def _hog(cpu: int) -> None:
    """A busy process: on `cpu` alone, and where this user may, ahead of the run (which the
    tests start at RUN_NICE) and of anything else there, so that the probe finds that CPU
    the slower however busy the other is (another test, another process)."""
    os.sched_setaffinity(0, {cpu})
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, -20)  # the highest, above RUN_NICE


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs to pin a busy process to one of them")
@pytest.mark.slow
def test_a_run_leaves_out_the_cpu_a_busy_process_holds_and_says_so(tmp_path):
    busy_cpu = max(os.sched_getaffinity(0))
    # The smallest run that measures (the probe comes before any suite's benchmarks).
    suite = write_suite(tmp_path, "defaults: {n_sweep: [1, 2], budget_s: 0.05, min_rounds: 3,"
                        " warmup_max_rounds: 1, methodologies: [sequential], layers: [wrapper],"
                        " gpu_timestamps: false}\n"
                        "benchmarks:\n  - {name: a, kernel: empty}\n")
    # Three at -20 leave the probe (at RUN_NICE) a tenth of that CPU, one left it a quarter:
    # with one, beside a busy core and the other xdist worker's runs (at RUN_NICE too, on
    # the other CPU), the probe once named no CPU (2026-11-30).
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             preexec_fn=lambda: _hog(busy_cpu)) for _ in range(3)]
    run = subprocess.Popen(
        [sys.executable, "-m", "gpuoverhead", "run", "--suite", str(suite), "--processes", "1",
         "--backend", BACKEND, "--implementation", "wgpu-native", "--out",
         str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"),  # a new probe
                        "PYTHONUNBUFFERED": "1"}, preexec_fn=measuring_first)
    try:
        # The busy process holds its CPU until the run has chosen its CPUs (the line that
        # says so, or the plan's after it): its choice is all the probe decides, and the
        # workers then run where it put them, which run.json says.
        lines = [run.stderr.readline()]
        while lines[-1] and not lines[-1].startswith(("CPU", "measuring")):
            lines.append(run.stderr.readline())
        for hog in busy:
            hog.kill()
        stderr = "".join(lines) + run.stderr.read()
        run.wait(timeout=300)
    finally:
        for hog in busy:
            hog.kill()
            hog.wait()
        run.kill()
    assert run.returncode == 0, stderr
    said = [line for line in stderr.splitlines() if line.startswith(f"CPU {busy_cpu} ")]
    assert said and "slower than the other CPUs" in said[0] and "the run uses CPUs" in said[0], \
        stderr
    info = json.loads((only_run_folder(tmp_path / "out") / "run.json").read_text())
    assert info["host"]["cpus"]["slow"] == [busy_cpu]
    ran = {c for b in info["benchmarks"] for p in b["processes"] for c in p["cpus"]}
    assert ran and busy_cpu not in ran
