"""Interleaved sampling of a group: warm-up until settled, then rounds until precise or out of time.

Every round measures each (case, N) of the group once, in an order shuffled afresh each round
from the run's seeded generator. Cases that are compared with each other thus see the same
machine state on average, instead of one case inheriting what the previous one left behind.

Warm-up round 0 is a probe: each case's N in rising order, so that a case whose samples take
too long on this adapter is measured at fewer N (see `_probe`). Warm-up rounds run until the
moving median of round durations settles (or a cap is hit); their samples are kept with
phase "warmup" (the first round's cost is what a short-lived program pays) but no estimate
uses them. Measured rounds then run until every estimate's 95%
CI half-width is within the target, or the process's share of the budget (run/budget.py) is
spent, or `max_rounds` is reached; which of the three ended it is recorded as `stop`
(`interrupted` where the worker was asked to stop after MIN_ROUNDS measured rounds: it
hands back what it has, checked; asked before, it hands back nothing). No
process stops before the suite's `min_rounds` for the first two reasons, unless reaching
them would take more than OVERRUN times its budget: then it stops at that point with at
least MIN_ROUNDS rounds, as `short`, and the run says so. Under a time limit the schedule
learns from such a process what its job's minimum costs and starts no later one that
cannot reach it; without the guard the first process of a job whose rounds are long (a
decode step's token loop: 19 s a round on the H100 for a 5 s budget) took the whole limit
and left every other job unmeasured. A process also stops `short`, with MIN_ROUNDS, where
another round would end past the run's deadline (`Budget.stop_at`): one stopped there by
the parent would hand back nothing.

At each round's start, outside any timed call, the CPU the worker runs on is read into
`cpus` (one entry per round, warm-up rounds first), so that a slow period can be matched
with the CPU it ran on (run.json's worker entries: run/worker.py `cpu_notes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from time import monotonic, perf_counter_ns, sleep
from typing import Any

import numpy as np

from gpuoverhead import interrupts
from gpuoverhead.analysis.row_medians import median_rows
from gpuoverhead.analysis.samples import GroupSamples
from gpuoverhead.cases import Case, Group
from gpuoverhead.methods import Operation, cadence
from gpuoverhead.records import SelfTimed
from gpuoverhead.run.budget import Budget

#: Moving-median window over warm-up round durations, and its tolerance for "settled".
WARMUP_WINDOW = 3
WARMUP_TOLERANCE = 0.05
#: Rounds a process measures whatever its budget: fewer give no usable interval.
MIN_ROUNDS = 3
#: How far past its budget a process may run to reach the suite's `min_rounds`.
OVERRUN = 3.0
#: The share of a process's budget between two checks of its precision (at `min_rounds`
#: first). A check computes every estimate so far, 45-78 ms on the H200 VMs, with no op
#: issued meanwhile: checked every 10% more rounds, a default process idled in 15-25 such
#: gaps, 4-8% of its time, and what an op costs depends on how densely its process has been
#: submitting (issue 54): the rounds' regime is back to back.
CHECK_SHARE = 0.25

Progress = Callable[[GroupSamples, float, float], None]
Precision = Callable[[GroupSamples], float]
Round = Callable[[int, bool], int]
#: One timed (case, N): case index, case, its operation, N, dispatches it issues.
Unit = tuple[int, Case, Operation, int, int]
#: A sample's record (see GroupSamples.records) and what its operation returned.
Timed = Callable[[Unit, int, bool], tuple[tuple[int, int, int, bool, int, int], Any]]


def sample_group(group: Group, ops: dict[Case, Operation], rng: np.random.Generator,
                 budget: Budget, worst_rel_ci: Precision, progress: Progress,
                 counts: dict[Case, int], cpus: list[int] | None = None,
                 energy: Callable[[], float] | None = None,
                 joules: dict[Case, float] | None = None) -> GroupSamples:
    """Sample `group` within `budget.process_s`; `counts[case]` is increased by the
    dispatches each case issued, and `cpus` gets the CPU of each round as it starts.
    With `energy` (the GPU's energy counter, J), `joules[case]` is increased by what the
    counter moved across each of the case's samples, read just outside its timed call.

    `worst_rel_ci` returns the largest relative CI half-width of the group's estimates so
    far; `progress(samples, elapsed_s, budget_s)` is called after every round.
    """
    out = GroupSamples(group.cases)
    units = [(i, case, ops[case], n, case.dispatches(n))
             for i, case in enumerate(group.cases) for n in case.n_values]

    def timed(unit: Unit, index: int, warmup: bool) -> tuple[tuple, Any]:
        interrupts.check()  # asked to stop (run/worker.py): before the clock, never inside
        i, case, op, n, dispatched = unit
        before = energy() if energy else 0.0
        t0 = perf_counter_ns()
        extra = op(n)
        wall = perf_counter_ns() - t0
        if energy and joules is not None:
            joules[case] = joules.get(case, 0.0) + energy() - before
        if isinstance(extra, SelfTimed):
            wall, extra = extra.wall_ns, extra.parts(t0)
        counts[case] += dispatched
        return (i, n, index, warmup, t0, wall), extra

    cpus = [] if cpus is None else cpus
    try:
        if group.gap_ms is not None:  # a cadence: every burst at its gap, round 0 too
            _timeline(group, _round(units, timed, rng, out, cpus, group.gap_ms / 1e3,
                                    cadence.BLOCK), out, budget, progress)
            return out
        cpus.append(current_cpu())
        out.python_step_ns.append(python_step_ns())
        units = _probe(units, timed, out, budget.sample_s)
        progress(out, 0.0, budget.process_s)
        one_round = _round(units, timed, rng, out, cpus)
        _warm_up(group, one_round, out, budget, progress)
        _measure(group, one_round, out, budget, worst_rel_ci, progress)
    except KeyboardInterrupt:  # the rounds measured come back, where they make an estimate
        if out.rounds < MIN_ROUNDS:
            raise
        out.stop = "interrupted"
    return out


def _probe(units: list[Unit], timed: Timed, out: GroupSamples, limit_s: float) -> list[Unit]:
    """Warm-up round 0, each case's N in rising order: from its third N on, a case is not
    measured at an N whose sample would take longer than `limit_s`, as extrapolated from
    its two previous samples (nor at a larger one); a sample that crossed the limit anyway
    is left out. A case keeps its two smallest N (a slope needs two). Returns the units
    kept; `out.cut` names the cases whose sweep was cut. No sample, and no round, can thus
    take seconds on a slow adapter where the sweep was chosen for a fast one."""
    limit = limit_s * 1e9
    kept: list[Unit] = []
    seen: dict[int, list[tuple[int, int]]] = {}  # per case: (N, wall ns) kept so far
    stopped: set[int] = set()
    for unit in sorted(units, key=lambda u: (u[0], u[3])):
        i, n = unit[0], unit[3]
        done = seen.setdefault(i, [])
        if i in stopped or (len(done) >= 2 and _extrapolated(done, n) > limit):
            stopped.add(i)
            continue
        record, extra = timed(unit, 0, True)
        if len(done) >= 2 and record[5] > limit:
            stopped.add(i)
            continue
        _keep(out, record, extra)
        kept.append(unit)
        done.append((n, record[5]))
    for i in stopped:
        n_kept = tuple(n for n, _ in seen[i])
        if n_kept != out.cases[i].n_values:
            out.cut[i] = n_kept
    out.warmup_rounds = 1
    return kept


def _extrapolated(done: list[tuple[int, int]], n: int) -> float:
    """A sample's wall time at `n` on the line through the last two (N, wall) (no less
    than the last: a sample never gets cheaper with more work)."""
    (n0, w0), (n1, w1) = done[-2:]
    return w1 + max(0.0, (w1 - w0) / (n1 - n0)) * (n - n1)


def _keep(out: GroupSamples, record: tuple, extra: Any) -> None:
    """Append a sample's record, and what its operation returned, to the group's samples."""
    if extra is not None:
        out.parts[len(out.records)] = extra
    out.records.append(record)


def _round(units: list[Unit], timed: Timed, rng: np.random.Generator, out: GroupSamples,
           cpus: list[int], gap_s: float = 0.0, block: int = 1) -> Round:
    """`one_round(index, warmup)`: every unit in a fresh order, `block` samples in a row
    each, every sample followed by `gap_s` of idle time (a cadence's gap; none between
    interleaved rounds' samples); returns the samples' ns. In a block of several the first
    sample is kept as a warm-up one: it pays for the unit before it (a cadence's `submit`
    burst after a burst of another encoding cost 19.4 µs an op against 16.7 after a
    `submit` burst, back to back on the H200 VM, and 48.5 against 36.0 16 ms apart:
    methods/cadence.py). Each round first appends the CPU it starts on to `cpus` and the
    Python loop's speed to `out.python_step_ns` (before any clock of a sample)."""

    def one_round(index: int, warmup: bool) -> int:
        cpus.append(current_cpu())
        out.python_step_ns.append(python_step_ns())
        total = 0
        for k in rng.permutation(len(units)):
            for b in range(block):
                record, extra = timed(units[k], index, warmup or (b == 0 < block - 1))
                _keep(out, record, extra)
                total += record[5]
                if gap_s:
                    sleep(gap_s)
        return total

    return one_round


#: Steps of the Python loop timed at each round's start (`python_step_ns`).
LOOP_STEPS = 5


def python_step_ns() -> int:
    """ns of one step of a fixed Python loop now, the median of LOOP_STEPS (10-20 µs in
    all): on the lent H200 VMs every vCPU switched between two speeds of plain Python, 1.1
    and 2.0-2.5 µs a step, in 0.1-3 s stretches, and the wrapper's `submit` with them
    (docs/methodology.md); timed at each round's start, it says which state a round met."""
    steps = []
    for _ in range(LOOP_STEPS):
        t0 = perf_counter_ns()
        sum(range(200))
        steps.append(perf_counter_ns() - t0)
    return int(median_rows(np.array(steps)))


def _timeline(group: Group, one_round: Round, out: GroupSamples, budget: Budget,
              progress: Progress) -> None:
    """A cadence's bursts for the process's whole budget, round 0 its warm-up: no early
    stop, since its regime settles over seconds and when is found after
    (analysis/settling.py); it stops early only where another round would end past the
    run's deadline (`budget.stop_at`), with MIN_ROUNDS measured, or at `max_rounds`."""
    start = perf_counter_ns()
    one_round(0, True)
    out.warmup_rounds, out.warmup_settled = 1, True
    while not out.stop:
        began = perf_counter_ns()
        one_round(out.rounds, False)
        out.rounds += 1
        now = perf_counter_ns()
        elapsed_s, took_s = (now - start) / 1e9, (now - began) / 1e9
        if elapsed_s >= budget.process_s and out.rounds >= MIN_ROUNDS:
            out.stop = "budget"
        elif out.rounds >= MIN_ROUNDS and monotonic() + took_s > budget.stop_at:
            out.stop = "short"
        elif out.rounds >= group.sampling.max_rounds:
            out.stop = "max_rounds"
        progress(out, elapsed_s, budget.process_s)


def _warm_up(group: Group, one_round: Round, out: GroupSamples, budget: Budget,
             progress: Progress) -> None:
    """Warm-up rounds after the probe until their moving median settles, or the cap or the
    budget's warm-up share is hit; each reported as progress (no budget spent yet)."""
    start = perf_counter_ns()
    durations: list[int] = []
    while out.warmup_rounds < group.sampling.warmup_max_rounds:
        durations.append(one_round(out.warmup_rounds, True))
        out.warmup_rounds += 1
        progress(out, 0.0, budget.process_s)
        if _settled(durations):
            out.warmup_settled = True
            return
        if perf_counter_ns() - start > budget.warmup_s * 1e9 or monotonic() > budget.stop_at:
            return


def _measure(group: Group, one_round: Round, out: GroupSamples, budget: Budget,
             worst_rel_ci: Precision, progress: Progress) -> None:
    """Measured rounds until the CI target is met, the budget is spent or max_rounds is hit;
    or, with MIN_ROUNDS measured, when another round like the last would not end before
    the run's deadline (`budget.stop_at`): a worker stopped there would lose every round."""
    s, budget_s = group.sampling, budget.process_s
    start = perf_counter_ns()
    next_check_s = -math.inf
    while not out.stop:
        took_s = one_round(out.rounds, False) / 1e9
        out.rounds += 1
        elapsed_s = (perf_counter_ns() - start) / 1e9
        if out.rounds >= s.min_rounds and elapsed_s >= next_check_s:
            next_check_s = elapsed_s + CHECK_SHARE * budget_s
            if worst_rel_ci(out) <= s.target_rel_ci:
                out.stop = "converged"
        if not out.stop and elapsed_s >= budget_s and out.rounds >= s.min_rounds:
            out.stop = "budget"
        if not out.stop and out.rounds >= MIN_ROUNDS and (
                elapsed_s >= OVERRUN * budget_s or monotonic() + took_s > budget.stop_at):
            out.stop = "short"
        if not out.stop and out.rounds >= s.max_rounds:
            out.stop = "max_rounds"
        progress(out, elapsed_s, budget_s)


def _settled(durations: list[int]) -> bool:
    """Whether the moving median of round durations moved less than the tolerance."""
    if len(durations) < WARMUP_WINDOW + 1:
        return False
    now = float(median_rows(np.array(durations[-WARMUP_WINDOW:])))
    before = float(median_rows(np.array(durations[-WARMUP_WINDOW - 1:-1])))
    return abs(now - before) <= WARMUP_TOLERANCE * now


def current_cpu() -> int:
    """The CPU this thread runs on now (glibc's sched_getcpu, which Python's os lacks), -1
    where the OS does not say (macOS, Windows, a libc without it)."""
    global _getcpu
    if _getcpu is None:
        _getcpu = _find_getcpu()
    return int(_getcpu())


#: sched_getcpu, resolved at the first call (before the first round's clock is read).
_getcpu: Callable[[], int] | None = None


def _find_getcpu() -> Callable[[], int]:
    try:
        import ctypes

        found = ctypes.CDLL(None, use_errno=True).sched_getcpu
        found.restype, found.argtypes = ctypes.c_int, []
        found()
        return found
    except (OSError, AttributeError, TypeError):
        return lambda: -1


def timer_cost_ns(pairs: int = 20_000) -> float:
    """Median cost of one clock reading as seen between two readings (subtracted per call)."""
    clock = perf_counter_ns
    deltas = np.empty(pairs, dtype=np.int64)
    for i in range(pairs):
        t0 = clock()
        deltas[i] = clock() - t0
    return float(median_rows(deltas))
