"""How often the intervals over processes cover what a run reports where processes meet the
machine's regimes (issue 54), in seeded simulations built on analysis/coverage.py's:

- **CPU states** (analysis/states.py): each round ran in the CPU's fast or slow state, a
  chain per process. The figures come from the rounds of the state most rounds met over the
  run (a round counts where the state held at both its ends: its own and the next round's),
  a process with under LEAST such rounds left out; the estimand is that state's level, the
  value's truth times the state's factor (the state's share decides which, as a run's does:
  near half, runs differ in the state they keep, and that is the first thing the table
  shows). Beside it, the same runs taking every round (the mix, what a run did before).
- **A process's life** (analysis/drift.py `life`): a figure from the rounds after its
  headline figures held, a process still moving in its last third left out where two others
  are kept. This goes through the project's own `life` (not vectorized), so fewer runs;
  the estimand is the median, over many processes, of each one's figure under the same rule
  (`life_truth`).

`python benchmarks/investigations/coverage.py` prints both tables in docs/methodology.md.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

from gpuoverhead.analysis import coverage
from gpuoverhead.analysis.coverage import THETA, Cell, Scenario
from gpuoverhead.analysis.drift import life
from gpuoverhead.analysis.series import Key, Series

#: Rounds of the kept state a process needs: the default suite's min_rounds is 8 of the
#: 60-120 rounds of a default process, about a tenth; here 3 of ROUNDS (20).
LEAST = 3
#: The H200 VM's states (2026-11-29): a Python loop 1.8x slower in the slow one, 80-90% of
#: a default process's rounds in it, stretches of 0.1-3 s (1-30 rounds of ~0.1 s); the
#: wrapper's `submit` 1.4x (38 and 54 µs), its processes' slow-state levels within 3%.
STATE_SCENARIOS = (
    Scenario("1.4x slower in 85% of rounds", spread=0.03, states=(1.4, 0.85, 4.0)),
    Scenario("1.4x slower, 60-95% of each process's rounds", spread=0.03,
             states=(1.4, 0.775, 4.0), shares=(0.6, 0.95)),
    Scenario("1.4x slower in 85%, 15% of processes x2", spread=0.03, slow=0.15,
             states=(1.4, 0.85, 4.0)),
    Scenario("1.5x slower in 40% of rounds", spread=0.05, states=(1.5, 0.4, 2.0)),
    Scenario("1.5x slower in 50% of rounds", spread=0.05, states=(1.5, 0.5, 4.0)),
)
#: Rounds of a process in the life scenarios: a default process's 60-120 (the settling
#: rule bins a process's timeline, and 20 rounds make bins of 3).
LIFE_ROUNDS = 60
#: Rounds a figure from a process's later part needs (the default suite's min_rounds).
LIFE_LEAST = 8
#: A process's life: a start 30% slower for its first quarter (a level that settles), one
#: process in five 40% slower from 70% of its life on (the H200 VM's default wgpu-native
#: process 1: 15.5 then 21.5 µs), a steady drift of +15-40% over each process.
LIFE_SCENARIOS = (
    Scenario("start 30% slower for a quarter"),
    Scenario("one in five +40% from 70% of its life"),
    Scenario("drift +15-40%", drift=(0.15, 0.40)),
)


def kept_state(slowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per run, whether the slow state is kept (most rounds met it), and per process and
    round whether the round counts (it met the kept state at both its ends)."""
    slow = slowed.mean(axis=(1, 2)) >= 0.5
    ends = np.concatenate([slowed[..., 1:], slowed[..., -1:]], axis=2)
    state = np.where(slow[:, None, None], slowed & ends, ~slowed & ~ends)
    return slow, state


