"""Interleaved sampling of a group: warm-up until settled, then rounds until precise or out of time.

Every round measures each (case, N) of the group once, in an order shuffled afresh each round
from the run's seeded generator. Cases that are compared with each other thus see the same
machine state on average, instead of one case inheriting what the previous one left behind.

Warm-up rounds run until the moving median of round durations settles (or a cap is hit);
their samples are kept with phase "warmup" (the first round's cost is what a short-lived
program pays) but no estimate uses them. Measured rounds then run until every estimate's 95%
CI half-width is within the target (checked from `min_rounds` on), or the process's share of
the budget (run/budget.py) is spent, or `max_rounds` is reached; which of the three ended it
is recorded as `stop`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from time import perf_counter_ns

import numpy as np

from gpuoverhead.analysis.samples import GroupSamples
from gpuoverhead.gpu.methods import Operation
from gpuoverhead.run.budget import Budget
from gpuoverhead.suite.model import Case, Group

#: Moving-median window over warm-up round durations, and its tolerance for "settled".
WARMUP_WINDOW = 3
WARMUP_TOLERANCE = 0.05
#: Rounds measured before a group may stop for any reason: fewer give no usable CI.
#: (`min_rounds` of the suite is the floor before the target may be declared reached.)
MIN_ROUNDS = 3


Progress = Callable[[GroupSamples, float, float], None]
Precision = Callable[[GroupSamples], float]
Round = Callable[[int, bool], int]


def sample_group(group: Group, ops: dict[Case, Operation], rng: np.random.Generator,
                 budget: Budget, worst_rel_ci: Precision, progress: Progress,
                 counts: dict[Case, int]) -> GroupSamples:
    """Sample `group` within `budget.process_s`; `counts[case]` is increased by the
    dispatches each case issued.

    `worst_rel_ci` returns the largest relative CI half-width of the group's estimates so
    far; `progress(samples, elapsed_s, budget_s)` is called after every round.
    """
    out = GroupSamples(group.cases)
    one_round = _round(group, ops, rng, out, counts)
    _warm_up(group, one_round, out, budget, progress)
    _measure(group, one_round, out, budget.process_s, worst_rel_ci, progress)
    return out


def _round(group: Group, ops: dict[Case, Operation], rng: np.random.Generator,
           out: GroupSamples, counts: dict[Case, int]) -> Round:
    """`one_round(index, warmup)`: every (case, N) once in a fresh order; returns its ns."""
    units = [(i, case, ops[case], n, case.dispatches(n))
             for i, case in enumerate(group.cases) for n in case.n_values]
    records, parts = out.records, out.parts

    def one_round(index: int, warmup: bool) -> int:
        order = rng.permutation(len(units))
        total = 0
        for k in order:
            i, case, op, n, dispatched = units[k]
            t0 = perf_counter_ns()
            extra = op(n)
            wall = perf_counter_ns() - t0
            if extra is not None:
                parts[len(records)] = extra
            records.append((i, n, index, warmup, t0, wall))
            counts[case] += dispatched
            total += wall
        return total

    return one_round


def _warm_up(group: Group, one_round: Round, out: GroupSamples, budget: Budget,
             progress: Progress) -> None:
    """Warm-up rounds until their moving median settles, or the cap or the budget's warm-up
    share is hit; each reported as progress (no measured round yet, no budget spent)."""
    start = perf_counter_ns()
    durations: list[int] = []
    while out.warmup_rounds < group.sampling.warmup_max_rounds:
        durations.append(one_round(out.warmup_rounds, True))
        out.warmup_rounds += 1
        progress(out, 0.0, budget.process_s)
        if _settled(durations):
            out.warmup_settled = True
            return
        if perf_counter_ns() - start > budget.warmup_s * 1e9:
            return


def _measure(group: Group, one_round: Round, out: GroupSamples, budget_s: float,
             worst_rel_ci: Precision, progress: Progress) -> None:
    """Measured rounds until the CI target is met, `budget_s` is spent or max_rounds is hit."""
    s = group.sampling
    start = perf_counter_ns()
    next_check = s.min_rounds
    while not out.stop:
        one_round(out.rounds, False)
        out.rounds += 1
        elapsed_s = (perf_counter_ns() - start) / 1e9
        if out.rounds >= next_check:
            next_check = max(out.rounds + 1, math.ceil(out.rounds * 1.1))
            if worst_rel_ci(out) <= s.target_rel_ci:
                out.stop = "converged"
        if not out.stop and elapsed_s >= budget_s and out.rounds >= MIN_ROUNDS:
            out.stop = "budget"
        if not out.stop and out.rounds >= s.max_rounds:
            out.stop = "max_rounds"
        progress(out, elapsed_s, budget_s)


def _settled(durations: list[int]) -> bool:
    """Whether the moving median of round durations moved less than the tolerance."""
    if len(durations) < WARMUP_WINDOW + 1:
        return False
    now = float(np.median(durations[-WARMUP_WINDOW:]))
    before = float(np.median(durations[-WARMUP_WINDOW - 1:-1]))
    return abs(now - before) <= WARMUP_TOLERANCE * now


def timer_cost_ns(pairs: int = 20_000) -> float:
    """Median cost of one clock reading as seen between two readings (subtracted per call)."""
    clock = perf_counter_ns
    deltas = np.empty(pairs, dtype=np.int64)
    for i in range(pairs):
        t0 = clock()
        deltas[i] = clock() - t0
    return float(np.median(deltas))
