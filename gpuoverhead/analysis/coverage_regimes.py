"""How often the intervals over processes cover what a run reports where processes meet the
machine's regimes (issue 54), in seeded simulations built on analysis/coverage.py's:

- **CPU states** (analysis/states.py, run/cpu_split.py): each round ran in the CPU's fast
  or slow state, a chain per process. A run's figures come from the rounds of the slow
  state unless few rounds met it (`states.SLOW_KEPT_FROM`; a round counts where the state
  held at both its ends: its own and the next round's) where the state moves them
  (`states.moves`, vectorized here and checked against it) and drift.LEAST_T processes
  have `least` such rounds, the others left out, else from every round (`rule`). The
  estimand is what the run then says it reports: that state's level (the value's truth
  times the state's factor; the state's share decides which, as a run's does), or the
  mix's (the median over many processes of their every-round medians, `mix_truth`).
  Beside it the same runs taking every round (`every round`), and the rule's share of runs
  split.
- **A process's life** (analysis/drift.py `life`): a figure from the rounds after its
  headline figures held, a process still moving in its last third left out where as many
  others remain as the job's interval needs (`drift.enough`), its estimand then the median
  over many processes of each one's figure under the rule with those still moving left out
  (else with them: `life_truth`); beside it the same runs keeping every process. This goes
  through the project's own `life` (not vectorized), so fewer runs.

`python benchmarks/investigations/coverage.py` prints both tables in docs/methodology.md.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from scipy.stats import norm, rankdata

from gpuoverhead.analysis import coverage, states
from gpuoverhead.analysis.coverage import THETA, Cell, Scenario
from gpuoverhead.analysis.drift import LEAST_T, enough, life
from gpuoverhead.analysis.row_medians import median_rows, nanmedian_rows
from gpuoverhead.analysis.series import Key, Series

#: Rounds of the kept state a process needs: the default suite's min_rounds is 8 of the
#: 60-120 rounds of a default process, about a tenth; here 3 of ROUNDS (20).
LEAST = 3


@dataclass(frozen=True)
class StateCase:
    """A scenario of the CPU's states, with its processes' rounds and the rounds of the kept
    state each needs (`least`: the suite's min_rounds)."""

    scenario: Scenario
    rounds: int = coverage.ROUNDS
    least: int = LEAST

    @property
    def name(self) -> str:
        return self.scenario.name


#: The H200 VM's states (2026-11-29): a Python loop 1.8x slower in the slow one, 80-90% of
#: a default process's rounds in it, stretches of 0.1-3 s (1-30 rounds of ~0.1 s); the
#: wrapper's `submit` 1.4x (38 and 54 µs), its processes' slow-state levels within 3%; a
#: figure the state does not move (the C loop's); a fusion job's processes of 5 rounds,
#: each needing all 5 in the kept state (its min_rounds).
STATE_SCENARIOS = (
    StateCase(Scenario("1.4x slower in 85% of rounds", spread=0.03, states=(1.4, 0.85, 4.0))),
    StateCase(Scenario("1.4x slower, 60-95% of each process's rounds", spread=0.03,
                       states=(1.4, 0.775, 4.0), shares=(0.6, 0.95))),
    StateCase(Scenario("1.4x slower in 85%, 15% of processes x2", spread=0.03, slow=0.15,
                       states=(1.4, 0.85, 4.0))),
    StateCase(Scenario("1.4x slower in 85%, heavy tails, 5% outlier rounds", spread=0.03,
                       heavy=True, outliers=0.05, states=(1.4, 0.85, 4.0))),
    StateCase(Scenario("1.5x slower in 40% of rounds", spread=0.05, states=(1.5, 0.4, 2.0))),
    StateCase(Scenario("1.5x slower in 50% of rounds", spread=0.05, states=(1.5, 0.5, 4.0))),
    StateCase(Scenario("a state that moves nothing (85%)", spread=0.03,
                       states=(1.0, 0.85, 4.0))),
    StateCase(Scenario("5 rounds a process, 1.4x slower in 85%", spread=0.03,
                       states=(1.4, 0.85, 4.0)), rounds=5, least=5),
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
    """Per run, whether the slow state is kept (states.SLOW_KEPT_FROM of the rounds met it),
    and per process and round whether the round counts (it met the kept state at both its
    ends)."""
    slow = slowed.mean(axis=(1, 2)) >= states.SLOW_KEPT_FROM
    ends = np.concatenate([slowed[..., 1:], slowed[..., -1:]], axis=2)
    state = np.where(slow[:, None, None], slowed & ends, ~slowed & ~ends)
    return slow, state


def moves(y: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """`states.moves` of each run (y: runs x processes x rounds; kept: the rounds of the kept
    state), vectorized: the rounds a split would drop against those it keeps, each relative
    to its process's median, pooled; a change of MOVES or more in their medians and a
    rank-sum test (normal approximation with continuity correction, as scipy's) under
    MOVES_P. Every value here is positive and no process lacks a round of either kind that
    matters (one that does adds nothing to either side, as there)."""
    both = kept.any(axis=2) & (~kept).any(axis=2)
    rel = y / median_rows(y)[..., None]
    inside, out = kept & both[..., None], ~kept & both[..., None]
    flat = rel.reshape(len(y), -1)
    a, b = inside.reshape(len(y), -1), out.reshape(len(y), -1)
    ranks = rankdata(np.where(a | b, flat, np.inf), axis=1)
    n1, n2 = b.sum(axis=1), a.sum(axis=1)
    u = np.where(b, ranks, 0.0).sum(axis=1) - n1 * (n1 + 1) / 2
    sd = np.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (np.abs(u - n1 * n2 / 2) - 0.5) / sd
    with warnings.catch_warnings():  # a run with no rounds of a kind: NaN, no change
        warnings.simplefilter("ignore", RuntimeWarning)
        shift = np.abs(nanmedian_rows(np.where(b, flat, np.nan))
                       - nanmedian_rows(np.where(a, flat, np.nan)))
    return (n1 >= states.MOVES_VALUES) & (shift >= states.MOVES) & \
        (2 * norm.sf(z) < states.MOVES_P)


@lru_cache
def mix_truth(c: StateCase) -> float:
    """The median of many simulated processes' medians over every round (of c.rounds)."""
    y = coverage.draw_states(c.scenario, 1, 200_000, np.random.default_rng(list(b"truth")),
                             c.rounds, denominators=False)[0]
    return float(np.median(median_rows(y[0])))


def state_cell(c: StateCase, processes: int, runs: int, seed: int, checked: int = 20
               ) -> list[Cell]:
    """Coverage of what the rule's runs say they report (the kept state's level where they
    split, else the mix's), and of the mix's by every round's, in the same runs; the rule's
    cell has the share of runs split. The first `checked` runs' moves also through
    `states.moves`, which must agree."""
    s = c.scenario
    rng = np.random.default_rng([seed, STATE_SCENARIOS.index(c), processes, 2])
    y, _, slowed = coverage.draw_states(s, runs, processes, rng, c.rounds, denominators=False)
    slow, counts = kept_state(slowed)
    moved = moves(y, counts)
    for r in range(min(checked, runs)):
        if moved[r] != states.moves([(y[r, p][counts[r, p]], y[r, p][~counts[r, p]])
                                     for p in range(processes)]):
            raise RuntimeError(f"run {r}: the simulation's moves differs from states.moves")
    full = counts.sum(axis=2) >= c.least
    split = moved & (full.sum(axis=1) >= LEAST_T)
    every = median_rows(y)
    with warnings.catch_warnings():  # a process left out: NaN, as a run leaves it out
        warnings.simplefilter("ignore", RuntimeWarning)
        medians = np.where(split[:, None], nanmedian_rows(
            np.where(counts & full[..., None], y, np.nan)), every)
    level, mix = math.prod(coverage.truth(replace(s, states=None, shares=None))), mix_truth(c)
    target = THETA * np.where(split, level * np.where(slow, s.states[0], 1.0), mix)
    out = []
    for kind, values, truth, share in (("rule", medians, target, float(split.mean())),
                                       ("every round", every, np.full(runs, THETA * mix),
                                        None)):
        found = coverage.estimate("value", values, np.ones_like(values))
        covered = (found.low <= truth) & (truth <= found.high)
        half = float(np.nanmedian((found.high - found.low) / 2 / truth))
        out.append(Cell(s.name, kind, processes, float(covered.mean()), half, found.level,
                        runs, share))
    return out


def _late_step(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """One process in five 40% slower from 70% of its rounds on."""
    hit = rng.random(shape[:-1] + (1,)) < 0.2
    return np.where(hit & (np.arange(LIFE_ROUNDS) >= 0.7 * LIFE_ROUNDS), 1.4, 1.0)


def _lived(s: Scenario, reps: int, processes: int, rng: np.random.Generator) -> np.ndarray:
    """Round values of a life scenario (reps x processes x LIFE_ROUNDS)."""
    y = coverage.draw_states(s, reps, processes, rng, LIFE_ROUNDS, denominators=False)[0]
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


def life_truth(s: Scenario, moving_out: bool) -> float:
    """The median, over many processes, of a figure under the life rule (those still moving
    left out, as a run leaves them out, or kept)."""
    figures, moving = _truth_figures(s)
    return float(np.median(figures[~moving] if moving_out else figures))


@lru_cache
def _truth_figures(s: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """`_figures` of the many processes `life_truth` is the median of (once for both of its
    medians: each process goes through the life rule, 1-2 ms)."""
    return _figures(_lived(s, 1, 2_000, np.random.default_rng(list(b"life")))[0])


def life_cell(s: Scenario, processes: int, runs: int, seed: int) -> list[Cell]:
    """Coverage of `life_truth` by runs whose processes go through the life rule (those
    still moving left out where as many others remain as the interval needs: run/finish.py)
    and by the same runs keeping every process."""
    rng = np.random.default_rng([seed, LIFE_SCENARIOS.index(s), processes, 3])
    y = _lived(s, runs, processes, rng)
    figures, moving = _figures(y.reshape(-1, LIFE_ROUNDS))
    figures, moving = figures.reshape(runs, processes), moving.reshape(runs, processes)
    out = (processes - moving.sum(axis=1)) >= enough(processes)
    ruled = np.where(moving & out[:, None], np.nan, figures)
    kept = THETA * life_truth(s, False)
    ruled_target = np.where(out & moving.any(axis=1), THETA * life_truth(s, True), kept)
    cells = []
    for kind, values, target in (("life rule", ruled, ruled_target),
                                 ("every process", figures, np.full(runs, kept))):
        found = coverage.estimate("value", values, np.ones_like(values))
        covered = (found.low <= target) & (target <= found.high)
        cells.append(Cell(s.name, kind, processes, float(covered.mean()), float(
            np.nanmedian((found.high - found.low) / 2 / target)), found.level, runs))
    return cells


def table(runs: int, seed: int = 0, counts: tuple[int, ...] = coverage.COUNTS,
          life_runs: int | None = None) -> list[Cell]:
    """The states' cells, then the life rule's (with `life_runs` runs, default a tenth)."""
    found = [c for s in STATE_SCENARIOS for p in counts for c in state_cell(s, p, runs, seed)]
    return found + [c for s in LIFE_SCENARIOS for p in counts
                    for c in life_cell(s, p, life_runs or max(1, runs // 10), seed)]

