"""Per estimate, the values of one worker process: one function per methodology.

A series holds one value per round (a slope, an intercept) or per sample (a latency), with
the time each was taken, so that processes can be combined (`combine`) and drift found
(`drift`). Which metric is which, and how each is made, is in docs/schema.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
from gpuoverhead.analysis.stats import median_ci, median_ratio, round_fits
from gpuoverhead.gpu.layers.raw import CALLS_PER_OP
from gpuoverhead.records import CALLS
from gpuoverhead.suite.model import FFI_FLOOR, FUSION, TIMESTAMPS, Case

#: Metrics whose precision decides when sampling stops.
STOP_METRICS = ("latency_ns", "per_dispatch_ns", "cpu_per_dispatch_ns", "per_unit_ns")


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

    def point(self) -> float:
        if self.denominator is None:
            return float(np.median(self.values))
        return median_ratio(self.values, self.denominator)



@dataclass
class _View:
    """One process's samples as arrays, and what the per-methodology functions share."""

    samples: GroupSamples
    cal: Calibration
    clock_offset_ns: int
    rec: np.ndarray = field(init=False)
    timer: GpuTimer | None = field(init=False)
    naive: np.ndarray | None = None
    #: Per (encoding, layer, implementation): case, wall slopes, CPU (issue) slopes, times.
    slopes: dict[tuple[str, str, str | None], tuple[Case, np.ndarray, np.ndarray, np.ndarray]] \
        = field(default_factory=dict)
    floor: np.ndarray | None = None
    #: Fusion units per case: the case, slopes, N=1 values, round times.
    units: dict[Case, tuple[Case, np.ndarray, np.ndarray | None, np.ndarray]] \
        = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rec = records(self.samples)
        self.timer = gpu_timer(self.samples, self.cal.tick_ns) if self.cal.tick_ns else None

    def measured(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, wall times and start times (epoch ns) of a case's measured samples."""
        pos = measured(self.rec, index)
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
SeriesOf = Callable[[_View, int, Case, Out], None]


def series(samples: GroupSamples, cal: Calibration, clock_offset_ns: int = 0) -> Out:
    """Per estimate, the per-round (or per-sample) values of one process."""
    view = _View(samples, cal, clock_offset_ns)
    out: Out = {}
    for index, case in enumerate(samples.cases):
        _methodology(case)(view, index, case, out)
    _add_inflation(out, view)
    _add_layers(out, view.slopes, view.floor)
    _add_fusion(out, view.units)
    return out


def _methodology(case: Case) -> SeriesOf:
    """The series function of a case, chosen as `gpu.methods.operation` chooses its op."""
    if case.methodology == FUSION:
        return _fusion
    if case.methodology in ("naive", "breakdown"):
        return _naive if case.methodology == "naive" else _breakdown
    if case.methodology == FFI_FLOOR:
        return _ffi_floor
    return _gpu_time if case.sync == TIMESTAMPS else _sequential


def _naive(view: _View, index: int, case: Case, out: Out) -> None:
    """Latency per sample, and the first warm-up round's (what a short-lived program pays)."""
    _, walls, times = view.measured(index)
    out[Key(case, "latency_ns", "ns", "median")] = Series(walls, times, walls.size)
    if case.sync == "wait":
        view.naive = walls
    rec = view.rec
    first = np.flatnonzero((rec[:, 0] == index) & (rec[:, 2] == 0) & (rec[:, 3] == 1))
    if first.size:
        out[Key(case, "first_round_ns", "ns", "warm-up round 0")] = Series(
            rec[first[:1], 5].astype(float), times[:1], 1)


def _breakdown(view: _View, index: int, case: Case, out: Out) -> None:
    """Latency of the whole op, and each call's time less the clock's own cost."""
    pos, walls, times = view.measured(index)
    out[Key(case, "latency_ns", "ns", "median")] = Series(walls, times, walls.size)
    parts = np.array([view.samples.parts[p] for p in pos], dtype=float)
    for j, call in enumerate(CALLS):
        out[Key(case, "call_ns", "ns", "median - clock cost", call)] = Series(
            parts[:, j] - view.cal.timer_ns, times, parts.shape[0])


def _sequential(view: _View, index: int, case: Case, out: Out) -> None:
    """Per round: the slope (throughput cost per dispatch) and intercept (fixed wait) of
    wall time against N, and the slope of issue time, the CPU cost per dispatch."""
    pos, walls, times = view.measured(index)
    n = view.n(index)
    matrix, round_times = by_round(walls, n), by_round(times, n)[:, 0]
    slope = _add_fits(out, case, n, matrix, round_times, ("per_dispatch_ns", "fixed_ns"),
                      "round-median theil-sen of wall time")
    cpu = _add_fits(out, case, n, view.issue(pos, index), round_times,
                    ("cpu_per_dispatch_ns",),
                    "round-median theil-sen of issue time (clock read before the wait)")
    view.slopes[(case.encoding, case.layer, case.implementation)] = (case, slope, cpu,
                                                                     round_times)
    first = view.first_round(index)
    if first is not None:
        out[Key(case, "first_round_per_dispatch_ns", "ns",
                "theil-sen of warm-up round 0's wall time")] = Series(
            round_fits(np.array(n), first[None, :])[0], round_times[:1], 1)


def _gpu_time(view: _View, index: int, case: Case, out: Out) -> None:
    """Slope and intercept of GPU time (timestamp queries) against N, per round."""
    pos, _, times = view.measured(index)
    gpu = view.gpu(pos, index)
    if gpu is None or view.timer is None:
        return
    note = (f"round-median theil-sen (timer quantized to {view.timer.resolution_ns:.0f} ns)"
            if view.timer.quantized else "round-median theil-sen")
    n = view.n(index)
    _add_fits(out, case, n, gpu, by_round(times, n)[:, 0], ("gpu_ns", "gpu_fixed_ns"), note)


def _ffi_floor(view: _View, index: int, case: Case, out: Out) -> None:
    """The cost of one trivial native call through the FFI (slope against calls)."""
    _, walls, times = view.measured(index)
    n = view.n(index)
    view.floor = _add_fits(out, case, n, by_round(walls, n), by_round(times, n)[:, 0],
                           ("ffi_floor_ns",), "round-median theil-sen")


def _fusion(view: _View, index: int, case: Case, out: Out) -> None:
    """One unit of work per form: its slope (wait amortized) and N=1 latency, or GPU time."""
    pos, walls, times = view.measured(index)
    n = view.n(index)
    round_times = by_round(times, n)[:, 0]
    if case.sync == TIMESTAMPS:
        matrix = view.gpu(pos, index)
        if matrix is None:
            return
        metrics: tuple[str, ...] = ("gpu_ns", "gpu_fixed_ns")
    else:
        matrix, metrics = by_round(walls, n), ("per_unit_ns", "fixed_ns")
        _add_fits(out, case, n, view.issue(pos, index), round_times, ("cpu_per_unit_ns",),
                  "round-median theil-sen of issue time (clock read before the wait)")
    slope = _add_fits(out, case, n, matrix, round_times, metrics, "round-median theil-sen")
    single = matrix[:, 0] if n[0] == 1 else None
    if single is not None and case.sync != TIMESTAMPS:
        out[Key(case, "latency_ns", "ns", "median of N=1 samples")] = Series(
            single, round_times, single.size)
    view.units[case] = (case, slope, single, round_times)


def _add_inflation(out: Out, view: _View) -> None:
    """Naive latency over each wrapper-layer slope (rounds paired by index for the CI)."""
    if view.naive is None:
        return
    for (_, layer, _), (case, s, _, t) in view.slopes.items():
        # A fused chain (torch-compile) has no per-dispatch cost to inflate.
        if layer == "wrapper" and np.median(s) > FUSED_NS:
            r = min(len(view.naive), len(s))
            out[Key(case, "inflation", "ratio", "median naive / median slope")] = Series(
                view.naive[:r], t[:r], r, denominator=s[:r])


#: Fusion ratios: metric, the sync of the series they pair, and which of its values.
_FUSION_RATIOS = (("fusion_speedup", "wait", 1, "median unfused slope / median fused slope"),
                  ("fusion_speedup_synced", "wait", 2,
                   "median unfused / median fused wall at N=1"),
                  ("fusion_gpu_speedup", TIMESTAMPS, 1,
                   "median unfused / median fused GPU-time slope"))


def _add_fusion(out: dict[Key, Series],
                units: dict[Case, tuple[Case, np.ndarray, np.ndarray | None, np.ndarray]]
                ) -> None:
    """Fusion speedups, on the fused case: unfused (of the same K, sync and encoding) over
    fused, rounds paired for the CI; and each form's GPU share (GPU time of its one-pass
    timestamps twin over its wall slope)."""
    def twin(case: Case, **fields: Any) -> tuple | None:
        return next((u for c, u in units.items()
                     if c.k == case.k and all(getattr(c, f) == v for f, v in fields.items())),
                    None)

    for case, fused in units.items():
        unfused = twin(case, variant="unfused", sync=case.sync, encoding=case.encoding)
        if case.variant != "fused" or unfused is None:
            continue
        for metric, wanted, part, estimator in _FUSION_RATIOS:
            top, bottom = unfused[part], fused[part]
            if case.sync != wanted or top is None or bottom is None:
                continue
            r = min(len(top), len(bottom))
            if r:
                out[Key(case, metric, "ratio", estimator)] = Series(
                    top[:r], fused[3][:r], r, denominator=bottom[:r])
    for case, wall in units.items():
        gpu = twin(case, variant=case.variant, implementation=case.implementation,
                   sync=TIMESTAMPS)
        if case.sync == "wait" and gpu is not None and (r := min(len(wall[1]), len(gpu[1]))):
            out[Key(case, "gpu_share", "ratio", "median GPU-time slope / median wall "
                    "slope")] = Series(gpu[1][:r], wall[3][:r], r, denominator=wall[1][:r])


def _add_fits(out: dict[Key, Series], case: Case, n: tuple[int, ...], matrix: np.ndarray,
              times: np.ndarray, metrics: tuple[str, ...], estimator: str) -> np.ndarray:
    """Per-round Theil-Sen fits over the N values `n` as series (rounds with a missing
    value left out); returns the slopes of every round."""
    fits = round_fits(np.array(n), matrix)
    whole = np.isfinite(matrix).all(axis=1)
    for metric, values in zip(metrics, fits[: len(metrics)], strict=True):
        out[Key(case, metric, "ns", estimator)] = Series(values[whole], times[whole],
                                                         int(np.isfinite(matrix).sum()))
    return fits[0]


def _add_layers(out: Out, slopes: dict[tuple[str, str, str | None],
                                       tuple[Case, np.ndarray, np.ndarray, np.ndarray]],
                floor: np.ndarray | None) -> None:
    """CPU cost per dispatch split into api (the native implementation) and python (the
    binding), from issue-time slopes paired round by round, and the FFI check."""
    for (encoding, layer, impl), (case, _, wrapper, times) in slopes.items():
        if layer != "wrapper" or impl is not None:
            continue
        raw = slopes.get((encoding, "raw", None), (None, None, None, None))[2]
        native = slopes.get((encoding, "native", None), (None, None, None, None))[2]
        calls = CALLS_PER_OP[encoding]
        corrected = raw - calls * floor[: len(raw)] if raw is not None and floor is not None \
            else None
        if native is not None:
            api, how = native, "native issue slope"
        elif corrected is not None:
            api, how = corrected, f"raw issue slope - {calls} x ffi floor (native layer absent)"
        else:
            continue
        n = len(wrapper)
        out[Key(case, "api_ns", "ns", how)] = Series(api, times, n)
        out[Key(case, "python_ns", "ns", "wrapper issue slope - api")] = Series(
            wrapper - api, times, n)
        if native is not None and corrected is not None:
            raw_case = slopes[(encoding, "raw", None)][0]
            out[Key(raw_case, "ffi_check_ns", "ns",
                    f"(raw issue slope - {calls} x ffi floor) - native issue slope")] = Series(
                corrected - native, times, n)


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


def worst_rel_ci(samples: GroupSamples, cal: Calibration, target_rel: float) -> float:
    """Largest relative CI half-width among one process's headline estimates, 0 for those
    that are precise enough by the absolute floor."""
    rels = []
    for key, s in series(samples, cal).items():
        if key.metric in STOP_METRICS:
            est = median_ci(s.values)
            half = (est.ci_high - est.ci_low) / 2
            rels.append(0.0 if precise_enough(half, est.value, target_rel) else est.rel_ci)
    return max(rels, default=float("inf"))

