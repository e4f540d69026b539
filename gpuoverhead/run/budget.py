"""The time budget, in one place: what the suite's `budget_s` becomes on the way to the clock.

The suite gives seconds per case (`budget_s`), for all worker processes together, so that
the process count changes precision, not run time. A group of C cases in P processes thus
has C x budget_s seconds, and each process C x budget_s / P of them; warm-up may take a
share of a process's seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Share of a process's budget that warm-up may take at most.
WARMUP_SHARE = 0.25


@dataclass(frozen=True)
class Budget:
    """Seconds one group may take: per case (the suite's), per group, per worker process."""

    per_case_s: float
    cases: int
    processes: int

    @property
    def group_s(self) -> float:
        """All processes of the group together."""
        return self.per_case_s * self.cases

    @property
    def process_s(self) -> float:
        """What one worker process may spend on measured rounds."""
        return self.group_s / self.processes

    @property
    def warmup_s(self) -> float:
        """What one worker process may spend warming up, at most."""
        return WARMUP_SHARE * self.process_s
