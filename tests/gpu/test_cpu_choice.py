"""A run leaves out a CPU that a busy process slows, and says so (run/cpus.py)."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
from conftest import BACKEND, gpuoverhead, only_run_folder


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
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: _hog(busy_cpu))
    try:
        proc = gpuoverhead("run", "--quick", "--backend", BACKEND, "--implementation",
                           "wgpu-native", "--out", str(tmp_path / "out"),
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
