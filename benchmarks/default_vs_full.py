"""The default suite's headline figures beside the full suite's: `python
benchmarks/default_vs_full.py DEFAULT_RUN FULL_RUN...` prints, per implementation and
measure of the empty kernel, both estimates with their 95% intervals and whether the
intervals overlap (the two were measured minutes apart, not interleaved: see docs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

#: The figures the console's first table leads with, per encoding where there is one.
HEADLINE = ("latency_ns", "per_dispatch_ns", "cpu_per_dispatch_ns", "api_ns", "python_ns",
            "gpu_ns")


def headline(folder: Path) -> pd.DataFrame:
    table = pd.read_parquet(folder / "summary.parquet")
    rows = table[table.process.isna() & table.metric.isin(HEADLINE)
                 & (table.benchmark == "empty") & (table.variant.fillna("") == "")]
    return rows.set_index(["implementation", "case", "metric"])[["value", "ci_low", "ci_high"]]


def _us(row: pd.Series, side: str) -> str:
    """'estimate [low-high]' in µs of one side of a joined row."""
    low, value, high = (row[f"{c}{side}"] / 1e3 for c in ("ci_low", "value", "ci_high"))
    return f"{value:.2f} [{low:.2f}-{high:.2f}]"


def main(default: Path, fulls: list[Path]) -> None:
    new = headline(default)
    old = pd.concat([headline(f) for f in fulls])
    both = new.add_suffix("_default").join(old.add_suffix("_full"), how="inner")
    overlap = ((both.ci_low_default <= both.ci_high_full)
               & (both.ci_low_full <= both.ci_high_default))
    print(f"{'implementation':16s} {'case':48s} {'metric':20s} {'default (µs)':>22s} "
          f"{'full (µs)':>22s}  overlap")
    for (impl, case, metric), r in both.iterrows():
        d, f = _us(r, "_default"), _us(r, "_full")
        print(f"{impl:16s} {case.removeprefix('empty/elements=1/'):48s} {metric:20s} "
              f"{d:>22s} {f:>22s}  {'yes' if overlap[(impl, case, metric)] else 'NO'}")
    print(f"{int(overlap.sum())} of {len(overlap)} intervals overlap")


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
