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
rounds of the slow state unless few rounds met it (SLOW_KEPT_FROM), where the state moves
them (`moves`), in every process of a job alike: the level of one state is what a next run
finds again, and a choice by the majority flipped between two runs. The other state's
level is kept beside (run.json). Taking the fast rounds instead was tried before (commit
75d1723, `docs/methodology.md`) and widened the spread between processes, since a process
slowed throughout kept its slow level: the state most rounds meet on these VMs is the one
processes have enough of. A process with too few is left out where drift.LEAST_T others
have them; where fewer do (a fusion process's 5 rounds), or the state moves no figure,
every round counts (run/cpu_split.py): leaving every such process out left jobs of the
H200 session of 2026-11-29 with one process, and no interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuoverhead.analysis.modes import two_modes
from gpuoverhead.analysis.samples import GroupSamples

FAST, SLOW = "fast", "slow"
#: The slow state is kept wherever at least this share of the rounds met it, else the fast
#: one: a choice fixed in advance, so that two runs give one state's level. The state most
#: rounds met flipped between two plain runs back to back on the H200 (2026-11-29: slow in
#: 71% and 48% of the rounds), and 13 of their 35 headline rows compared `faster`; the slow
#: state met 44-100% of the rounds of every two-state run that day.
SLOW_KEPT_FROM = 0.2


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
        return in_state(base, self.kept)


#: A regime's suffix where a job's figures took both states' rounds (run/cpu_split.py).
BOTH = ", both CPU states"
#: What `split_regime` names a regime with that suffix.
EITHER = "both"


def in_state(base: str, state: str) -> str:
    """The regime of a figure from one state's rounds."""
    return f"{base}, CPU {state} state"


def split_regime(regime: str) -> tuple[str, str | None]:
    """A regime's submission part and the CPU state it names: FAST, SLOW, EITHER (both
    states' rounds) or None (none named: the state moved none of its figures or the machine
    showed one)."""
    for state, suffix in ((FAST, in_state("", FAST)), (SLOW, in_state("", SLOW)),
                          (EITHER, BOTH)):
        if regime.endswith(suffix):
            return regime[: -len(suffix)], state
    return regime, None


def find(samples: list[GroupSamples]) -> States | None:
    """The two speeds of these processes' loop readings (their measured rounds'), or None
    where they are one group."""
    steps = np.concatenate([_steps(s)[0] for s in samples] or [np.array([])])
    found = two_modes(steps)
    if found is None:
        return None
    middle = math.sqrt(found.low_ns * found.high_ns)
    share = float(np.mean(steps > middle))
    return States(found.low_ns, found.high_ns, share, SLOW if share >= SLOW_KEPT_FROM else FAST)


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


#: Least change of a figure between the two states that counts as the state moving it.
MOVES = 0.02
#: The rank test's two-sided p under which that change is taken for more than chance.
MOVES_P = 0.01
#: Fewest values in the other rounds, over the processes, that can show a change.
MOVES_VALUES = 3


def moves(values: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether a figure moves with the CPU state: per process its values in the rounds of
    the kept state and in its other rounds (the other state's, and those that changed state
    between their ends: what keeping one state drops; a process with none of either says
    nothing), each relative to the process's median over both (so that process levels
    cancel), pooled over processes; the other rounds' differ from the kept state's by MOVES
    or more in their medians, beyond chance (a rank-sum test at MOVES_P). On the H200 VM's
    default run (2026-11-29) Dawn's `submit` through the wrapper was 0.65-0.79x in the fast
    state, its C loop's 0.92-1.03x."""
    kept, other = [], []
    for k, o in values:
        if k.size and o.size:
            centre = float(np.median(np.concatenate([k, o])))
            if centre > 0:
                kept.append(k / centre)
                other.append(o / centre)
    if sum(o.size for o in other) < MOVES_VALUES:
        return False
    k, o = np.concatenate(kept), np.concatenate(other)
    if abs(float(np.median(o) - np.median(k))) < MOVES:
        return False
    return bool(rank_sum_p(o, k) < MOVES_P)


def rank_sum_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p of the rank-sum (Mann-Whitney U) test of `a` against `b`, by the normal
    approximation with the tie and continuity corrections: scipy.stats.mannwhitneyu's
    method="asymptotic", without importing scipy.stats (half a CPU-second in the parent of
    every run, which finishes through this module) for it. U counts the pairs in which `a`'s
    value is the larger, a tie as half."""
    n1, n2 = a.size, b.size
    ordered = np.sort(b)
    below, up_to = (np.searchsorted(ordered, a, side=s) for s in ("left", "right"))
    u = float(below.sum() + (up_to - below).sum() / 2)
    n = n1 + n2
    _, ties = np.unique(np.concatenate([a, b]), return_counts=True)
    spread = n1 * n2 / 12 * ((n + 1) - float((ties**3 - ties).sum()) / (n * (n - 1)))
    if not spread > 0:  # every value tied: no difference, as scipy's
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(spread)
    return min(1.0, math.erfc(z / math.sqrt(2.0)))  # twice the normal's upper tail at z
