"""Interleaved sampling of a group: warm-up until settled, then rounds until precise or out of time.

Every round measures each (case, N) of the group once, in an order shuffled afresh each round
from the run's seeded generator. Cases that are compared with each other thus see the same
machine state on average, instead of one case inheriting what the previous one left behind.

Warm-up rounds run until the moving median of round durations settles (or a cap is hit);
their samples are kept with phase "warmup" (the first round's cost is what a short-lived
program pays) but no estimate uses them. Measured rounds then run until every estimate's 95%
CI half-width is within the target (checked from `min_rounds` on), or the group's budget
(per-case budget x cases) is spent, or `max_rounds` is reached; which of the three ended it
is recorded as `stop`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter_ns

import numpy as np

from gpuoverhead.methods import Operation
from gpuoverhead.suite import Case, Group

#: Moving-median window over warm-up round durations, and its tolerance for "settled".
WARMUP_WINDOW = 3
WARMUP_TOLERANCE = 0.05
#: Rounds measured before a group may stop for any reason: fewer give no usable CI.
#: (`min_rounds` of the suite is the floor before the target may be declared reached.)
MIN_ROUNDS = 3
#: Share of the group's budget that warm-up may take at most.
WARMUP_BUDGET_SHARE = 0.25


@dataclass
class GroupSamples:
    """Raw samples of one group: one record per timed call, plus how sampling ended."""

    cases: tuple[Case, ...]
    #: (case index, n, round, is_warmup, start_ns, wall_ns) per sample.
    records: list[tuple[int, int, int, bool, int, int]] = field(default_factory=list)
    #: Parts of a sample that its operation returned (per-call times, GPU ticks), by record.
    parts: dict[int, tuple[int, ...]] = field(default_factory=dict)
    warmup_rounds: int = 0
    warmup_settled: bool = False
    rounds: int = 0
    stop: str = ""


Progress = Callable[[GroupSamples, float, float], None]
Precision = Callable[[GroupSamples], float]


def sample_group(group: Group, ops: dict[Case, Operation], rng: np.random.Generator,
                 worst_rel_ci: Precision, progress: Progress, counts: dict[Case, int]
                 ) -> GroupSamples:
    """Sample `group`; `counts[case]` is increased by the dispatches each case issued.

    `worst_rel_ci` returns the largest relative CI half-width of the group's estimates so
    far; `progress(samples, elapsed_s, budget_s)` is called after every round.
    """
    s = group.sampling
    budget_ns = int(s.budget_s * len(group.cases) * 1e9)
    units = [(i, case, ops[case], n, case.dispatches(n))
             for i, case in enumerate(group.cases) for n in case.n_values]
    out = GroupSamples(group.cases)
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

    start = perf_counter_ns()
    durations: list[int] = []
    while out.warmup_rounds < s.warmup_max_rounds:
        durations.append(one_round(out.warmup_rounds, True))
        out.warmup_rounds += 1
        if _settled(durations):
            out.warmup_settled = True
            break
        if perf_counter_ns() - start > WARMUP_BUDGET_SHARE * budget_ns:
            break

    start = perf_counter_ns()
    next_check = s.min_rounds
    while True:
        one_round(out.rounds, False)
        out.rounds += 1
        elapsed = perf_counter_ns() - start
        if out.rounds >= next_check:
            next_check = max(out.rounds + 1, math.ceil(out.rounds * 1.1))
            if worst_rel_ci(out) <= s.target_rel_ci:
                out.stop = "converged"
        if not out.stop and elapsed >= budget_ns and out.rounds >= MIN_ROUNDS:
            out.stop = "budget"
        if not out.stop and out.rounds >= s.max_rounds:
            out.stop = "max_rounds"
        progress(out, elapsed / 1e9, budget_ns / 1e9)
        if out.stop:
            return out


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
