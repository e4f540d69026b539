"""The CPU/GPU crossover as an estimate: per implementation and form, the smallest hidden
size H of the sweep from which it beats the CPU reference (issue 28).

Read from the `cpu_ratio` rows (this per-unit time / the CPU reference's, paired process by
process, with an interval over the pairs) at each H of the sweep:
- an H is *won* where the ratio's interval lies wholly below 1, *lost* wholly above 1, and
  *undecided* where it straddles 1 (or has no interval: one pair of processes);
- the estimate is the smallest H from which the point ratio stays below 1 up to the largest
  H; the interval runs from the smallest H from which no H is lost (the earliest crossover
  the data allow) to the smallest from which every H is won (the latest), `inf` where even
  the largest H is not won;
- no estimate (nan) where the point ratio is not below 1 at the largest H: "never in
  range"; an estimate at the smallest H is "at every H in range".
Only the sweep's own H are candidates: nothing is interpolated between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuoverhead import metrics

#: The rows a crossover is read from, and the metric of the crossover rows.
RATIO, METRIC = "cpu_ratio", "crossover_hidden"
#: What tells one line of the sweep from another (one implementation's form).
LINE = ["benchmark", "implementation", "family", "variant", "k", "sync", "encoding", "call"]


@dataclass(frozen=True)
class Crossing:
    """Where one line crosses below the CPU: `value` nan when never in range, `high` inf
    where even the largest H is not surely won; the H left undecided, and the sweep."""

    value: float
    low: float
    high: float
    undecided: tuple[int, ...]
    sizes: tuple[int, ...]

    @property
    def never(self) -> bool:
        return math.isnan(self.value)

    @property
    def always(self) -> bool:
        return self.value == self.sizes[0]


def crossing(sizes: list[int], value: list[float], low: list[float], high: list[float]
             ) -> Crossing:
    """The crossover of one line from its ratio (and interval) at each H, sizes ascending.
    A missing interval end counts as straddling 1."""
    lo = np.nan_to_num(np.asarray(low, float), nan=-math.inf)
    hi = np.nan_to_num(np.asarray(high, float), nan=math.inf)
    lost = lo > 1
    below = (np.asarray(value, float) < 1) & ~lost  # an estimate outside its interval: lost
    won = (hi < 1) & below  # so that low <= value <= high whatever the intervals hold
    undecided = tuple(int(h) for h, w, s in zip(sizes, won, lost, strict=True) if not (w or s))
    return Crossing(_from(sizes, below), _from(sizes, ~lost), _from(sizes, won, math.inf),
                    undecided, tuple(int(h) for h in sizes))


def _from(sizes: list[int], holds: np.ndarray, otherwise: float = math.nan) -> float:
    """The smallest H from which `holds` is true at every larger H of the sweep."""
    i = len(sizes)
    while i > 0 and holds[i - 1]:
        i -= 1
    return float(sizes[i]) if i < len(sizes) else otherwise


def lines(summary: pd.DataFrame) -> list[tuple[pd.Series, Crossing]]:
    """Each line's crossover, with the `cpu_ratio` row at its largest H (the line's columns)."""
    ratios = summary[(summary["metric"] == RATIO) & summary["process"].isna()]
    out = []
    for _, line in ratios.groupby(LINE, sort=False, dropna=False):
        line = line.sort_values("elements")
        out.append((line.iloc[-1], crossing(list(line["elements"]), list(line["value"]),
                                            list(line["ci_low"]), list(line["ci_high"]))))
    return out


def with_crossovers(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with a `crossover_hidden` row per line of `cpu_ratio` rows (none where
    there are none: a run without the CPU reference); its `elements` is the largest H of
    the sweep it was read from."""
    if summary.empty or RATIO not in set(summary["metric"]):
        return summary
    rows = [_row(last, c) for last, c in lines(summary)]
    return pd.concat([summary, pd.DataFrame(rows)], ignore_index=True)


def _row(last: pd.Series, c: Crossing) -> dict:
    undecided = ", ".join(map(str, c.undecided)) or "none"
    metric = metrics.of(METRIC)
    return {**last.to_dict(), "case": f"{last['benchmark']}/crossover/{last['variant']}/"
            f"k={last['k']}", "metric": METRIC, "unit": metric.unit,
            "hint": metric.hint, "better": metric.better, "value": c.value,
            "ci_low": c.low, "ci_high": c.high, "ci_level": math.nan, "rel_ci": math.nan,
            "ci_kind": "the sizes where the per-H intervals of cpu_ratio allow / require it",
            "rel_spread_between": math.nan, "rel_ci_within": math.nan,
            "estimator": f"smallest H from which {last['call']} / the CPU reference's stays "
            f"below 1, of H {c.sizes[0]}-{c.sizes[-1]}; undecided at H: {undecided}"}
