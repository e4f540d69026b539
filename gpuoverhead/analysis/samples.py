"""The raw samples that measuring hands to analysis, and views of them.

A worker records one tuple per timed call of one group's operations; the calibration says
what the clock costs and what one GPU tick is. Everything downstream reads these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import reduce

import numpy as np

from gpuoverhead.cases import CADENCE, FUSION, TIMESTAMPS, Case

#: GPU timers coarser than this are flagged as quantized.
QUANTIZED_NS = 1000.0


@dataclass
class GroupSamples:
    """Raw samples of one group: one record per timed call, plus how sampling ended."""

    cases: tuple[Case, ...]
    #: (case index, n, round, is_warmup, start_ns, wall_ns) per sample.
    records: list[tuple[int, int, int, bool, int, int]] = field(default_factory=list)
    #: Parts of a sample that its operation returned (per-call times, GPU ticks, the clock
    #: read after the last submit), by record.
    parts: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: Per case index, the N values measured where the probe cut the case's sweep short
    #: (run/rounds.py: a sample at a larger N would have taken too much of the budget).
    cut: dict[int, tuple[int, ...]] = field(default_factory=dict)
    warmup_rounds: int = 0
    warmup_settled: bool = False
    rounds: int = 0
    stop: str = ""
    #: ns of one step of a fixed Python loop at each round's start, warm-up rounds first
    #: (run/rounds.py `python_step_ns`): which of the CPU's two speeds a round met.
    python_step_ns: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Calibration:
    """Facts of the run that estimates need: the clock's own cost, the GPU tick and the
    adapter's memory bandwidth (GB/s, where known: records.AdapterInfo.bandwidth_gb_s),
    the read bandwidth and the GPU's own time per dispatch measured in the worker (GB/s,
    ns: workloads/read_floor.py), and the dispatches a unit of each GPU-time case issues
    (by case id; where the worker measured those)."""

    timer_ns: float
    tick_ns: float | None
    bandwidth_gb_s: float | None = None
    read_gb_s: float | None = None
    gpu_per_dispatch_ns: float | None = None
    dispatches: dict[str, int] = field(default_factory=dict)



@dataclass(frozen=True)
class GpuTimer:
    """What the timestamps of a group say about the timer itself."""

    resolution_ns: float

    @property
    def quantized(self) -> bool:
        return self.resolution_ns >= QUANTIZED_NS


def records(samples: GroupSamples) -> np.ndarray:
    return np.array(samples.records, dtype=np.int64).reshape(-1, 6)


def measured(rec: np.ndarray, index: int) -> np.ndarray:
    """Record positions of a case's measured samples, by round then N."""
    pos = np.flatnonzero((rec[:, 0] == index) & (rec[:, 3] == 0))
    return pos[np.lexsort((rec[pos, 1], rec[pos, 2]))]


def n_values(samples: GroupSamples, index: int) -> tuple[int, ...]:
    """The N values a case was measured at: its sweep, or the part the probe kept."""
    return samples.cut.get(index, samples.cases[index].n_values)


def by_round(values: np.ndarray, n: tuple[int, ...]) -> np.ndarray:
    """Values of a sequential case (ordered by round, then N) as rounds x N, complete rounds."""
    k = len(n)
    return values[: len(values) // k * k].reshape(-1, k).astype(float)


def issues(case: Case) -> bool:
    """Whether a case's samples carry their issue time: the clock read after the last
    submit (or launch), before the wait (a cadence's burst too: until commit 5388a8b the samples
    table left its issue time out, so a run folder of before cannot be re-finished)."""
    return case.methodology in ("sequential", FUSION, CADENCE) and case.sync != TIMESTAMPS


def issue_times(samples: GroupSamples, positions: np.ndarray) -> np.ndarray:
    """Issue time of each sample (ns from its start to the clock read before its wait)."""
    return np.array([samples.parts[p][0] - samples.records[p][4] for p in positions],
                    dtype=float)


def gpu_times(samples: GroupSamples, positions: np.ndarray, tick_ns: float) -> np.ndarray:
    """End - begin of each sample's timestamps in ns; NaN where the end comes before the
    begin (a timer that wrapped or was reset: no duration to believe)."""
    span = np.array([samples.parts[p][1] - samples.parts[p][0] for p in positions],
                    dtype=float)  # Python ints: exact for any 64-bit tick
    return np.where(span >= 0, span * tick_ns, np.nan)


def gpu_timer(samples: GroupSamples, tick_ns: float) -> GpuTimer | None:
    """The timer's resolution: the largest tick step that divides every timestamp."""
    stamps = [v for i, c in enumerate(samples.cases) if c.sync == TIMESTAMPS
              for (r, p) in samples.parts.items() if samples.records[r][0] == i for v in p]
    if not stamps:
        return None
    step = reduce(math.gcd, (int(v) for v in stamps), 0) or 1
    return GpuTimer(resolution_ns=step * tick_ns)



def backwards_stamps(samples: GroupSamples) -> int:
    """Samples whose end timestamp comes before their begin (left out of GPU times)."""
    return sum(1 for r, p in samples.parts.items()
               if samples.cases[samples.records[r][0]].sync == TIMESTAMPS and p[1] < p[0])
