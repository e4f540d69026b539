"""Machine-readable results in the formats CI services already read: Bencher Metric Format
(`{benchmark: {measure: {value, lower_value, upper_value}}}`), github-action-benchmark's
`customSmallerIsBetter` / `customBiggerIsBetter` arrays, and a comparison as JSON. Their
JSON Schemas are docs/schemas/*.schema.json (shown in docs/schema.md).

Which direction is better comes from each figure's metric (gpuoverhead/metrics.py), never
from its name. Every figure is a non-negative quantity (a time, a rate, a ratio, a share, a
size): a bound or value below zero (a time below the clock's resolution, an interval wider
than its estimate) is written as 0 and said so in the caller's notes and the entry's
`extra`, never clipped silently; the report's CSV keeps the stored bounds.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from gpuoverhead import metrics
from gpuoverhead.present.report import Figure, Report, row_notes

#: github-action-benchmark's tool names, by the metric's better direction.
GHAB_TOOLS = {"lower": "customSmallerIsBetter", "higher": "customBiggerIsBetter"}


def _finite(v: Any) -> float | None:
    return float(v) if v is not None and not pd.isna(v) and math.isfinite(v) else None


def _entries(report: Report, notes: list[str]) -> list[dict[str, Any]]:
    """Each finite figure of each row: its names, unit, direction, value and interval
    (None where it has none), with a note for whatever was raised to 0 or left out."""
    found = []
    for i, row in enumerate(report.table.to_dict("records")):
        bench = "/".join([report.benchmark, str(report.elements), row["backend"],
                          row["implementation"], row["adapter"]])
        for f in report.figures:
            entry = _entry(f, row, f"{bench}, {f.label}", notes)
            if entry is not None:
                found.append({**entry, "benchmark": bench, "figure": f.label,
                              "extra": row_notes(report, i) + entry["extra"]})
    return found


def _entry(f: Figure, row: dict[str, Any], where: str, notes: list[str]
           ) -> dict[str, Any] | None:
    """One cell of the table as numbers that are never below zero, or None where it is
    empty or unbounded (a note says which)."""
    value = row[f.label]
    if pd.isna(value):
        return None
    if not math.isfinite(value):
        notes.append(f"{where}: the estimate is unbounded ({value}), left out of the JSON")
        return None
    level = row[f"{f.label} level"]
    has_interval = pd.isna(level) or level > 0  # NaN: an interval of unknown coverage
    bounds = [_finite(row[f"{f.label} {s}"]) if has_interval else None for s in ("low", "high")]
    unit = metrics.of(f.metric).unit
    below = [f"{name} {v:.6g} {unit}" for name, v in
             zip(("estimate", "lower bound", "upper bound"), [value, *bounds], strict=True)
             if v is not None and v < 0]
    extra = []
    if below:
        extra.append(f"stored {', '.join(below)}: below zero, written as 0 (below the "
                     "measurement's resolution)")
        notes.append(f"{where}: {extra[0]}")
    low, high = (None if b is None else max(b, 0.0) for b in bounds)
    return {"unit": unit, "better": metrics.of(f.metric).better,
            "value": max(float(value), 0.0), "low": low, "high": high,
            "level": None if pd.isna(level) else float(level), "extra": extra}


def bencher(report: Report, notes: list[str]) -> dict[str, Any]:
    """Bencher Metric Format: one benchmark per row, one measure per figure named with its
    unit (`submit [ns]`); the interval as lower_value/upper_value where there is one."""
    out: dict[str, dict[str, Any]] = {}
    for e in _entries(report, notes):
        measure = {"value": e["value"]}
        if e["low"] is not None and e["high"] is not None:
            measure |= {"lower_value": e["low"], "upper_value": e["high"]}
        out.setdefault(e["benchmark"], {})[f"{e['figure']} [{e['unit']}]"] = measure
    return out


def ghab(report: Report, notes: list[str]) -> dict[str, list[dict[str, Any]]]:
    """github-action-benchmark's two arrays, each for one `tool:` of the action (`jq
    .customSmallerIsBetter`); a figure with no better direction (inflation) is in neither,
    and a note says so."""
    out: dict[str, list[dict[str, Any]]] = {tool: [] for tool in GHAB_TOOLS.values()}
    undirected = set()
    for e in _entries(report, notes):
        if e["better"] not in GHAB_TOOLS:
            undirected.add(e["figure"])
            continue
        entry = {"name": f"{e['benchmark']}: {e['figure']}", "unit": e["unit"],
                 "value": e["value"]}
        if e["low"] is not None and e["high"] is not None:
            coverage = " (coverage unknown)" if e["level"] is None else f" ({e['level']:.0%})"
            entry["range"] = f"{e['low']:.6g} to {e['high']:.6g}{coverage}"
        if e["extra"]:
            entry["extra"] = "\n".join(e["extra"])
        out[GHAB_TOOLS[e["better"]]].append(entry)
    if undirected:
        notes.append(f"{', '.join(sorted(undirected))}: no better direction (metrics.py), "
                     "left out of github-action-benchmark's arrays")
    return out


def comparison(table: pd.DataFrame, base: str, new: str, threshold: float,
               differences: list[str]) -> dict[str, Any]:
    """`compare --json`: the two runs, the threshold, what makes them less comparable, the
    verdict counts and one object per estimate (null for what is not a number)."""
    rows = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
             for k, v in record.items()} for record in table.to_dict("records")]
    for row in rows:
        row["elements"] = int(row["elements"])
    return {"base": base, "new": new, "threshold": threshold, "differences": differences,
            "verdicts": {str(k): int(v) for k, v in table["verdict"].value_counts().items()},
            "estimates": rows}


def dumps(doc: Any) -> str:
    """JSON as the schemas describe it: no NaN or Infinity (which JSON does not have)."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
