"""The hostile catalogue's cases that need real runs (issue 53: 7 and 9): two runs of one
--run-id started together here; a run killed with `kill -9` after some of its benchmarks,
which every reader of results must then call unfinished, is checked on the run that
test_interrupt.py's test_hostile_fault_sigkill_leaves_finished_benchmarks_readable kills."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import BACKEND, ROOT, measuring_first, read_run, write_suite

#: One small benchmark, a worker process of about a second here, most of it start-up: the
#: two runs race for the id as they start (0.3 s a case, as it was, cost 0.6 s of sampling
#: more and checked nothing else: the loser's message may name the folder or the lock).
SUITE = ("defaults: {n_sweep: [1, 2], budget_s: 0.02, min_rounds: 3, warmup_max_rounds: 1,"
         " methodologies: [naive], naive_sync: [wait]}\n"
         "benchmarks:\n  - {name: a, kernel: add_one, elements: [64]}\n")


def _run(suite, out, *extra: str) -> list[str]:
    return [sys.executable, "-m", "gpuoverhead", "run", "--suite", str(suite), "--backend",
            BACKEND, "--processes", "1", "--implementation", "wgpu-native", "--out", str(out),
            *extra]


@pytest.mark.slow
def test_hostile_two_runs_of_one_id_started_together(tmp_path):
    """Both said "complete ... results in ..." and one's results were gone (issue 53.9): one
    finishes, the other is refused in one line before it measures, and the folder holds the
    run that said it finished (its seed). One size: the two check the id at once, and what
    each then does is the same for one job as for four."""
    suite = write_suite(tmp_path, SUITE)
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