def state_cell(s: Scenario, processes: int, runs: int, seed: int) -> list[Cell]:
    """Coverage of the kept state's level by the figures of its rounds, and of the mix's
    truth (coverage.truth) by every round's, in the same runs."""
    rng = np.random.default_rng([seed, STATE_SCENARIOS.index(s), processes, 2])
    y, _, slowed = coverage.draw_states(s, runs, processes, rng)
    slow, counts = kept_state(slowed)
    medians = np.nanmedian(np.where(counts, y, np.nan), axis=2)
    medians[counts.sum(axis=2) < LEAST] = np.nan
    c, median_f = coverage.truth(replace(s, states=None, shares=None))
    target = THETA * c * median_f * np.where(slow, s.states[0], 1.0)
    out = []
    for kind, values, truth in (("one state", medians, target),
                                ("every round", np.median(y, axis=2),
                                 THETA * math.prod(coverage.truth(s)))):
        found = coverage.estimate("value", values, np.ones_like(values))
        covered = (found.low <= truth) & (truth <= found.high)
        half = float(np.nanmedian((found.high - found.low) / 2 / truth))
        out.append(Cell(s.name, kind, processes, float(covered.mean()), half, found.level,
                        runs))
    return out


def _late_step(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """One process in five 40% slower from 70% of its rounds on."""
    hit = rng.random(shape[:-1] + (1,)) < 0.2
    return np.where(hit & (np.arange(LIFE_ROUNDS) >= 0.7 * LIFE_ROUNDS), 1.4, 1.0)


def _lived(s: Scenario, reps: int, processes: int, rng: np.random.Generator) -> np.ndarray:
    """Round values of a life scenario (reps x processes x LIFE_ROUNDS)."""
    y = coverage.draw_states(s, reps, processes, rng, LIFE_ROUNDS)[0]
    if s.name.startswith("start"):
        y = y * np.where(np.arange(LIFE_ROUNDS) < LIFE_ROUNDS // 4, 1.3, 1.0)
    elif s.name.startswith("one in five"):
        y = y * _late_step(rng, y.shape)
    return y


def _figures(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per process (rows of y: its rounds, 50 ms apart), its figure under the life rule and
    whether it still moved in its last third."""
    key = Key(coverage._CASE, "latency_ns", "ns", "")
    times = np.arange(LIFE_ROUNDS) * 5e7
    figures, moving = np.empty(len(y)), np.zeros(len(y), dtype=bool)
    for i, rounds in enumerate(y):
        found = life({key: Series(rounds, times, LIFE_ROUNDS)})
        later = rounds[times >= found.held_from_ns] if found is not None else rounds
        moving[i] = found is not None and found.trends
        figures[i] = np.median(later if later.size >= LIFE_LEAST else rounds)
    return figures, moving


@lru_cache
def life_truth(s: Scenario) -> float:
    """The median, over many processes, of a figure under the life rule (those still moving
    left out, as a run leaves them out)."""
    y = _lived(s, 1, 2_000, np.random.default_rng(list(b"life")))[0]
    figures, moving = _figures(y)
    return float(np.median(figures[~moving]))


def life_cell(s: Scenario, processes: int, runs: int, seed: int) -> Cell:
    """Coverage of `life_truth` by runs whose processes go through the life rule: those
    still moving left out where two others are kept (run/finish.py)."""
    rng = np.random.default_rng([seed, LIFE_SCENARIOS.index(s), processes, 3])
    y = _lived(s, runs, processes, rng)
    figures, moving = _figures(y.reshape(-1, LIFE_ROUNDS))
    figures, moving = figures.reshape(runs, processes), moving.reshape(runs, processes)
    enough = (processes - moving.sum(axis=1)) >= 2
    figures = np.where(moving & enough[:, None], np.nan, figures)
    found = coverage.estimate("value", figures, np.ones_like(figures))
    truth = THETA * life_truth(s)
    covered = (found.low <= truth) & (truth <= found.high)
    return Cell(s.name, "life rule", processes, float(covered.mean()),
                float(np.nanmedian((found.high - found.low) / 2 / truth)), found.level, runs)


def table(runs: int, seed: int = 0, counts: tuple[int, ...] = coverage.COUNTS,
          life_runs: int | None = None) -> list[Cell]:
    """The states' cells, then the life rule's (with `life_runs` runs, default a tenth)."""
    states = [c for s in STATE_SCENARIOS for p in counts for c in state_cell(s, p, runs, seed)]
    lives = [life_cell(s, p, life_runs or max(1, runs // 10), seed)
             for s in LIFE_SCENARIOS for p in counts]
    return states + lives

