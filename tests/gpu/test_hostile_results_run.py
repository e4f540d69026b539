"""The hostile catalogue's cases that need real runs (issue 53: 7 and 9): two runs of one
--run-id started together, and a run killed with `kill -9` after some of its benchmarks,
which every reader of results must then call unfinished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import BACKEND, ROOT, in_process, measuring_first, read_run, write_suite

#: Four small benchmarks (one a size), each a worker process of about a second here.
SUITE = ("defaults: {n_sweep: [1, 2], budget_s: 0.3, min_rounds: 3, warmup_max_rounds: 1,"
         " methodologies: [naive], naive_sync: [wait]}\n"
         "benchmarks:\n  - {name: a, kernel: add_one, elements: [64, 128, 256, 512]}\n")


def _run(suite, out, *extra: str) -> list[str]:
    return [sys.executable, "-m", "gpuoverhead", "run", "--suite", str(suite), "--backend",
            BACKEND, "--processes", "1", "--implementation", "wgpu-native", "--out", str(out),
            *extra]


@pytest.mark.slow
def test_hostile_two_runs_of_one_id_started_together(tmp_path):
    """Both said "complete ... results in ..." and one's results were gone (issue 53.9): one
    finishes, the other is refused in one line before it measures, and the folder holds the
    run that said it finished (its seed). One of the suite's four sizes: the two check the
    id at once, and what each then does is the same for one job as for four."""
    suite = write_suite(tmp_path, SUITE.replace("[64, 128, 256, 512]", "[64]"))
    runs = [subprocess.Popen(_run(suite, tmp_path / "out", "--run-id", "same", "--seed",
                                  str(seed)), cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=measuring_first)
            for seed in (1, 2)]
    ended = [(run.wait(timeout=300), run.communicate()[1]) for run in runs]
    assert sorted(code for code, _ in ended) == [0, 2], ended
    seed = next(s for s, (code, _) in zip((1, 2), ended, strict=True) if code == 0)
    refused = next(err for code, err in ended if code == 2)
    assert "Traceback" not in refused and ("already exists" in refused or
                                           "another run with this --run-id" in refused), refused
    _, summary, info = read_run(tmp_path / "out" / "same")
    assert info["status"] == "complete" and info["seed"] == seed and len(summary) > 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["same"]


@pytest.mark.slow
def test_hostile_run_killed_after_a_benchmark_reads_as_unfinished(tmp_path):
    """`kill -9` of a run (and its worker) after its first benchmark: run.json keeps status
    `running`; show, compare, history and report say it did not finish, with how many of
    the four benchmarks it holds (issue 53.7)."""
    suite = write_suite(tmp_path, SUITE)
    run = subprocess.Popen(_run(suite, tmp_path / "out", "--run-id", "killed"), cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    record = tmp_path / "out" / "killed" / "run.json"
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and run.poll() is None:
            if record.exists() and json.loads(record.read_text() or "{}").get("benchmarks"):
                break
            time.sleep(0.05)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # the run and its worker, as `kill -9` of them
        run.wait(timeout=60)
    info = json.loads(record.read_text())
    done = len({b["id"] for b in info["benchmarks"]})
    assert info["status"] == "running" and len(info["planned"]) == 4 and 0 < done < 4, info
    folder = str(record.parent)
    said = f"did not finish (status 'running': killed, or still measuring): it holds {done} " \
           "of the 4 benchmarks"
    for args in (("show", folder), ("report", folder), ("history", folder),
                 ("compare", folder, folder)):
        proc = in_process(*args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert said in proc.stderr, (args, proc.stderr)
