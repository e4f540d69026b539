"""The CPU/GPU crossover as an estimate: per implementation and form, the smallest hidden
size H of the sweep from which it beats the CPU reference (issue 28).

Read from the `cpu_ratio` rows (this per-unit time / the CPU reference's, paired process by
process, with an interval over the pairs) at each H of the sweep:
- an H is *won* where the ratio's interval lies wholly below 1, *lost* wholly above 1, and
  *undecided* where it straddles 1 (or has no interval: one pair of processes);
- the estimate is the smallest H from which the point ratio stays below 1 up to the largest
  H, claimed only where some H from there on is won (a win needs an interval that excludes
  a tie); the interval runs from the smallest H from which no H is lost (the earliest
  crossover the data allow, `inf` where the largest H is lost) to the smallest from which
  every H is won (the latest), `inf` where even the largest H is not won;
- no estimate (nan) otherwise: lost at every H (the crossover lies beyond the largest H
  measured), or not decided (no win from which the ratio stays below 1). Won already at
  the smallest H, the crossover is censored: at or below the smallest H measured.
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
    """Where one line crosses below the CPU: `value` nan where no win decides it, `high`
    inf where even the largest H is not surely won; the H won, lost and left undecided,
    so that what is said of it can say which H back it; and the sweep."""

    value: float
    low: float
    high: float
    won: tuple[int, ...]
    lost: tuple[int, ...]
    undecided: tuple[int, ...]
    sizes: tuple[int, ...]

    @property
    def found(self) -> bool:
        """A crossover is claimed: a win decides it."""
        return not math.isnan(self.value)

    @property
    def censored(self) -> bool:
        """Won already at the smallest H measured (and from there on below 1): the
        crossover is there or below, where the sweep does not look."""
        return self.value == self.sizes[0] and self.sizes[0] in self.won

    @property
    def outcome(self) -> str:
        """What may be said: 'found' (a crossover a win decides), 'beyond' (lost at every
        H: the crossover is beyond the largest H measured) or 'not decided'."""
        if self.found:
            return "found"
        return "beyond" if len(self.lost) == len(self.sizes) else "not decided"

    @property
    def span(self) -> str:
        """The H measured, with no range of one H: 'in H 16–4096' or 'at H = 16'."""
        first, last = self.sizes[0], self.sizes[-1]
        return f"at H = {first}" if first == last else f"in H {first}–{last}"


def crossing(sizes: list[int], value: list[float], low: list[float], high: list[float]
             ) -> Crossing:
    """The crossover of one line from its ratio (and interval) at each H, sizes ascending.
    A missing interval end counts as straddling 1."""
    lo = np.nan_to_num(np.asarray(low, float), nan=-math.inf)
    hi = np.nan_to_num(np.asarray(high, float), nan=math.inf)
    lost = lo > 1
    below = (np.asarray(value, float) < 1) & ~lost  # an estimate outside its interval: lost
    won = (hi < 1) & below  # so that low <= value <= high whatever the intervals hold
    value = _from(sizes, below)
    if not any(w and h >= value for h, w in zip(sizes, won, strict=True)):
        value = math.nan  # no interval excludes a tie from there on: nothing is decided
    return Crossing(value, _from(sizes, ~lost, math.inf), _from(sizes, won, math.inf),
                    _where(sizes, won), _where(sizes, lost), _where(sizes, ~(won | lost)),
                    tuple(int(h) for h in sizes))


def _where(sizes: list[int], holds: np.ndarray) -> tuple[int, ...]:
    """The H at which `holds` is true."""
    return tuple(int(h) for h, x in zip(sizes, holds, strict=True) if x)


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


#: How a `crossover_hidden` row's value was read, by the crossing's outcome: where none is
#: claimed the value is nan and the estimator says why, so no reader takes it as a figure.
_ESTIMATORS = {
    "found": "smallest H from which the ratio stays below 1, its interval wholly below 1 at "
             "some H from there",
    "beyond": "none, beyond the largest H measured: the ratio's interval lies wholly above 1 "
              "at every H",
    "not decided": "none, not decided: no H from which the ratio stays below 1 has its "
                   "interval wholly below 1"}


def _row(last: pd.Series, c: Crossing) -> dict:
    undecided = ", ".join(map(str, c.undecided)) or "none"
    metric = metrics.of(METRIC)
    return {**last.to_dict(), "case": f"{last['benchmark']}/crossover/{last['variant']}/"
            f"k={last['k']}", "metric": METRIC, "unit": metric.unit,
            "hint": metric.hint, "better": metric.better, "value": c.value,
            "ci_low": c.low, "ci_high": c.high, "ci_level": math.nan, "rel_ci": math.nan,
            "ci_kind": "the sizes where the per-H intervals of cpu_ratio allow / require it",
            "rel_spread_between": math.nan, "rel_ci_within": math.nan,
            "estimator": f"{_ESTIMATORS[c.outcome]} (ratio: {last['call']} / the CPU "
            f"reference's), {c.span}; undecided at H: {undecided}"}
