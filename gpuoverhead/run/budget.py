"""The time budget, in one place: what the suite's `budget_s` and `time_limit_s` become on the
way to the clock.

The suite gives seconds per case (`budget_s`), for all worker processes together, so that
the process count changes precision, not run time: a group of C cases in P processes has
C x budget_s seconds, each process C x budget_s / P of them (its *cap*). A suite (or
`--time-limit`) may also give the whole run a time limit: then each worker process, as it
starts, gets its share of the time left, in proportion to its cap and never more than it,
after the start-up that the processes still to come are expected to cost. Time that one
process leaves unused (its estimates were precise early) thus goes to those after it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

#: Share of a process's budget that warm-up may take at most.
WARMUP_SHARE = 0.25
#: The longest one sample may take, as a share of a process's budget: the probe (warm-up
#: round 0, run/rounds.py) measures no larger N of a case once a sample took longer.
SAMPLE_SHARE = 0.05
#: Least budget a process gets when the time limit is spent (it still measures MIN_ROUNDS).
MIN_PROCESS_S = 0.05
#: Seconds beyond its budget (spawn, imports, device, pipelines, warm-up) expected of a
#: process before any has run: high rather than low (PyTorch's take 5 s on a GPU machine),
#: since an estimate too low takes the time of the processes that come last.
DEFAULT_SETUP_S = 3.0
#: Seconds kept for what follows the last process: estimates, files, the summary.
FINISH_S = 2.0


@dataclass(frozen=True)
class Budget:
    """Seconds one worker process may spend sampling its group."""

    process_s: float
    #: The share of `process_s` that one sample may take (larger for a browser's samples).
    sample_share: float = SAMPLE_SHARE

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


@dataclass
class Schedule:
    """The run's worker processes in the order they run, and the time limit they share.

    `caps[i]` is slot i's budget from the suite and `kinds[i]` what it runs (processes of
    one kind, one job of one group, take about as long to start and warm up)."""

    caps: list[float]
    kinds: list[str]
    limit_s: float | None = None
    start: float = field(default_factory=time.monotonic)
    _setup: dict[str, list[float]] = field(default_factory=dict)

    def budget(self, slot: int) -> Budget:
        """Slot `slot`'s budget, were it to start now."""
        cap = self.caps[slot]
        if self.limit_s is None:
            return Budget(cap)
        rest = range(slot, len(self.caps))
        free = self.left_s() - FINISH_S - sum(self.setup_s(self.kinds[s]) for s in rest)
        share = free * cap / sum(self.caps[s] for s in rest)
        return Budget(min(cap, max(MIN_PROCESS_S, share)))

    def done(self, slot: int, wall_s: float, budget: Budget) -> None:
        """Record what slot `slot` took beyond its budget: its start-up, as the estimate
        for the processes of its kind still to come."""
        self._setup.setdefault(self.kinds[slot], []).append(max(0.0, wall_s - budget.process_s))

    def setup_s(self, kind: str) -> float:
        """Seconds a process is expected to take beyond its budget: the most that one of
        its kind took so far, else any, else DEFAULT_SETUP_S. The most, not the mean: an
        estimate too low takes the time of the processes that come last."""
        seen = self._setup.get(kind) or [v for vs in self._setup.values() for v in vs]
        return max(seen) if seen else DEFAULT_SETUP_S

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
        return sum(c * (1 + WARMUP_SHARE) + self.setup_s(k)
                   for c, k in zip(self.caps, self.kinds, strict=True))
