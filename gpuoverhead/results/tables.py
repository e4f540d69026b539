"""The two tables of a run folder: one row per sample, one row per estimate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead import metrics
from gpuoverhead.analysis.combine import Row
from gpuoverhead.analysis.samples import (
    Calibration,
    GroupSamples,
    gpu_times,
    issue_times,
    issues,
    records,
)
from gpuoverhead.analysis.stats import outlier_flags
from gpuoverhead.cases import TIMESTAMPS, Case, Group
from gpuoverhead.records import CALLS, AdapterInfo
from gpuoverhead.results.columns import ERROR, SAMPLE_COLUMNS


def _case_fields(run_id: str, adapter: AdapterInfo, case: Case) -> dict[str, Any]:
    return {
        "run_id": run_id, "benchmark": case.benchmark, "case": case.id,
        "methodology": case.methodology, "encoding": case.encoding, "sync": case.sync,
        "layer": case.layer, "call": "",
        "implementation": case.implementation or adapter.implementation,
        "family": adapter.implementation,
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
    rec = records(samples)
    base = pd.DataFrame([_case_fields(run_id, adapter, c) for c in samples.cases])
    table = base.iloc[rec[:, 0]].reset_index(drop=True)
    table["n_dispatches"] = rec[:, 1]
    table["repetition"] = rec[:, 2]
    table["phase"] = np.where(rec[:, 3] == 1, "warmup", "measure")
    table["process"] = process
    table["elapsed_ns"] = rec[:, 4] + clock_offset_ns - run_start_ns
    table["wall_ns"] = rec[:, 5]
    table["issue_ns"] = _column(len(table), [
        p for p, (i, *_) in enumerate(samples.records) if issues(samples.cases[i])],
        lambda pos: issue_times(samples, pos))
    stamped = [p for p, (i, *_) in enumerate(samples.records)
               if samples.cases[i].sync == TIMESTAMPS] if cal.tick_ns else []
    table["gpu_ns"] = _column(len(table), stamped,
                              lambda pos: gpu_times(samples, pos, cal.tick_ns or 1.0))
    split = [p for p in samples.parts
             if samples.cases[samples.records[p][0]].methodology == "breakdown"]
    if split:
        calls = table.iloc[np.repeat(split, len(CALLS))].reset_index(drop=True)
        calls["call"] = np.tile(CALLS, len(split))
        calls["wall_ns"] = np.array([samples.parts[p] for p in split], dtype=np.int64).ravel()
        table = pd.concat([table, calls], ignore_index=True)
    outlier = np.zeros(len(table), dtype=bool)
    measured = (table["phase"] == "measure").to_numpy()
    wall, where = table["wall_ns"].to_numpy(), np.flatnonzero(measured)
    for found in table[measured].groupby(["case", "call", "n_dispatches"]).indices.values():
        rows = where[found]  # positions in `table`: 4-8x faster than a label lookup a group
        outlier[rows] = outlier_flags(wall[rows])
    table["outlier"] = outlier
    return table[SAMPLE_COLUMNS]


def _column(length: int, positions: list[int],
            values: Callable[[np.ndarray], np.ndarray]) -> pd.arrays.IntegerArray:
    """An integer ns column, empty (NA) except at `positions`, and where a value is NaN."""
    column = pd.array([pd.NA] * length, dtype="Int64")
    if positions:
        found = values(np.array(positions))
        ok = np.isfinite(found)
        column[np.array(positions)[ok]] = np.rint(found[ok]).astype(np.int64)
    return column


def summary_table(run_id: str, adapter: AdapterInfo, group: Group, rows: list[Row],
                  runs: list[GroupSamples], numbers: list[int],
                  sample_rows: pd.DataFrame | None) -> pd.DataFrame:
    """One row per estimate: the case columns, CI, precision, spread between processes and how
    sampling ended. `process` is empty for estimates over all processes, else the number of
    the process (`numbers`, as the samples and run.json count them: a run's processes that
    were left out, or an A/A run's other half, are not counted in a row's position); an
    estimate over processes counts those it is over (`Row.over`); outliers are counted from
    `sample_rows` where given."""
    outliers = pd.Series(dtype=int) if sample_rows is None else \
        sample_rows[sample_rows["outlier"]].groupby(["case", "call", "process"]).size()
    table = []
    for r in rows:
        e, k = r.estimate, r.key
        places = ([r.process] if r.process is not None else
                  range(len(runs)) if r.over is None else r.over)
        these = [runs[p] for p in places]
        table.append({
            **_case_fields(run_id, adapter, k.case),
            "call": k.call,
            "n_dispatches": pd.NA,
            "process": pd.NA if r.process is None else numbers[r.process],
            "metric": k.metric, "unit": k.unit, "hint": metrics.of(k.metric).hint,
            "better": metrics.of(k.metric).better, "estimator": k.estimator,
            "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
            "ci_level": e.level, "ci_kind": e.kind, "bound": r.bound,
            "n_samples": e.n_samples, "rel_ci": e.rel_ci,
            "rel_spread_between": r.rel_spread_between,
            "rel_ci_within": r.rel_ci_within,
            "processes": len(these),
            "rounds": sum(s.rounds for s in these),
            "warmup_rounds": sum(s.warmup_rounds for s in these),
            "stop": ",".join(sorted({s.stop for s in these})),
            "target_rel_ci": group.sampling.target_rel_ci,
            "outliers": int(sum(outliers.get((k.case.id, k.call, numbers[p]), 0)
                                for p in places)),
            "modes": r.modes.said() if r.modes is not None and r.process is None else "",
            "regime": group.regime, "settled_s": r.settled_s,
        })
    frame = pd.DataFrame(table)
    return frame.astype({"process": "Int64", "n_dispatches": "Int64"})


def error_row(run_id: str, adapter: AdapterInfo, group: Group, message: str,
              case: Case | None = None, metric: str = ERROR) -> pd.DataFrame:
    """One summary row for a group that produced no estimates (or for one of its cases,
    left out: a compile that failed); `metric` SKIPPED where a time limit left it out."""
    first = case or (group.cases[0] if group.cases else None)
    fields = _case_fields(run_id, adapter, first) if first is not None else {}
    return pd.DataFrame([{**fields, "case": case.id if case else group.id, "metric": metric,
                          "unit": "-",
                          "hint": "error", "better": "none",
                          "estimator": message[:2000], "value": float("nan"),
                          "process": pd.NA, "modes": "", "regime": group.regime}]
                        ).astype({"process": "Int64"})
