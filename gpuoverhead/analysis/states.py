"""The CPU's two Python speeds, round by round: which state each round met, and the rounds a
benchmark's figures come from.

On the lent H200 VMs a fixed Python loop took 1.2 or 2.2 µs a step, switching in stretches
of 0.1-3 s on every vCPU, and the wrapper's `submit` with it (Dawn 24-28 µs in the fast
state, 33-37 in the slow one; wgpu-native 38-58 and 54-55) while the C loop's barely moved
(issue 54; 2026-11-29). Each process met its own share of the two (the slow one 80-90% of
the rounds of every default process that day), so its median was a mix that a second run
does not repeat. The sampler times that loop at each round's start (run/rounds.py
`python_step_ns`); here a round is in a state where the loop read it at both its ends (its
own start and the next round's), and where a benchmark's loop readings fall in two modes
(analysis/modes.py `two_modes`, pooled over its jobs' processes) its figures come from the
rounds of the state most rounds met, in every job and process alike: the level of one state
is what a next run finds again. A process with fewer than `least` rounds in that state
keeps all its rounds (said). The other state's level is kept beside (run.json). Taking the
fast rounds instead was tried before (commit 75d1723, `docs/methodology.md`) and widened
the spread between processes, since a process slowed throughout kept its slow level: the
state most rounds meet is the one every process has enough of.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuoverhead.analysis.modes import two_modes
from gpuoverhead.analysis.samples import GroupSamples

FAST, SLOW = "fast", "slow"


@dataclass(frozen=True)
class States:
    """A benchmark's two Python speeds (ns a step of the loop), the reading between them, and
    the state its figures come from."""

    fast_ns: float
    slow_ns: float
    slow_share: float
    kept: str

    @property
    def middle_ns(self) -> float:
        return math.sqrt(self.fast_ns * self.slow_ns)

    @property
    def other(self) -> str:
        return FAST if self.kept == SLOW else SLOW

    def regime(self, base: str) -> str:
        """The regime of a figure from the kept state's rounds."""
        return f"{base}, CPU {self.kept} state"

    def said(self) -> str:
        return (f"a Python loop step {self.fast_ns / 1e3:.1f} µs (fast) or "
                f"{self.slow_ns / 1e3:.1f} µs (slow), the slow state in {self.slow_share:.0%} "
                f"of the rounds; figures from the {self.kept} state's rounds")


def find(samples: list[GroupSamples]) -> States | None:
    """The two speeds of these processes' loop readings (their measured rounds'), or None
    where they are one group."""
    steps = np.concatenate([_steps(s)[0] for s in samples] or [np.array([])])
    found = two_modes(steps)
    if found is None:
        return None
    middle = math.sqrt(found.low_ns * found.high_ns)
    share = float(np.mean(steps > middle))
    return States(found.low_ns, found.high_ns, share, SLOW if share >= 0.5 else FAST)


def _steps(samples: GroupSamples) -> tuple[np.ndarray, np.ndarray]:
    """The loop's reading at each measured round's start and at its end (the next round's
    start; its own start for the last round)."""
    steps = np.asarray(samples.python_step_ns, dtype=float)
    start = steps[samples.warmup_rounds: samples.warmup_rounds + samples.rounds]
    end = np.append(start[1:], start[-1:]) if start.size else start
    if steps.size > samples.warmup_rounds + samples.rounds and start.size:
        end[-1] = steps[samples.warmup_rounds + samples.rounds]
    return start, end


def rounds_in(samples: GroupSamples, states: States, state: str) -> np.ndarray:
    """The measured rounds (their indexes) whose loop read `state` at both ends."""
    start, end = _steps(samples)
    slow = state == SLOW
    inside = ((start > states.middle_ns) == slow) & ((end > states.middle_ns) == slow)
    return np.flatnonzero(inside)


def kept_rounds(samples: GroupSamples, states: States, least: int) -> np.ndarray | None:
    """The rounds a process's figures come from: those of the kept state, or None (all)
    where it has fewer than `least` of them."""
    found = rounds_in(samples, states, states.kept)
    return found if found.size >= least else None
