"""How far two runs on this machine may differ when nothing changed: measured by `selftest
--back-to-back`, kept a day, and allowed by `compare`.

A run's interval is over its processes, which share the minutes the run took: the state a lent
VM drifts through over longer stretches (its CPUs' speeds, the submission regime: issue 54)
moves a whole run, and two runs made one after the other differ by more than their processes
say. On the H200 VM two plain runs back to back compared 26 of 35 headline rows `same`. So
`selftest --back-to-back` measures the suite twice, one run after the other (not alternating
as the A/A's halves do), and the *allowance* is the smallest band around 1 that the
comparison's headline intervals reach but for 5% of them: per row the distance from its
ratio interval to 1 (0 where it holds 1), and their 95th percentile. `compare` then calls a
change only where the interval lies beyond that band, and `same` reaches as far past twice
the threshold (present/compare.py `verdict`). It is kept (gpu/kept.py) for this machine, the
suite and the adapters, a day (the VM's state moves by the hour), and `compare` says when it
uses one.
"""

from __future__ import annotations

import math
import platform

import numpy as np
import pandas as pd

from gpuoverhead.errors import UserError
from gpuoverhead.gpu import kept
from gpuoverhead.metrics import HEADLINE
from gpuoverhead.results.read import ResultSet

#: The share of the headline rows whose intervals the allowance must reach.
COVERED = 0.95
#: Allowances are rounded up to this step (a figure, not a fit to the last decimal).
STEP = 0.005
KEEP_S = 86400.0
FILE = "allowance.json"


def measured(table: pd.DataFrame) -> float:
    """The allowance a comparison of two runs that measured the same thing shows: the 95th
    percentile over its headline rows of how far each ratio interval lies from 1 (a
    fraction; 0 where COVERED of them hold 1)."""
    rows = table[table["metric"].isin(HEADLINE)]
    low, high = rows["ratio_low"].to_numpy(float), rows["ratio_high"].to_numpy(float)
    ok = np.isfinite(low) & np.isfinite(high) & (high > 0)
    if not ok.any():
        return math.nan
    off = np.maximum.reduce([np.zeros(ok.sum()), low[ok] - 1, 1 / high[ok] - 1])
    return math.ceil(float(np.quantile(off, COVERED)) / STEP - 1e-9) * STEP


def _key(run: ResultSet) -> dict:
    """What the allowance is kept under: this machine, the suite and the adapters."""
    return {"node": platform.node(), "suite": run.info.get("suite", {}).get("sha256"),
            "adapters": sorted({a.get("device", "?") for a in run.info.get("adapters", [])})}


def keep(run: ResultSet, allowance: float) -> None:
    """Keep `allowance` for runs like `run` (its suite, its adapters) on this machine."""
    if math.isfinite(allowance):
        kept.put(FILE, _key(run), {"allowance": allowance, "run": run.folder.name})


def kept_from(table: pd.DataFrame, run: ResultSet) -> str:
    """Measure the allowance of a back-to-back comparison, keep it for runs like `run`,
    and say so."""
    found = measured(table)
    keep(run, found)
    return (f"run to run on this machine: ±{found:.1%} (kept a day: compare allows it "
            "between runs of this suite here)")


def _read(value: object) -> tuple[float, str] | None:
    if isinstance(value, dict) and isinstance(value.get("allowance"), (int, float)) \
            and 0 <= value["allowance"] < 10 and isinstance(value.get("run"), str):
        return float(value["allowance"]), value["run"]
    return None


def kept_for(base: ResultSet, new: ResultSet) -> tuple[float, str] | None:
    """The allowance kept for runs like these two on this machine (both of one suite and one
    set of adapters), with the run it came from; None where none is."""
    key = _key(base)
    if key != _key(new):
        return None
    return kept.get(FILE, key, KEEP_S, _read)


def chosen(base: ResultSet, new: ResultSet, percent: float | None) -> tuple[float, str | None]:
    """The allowance compare judges with: `percent` where given (a UserError where it is not a
    finite percentage of 0 or more), else the one kept for runs like these (and the run it
    came from), else none."""
    if percent is not None:
        if not (math.isfinite(percent) and percent >= 0):
            raise UserError(f"--allowance must be a finite percentage of 0 or more, not {percent}")
        return percent / 100, None
    found = kept_for(base, new)
    return found if found else (0.0, None)
