"""From raw samples to tidy tables: the samples table and the summary of estimates.

Metrics (ns unless said otherwise), each a median over rounds with its 95% CI:
- `latency_ns`: one naive op (or one breakdown op, all its calls together);
- `per_dispatch_ns` / `fixed_ns`: slope and intercept of each round's Theil-Sen fit of a
  sequential case (the intercept is the fixed cost of the final wait);
- `inflation` (ratio): median naive(wait) latency / median slope of a wrapper-layer
  sequential case; DESIGN.md's inflation is the one on the `submit` encoding;
- `gpu_ns` / `gpu_fixed_ns`: slope and intercept of GPU time (timestamp queries) against N;
- `ffi_floor_ns`: one trivial native call through the FFI, loop included;
- `call_ns` (with `call` set): one API call of a breakdown op, the clock's cost subtracted;
- per encoding, derived round by round from the layers' slopes:
  `api_ns` = native slope, else raw slope - calls per op x FFI floor;
  `python_ns` = wrapper slope - api; `closure_ns` = median(wrapper) - median(api) -
  median(python), ~0 when the parts add up; `ffi_check_ns` = (raw - calls x floor) - native,
  which validates the FFI correction where both layers ran.
- `first_round_ns`: a naive op in the first warm-up round, what a short-lived program pays;
- fusion (on the fused case): `per_unit_ns` and `latency_ns` as above per form, and
  `fusion_speedup*` = median unfused / median fused (ratios: see `stats`).
Sampling stops when `latency_ns` and `per_dispatch_ns` are precise enough; the others are
reported with whatever precision that gives.

With several worker processes each process's values stay apart: the combined estimate is
the median of all of them with a two-level bootstrap CI (processes, then values within
them), `rel_spread_between` is the range of the process medians relative to it, and each
process's own estimate is a row of its own (`process` set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead.adapters import AdapterInfo
from gpuoverhead.layers.raw import CALLS_PER_OP
from gpuoverhead.methods.breakdown import CALLS
from gpuoverhead.sampling import GroupSamples
from gpuoverhead.stats import (
    Estimate,
    drift,
    hierarchical_median_ci,
    hierarchical_ratio_ci,
    median_ci,
    median_ratio,
    outlier_flags,
    round_fits,
)
from gpuoverhead.suite import FFI_FLOOR, FUSION, TIMESTAMPS, Case, Group

#: Metrics whose precision decides when sampling stops.
HEADLINE = ("latency_ns", "per_dispatch_ns", "per_unit_ns")
#: GPU timers coarser than this are flagged as quantized.
QUANTIZED_NS = 1000.0

_CASE_COLUMNS = ["run_id", "benchmark", "case", "methodology", "encoding", "sync", "layer",
                 "call", "implementation", "backend", "adapter", "vendor", "adapter_type",
                 "kernel", "elements", "workgroup_size", "variant", "k"]
SAMPLE_COLUMNS = _CASE_COLUMNS + ["n_dispatches", "repetition", "phase", "process",
                                  "elapsed_ns", "wall_ns", "gpu_ns", "outlier"]


@dataclass(frozen=True)
class Calibration:
    """Facts of the run that estimates need: the clock's own cost and the GPU tick."""

    timer_ns: float
    tick_ns: float | None


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


@dataclass(frozen=True)
class Row:
    key: Key
    estimate: Estimate
    process: int | None = None
    rel_spread_between: float = float("nan")


@dataclass(frozen=True)
class GpuTimer:
    """What the timestamps of a group say about the timer itself."""

    resolution_ns: float

    @property
    def quantized(self) -> bool:
        return self.resolution_ns >= QUANTIZED_NS


def _records(samples: GroupSamples) -> np.ndarray:
    return np.array(samples.records, dtype=np.int64).reshape(-1, 6)


def _measured(rec: np.ndarray, index: int) -> np.ndarray:
    """Record positions of a case's measured samples, by round then N."""
    pos = np.flatnonzero((rec[:, 0] == index) & (rec[:, 3] == 0))
    return pos[np.lexsort((rec[pos, 1], rec[pos, 2]))]


