"""analysis/contended.py: rounds measured while the worker's CPU ran slow are left out of
the estimates where their process keeps enough others, on seeded data whose truth is known:
a VM's vCPU that, for stretches, runs a Python loop 2x and `submit` 1.5x slower."""

from __future__ import annotations

import numpy as np

from gpuoverhead.analysis import contended
from gpuoverhead.analysis.samples import Calibration, GroupSamples
from gpuoverhead.cases import Case
from gpuoverhead.methods import series

N = (1, 2, 4, 8)
CASE = Case("b", "k", 1, 1, "sequential", "submit", "wait", N)
PER_OP_NS, FIXED_NS, QUIET_CHECK_NS = 40_000.0, 5_000.0, 10_000


def _process(slow_rounds: set[int], rounds: int = 40, seed: int = 0) -> GroupSamples:
    """One process's rounds of the case: 1.5x dearer, and its CPU check 2x, in
    `slow_rounds`; checks and times jitter by a few per cent."""
    rng = np.random.default_rng(seed)
    out = GroupSamples((CASE,))
    t = 0
    for r in range(rounds):
        factor = 1.5 if r in slow_rounds else 1.0
        for n in N:
            wall = int((FIXED_NS + PER_OP_NS * n) * factor * rng.uniform(0.98, 1.02))
            out.parts[len(out.records)] = (t + wall - 1000,)  # the clock before the wait
            out.records.append((0, n, r, 0, t, wall))
            t += wall + 1000
        out.checks.append(int(QUIET_CHECK_NS * (2.0 if r in slow_rounds else 1.0)
                              * rng.uniform(0.95, 1.1)))
    out.rounds = rounds
    return out


def _per_op(samples: GroupSamples) -> float:
    found = series(samples, Calibration(timer_ns=0.0, tick_ns=None), 0)
    slope = next(s for k, s in found.items() if k.metric == "per_dispatch_ns")
    return float(np.median(slope.values))


def test_the_rounds_a_slowed_cpu_measured_are_left_out_and_the_estimate_is_the_quiet_one():
    slow = {3, 4, 5, 6, 17, 18, 30, 31, 32, 33, 34, 35}
    raw = _process(slow)
    (marked,), (count,) = contended.mark([raw])
    assert count == len(slow)
    phases = {r: p for _, _, r, p, _, _ in marked.records}
    assert {r for r, p in phases.items() if p == contended.PHASE} == slow
    assert len(marked.records) == len(raw.records)  # kept in the samples
    assert abs(_per_op(marked) / PER_OP_NS - 1) < 0.03
    mixed = contended.mark([_process(set(range(0, 40, 2)))])[0][0]  # half the rounds slow
    assert abs(_per_op(mixed) / PER_OP_NS - 1) < 0.03
    assert _per_op(_process(set(range(0, 40, 2)))) > 1.2 * PER_OP_NS  # unmarked: the mixture


def test_a_quiet_cpu_leaves_no_round_out():
    runs = [_process(set(), seed=s) for s in range(3)]
    marked, counts = contended.mark(runs)
    assert counts == [0, 0, 0] and marked == runs


def test_a_process_slowed_nearly_throughout_keeps_every_round():
    runs = [_process(set(), seed=1), _process(set(range(40)) - {7, 8}, seed=2)]
    _, counts = contended.mark(runs)
    assert counts == [0, 0]  # 2 quiet rounds of 40 are too few: its level says the rest
    runs = [_process(set(), seed=1), _process(set(range(30)), seed=2)]
    assert contended.mark(runs)[1] == [0, 30]  # 10 of 40 are enough (MIN_SHARE)


def test_the_quiet_check_is_the_jobs_not_the_processes_own():
    """A process slowed throughout is judged against its job's quiet processes, and a job
    whose rounds were never checked (a browser's) has no quiet check."""
    runs = [_process(set(range(10)), seed=3), _process(set(), seed=4)]
    assert contended.mark(runs)[1] == [10, 0]
    assert contended.quiet_ns([GroupSamples((CASE,))]) is None
    assert contended.mark([GroupSamples((CASE,))])[1] == [0]
