"""From raw samples to tidy tables: the samples table and the summary of estimates.

Metrics (all in ns unless said otherwise):
- `latency_ns`: naive cases, median latency of one op;
- `per_dispatch_ns`: sequential cases, median over rounds of each round's Theil-Sen slope;
- `fixed_ns`: sequential cases, the same for the intercept (the fixed cost of the final wait);
- `inflation` (ratio), on each sequential case: naive(wait) latency / that case's slope, the
  median of per-round ratios. DESIGN.md's inflation is the one on the `submit` encoding.
Sampling stops when `latency_ns` and `per_dispatch_ns` are precise enough; the others are
derived and reported with whatever precision that gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead.adapters import AdapterInfo
from gpuoverhead.sampling import GroupSamples
from gpuoverhead.stats import Estimate, median_ci, outlier_flags, round_fits
from gpuoverhead.suite import Case, Group

#: Metrics whose precision decides when sampling stops.
HEADLINE = ("latency_ns", "per_dispatch_ns")

_CASE_COLUMNS = ["run_id", "benchmark", "case", "methodology", "encoding", "sync", "layer",
                 "call", "implementation", "backend", "adapter", "vendor", "adapter_type",
                 "kernel", "elements", "workgroup_size"]


@dataclass(frozen=True)
class Row:
    case: Case
    metric: str
    unit: str
    estimator: str
    estimate: Estimate


def _records(samples: GroupSamples) -> np.ndarray:
    return np.array(samples.records, dtype=np.int64).reshape(-1, 6)


def _round_matrix(rec: np.ndarray, index: int, case: Case) -> np.ndarray:
    """Measured walls of a sequential case as rounds x N (complete rounds only)."""
    rows = rec[(rec[:, 0] == index) & (rec[:, 3] == 0)]
    rows = rows[np.lexsort((rows[:, 1], rows[:, 2]))]
    k = len(case.n_values)
    return rows[: len(rows) // k * k, 5].reshape(-1, k).astype(float)


def estimate_rows(samples: GroupSamples) -> list[Row]:
    """Every estimate of a group, computed from its measured (non-warm-up) samples."""
    rec = _records(samples)
    rows: list[Row] = []
    per_round: dict[Case, np.ndarray] = {}
    for index, case in enumerate(samples.cases):
        if case.methodology == "naive":
            walls = rec[(rec[:, 0] == index) & (rec[:, 3] == 0), 5].astype(float)
            rows.append(Row(case, "latency_ns", "ns", "median", median_ci(walls)))
            per_round[case] = walls
            continue
        walls = _round_matrix(rec, index, case)
        slopes, intercepts = round_fits(np.array(case.n_values), walls)
        count = walls.size
        for metric, values in (("per_dispatch_ns", slopes), ("fixed_ns", intercepts)):
            est = median_ci(values)
            rows.append(Row(case, metric, "ns", "round-median theil-sen",
                            Estimate(est.value, est.ci_low, est.ci_high, count)))
        per_round[case] = slopes
    naive = next((w for c, w in per_round.items() if c.methodology == "naive" and c.sync == "wait"),
                 None)
    if naive is not None:
        for case, slopes in per_round.items():
            if case.methodology == "sequential":
                r = min(len(naive), len(slopes))
                ratio = median_ci(naive[:r] / slopes[:r])
                rows.append(Row(case, "inflation", "ratio", "round-median ratio", ratio))
    return rows


def worst_rel_ci(samples: GroupSamples) -> float:
    """Largest relative CI half-width among the headline estimates (for the stopping rule)."""
    rels = [r.estimate.rel_ci for r in estimate_rows(samples) if r.metric in HEADLINE]
    return max(rels, default=float("inf"))


def _case_fields(run_id: str, adapter: AdapterInfo, case: Case) -> dict[str, Any]:
    return {
        "run_id": run_id, "benchmark": case.benchmark, "case": case.id,
        "methodology": case.methodology, "encoding": case.encoding, "sync": case.sync,
        "layer": "wrapper", "call": "", "implementation": adapter.implementation,
        "backend": adapter.backend, "adapter": adapter.device, "vendor": adapter.vendor,
        "adapter_type": adapter.adapter_type, "kernel": case.kernel,
        "elements": case.elements, "workgroup_size": case.workgroup_size,
    }


def samples_table(run_id: str, adapter: AdapterInfo, samples: GroupSamples,
                  run_start_ns: int) -> pd.DataFrame:
    """One row per sample (warm-up included, flagged by `phase`), outliers flagged not dropped."""
    rec = _records(samples)
    base = pd.DataFrame([_case_fields(run_id, adapter, c) for c in samples.cases])
    table = base.iloc[rec[:, 0]].reset_index(drop=True)
    table["n_dispatches"] = rec[:, 1]
    table["repetition"] = rec[:, 2]
    table["phase"] = np.where(rec[:, 3] == 1, "warmup", "measure")
    table["process"] = 0
    table["elapsed_ns"] = rec[:, 4] - run_start_ns
    table["wall_ns"] = rec[:, 5]
    table["gpu_ns"] = pd.array([pd.NA] * len(table), dtype="Int64")
    outlier = np.zeros(len(table), dtype=bool)
    measured = table["phase"] == "measure"
    for _, idx in table[measured].groupby(["case", "n_dispatches"]).groups.items():
        outlier[idx] = outlier_flags(table.loc[idx, "wall_ns"].to_numpy())
    table["outlier"] = outlier
    return table


def summary_table(run_id: str, adapter: AdapterInfo, group: Group, samples: GroupSamples,
                  sample_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per estimate, with the case columns, CI, precision and how sampling ended."""
    outliers = sample_rows[sample_rows["outlier"]].groupby("case").size()
    rows = []
    for r in estimate_rows(samples):
        e = r.estimate
        rows.append({
            **_case_fields(run_id, adapter, r.case),
            "n_dispatches": pd.NA,
            "metric": r.metric, "unit": r.unit, "estimator": r.estimator,
            "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
            "n_samples": e.n_samples, "rel_ci": e.rel_ci,
            "rounds": samples.rounds, "warmup_rounds": samples.warmup_rounds,
            "stop": samples.stop, "target_rel_ci": group.sampling.target_rel_ci,
            "outliers": int(outliers.get(r.case.id, 0)),
        })
    return pd.DataFrame(rows)


SAMPLE_COLUMNS = _CASE_COLUMNS + ["n_dispatches", "repetition", "phase", "process",
                                  "elapsed_ns", "wall_ns", "gpu_ns", "outlier"]
