"""From raw samples to tidy tables: the samples table and the summary of estimates.

Metrics (ns unless said otherwise), each a median over rounds with its 95% CI:
- `latency_ns`: one naive op (or one breakdown op, all its calls together);
- `per_dispatch_ns` / `fixed_ns`: slope and intercept of each round's Theil-Sen fit of a
  sequential case (the intercept is the fixed cost of the final wait);
- `inflation` (ratio): naive(wait) latency / the slope of a wrapper-layer sequential case;
  DESIGN.md's inflation is the one on the `submit` encoding;
- `gpu_ns` / `gpu_fixed_ns`: slope and intercept of GPU time (timestamp queries) against N;
- `ffi_floor_ns`: one trivial native call through the FFI, loop included;
- `call_ns` (with `call` set): one API call of a breakdown op, the clock's cost subtracted;
- per encoding, derived round by round from the layers' slopes:
  `api_ns` = native slope, else raw slope - calls per op x FFI floor;
  `python_ns` = wrapper slope - api; `closure_ns` = median(wrapper) - median(api) -
  median(python), ~0 when the parts add up; `ffi_check_ns` = (raw - calls x floor) - native,
  which validates the FFI correction where both layers ran.
Sampling stops when `latency_ns` and `per_dispatch_ns` are precise enough; the others are
reported with whatever precision that gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead.adapters import AdapterInfo
from gpuoverhead.layers.raw import CALLS_PER_OP
from gpuoverhead.methods.breakdown import CALLS
from gpuoverhead.sampling import GroupSamples
from gpuoverhead.stats import Estimate, median_ci, outlier_flags, round_fits
from gpuoverhead.suite import FFI_FLOOR, TIMESTAMPS, Case, Group

#: Metrics whose precision decides when sampling stops.
HEADLINE = ("latency_ns", "per_dispatch_ns")
#: GPU timers coarser than this are flagged as quantized.
QUANTIZED_NS = 1000.0

_CASE_COLUMNS = ["run_id", "benchmark", "case", "methodology", "encoding", "sync", "layer",
                 "call", "implementation", "backend", "adapter", "vendor", "adapter_type",
                 "kernel", "elements", "workgroup_size"]
SAMPLE_COLUMNS = _CASE_COLUMNS + ["n_dispatches", "repetition", "phase", "process",
                                  "elapsed_ns", "wall_ns", "gpu_ns", "outlier"]


@dataclass(frozen=True)
class Calibration:
    """Facts of the run that estimates need: the clock's own cost and the GPU tick."""

    timer_ns: float
    tick_ns: float | None


@dataclass(frozen=True)
class Row:
    case: Case
    metric: str
    unit: str
    estimator: str
    estimate: Estimate
    call: str = ""


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


def estimate_rows(samples: GroupSamples, cal: Calibration) -> list[Row]:
    """Every estimate of a group, computed from its measured (non-warm-up) samples."""
    rec = _records(samples)
    rows: list[Row] = []
    naive_walls: np.ndarray | None = None
    slopes: dict[tuple[str, str], tuple[Case, np.ndarray]] = {}
    floor: np.ndarray | None = None
    timer = gpu_timer(samples, cal.tick_ns) if cal.tick_ns else None
    for index, case in enumerate(samples.cases):
        pos = _measured(rec, index)
        walls = rec[pos, 5].astype(float)
        if case.methodology == "naive":
            rows.append(Row(case, "latency_ns", "ns", "median", median_ci(walls)))
            if case.sync == "wait":
                naive_walls = walls
        elif case.methodology == "breakdown":
            rows.append(Row(case, "latency_ns", "ns", "median", median_ci(walls)))
            parts = np.array([samples.parts[p] for p in pos], dtype=float).reshape(-1, len(CALLS))
            for j, call in enumerate(CALLS):
                rows.append(Row(case, "call_ns", "ns", "median - clock cost",
                                median_ci(parts[:, j] - cal.timer_ns), call))
        elif case.sync == TIMESTAMPS:
            if cal.tick_ns is None or timer is None:
                continue
            gpu = _by_round(gpu_times(samples, pos, cal.tick_ns), case)
            note = (f"round-median theil-sen (timer quantized to {timer.resolution_ns:.0f} ns)"
                    if timer.quantized else "round-median theil-sen")
            rows += _fit_rows(case, gpu, ("gpu_ns", "gpu_fixed_ns"), note)
        else:
            matrix = _by_round(walls, case)
            if case.methodology == FFI_FLOOR:
                rows += _fit_rows(case, matrix, ("ffi_floor_ns",), "round-median theil-sen")
                floor = round_fits(np.array(case.n_values), matrix)[0]
                continue
            rows += _fit_rows(case, matrix, ("per_dispatch_ns", "fixed_ns"),
                              "round-median theil-sen")
            slopes[(case.encoding, case.layer)] = (case,
                                                   round_fits(np.array(case.n_values), matrix)[0])
    if naive_walls is not None:
        for (_, layer), (case, s) in slopes.items():
            if layer == "wrapper":
                r = min(len(naive_walls), len(s))
                rows.append(Row(case, "inflation", "ratio", "round-median ratio",
                                median_ci(naive_walls[:r] / s[:r])))
    rows += _layer_rows(slopes, floor)
    return rows


