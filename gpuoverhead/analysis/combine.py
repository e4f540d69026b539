"""Estimates across worker processes: each key's series combined, then what derives from them.

With several worker processes each process's values stay apart: the combined estimate is
the median of the process medians (or ratios of medians) with a CI over processes
(`stats.between_processes`), and each process's own estimate is a row of its own (`process`
set). Two variance components say what sets the width: `rel_spread_between`, the range of
the process medians relative to the estimate (the machine: processes that differ), and
`rel_ci_within`, the median over processes of each one's own relative half-width (the
rounds: noise within a process).
A latency whose samples fall in two modes within its processes (analysis/modes.py, decided
here over all of a job's processes) is each process's trimmed
mean instead of its median, over processes as a median is; its rows say so (`estimator`,
`modes`).
Derived rows: closures of the layer split, matmul crossovers. A decode token's kernels'
excess over processes is the GPU time's centre less its other parts' (_token_parts_add_up).

Whether a metric is positive (intervals on logs, never below zero) is decided by name:
the checks in SIGNED can be negative by nature, the costs in DIFFERENCES are measured as a
difference of two (a linear interval, held at zero); every other metric is a time, a rate
or a ratio. A cost estimated at or below zero (below the clock's resolution) is still a
cost: its interval is held at zero, and so is its estimate, said in its kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from gpuoverhead.analysis import modes
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.analysis.stats import (
    Estimate,
    held_at_zero,
    over_processes,
    process_median_ci,
    ratio_ci,
)
from gpuoverhead.cases import DECODE_KERNEL, FUSION, Case

#: Checks of the layer split, negative where the part subtracted is the larger (how far the
#: FFI correction is off, how far the parts fail to add up, either way): linear intervals.
SIGNED = frozenset({"ffi_check_ns", "closure_ns"})
#: Costs measured as the difference of two (Python's: the wrapper's issue slope less the
#: API's; a bind group's: the twin's less the reused case's; the browser's wait per unit:
#: wall less issue less GPU time): linear intervals, since noise puts a small one either
#: side of zero, held at zero as every cost's is.
DIFFERENCES = frozenset({"python_ns", "bind_group_ns", "wait_per_unit_ns"})


@dataclass(frozen=True)
class Row:
    key: Key
    estimate: Estimate
    process: int | None = None
    rel_spread_between: float = float("nan")
    rel_ci_within: float = float("nan")
    #: What limits a sequential case's throughput: `gpu` where GPU time per dispatch is most
    #: of its wall time per dispatch, `cpu` where issuing it is, else empty.
    bound: str = ""
    #: A level that settles over a process's age (a cadence): the median age (s) from which
    #: it held over processes, inf where some process's was still moving as it ended.
    settled_s: float = math.nan
    #: The processes (places in combine's list) an estimate over processes is over: those
    #: that gave its series (a process whose slope was not found gives none); None where
    #: it derives from several estimates, over the job's processes.
    over: tuple[int, ...] | None = None
    #: A latency's two modes where they are within its processes (its estimate is then each
    #: process's trimmed mean: analysis/modes.py); None elsewhere.
    modes: modes.Modes | None = None


def combine(per_process: list[dict[Key, Series]], rng: np.random.Generator) -> list[Row]:
    """Estimates across processes (an interval over processes, the spread between them),
    then, where there are several processes, each process's own estimate (`process` set)."""
    keys = list(dict.fromkeys(k for p in per_process for k in p))
    split = {k: found for k in keys
             if (found := two_modes_over([p[k] for p in per_process if k in p], k.metric))}
    own = [Row(k, _estimate([s], rng, k.metric), process, settled_s=settled_at([s]))
           if k not in split else
           Row(replace(k, estimator=modes.MEAN), held_at_zero(modes.trimmed_mean(s.values)),
               process, settled_s=settled_at([s]), modes=split[k])
           for process, found in enumerate(per_process) for k, s in found.items()]
    within: dict[Key, list[float]] = {}
    for r in own:
        within.setdefault(r.key, []).append(r.estimate.rel_ci)
    rows = []
    for key in keys:
        over = tuple(i for i, p in enumerate(per_process) if key in p)
        present = [per_process[i][key] for i in over]
        found = split.get(key)
        est = _estimate(present, rng, key.metric) if found is None else _means(present)
        points = [s.point() for s in present] if found is None else \
            [modes.trimmed_mean(s.values).value for s in present]
        spread = (max(points) - min(points)) / abs(est.value) if est.value else float("nan")
        mine = key if found is None else replace(key, estimator=modes.MEAN)
        rows.append(Row(mine, est, None, spread if len(present) > 1 else float("nan"),
                        float(np.nanmedian(within[mine])) if np.isfinite(within[mine]).any()
                        else float("nan"), settled_s=settled_at(present), over=over,
                        modes=found))
    rows = _token_parts_add_up(_with_bounds(rows))
    rows += _closures(rows)
    rows += _crossovers(rows)
    rows += _transforms(rows)
    return rows + own if len(per_process) > 1 else rows