def _by_round(values: np.ndarray, case: Case) -> np.ndarray:
    """Values of a sequential case (ordered by round, then N) as rounds x N, complete rounds."""
    k = len(case.n_values)
    return values[: len(values) // k * k].reshape(-1, k).astype(float)


def gpu_times(samples: GroupSamples, positions: np.ndarray, tick_ns: float) -> np.ndarray:
    ticks = np.array([samples.parts[p] for p in positions], dtype=np.uint64).reshape(-1, 2)
    return (ticks[:, 1] - ticks[:, 0]).astype(float) * tick_ns


def gpu_timer(samples: GroupSamples, tick_ns: float) -> GpuTimer | None:
    """The timer's resolution: the largest tick step that divides every timestamp."""
    stamps = [v for i, c in enumerate(samples.cases) if c.sync == TIMESTAMPS
              for (r, p) in samples.parts.items() if samples.records[r][0] == i for v in p]
    if not stamps:
        return None
    step = reduce(math.gcd, (int(v) for v in stamps), 0) or 1
    return GpuTimer(resolution_ns=step * tick_ns)


def series(samples: GroupSamples, cal: Calibration, clock_offset_ns: int = 0
           ) -> dict[Key, Series]:
    """Per estimate, the per-round (or per-sample) values of one process."""
    rec = _records(samples)
    out: dict[Key, Series] = {}
    naive: tuple[np.ndarray, np.ndarray] | None = None
    slopes: dict[tuple[str, str, str | None], tuple[Case, np.ndarray, np.ndarray]] = {}
    floor: np.ndarray | None = None
    timer = gpu_timer(samples, cal.tick_ns) if cal.tick_ns else None
    units: dict[tuple[int, str, str], tuple[Case, np.ndarray, np.ndarray | None, np.ndarray]] = {}
    for index, case in enumerate(samples.cases):
        pos = _measured(rec, index)
        walls = rec[pos, 5].astype(float)
        times = (rec[pos, 4] + clock_offset_ns).astype(float)
        if case.methodology == FUSION:
            round_times = _by_round(times, case)[:, 0]
            if case.sync == TIMESTAMPS:
                if cal.tick_ns is None or timer is None:
                    continue
                matrix = _by_round(gpu_times(samples, pos, cal.tick_ns), case)
                metrics = ("gpu_ns", "gpu_fixed_ns")
            else:
                matrix = _by_round(walls, case)
                metrics = ("per_unit_ns", "fixed_ns")
            slope = _add_fits(out, case, matrix, round_times, metrics, "round-median theil-sen")
            single = matrix[:, 0] if case.n_values[0] == 1 else None
            if single is not None and case.sync != TIMESTAMPS:
                out[Key(case, "latency_ns", "ns", "median of N=1 samples")] = Series(
                    single, round_times, single.size)
            units[(case.k, case.variant, case.sync)] = (case, slope, single, round_times)
            continue
        if case.methodology in ("naive", "breakdown"):
            out[Key(case, "latency_ns", "ns", "median")] = Series(walls, times, walls.size)
            if case.methodology == "naive" and case.sync == "wait":
                naive = (walls, times)
            first = np.flatnonzero((rec[:, 0] == index) & (rec[:, 2] == 0) & (rec[:, 3] == 1))
            if case.methodology == "naive" and first.size:
                out[Key(case, "first_round_ns", "ns", "warm-up round 0")] = Series(
                    rec[first[:1], 5].astype(float), times[:1], 1)
            if case.methodology == "breakdown":
                parts = np.array([samples.parts[p] for p in pos], dtype=float)
                for j, call in enumerate(CALLS):
                    out[Key(case, "call_ns", "ns", "median - clock cost", call)] = Series(
                        parts[:, j] - cal.timer_ns, times, parts.shape[0])
            continue
        round_times = _by_round(times, case)[:, 0]
        if case.sync == TIMESTAMPS:
            if cal.tick_ns is None or timer is None:
                continue
            gpu = _by_round(gpu_times(samples, pos, cal.tick_ns), case)
            note = (f"round-median theil-sen (timer quantized to {timer.resolution_ns:.0f} ns)"
                    if timer.quantized else "round-median theil-sen")
            _add_fits(out, case, gpu, round_times, ("gpu_ns", "gpu_fixed_ns"), note)
            continue
        matrix = _by_round(walls, case)
        if case.methodology == FFI_FLOOR:
            floor = _add_fits(out, case, matrix, round_times, ("ffi_floor_ns",),
                              "round-median theil-sen")
            continue
        slope = _add_fits(out, case, matrix, round_times, ("per_dispatch_ns", "fixed_ns"),
                          "round-median theil-sen")
        slopes[(case.encoding, case.layer, case.implementation)] = (case, slope, round_times)
    if naive is not None:
        for (_, layer, _), (case, s, t) in slopes.items():
            # A fused chain (torch-compile) has no per-dispatch cost to inflate.
            if layer == "wrapper" and np.median(s) > PRECISE_NS:
                r = min(len(naive[0]), len(s))
                out[Key(case, "inflation", "ratio", "median naive / median slope")] = Series(
                    naive[0][:r], t[:r], r, denominator=s[:r])
    _add_layers(out, slopes, floor)
    _add_fusion(out, units)
    return out


#: Fusion ratios: metric, the sync of the series they pair, and which of its values.
_FUSION_RATIOS = (("fusion_speedup", "wait", 1, "median unfused slope / median fused slope"),
                  ("fusion_speedup_synced", "wait", 2,
                   "median unfused / median fused wall at N=1"),
                  ("fusion_gpu_speedup", TIMESTAMPS, 1,
                   "median unfused / median fused GPU-time slope"))


def _add_fusion(out: dict[Key, Series],
                units: dict[tuple[int, str, str], tuple[Case, np.ndarray, np.ndarray | None,
                                                        np.ndarray]]) -> None:
    """Fusion speedups, on the fused case: unfused over fused, rounds paired for the CI."""
    for (k, variant, sync), fused in units.items():
        unfused = units.get((k, "unfused", sync))
        if variant != "fused" or unfused is None:
            continue
        for metric, wanted, part, estimator in _FUSION_RATIOS:
            top, bottom = unfused[part], fused[part]
            if sync != wanted or top is None or bottom is None:
                continue
            r = min(len(top), len(bottom))
            if r:
                out[Key(fused[0], metric, "ratio", estimator)] = Series(
                    top[:r], fused[3][:r], r, denominator=bottom[:r])


def _add_fits(out: dict[Key, Series], case: Case, matrix: np.ndarray, times: np.ndarray,
              metrics: tuple[str, ...], estimator: str) -> np.ndarray:
    """Per-round Theil-Sen fits as series; returns the slopes."""
    fits = round_fits(np.array(case.n_values), matrix)
    for metric, values in zip(metrics, fits[: len(metrics)], strict=True):
        out[Key(case, metric, "ns", estimator)] = Series(values, times, matrix.size)
    return fits[0]


def _add_layers(out: dict[Key, Series],
                slopes: dict[tuple[str, str, str | None], tuple[Case, np.ndarray, np.ndarray]],
                floor: np.ndarray | None) -> None:
    """api, python and FFI-check series per encoding, paired round by round."""
    for (encoding, layer, impl), (case, wrapper, times) in slopes.items():
        if layer != "wrapper" or impl is not None:
            continue
        raw = slopes.get((encoding, "raw", None), (None, None, None))[1]
        native = slopes.get((encoding, "native", None), (None, None, None))[1]
        calls = CALLS_PER_OP[encoding]
        corrected = raw - calls * floor[: len(raw)] if raw is not None and floor is not None \
            else None
        if native is not None:
            api, how = native, "native slope"
        elif corrected is not None:
            api, how = corrected, f"raw slope - {calls} x ffi floor (native layer absent)"
        else:
            continue
        n = len(wrapper)
        out[Key(case, "api_ns", "ns", how)] = Series(api, times, n)
        out[Key(case, "python_ns", "ns", "wrapper slope - api")] = Series(wrapper - api, times, n)
        if native is not None and corrected is not None:
            raw_case = slopes[(encoding, "raw", None)][0]
            out[Key(raw_case, "ffi_check_ns", "ns",
                    f"(raw slope - {calls} x ffi floor) - native slope")] = Series(
                corrected - native, times, n)


#: A CI half-width below this is precise enough whatever the estimate (a fused chain's
#: per-dispatch slope is ~0, so its relative CI would never reach a target).
PRECISE_NS = 100.0


def worst_rel_ci(samples: GroupSamples, cal: Calibration) -> float:
    """Largest relative CI half-width among one process's headline estimates."""
    rels = []
    for key, s in series(samples, cal).items():
        if key.metric in HEADLINE:
            est = median_ci(s.values)
            precise = (est.ci_high - est.ci_low) / 2 <= PRECISE_NS
            rels.append(0.0 if precise else est.rel_ci)
    return max(rels, default=float("inf"))


def combine(per_process: list[dict[Key, Series]], rng: np.random.Generator) -> list[Row]:
    """Estimates across processes (hierarchical CI, between-process spread), then, where
    there are several processes, each process's own estimate (`process` set)."""
    keys = list(dict.fromkeys(k for p in per_process for k in p))
    rows = []
    for key in keys:
        present = [p[key] for p in per_process if key in p]
        est = _estimate(present, rng)
        medians = [s.point() for s in present]
        spread = (max(medians) - min(medians)) / abs(est.value) if est.value else float("nan")
        rows.append(Row(key, est, None, spread if len(present) > 1 else float("nan")))
    rows += _closures(rows)
    rows += _crossovers(rows)
    if len(per_process) > 1:
        for process, found in enumerate(per_process):
            rows += [Row(k, _estimate([s], rng), process) for k, s in found.items()]
    return rows


def _estimate(present: list[Series], rng: np.random.Generator) -> Estimate:
    """The median (or ratio of medians) over these processes' values, with its CI."""
    if present[0].denominator is not None:
        est = hierarchical_ratio_ci([(s.values, s.denominator) for s in present], rng)
    else:
        est = hierarchical_median_ci([s.values for s in present], rng)
    return Estimate(est.value, est.ci_low, est.ci_high, sum(s.count for s in present))


def _closures(rows: list[Row]) -> list[Row]:
    """wrapper - api - python from the combined medians: how far the split fails to add up."""
    by = {(r.key.case, r.key.metric): r.estimate for r in rows}
    out = []
    for (case, metric), wrapper in by.items():
        if metric != "per_dispatch_ns" or (case, "api_ns") not in by:
            continue
        closure = wrapper.value - by[(case, "api_ns")].value - by[(case, "python_ns")].value
        key = Key(case, "closure_ns", "ns", "median(wrapper) - median(api) - median(python)")
        out.append(Row(key, Estimate(closure, closure, closure, wrapper.n_samples)))
    return out


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
        out.append(Row(key, Estimate(value, low, high, overhead.n_samples)))
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


def drifts(per_process: list[dict[Key, Series]]) -> list[dict[str, Any]]:
    """Trends of headline values over rounds (per process) and over the run's wall clock
    (all processes together), for run.json."""
    found = []
    keys = list(dict.fromkeys(k for p in per_process for k in p if k.metric in HEADLINE))
    for key in keys:
        present = [(i, p[key]) for i, p in enumerate(per_process) if key in p]
        scopes = [(f"process {i} over rounds", s.values, np.arange(s.values.size))
                  for i, s in present]
        if len(present) > 1:
            scopes.append(("all processes over wall-clock time",
                           np.concatenate([s.values for _, s in present]),
                           np.concatenate([s.times for _, s in present])))
        for scope, values, times in scopes:
            d = drift(values, times)
            if d is not None:
                found.append({"case": key.case.id, "metric": key.metric, "scope": scope,
                              "rho": round(d.rho, 3), "p": d.p, "change": round(d.change, 4)})
    return found


def _case_fields(run_id: str, adapter: AdapterInfo, case: Case) -> dict[str, Any]:
    return {
        "run_id": run_id, "benchmark": case.benchmark, "case": case.id,
        "methodology": case.methodology, "encoding": case.encoding, "sync": case.sync,
        "layer": case.layer, "call": "",
        "implementation": case.implementation or adapter.implementation,
        "backend": adapter.backend, "adapter": adapter.device, "vendor": adapter.vendor,
        "adapter_type": adapter.adapter_type, "kernel": case.kernel,
        "elements": case.elements, "workgroup_size": case.workgroup_size,
        "variant": case.variant, "k": case.k,
    }


def samples_table(run_id: str, adapter: AdapterInfo, samples: GroupSamples, process: int,
                  run_start_ns: int, clock_offset_ns: int, cal: Calibration) -> pd.DataFrame:
    """One row per sample (warm-up included, by `phase`), plus one row per call of a breakdown
    sample (`call` set). Outliers are flagged, not dropped. `elapsed_ns` counts from the
    run's start on a clock shared by all processes."""
    rec = _records(samples)
    base = pd.DataFrame([_case_fields(run_id, adapter, c) for c in samples.cases])
    table = base.iloc[rec[:, 0]].reset_index(drop=True)
    table["n_dispatches"] = rec[:, 1]
    table["repetition"] = rec[:, 2]
    table["phase"] = np.where(rec[:, 3] == 1, "warmup", "measure")
    table["process"] = process
    table["elapsed_ns"] = rec[:, 4] + clock_offset_ns - run_start_ns
    table["wall_ns"] = rec[:, 5]
    gpu = pd.array([pd.NA] * len(table), dtype="Int64")
    stamped = [p for p, (i, *_) in enumerate(samples.records)
               if samples.cases[i].sync == TIMESTAMPS]
    if stamped and cal.tick_ns:
        gpu[stamped] = np.rint(gpu_times(samples, np.array(stamped), cal.tick_ns)).astype(int)
    table["gpu_ns"] = gpu
    split = [p for p in samples.parts
             if samples.cases[samples.records[p][0]].methodology == "breakdown"]
    if split:
        calls = table.iloc[np.repeat(split, len(CALLS))].reset_index(drop=True)
        calls["call"] = np.tile(CALLS, len(split))
        calls["wall_ns"] = np.array([samples.parts[p] for p in split], dtype=np.int64).ravel()
        table = pd.concat([table, calls], ignore_index=True)
    outlier = np.zeros(len(table), dtype=bool)
    measured = table["phase"] == "measure"
    for _, idx in table[measured].groupby(["case", "call", "n_dispatches"]).groups.items():
        outlier[idx] = outlier_flags(table.loc[idx, "wall_ns"].to_numpy())
    table["outlier"] = outlier
    return table[SAMPLE_COLUMNS]


def summary_table(run_id: str, adapter: AdapterInfo, group: Group, rows: list[Row],
                  runs: list[GroupSamples], sample_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per estimate: the case columns, CI, precision, spread between processes and how
    sampling ended. `process` is empty for estimates over all processes."""
    outliers = sample_rows[sample_rows["outlier"]].groupby(["case", "call", "process"]).size()
    table = []
    for r in rows:
        e, k = r.estimate, r.key
        these = runs if r.process is None else [runs[r.process]]
        table.append({
            **_case_fields(run_id, adapter, k.case),
            "call": k.call,
            "n_dispatches": pd.NA,
            "process": pd.NA if r.process is None else r.process,
            "metric": k.metric, "unit": k.unit, "estimator": k.estimator,
            "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
            "n_samples": e.n_samples, "rel_ci": e.rel_ci,
            "rel_spread_between": r.rel_spread_between,
            "processes": len(these),
            "rounds": sum(s.rounds for s in these),
            "warmup_rounds": sum(s.warmup_rounds for s in these),
            "stop": ",".join(sorted({s.stop for s in these})),
            "target_rel_ci": group.sampling.target_rel_ci,
            "outliers": int(sum(outliers.get((k.case.id, k.call, p), 0)
                                for p in ([r.process] if r.process is not None
                                          else range(len(runs))))),
        })
    frame = pd.DataFrame(table)
    frame["process"] = frame["process"].astype("Int64")
    return frame


#: Metric of the summary row that records a benchmark that failed (its message in
#: `estimator`), so that the summary says what is missing and why.
ERROR = "error"


def error_row(run_id: str, adapter: AdapterInfo, group: Group, message: str) -> pd.DataFrame:
    """One summary row for a group that produced no estimates."""
    fields = _case_fields(run_id, adapter, group.cases[0]) if group.cases else {}
    return pd.DataFrame([{**fields, "case": group.id, "metric": ERROR, "unit": "-",
                          "estimator": message[:2000], "value": float("nan"),
                          "process": pd.NA}]).astype({"process": "Int64"})


#: Metrics whose implementations are compared side by side (`ratio_to_fastest`).
COMPARED = ("latency_ns", "per_dispatch_ns")


def with_ratio_to_fastest(summary: pd.DataFrame) -> pd.DataFrame:
    """Adds `ratio_to_fastest`: per benchmark, elements, methodology and metric, each
    wrapper-layer estimate over all processes divided by the smallest among implementations
    and encodings (1.0 is the fastest way measured to do that work). Estimates under
    PRECISE_NS (a fused chain's per-dispatch slope) get none."""
    if summary.empty:
        return summary
    out = summary.copy()
    # A fused chain's slope (torch-compile) is ~0: it has no ratio, and is no denominator.
    mask = out["metric"].isin(COMPARED) & (out["layer"] == "wrapper") & out["process"].isna() \
        & (out["methodology"] != "breakdown") & (out["value"] > PRECISE_NS)
    best = out[mask].groupby(["benchmark", "elements", "methodology", "metric"])["value"]
    out["ratio_to_fastest"] = np.nan
    out.loc[mask, "ratio_to_fastest"] = out.loc[mask, "value"] / best.transform("min")
    return out