def _fit_rows(case: Case, matrix: np.ndarray, metrics: tuple[str, ...], estimator: str
              ) -> list[Row]:
    fits = round_fits(np.array(case.n_values), matrix)
    return [Row(case, metric, "ns", estimator,
                _with_count(median_ci(values), matrix.size))
            for metric, values in zip(metrics, fits[: len(metrics)], strict=True)]


def _with_count(est: Estimate, count: int) -> Estimate:
    return Estimate(est.value, est.ci_low, est.ci_high, count)


def _layer_rows(slopes: dict[tuple[str, str], tuple[Case, np.ndarray]],
                floor: np.ndarray | None) -> list[Row]:
    """api, python, closure and FFI-check rows per encoding, paired round by round."""
    rows = []
    for (encoding, layer), (case, wrapper) in slopes.items():
        if layer != "wrapper":
            continue
        raw = slopes.get((encoding, "raw"), (None, None))[1]
        native = slopes.get((encoding, "native"), (None, None))[1]
        corrected = None
        calls = CALLS_PER_OP[encoding]
        if raw is not None and floor is not None:
            corrected = raw - calls * floor[: len(raw)]
        if native is not None:
            api, how = native, "native slope"
        elif corrected is not None:
            api, how = corrected, f"raw slope - {calls} x ffi floor (native layer absent)"
        else:
            continue
        python = wrapper - api
        rows.append(Row(case, "api_ns", "ns", how, median_ci(api)))
        rows.append(Row(case, "python_ns", "ns", "wrapper slope - api", median_ci(python)))
        closure = float(np.median(wrapper) - np.median(api) - np.median(python))
        rows.append(Row(case, "closure_ns", "ns", "median(wrapper) - median(api) - median(python)",
                        Estimate(closure, closure, closure, len(wrapper))))
        if native is not None and corrected is not None:
            raw_case = slopes[(encoding, "raw")][0]
            rows.append(Row(raw_case, "ffi_check_ns", "ns",
                            f"(raw slope - {calls} x ffi floor) - native slope",
                            median_ci(corrected - native)))
    return rows


def worst_rel_ci(samples: GroupSamples, cal: Calibration) -> float:
    """Largest relative CI half-width among the headline estimates (for the stopping rule)."""
    rels = [r.estimate.rel_ci for r in estimate_rows(samples, cal) if r.metric in HEADLINE]
    return max(rels, default=float("inf"))


def _case_fields(run_id: str, adapter: AdapterInfo, case: Case) -> dict[str, Any]:
    return {
        "run_id": run_id, "benchmark": case.benchmark, "case": case.id,
        "methodology": case.methodology, "encoding": case.encoding, "sync": case.sync,
        "layer": case.layer, "call": "", "implementation": adapter.implementation,
        "backend": adapter.backend, "adapter": adapter.device, "vendor": adapter.vendor,
        "adapter_type": adapter.adapter_type, "kernel": case.kernel,
        "elements": case.elements, "workgroup_size": case.workgroup_size,
    }


def samples_table(run_id: str, adapter: AdapterInfo, samples: GroupSamples,
                  run_start_ns: int, cal: Calibration) -> pd.DataFrame:
    """One row per sample (warm-up included, by `phase`), plus one row per call of a breakdown
    sample (`call` set). Outliers are flagged, not dropped."""
    rec = _records(samples)
    base = pd.DataFrame([_case_fields(run_id, adapter, c) for c in samples.cases])
    table = base.iloc[rec[:, 0]].reset_index(drop=True)
    table["n_dispatches"] = rec[:, 1]
    table["repetition"] = rec[:, 2]
    table["phase"] = np.where(rec[:, 3] == 1, "warmup", "measure")
    table["process"] = 0
    table["elapsed_ns"] = rec[:, 4] - run_start_ns
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


def summary_table(run_id: str, adapter: AdapterInfo, group: Group, samples: GroupSamples,
                  sample_rows: pd.DataFrame, cal: Calibration) -> pd.DataFrame:
    """One row per estimate, with the case columns, CI, precision and how sampling ended."""
    outliers = sample_rows[sample_rows["outlier"]].groupby(["case", "call"]).size()
    rows = []
    for r in estimate_rows(samples, cal):
        e = r.estimate
        rows.append({
            **_case_fields(run_id, adapter, r.case),
            "call": r.call,
            "n_dispatches": pd.NA,
            "metric": r.metric, "unit": r.unit, "estimator": r.estimator,
            "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
            "n_samples": e.n_samples, "rel_ci": e.rel_ci,
            "rounds": samples.rounds, "warmup_rounds": samples.warmup_rounds,
            "stop": samples.stop, "target_rel_ci": group.sampling.target_rel_ci,
            "outliers": int(outliers.get((r.case.id, r.call), 0)),
        })
    return pd.DataFrame(rows)