def settled_at(present: list[Series]) -> float:
    """When these processes' level settled (analysis/settling.py): the median age (s), inf
    where one was still moving as its process ended, nan where none is a settling level."""
    found = [s.settled for s in present if s.settled is not None]
    if not found:
        return math.nan
    if not all(f.settled for f in found):
        return math.inf
    return float(np.median([f.at_s for f in found]))


def two_modes_over(present: list[Series], metric: str) -> modes.Modes | None:
    """The two modes of a latency's samples (modes.MEAN_METRICS) over these processes
    where they are within processes (modes.within_processes), so that each process's
    median is either mode by chance, whether or not this run's fell on both sides (a rule
    that asked for that split changed 8 headline latencies in six H200 pairs and met it in
    one half only for 7: a mean then faced a median); None for a slope, a ratio, a call,
    or one process."""
    if metric not in modes.MEAN_METRICS or len(present) < 2 or \
            any(s.denominator is not None for s in present):
        return None
    values = pd.Series(np.concatenate([s.values for s in present]))
    process = pd.Series(np.repeat(np.arange(len(present)), [s.values.size for s in present]))
    return modes.within_processes(values, process)


def _means(present: list[Series]) -> Estimate:
    """Each process's trimmed mean (modes.trimmed_mean), over processes as a median is
    (`over_processes`), held at zero as a cost's is."""
    means = np.array([modes.trimmed_mean(s.values).value for s in present])
    est = over_processes(means, True, "process trimmed means (samples in two modes)",
                         sum(s.count for s in present))
    return held_at_zero(est)


def _estimate(present: list[Series], rng: np.random.Generator, metric: str) -> Estimate:
    """The median (or ratio of medians) over these processes' values, with its interval;
    any but a check's (SIGNED) held at zero (`held_at_zero`)."""
    if present[0].denominator is not None:
        est = ratio_ci([(s.values, s.denominator) for s in present], rng)
    else:
        est = process_median_ci([s.values for s in present],
                                metric not in SIGNED | DIFFERENCES)
    if metric not in SIGNED:
        est = held_at_zero(est)
    return replace(est, n_samples=sum(s.count for s in present))


#: Share of the wall time per dispatch that GPU time (or issue time) must reach for a case
#: to be called GPU-bound (CPU-bound).
BOUND_SHARE = 0.85


def _with_bounds(rows: list[Row]) -> list[Row]:
    """Label each wall-time slope by what sets it: GPU time per dispatch (timestamps), or
    the CPU's issue time, where either is most of it."""
    by = {(r.key.case, r.key.metric): r.estimate for r in rows}
    gpu = next((e for (c, m), e in by.items() if m == "gpu_ns" and c.methodology != FUSION),
               None)
    out = []
    for r in rows:
        cpu = by.get((r.key.case, "cpu_per_dispatch_ns"))
        if r.key.metric == "per_dispatch_ns" and r.estimate.value > 0:
            wall = r.estimate.value
            label = ("gpu" if gpu is not None and gpu.value >= BOUND_SHARE * wall else
                     "cpu" if cpu is not None and cpu.value >= BOUND_SHARE * wall else "")
            r = replace(r, bound=label)
        out.append(r)
    return out


#: A decode token's GPU time and its parts (methods/fusion._token_parts): the excess last.
TOKEN_PARTS = ("gpu_ns", "read_floor_ns", "dispatch_gpu_ns", "kernel_excess_ns")


def _token_parts_add_up(rows: list[Row]) -> list[Row]:
    """A decode token's kernels' excess, over processes, as the GPU time's centre less the
    read floor's and the dispatches' centres, so that the parts add up to the GPU time by
    construction (each part's centre over processes taken on its own need not: centres on
    logs do not add); its interval the union of the GPU time's less those centres and its
    own over processes (it covers where either does), held at zero as a cost's is. Within
    one process the parts add up already (a slope less two constants)."""
    by = {(r.key.case, r.key.metric): r for r in rows}
    out = []
    for r in rows:
        parts = [by.get((r.key.case, m)) for m in TOKEN_PARTS]
        if r.key.metric != TOKEN_PARTS[-1] or None in parts or r.over is None \
                or len(r.over) < 2:
            out.append(r)
            continue
        gpu, floor, dispatches, own = (p.estimate for p in parts)
        less = floor.value + dispatches.value
        low, high, level = gpu.ci_low - less, gpu.ci_high - less, gpu.level
        if math.isnan(low):  # no interval of the GPU time: the excess's own, whole
            out.append(r)
            continue
        if not math.isnan(own.ci_low):  # covering where its own does: at least its level
            low, high, level = min(low, own.ci_low), max(high, own.ci_high), own.level
        est = Estimate(gpu.value - less, low, high, own.n_samples, level,
                       f"gpu_ns less read_floor_ns and dispatch_gpu_ns (centres over "
                       f"processes), its interval the union of gpu_ns's less them and its "
                       f"own ({own.kind})")
        out.append(replace(r, estimate=held_at_zero(est)))
    return out


