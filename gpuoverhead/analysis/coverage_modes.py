"""How often the interval over processes covers a figure whose samples fall in two modes
(analysis/modes.py: each process's trimmed mean, combined as analysis/combine.py does), in
seeded simulations of the H200's breakdown latency (issue 54): per process SAMPLES samples
at 94 or 290 µs, each process with its own share of the slow mode, 5% noise (or heavy
tails), offsets between processes, and the misbehaviour a real machine adds (spikes, modes
in stretches, processes twice as slow).

The estimand is what a run reports: the median, over fresh worker processes, of one
process's trimmed mean of its SAMPLES samples (its truth the median over TRUTH_PROCESSES
simulated processes). Thousands of runs go through `stats.between_processes`, vectorized;
the first few of each cell also through `combine.combine` itself, which must agree. Beside
coverage each cell gives the share of runs whose samples combine finds in two modes within
processes (`modes.within_processes`): where it does not, a run keeps the median.
`python benchmarks/investigations/coverage.py --modes` prints the table in
docs/methodology.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from gpuoverhead.analysis.combine import combine
from gpuoverhead.analysis.coverage import Cell
from gpuoverhead.analysis.modes import MEAN, TRIM, within_processes
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.analysis.stats import between_processes
from gpuoverhead.cases import Case

#: Samples a process (the H200's breakdown: 79-92), the modes' levels (ns), round noise and
#: the offsets of processes (sd on logs).
SAMPLES, FAST, SLOW, NOISE, SPREAD = 90, 94e3, 290e3, 0.05, 0.05
TRUTH_PROCESSES = 100_000
_CASE = Case("coverage", "simulated", 1, 64, "breakdown", "submit", "wait", (1,))


@dataclass(frozen=True)
class ModeScenario:
    """Each process's share of the slow mode drawn uniformly from `shares`; noise
    exp(NOISE z), or exp(2 NOISE t3) where `heavy`; a share of samples `spikes` x10; the
    modes in stretches of `stretch` samples on average (0: each sample drawn alone); a
    share `slow` of processes twice as slow throughout."""

    name: str
    shares: tuple[float, float] = (0.3, 0.7)
    heavy: bool = False
    spikes: float = 0.0
    stretch: float = 0.0
    slow: float = 0.0


SCENARIOS = (
    ModeScenario("shares 50-80%, in stretches (the H200's: 49-78%)", shares=(0.5, 0.8),
                 stretch=15.0),
    ModeScenario("shares 30-70%"),
    ModeScenario("shares 20-80% (flat: the t interval's worst)", shares=(0.2, 0.8)),
    ModeScenario("heavy tails (t3), 1% spikes x10", heavy=True, spikes=0.01),
    ModeScenario("modes in stretches of 15 samples", stretch=15.0),
    ModeScenario("15% of processes x2", slow=0.15),
    ModeScenario("all of these", shares=(0.2, 0.8), heavy=True, spikes=0.01, stretch=15.0,
                 slow=0.15),
)


def draw(s: ModeScenario, reps: int, processes: int, rng: np.random.Generator) -> np.ndarray:
    """Samples (reps x processes x SAMPLES)."""
    shape = (reps, processes, SAMPLES)
    share = rng.uniform(*s.shares, (reps, processes, 1))
    if s.stretch:  # a two-state chain whose stretches average `stretch` over both modes
        leave_slow, leave_fast = 1 / (2 * s.stretch * share), 1 / (2 * s.stretch * (1 - share))
        u = rng.random(shape)
        slow = np.empty(shape, dtype=bool)
        slow[..., 0] = u[..., 0] < share[..., 0]
        for t in range(1, SAMPLES):
            slow[..., t] = np.where(slow[..., t - 1], u[..., t] >= leave_slow[..., 0],
                                    u[..., t] < leave_fast[..., 0])
    else:
        slow = rng.random(shape) < share
    noise = 2 * NOISE * rng.standard_t(3, shape) if s.heavy else rng.normal(0, NOISE, shape)
    x = np.where(slow, SLOW, FAST) * np.exp(noise)
    if s.spikes:
        x = np.where(rng.random(shape) < s.spikes, 10 * x, x)
    offsets = np.exp(rng.normal(0, SPREAD, (reps, processes, 1)))
    twice = np.where(rng.random((reps, processes, 1)) < s.slow, 2.0, 1.0)
    return x * offsets * twice


def trimmed_means(x: np.ndarray) -> np.ndarray:
    """Each process's trimmed mean (last axis), as modes.trimmed_mean makes it."""
    ordered = np.sort(x, axis=-1)
    cut = int(TRIM * x.shape[-1])
    return ordered[..., cut:x.shape[-1] - cut].mean(axis=-1)


@cache
def truth(s: ModeScenario, seed: int = 0) -> float:
    """The median over TRUTH_PROCESSES fresh processes of their trimmed means."""
    rng = np.random.default_rng([seed, SCENARIOS.index(s), 1])
    return float(np.median(np.concatenate([trimmed_means(draw(s, 1, 10_000, rng)[0])
                                           for _ in range(TRUTH_PROCESSES // 10_000)])))


def cell(s: ModeScenario, processes: int, runs: int, seed: int = 0, checked: int = 5
         ) -> Cell:
    """Coverage of the truth by the interval over processes of their trimmed means, its
    median half-width relative to the truth, and the share of runs found in two modes
    (`split`); the first `checked` runs also through combine, which must agree where it
    made the mean."""
    rng = np.random.default_rng([seed, SCENARIOS.index(s), processes])
    x = draw(s, runs, processes, rng)
    found = between_processes(trimmed_means(x), True)
    split = [_through_combine(x[r], found.value[r], found.low[r], found.high[r])
             for r in range(min(checked, runs))]
    split += [_found(x[r]) for r in range(len(split), min(runs, 200))]
    target = truth(s, seed)
    covered = (found.low <= target) & (target <= found.high)
    half = float(np.median((found.high - found.low) / 2 / target))
    return Cell(s.name, "trimmed mean", processes, float(covered.mean()), half, found.level,
                runs, float(np.mean(split)))


def _found(samples: np.ndarray) -> bool:
    """Whether one run's samples (processes x SAMPLES) are in two modes within processes."""
    process = np.repeat(np.arange(samples.shape[0]), samples.shape[1])
    return within_processes(pd.Series(samples.ravel()), pd.Series(process)) is not None


def _through_combine(samples: np.ndarray, value: float, low: float, high: float) -> bool:
    """One run through combine: where it made the trimmed mean, the vectorized estimate
    must be its; returns whether it did."""
    key = Key(_CASE, "latency_ns", "ns", "median")
    per_process = [{key: Series(p, np.arange(p.size, dtype=float), p.size)} for p in samples]
    (row,) = [r for r in combine(per_process, np.random.default_rng(0)) if r.process is None]
    if row.key.estimator != MEAN:
        return False
    if not np.allclose([row.estimate.value, row.estimate.ci_low, row.estimate.ci_high],
                       [value, max(low, 0.0), high]):
        raise RuntimeError("the simulation's interval differs from combine's")
    return True


def table(runs: int, seed: int = 0, counts: tuple[int, ...] = (3, 5, 6, 10, 20)
          ) -> list[Cell]:
    """Every scenario's cells."""
    return [cell(s, p, runs, seed) for s in SCENARIOS for p in counts]
