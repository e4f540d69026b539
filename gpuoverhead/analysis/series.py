"""Per estimate, the values of one worker process, and the view of its samples that the
methodologies (methods/, one module each) make them from.

A series holds one value per round (a slope, an intercept) or per sample (a latency), with
the time each was taken, so that processes can be combined (`combine`) and drift found
(`drift`). Which metric is which, and how each is made, is in docs/schema.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpuoverhead.analysis.samples import (
    Calibration,
    GpuTimer,
    GroupSamples,
    by_round,
    gpu_timer,
    gpu_times,
    issue_times,
    measured,
    n_values,
    records,
)
from gpuoverhead.analysis.settling import Settling
from gpuoverhead.analysis.stats import median_ratio, round_fits
from gpuoverhead.cases import Case

#: Metrics whose precision decides when sampling stops.
STOP_METRICS = ("latency_ns", "per_dispatch_ns", "cpu_per_dispatch_ns", "per_unit_ns",
                "token_ns", "step_ns")


@dataclass(frozen=True)
class Key:
    """What one estimate is of: a case's metric (and call, for a breakdown)."""

    case: Case
    metric: str
    unit: str
    estimator: str
    call: str = ""


@dataclass
class Series:
    """The values an estimate is the median of (one per round, or per sample), with the
    time each was taken (epoch ns) and how many samples they came from. A ratio also has
    its denominators, paired with the values round by round: its estimate is
    median(values) / median(denominator)."""

    values: np.ndarray
    times: np.ndarray
    count: int
    denominator: np.ndarray | None = None
    #: Where the values are those of a level that settled over the process's age (a
    #: cadence's bursts): when, and the level over age (analysis/settling.py).
    settled: Settling | None = None

    def point(self) -> float:
        if self.denominator is None:
            return float(np.median(self.values))
        return median_ratio(self.values, self.denominator)



#: Per (encoding, layer, implementation, variant): case, wall slopes, CPU (issue) slopes and
#: round times of a sequential case.
Slopes = dict[tuple[str, str, str | None, str], tuple[Case, np.ndarray, np.ndarray, np.ndarray]]


@dataclass
class View:
    """One process's samples as arrays, and what the per-methodology functions share."""

    samples: GroupSamples
    cal: Calibration
    clock_offset_ns: int
    #: The measured rounds whose samples the estimates use (analysis/states.py: those of
    #: one CPU state); None: every one.
    rounds: np.ndarray | None = None
    rec: np.ndarray = field(init=False)
    timer: GpuTimer | None = field(init=False)
    naive: np.ndarray | None = None
    slopes: Slopes = field(default_factory=dict)
    floor: np.ndarray | None = None
    #: GPU time per dispatch (timestamps' slopes) per round, where a timer ran.
    gpu_slopes: np.ndarray | None = None
    #: Fusion units per case: the case, slopes (None: none fitted), N=1 values, round
    #: times, issue slopes (methods/fusion.py).
    units: dict[Case, tuple[Case, np.ndarray | None, np.ndarray | None, np.ndarray,
                            np.ndarray | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rec = records(self.samples)
        self.timer = gpu_timer(self.samples, self.cal.tick_ns) if self.cal.tick_ns else None

    @property
    def started_ns(self) -> float:
        """When the process's first sample began (epoch ns): its sampling's age zero."""
        return float(self.rec[:, 4].min() + self.clock_offset_ns) if len(self.rec) else 0.0

    def measured(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, wall times and start times (epoch ns) of a case's measured samples (of
        `rounds`, where given)."""
        pos = measured(self.rec, index)
        if self.rounds is not None:
            pos = pos[np.isin(self.rec[pos, 2], self.rounds)]
        return (pos, self.rec[pos, 5].astype(float),
                (self.rec[pos, 4] + self.clock_offset_ns).astype(float))

    def n(self, index: int) -> tuple[int, ...]:
        """The N values case `index` was measured at."""
        return n_values(self.samples, index)

    def first_round(self, index: int) -> np.ndarray | None:
        """Wall times of warm-up round 0 by N (what a short-lived program pays), if whole."""
        rec = self.rec
        pos = np.flatnonzero((rec[:, 0] == index) & (rec[:, 2] == 0) & (rec[:, 3] == 1))
        if pos.size != len(self.n(index)):
            return None
        return rec[pos[np.argsort(rec[pos, 1])], 5].astype(float)

    def issue(self, pos: np.ndarray, index: int) -> np.ndarray:
        """Issue times (the clock read before the wait) as rounds x N."""
        return by_round(issue_times(self.samples, pos), self.n(index))

    def gpu(self, pos: np.ndarray, index: int) -> np.ndarray | None:
        """GPU times as rounds x N, or None where the group has no usable timer."""
        if self.cal.tick_ns is None or self.timer is None:
            return None
        return by_round(gpu_times(self.samples, pos, self.cal.tick_ns), self.n(index))


Out = dict[Key, Series]


def add_fits(out: dict[Key, Series], case: Case, n: tuple[int, ...], matrix: np.ndarray,
              times: np.ndarray, metrics: tuple[str, ...], estimator: str) -> np.ndarray:
    """Per-round Theil-Sen fits over the N values `n` as series (rounds with a missing
    value left out); returns the slopes of every round."""
    fits = round_fits(np.array(n), matrix)
    whole = np.isfinite(matrix).all(axis=1)
    for metric, values in zip(metrics, fits[: len(metrics)], strict=True):
        out[Key(case, metric, "ns", estimator)] = Series(values[whole], times[whole],
                                                         int(np.isfinite(matrix).sum()))
    return fits[0]


#: A per-op slope under this is no cost but a fused chain's ~0 (torch.compile): it gets no
#: inflation and no ratio to the fastest.
FUSED_NS = 100.0
#: A CI half-width below this is precise enough however small the estimate (a fused
#: chain's per-dispatch slope is ~0, so its relative CI would never reach a target); above
#: it, the relative target applies (10 ns is under 1% of the cheapest dispatch measured).
PRECISE_NS = 10.0


def precise_enough(half_width: float, value: float, target_rel: float) -> bool:
    """Whether an interval's half-width meets the relative target, or the absolute floor."""
    return half_width <= max(target_rel * abs(value), PRECISE_NS)
