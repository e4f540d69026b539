"""The time budget, in one place: what the suite's `budget_s` and `time_limit_s` become on the
way to the clock, and the order in which worker processes run.

The suite gives seconds per case (`budget_s`), for all worker processes together, so that
the process count changes precision, not run time: a group of C cases in P processes has
C x budget_s seconds, each process C x budget_s / P of them (its *cap*).

Without a time limit the processes run benchmark by benchmark (process 0 of each job, then
process 1, ...), each with its cap. With one (the suite's `time_limit_s` or `--time-limit`)
they run in passes over all benchmarks: pass 0 is process 0 of every job that the limit
holds as expected (the others are chosen breadth first and said at the start, run/breadth.py;
each runs after pass 0 if the time then holds it), which measures what each job's start-up
and least sampling (warm-up and `min_rounds` rounds) cost; only then is the rest divided.
Each later pass runs only if the time left holds it whole: passes are dropped from the end,
never started as stubs. A process still running at the deadline (the limit less FINISH_S)
is stopped, so a stated limit holds, give or take the finish, whatever a start-up costs.

How many passes (`processes`: those asked, run/plan.py) run is what the time holds
(`fit_passes`): pass 0 is divided as the start-ups known so far say; at the start of pass 1
the count is made again on the start-ups measured, and passes that do not fit are dropped.

Where the time left holds the passes still to run but not one more whole pass, it runs a
*partial* pass: one more process (in each half) of the jobs whose start-up and least
sampling the spare time holds, the cheapest first, each with the jobs its ratios are paired
with (`partners`). A job of one process gets an interval that way (a crossover run on the
H100 had measured one process a job with a third of its limit left).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from gpuoverhead.run import breadth
from gpuoverhead.run.passes import fit_passes

#: Share of a process's budget that warm-up may take at most.
WARMUP_SHARE = 0.25
#: The longest one sample may take, as a share of a process's budget (run/rounds.py's probe).
SAMPLE_SHARE = 0.05
#: Least budget a process gets (it still measures the suite's `min_rounds` rounds).
MIN_PROCESS_S = 0.05
#: Seconds kept for what follows the last process: estimates, files, the summary.
FINISH_S = 3.0
#: Seconds a worker keeps before the run's deadline to send its samples back.
HANDBACK_S = 0.5
#: A job joins a partial pass only where this multiple of its start-up and least sampling
#: fits (one planned at its bare least on lavapipe ended as a 3-round stub).
PARTIAL_MARGIN = 2.0
#: Seconds finishing one benchmark is expected to take before one has (lavapipe: 0.8-1.6 s).
FINISH_PRIOR_S = 1.0


@dataclass(frozen=True)
class Budget:
    """Seconds one worker process may spend sampling its group."""

    process_s: float
    #: The share of `process_s` that one sample may take (larger for a browser's samples).
    sample_share: float = SAMPLE_SHARE
    #: When (time.monotonic()) the worker must have handed its rounds back: the deadline less
    #: HANDBACK_S and what the rest of its pass needs (inf: no time limit).
    stop_at: float = math.inf

    @property
    def warmup_s(self) -> float:
        """What warm-up may take, at most, beyond `process_s`."""
        return WARMUP_SHARE * self.process_s

    @property
    def sample_s(self) -> float:
        """The longest one sample may take before the probe cuts the case's N sweep."""
        return self.sample_share * self.process_s


def process_cap_s(per_case_s: float, cases: int, processes: int) -> float:
    """A process's share of its group's budget as the suite gives it."""
    return per_case_s * cases / processes


@dataclass(frozen=True)
class Slot:
    """One worker process: of which benchmark and job, the how-manieth, and what it runs
    (`kind`: processes of one kind take about as long to start and to sample)."""

    benchmark: int
    process: int
    job: int
    kind: str
    cap: float
    #: Seconds of start-up expected of it before any of its kind ran.
    setup_hint: float


