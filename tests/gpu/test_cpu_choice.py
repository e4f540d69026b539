"""A run leaves out a CPU that a busy process slows, and says so (run/cpus.py)."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
from conftest import BACKEND, in_process, measuring_first, only_run_folder, write_suite

#: The busy process: it says it has started, then keeps its CPU busy until killed.
BUSY = "import sys; sys.stdout.write('spinning'); sys.stdout.flush()\nwhile True: pass"


def _hog(cpu: int) -> None:
    """The busy process: on `cpu` alone, and where this user may, ahead of the run's probe
    (at RUN_NICE) and of anything else there, so that the probe finds that CPU the slower
    however busy the other is (another test, another process)."""
    os.sched_setaffinity(0, {cpu})
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, -20)  # the highest, above RUN_NICE


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs to pin a busy process to one of them")
@pytest.mark.slow
def test_a_run_leaves_out_the_cpu_a_busy_process_holds_and_says_so(tmp_path, monkeypatch):
    """The run in this process (a child's start-up less), its CPU choice made at RUN_NICE as
    a run the tests start makes it. The busy process spins from before the choice (the probe
    comes before any suite's benchmarks) until the run has chosen its CPUs, not through the
    run's start-up: its choice is all the probe decides, and the workers then run where it
    put them, which run.json says."""
    from gpuoverhead.gpu import cache_folder
    from gpuoverhead.run import cpus

    busy_cpu = max(os.sched_getaffinity(0))
    choose = cpus.choose

    def choose_beside_a_busy_cpu(affinity: str | None):
        busy = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE,
                                preexec_fn=lambda: _hog(busy_cpu))
        before = os.getpriority(os.PRIO_PROCESS, 0)
        try:
            assert busy.stdout is not None and busy.stdout.read(8) == b"spinning"
            measuring_first()  # this thread, which probes
            return choose(affinity)
        finally:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, before)
            busy.kill()
            busy.wait()

    monkeypatch.setattr(cpus, "choose", choose_beside_a_busy_cpu)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a new probe
    monkeypatch.setattr(cache_folder, "_said", set())
    # The smallest run that measures.
    suite = write_suite(tmp_path, "defaults: {n_sweep: [1, 2], budget_s: 0.05, min_rounds: 3,"
                        " warmup_max_rounds: 1, methodologies: [sequential], layers: [wrapper],"
                        " gpu_timestamps: false}\n"
                        "benchmarks:\n  - {name: a, kernel: empty}\n")
    proc = in_process("run", "--suite", str(suite), "--processes", "1", "--backend", BACKEND,
                      "--implementation", "wgpu-native", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith(f"CPU {busy_cpu} ")]
    assert said and "slower than the other CPUs" in said[0] and "the run uses CPUs" in said[0], \
        proc.stderr
    info = json.loads((only_run_folder(tmp_path / "out") / "run.json").read_text())
    assert info["host"]["cpus"]["slow"] == [busy_cpu]
    ran = {c for b in info["benchmarks"] for p in b["processes"] for c in p["cpus"]}
    assert ran and busy_cpu not in ran