def _closures(rows: list[Row]) -> list[Row]:
    """wrapper - api - python (CPU per dispatch) from the combined estimates: how far the
    split fails to add up."""
    by = {(r.key.case, r.key.metric): r.estimate for r in rows}
    out = []
    for (case, metric), wrapper in by.items():
        if metric != "cpu_per_dispatch_ns" or (case, "api_ns") not in by:
            continue
        closure = wrapper.value - by[(case, "api_ns")].value - by[(case, "python_ns")].value
        key = Key(case, "closure_ns", "ns", "cpu(wrapper) - api - python")
        out.append(Row(key, Estimate(closure, math.nan, math.nan, wrapper.n_samples, 0.0,
                                     "derived from three estimates: no interval")))
    return out


def _transforms(rows: list[Row]) -> list[Row]:
    """Monotone transforms of estimates, their intervals' ends mapped with them (so their
    coverage is kept): the overhead share 1 - GPU / wall of a unit of fused or unfused
    work (held at zero: a GPU time over the wall time is noise, or timestamps off), and
    tokens per second, 1e9 / wall ns per token (a decode step's slope, or a token
    loop's runs)."""
    out = []
    for r in rows:
        e = r.estimate
        if r.key.metric == "gpu_share":
            key = Key(r.key.case, "overhead_share", "ratio", "1 - gpu_share")
            out.append(Row(key, held_at_zero(replace(  # GPU time over wall's: not a share
                e, value=1 - e.value, ci_low=1 - e.ci_high, ci_high=1 - e.ci_low)),
                over=r.over))
        elif r.key.metric == "token_ns" or (r.key.metric == "per_unit_ns" and
                                             r.key.case.kernel.startswith(DECODE_KERNEL)):
            key = Key(r.key.case, "tokens_per_s", "1/s", f"1e9 / {r.key.metric}")
            out.append(Row(key, replace(e, value=_inverse(e.value), ci_low=_inverse(e.ci_high),
                                        ci_high=_inverse(e.ci_low)), over=r.over))
    return out


def _inverse(ns: float) -> float:
    """Per second from ns per step; an end at or below zero is an unbounded rate."""
    return 1e9 / ns if ns > 0 else math.inf


#: Crossover metrics: the overhead that GPU time per matmul is compared with (at the
#: smallest size, where GPU work is negligible): issuing a dispatch, or a synced one.
_CROSSOVERS = (("crossover_size", "per_unit_ns"), ("crossover_size_synced", "latency_ns"))


def _crossovers(rows: list[Row]) -> list[Row]:
    """Matmul size M where GPU time per matmul reaches the overhead of issuing one: log-log
    interpolation between the sizes measured; the CI pairs the ends of the two CIs."""
    sizes: dict[int, dict[str, tuple[Case, Estimate]]] = {}
    for r in rows:
        if r.key.case.methodology == FUSION and r.key.case.variant == "single":
            sizes.setdefault(r.key.case.k, {})[r.key.metric] = (r.key.case, r.estimate)
    if not sizes or any("gpu_ns" not in m for m in sizes.values()):
        return []
    ms = sorted(sizes)
    gpu = [sizes[m]["gpu_ns"][1] for m in ms]
    out = []
    for metric, overhead_metric in _CROSSOVERS:
        if overhead_metric not in sizes[ms[0]]:
            continue
        case, overhead = sizes[ms[0]][overhead_metric]
        points = [_crossing(ms, [g.value for g in gpu], overhead.value),
                  _crossing(ms, [g.ci_high for g in gpu], overhead.ci_low),
                  _crossing(ms, [g.ci_low for g in gpu], overhead.ci_high)]
        value, low, high = points
        how = f"M where gpu_ns reaches {overhead_metric} at M={ms[0]} (log-log interpolation)"
        if math.isnan(value):
            how = f"not reached up to M={ms[-1]}: GPU time stays under {overhead_metric}"
        elif value == ms[0]:
            how = f"at or below M={ms[0]}: gpu_ns already reaches {overhead_metric} there"
        key = Key(replace(case, variant="crossover", k=0, elements=0, sync="-"), metric,
                  "M", how)
        out.append(Row(key, Estimate(value, low, high, overhead.n_samples, math.nan,
                                     "ends of the GPU-time and overhead intervals paired: "
                                     "coverage unknown")))
    return out


def _crossing(ms: list[int], gpu: list[float], overhead: float) -> float:
    """First M where `gpu` reaches `overhead`, interpolated; nan when it never does."""
    for i, g in enumerate(gpu):
        if g >= overhead:
            if i == 0:
                return float(ms[0])
            lo, hi = max(gpu[i - 1], 1e-9), max(g, 1e-9)
            frac = (math.log(overhead) - math.log(lo)) / (math.log(hi) - math.log(lo)) \
                if hi > lo else 1.0
            return float(math.exp(math.log(ms[i - 1]) + frac * math.log(ms[i] / ms[i - 1])))
    return float("nan")