@dataclass
class Schedule:
    """The run's worker processes and the time limit they share.

    `jobs[b][j]` is (kind, cap, setup hint) of job j of benchmark b, its cap for `processes`
    passes; `processes` the passes asked for, under a time limit the most (`most`): the
    passes that fit at the start of pass 1 (`fit_passes`), less any that the time left
    could not hold then (`dropped`), are then `processes`."""

    jobs: list[list[tuple[str, float, float]]]
    processes: int
    limit_s: float | None = None
    start: float = field(default_factory=time.monotonic)
    #: Per kind: seconds beyond sampling its processes took, and the least sampling one took.
    _setup: dict[str, list[float]] = field(default_factory=dict)
    _least: dict[str, float] = field(default_factory=dict)
    #: Passes dropped because the time left could not hold them (for run.json).
    dropped: int = 0
    #: The passes asked for: under a time limit the most that may run.
    most: int = 0
    #: Seconds of the limit left as pass 0 began (what the choice in pass 0 divides).
    _pass0_left: float | None = None
    #: Per kind, the start-ups of the processes that sampled (kept for later runs).
    startups: dict[str, list[float]] = field(default_factory=dict)
    #: Seconds that finishing each benchmark took, so far.
    _finishes: list[float] = field(default_factory=list)
    #: Seconds of the limit left when passes were last dropped (for the warning).
    left_at_drop_s: float = 0.0
    #: How many runs the passes are dealt to in turn (2: an A/A run's halves, kept as many).
    halves: int = 1
    #: (benchmark, job) of the jobs in the partial pass (the last `halves` passes), if any.
    partial: frozenset[tuple[int, int]] = frozenset()
    #: `partners[b][j]`: the jobs whose processes job j's ratios are paired with (finish.py).
    partners: list[list[tuple[int, ...]]] | None = None
    #: (benchmark, job) of the jobs left out by `leave_out` (each runs late if time holds).
    left_out: frozenset[tuple[int, int]] = frozenset()

    def __post_init__(self) -> None:
        self.most = self.most or self.processes

    @property
    def whole(self) -> int:
        """The passes that run every job (all but a partial pass)."""
        return self.processes - self.halves if self.partial else self.processes

    def slots(self) -> Iterator[Slot]:
        """Every worker process in the order it runs; under a time limit a pass starts only
        if the time left holds it whole (checked as it would start)."""
        if self.limit_s is None:
            for b in range(len(self.jobs)):
                for p in range(self.processes):
                    yield from self.pass_of(b, p)
            return
        self._pass0_left = self.left_s()
        if self.most > 1:
            yield from self._pass(0)
            for b, j in breadth.order([len(jobs) for jobs in self.jobs]):
                late = Slot(b, 0, j, *self.jobs[b][j])
                if (b, j) in self.left_out and self.fits(late):
                    self.left_out -= {(b, j)}
                    yield late
            # Counted once, on the start-ups pass 0 measured.
            self.processes = self._fit(done=1)
            self.dropped = self.most - self.processes  # those that did not fit
            self.left_at_drop_s = self.left_s()
            self._add_partial(1)
        p = 1 if self.most > 1 else 0
        while p < self.processes:
            if p > 0 and p % self.halves == 0 and not self._holds(p):
                self._drop(p)
                continue
            yield from self._pass(p)
            p += 1

    def _pass(self, p: int) -> list[Slot]:
        """Process `p` of every job in the order it runs: benchmark by benchmark, so that
        the processes of a ratio's pair are adjacent in time, but under a time limit pass 0
        breadth first (run/breadth.py: every group gets a job before any gets all)."""
        found = [s for b in range(len(self.jobs)) for s in self.pass_of(b, p)]
        if p == 0 and self.limit_s is not None:
            rank = {job: i for i, job in enumerate(breadth.order(list(map(len, self.jobs))))}
            found.sort(key=lambda s: rank[(s.benchmark, s.job)])
        return found

    def last(self, slot: Slot) -> bool:
        """Whether `slot` is its benchmark's last (its rows can then be finished)."""
        final = self.processes - 1 if any(b == slot.benchmark for b, _ in self.partial) \
            else self.whole - 1
        return slot == [s for s in self._pass(final) if s.benchmark == slot.benchmark][-1]

    def count(self, slot: Slot) -> int:
        """How many processes `slot`'s job runs, as the schedule stands."""
        return self.processes if (slot.benchmark, slot.job) in self.partial else self.whole

    def budget(self, slot: Slot) -> Budget:
        """`slot`'s budget as it starts: its cap, or under a time limit its share of the
        free time left (in proportion to the caps, after every remaining start-up)."""
        if self.limit_s is None:
            return Budget(slot.cap)
        passes = self._expected_passes(slot)
        rest = list(self.remaining(slot, passes))
        free = self.until_deadline_s() - HANDBACK_S - sum(self.setup_s(s) for s in rest)
        # A process may warm up for WARMUP_SHARE of its budget beyond it.
        share = free * slot.cap / sum(s.cap for s in rest) / (1 + WARMUP_SHARE)
        # The suite's budget, spread over the passes that will run rather than those asked.
        # However far it may overrun to reach min_rounds, it leaves the rest of its pass
        # their start-ups and least sampling.
        later = sum(self.least_s(s) for s in self.remaining(slot, slot.process + 1)
                    if s != slot)
        own = self.count(slot) if slot.process > 0 else passes
        # A share never below the least sampling its kind took (the rest of the pass is
        # kept by `stop_at`): one below it ran into OVERRUN and ended `short` on lavapipe.
        least = max(MIN_PROCESS_S, self._least.get(slot.kind, 0.0))
        return Budget(min(slot.cap * self.most / own, max(least, share)),
                      stop_at=self.deadline() - HANDBACK_S - later)

    def deadline(self) -> float:
        """The monotonic time by which every process must have ended (inf: no limit): the
        limit less FINISH_S and what finishing the benchmarks not yet finished is expected
        to take (the most one took so far: their estimates and files, between processes)."""
        if self.limit_s is None:
            return float("inf")
        each = max(self._finishes, default=0.0)
        return self.start + self.limit_s - FINISH_S \
            - each * (len(self.jobs) - len(self._finishes))

    def finished(self, seconds: float) -> None:
        """Record what finishing one benchmark took (for the deadline of those still to)."""
        self._finishes.append(seconds)

    def until_deadline_s(self) -> float:
        return self.deadline() - time.monotonic()

    def fits(self, slot: Slot) -> bool:
        """Whether `slot` can start: its start-up and least sampling fit in the time left,
        before it must hand its rounds back (HANDBACK_S before the deadline)."""
        return self.least_s(slot) + HANDBACK_S <= self.until_deadline_s()

    def done(self, slot: Slot, wall_s: float, sampling_s: float, least_s: float) -> None:
        """Record what `slot` took beyond sampling (its start-up) and the least sampling a
        process of its kind needs, for the processes of its kind still to come."""
        self._setup.setdefault(slot.kind, []).append(max(0.0, wall_s - sampling_s))
        self._least[slot.kind] = max(self._least.get(slot.kind, 0.0), least_s)
        if sampling_s > 0:  # one that sampled: its start-up is whole (run/startups.py)
            self.startups.setdefault(slot.kind, []).append(max(0.0, wall_s - sampling_s))

    def setup_s(self, slot: Slot) -> float:
        """Seconds a process is expected to take beyond sampling: the most that one of its
        kind took so far (an estimate too low takes the time of the processes that come
        last), else its hint, or the median start-up seen of any kind where that is more
        (a loaded machine starts every kind slower than the hints say)."""
        seen = self._setup.get(slot.kind)
        if seen:
            return max(seen)
        others = sorted(v for vs in self._setup.values() for v in vs)
        return max(slot.setup_hint, others[len(others) // 2] if others else 0.0)

    def leave_out(self) -> list[tuple[int, int]]:
        """Under a time limit, the jobs whose first process the time left does not hold as
        expected, chosen breadth first (run/breadth.py), left out of the passes."""
        if self.limit_s is None:
            return []
        first = {(s.benchmark, s.job): self.least_s(s) * self.halves
                 for b in range(len(self.jobs)) for s in self.pass_of(b, 0)}
        room = self.left_s() - FINISH_S - HANDBACK_S - FINISH_PRIOR_S * len(self.jobs)
        self.left_out = frozenset(breadth.left_out([len(j) for j in self.jobs],
                                                   first.__getitem__, room))
        return sorted(self.left_out)

    def minimum_s(self) -> float:
        """The least a run can take: one pass (in each half of an A/A run, which has nothing
        to compare without both), each process its start-up hint and least budget, and the
        finish."""
        return FINISH_S + self.halves * sum(hint + MIN_PROCESS_S * (1 + WARMUP_SHARE)
                                            for jobs in self.jobs for _, _, hint in jobs)

    def left_s(self) -> float:
        """Seconds left of the time limit (infinite without one)."""
        if self.limit_s is None:
            return float("inf")
        return self.limit_s - (time.monotonic() - self.start)

    def most_s(self) -> float:
        """How long the run should take at most: its time limit, or else every cap with its
        warm-up share and the expected start-up of every process."""
        if self.limit_s is not None:
            return self.limit_s
        return sum((cap * (1 + WARMUP_SHARE) + hint) * self.processes
                   for jobs in self.jobs for _, cap, hint in jobs)

    def pass_of(self, b: int, p: int) -> Iterator[Slot]:
        """Process `p` of each job of benchmark `b` (in a partial pass, of those in it)."""
        for j, (kind, cap, hint) in enumerate(self.jobs[b]):
            if (b, j) not in self.left_out and (p < self.whole or (b, j) in self.partial):
                yield Slot(b, p, j, kind, cap, hint)

    def _expected_passes(self, slot: Slot) -> int:
        """How many passes the run is expected to hold, counting `slot`'s: in pass 0 those
        that fit on the start-ups expected so far (at least this one, so that pass 0 is never
        divided as if later passes that will not fit were coming); later, those that `slots`
        kept."""
        return self.processes if slot.process > 0 else self._fit(done=0)

    def _fit(self, done: int) -> int:
        """`fit_passes` on the time left (in pass 0: as it began, so that the count changes
        only as start-ups are measured), each pass's expected start-up and least sampling.
        A count asked for is run whole where the time holds it, even where the suite's
        budget is less than the processes' least sampling (they overrun it to min_rounds):
        the readback suite on the H100 ran one of two processes with 94 s of 150 left."""
        pass0 = [s for b in range(len(self.jobs)) for s in self.pass_of(b, 0)]
        left = self._pass0_left if done == 0 and self._pass0_left is not None \
            else self.left_s()
        return fit_passes(left - FINISH_S, sum(self.setup_s(s) for s in pass0),
                          sum(self._least.get(s.kind, MIN_PROCESS_S) for s in pass0), done,
                          self.most, self.halves)

    def remaining(self, slot: Slot, passes: int) -> Iterator[Slot]:
        """`slot` and those after it up to pass `passes`, in the order of a run under a time
        limit (a job left out and run late: itself, then the later passes)."""
        for p in range(slot.process, passes):
            found = self._pass(p)
            if p == slot.process:
                found = found[found.index(slot):] if slot in found else [slot]
            yield from found

    def least_s(self, slot: Slot) -> float:
        """Seconds `slot` is expected to take at the least: its start-up and least sampling."""
        return self.setup_s(slot) + self._least.get(slot.kind, MIN_PROCESS_S)

    def pass_s(self) -> float:
        """Seconds one more whole pass is expected to take at the least."""
        return sum(self.least_s(s) for b in range(len(self.jobs)) for s in self.pass_of(b, 0))

    def _spare_s(self, p: int) -> float:
        """Seconds of the time left beyond what the passes from `p` on need at the least
        (the last of them handing its rounds back HANDBACK_S before the deadline)."""
        return self.until_deadline_s() - HANDBACK_S - sum(
            self.least_s(s) for q in range(p, self.processes)
            for b in range(len(self.jobs)) for s in self.pass_of(b, q))

    def _holds(self, p: int) -> bool:
        """Whether the time left holds the passes from `p` on."""
        return self._spare_s(p) >= 0

    def _drop(self, p: int) -> None:
        """The last passes (`halves` of them) not run: a partial pass first, which is then
        planned again among its own jobs; else a whole one, and a partial pass in its
        place where the time holds one."""
        among = self.partial
        self.processes -= self.halves
        if among:
            self.partial = frozenset()
        else:
            self.dropped += self.halves
            self.left_at_drop_s = self.left_s()
        self._add_partial(p, among or None)

    def _cheapest(self, costs: dict[tuple[int, int], float], taken: set[tuple[int, int]]
                  ) -> tuple[float, set[tuple[int, int]]] | None:
        """The job not yet taken that adds least to the partial pass, with the partners it
        needs (a ratio's pair needs both processes): its cost and its bundle."""
        best = None
        for b, j in sorted(costs.keys() - taken):
            bundle = {(b, j)} | {(b, k) for k in (self.partners[b][j] if self.partners
                                                  else ())} - taken
            if bundle <= costs.keys():
                cost = sum(costs[k] for k in bundle)
                if best is None or cost < best[0]:
                    best = (cost, bundle)
        return best

    def _add_partial(self, p: int, among: frozenset[tuple[int, int]] | None = None) -> None:
        """Where the time left holds the passes from `p` on but no whole pass more, one
        more process (in each half) of the jobs it does hold (of `among`, where given),
        the cheapest first, each with its partners."""
        spare = self._spare_s(p) - (0.0 if self._finishes else FINISH_PRIOR_S * len(self.jobs))
        if (self.partial or self.processes % self.halves or spare < 0
                or self.processes + self.halves > self.most):
            return
        costs = {(s.benchmark, s.job): self.least_s(s) * self.halves
                 for b in range(len(self.jobs)) for s in self.pass_of(b, 0)
                 if among is None or (s.benchmark, s.job) in among}
        if among is None and sum(costs.values()) <= spare:
            return  # a whole pass fits: it runs as a pass of its own
        taken: set[tuple[int, int]] = set()
        while found := self._cheapest(costs, taken):
            cost, bundle = found
            if PARTIAL_MARGIN * cost > spare:
                break
            taken |= bundle
            spare -= PARTIAL_MARGIN * cost
        if taken:
            self.partial = frozenset(taken)
            self.processes += self.halves
