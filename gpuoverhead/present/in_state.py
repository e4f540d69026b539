"""An estimate of two runs judged where both measured it alike: where their regimes name
different CPU states (one run kept a state, the other the other one or both), in a state
both measured, from the headline row where that is the run's state, else from its
`states.parquet` (run/cpu_split.py `beside`); where they share none, or measured another
submission regime, not at all (`compare` calls it unsure): a ratio of two states' levels is
no change. On the H200 two plain runs back to back took PyTorch's figures from the slow
state's rounds and from every round (six-processes-3, 2026-11-29): 3 of 35 headline rows
unsure that way; in the fast state, which both measured, they agreed (34 of 35 `same`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuoverhead.analysis import states
from gpuoverhead.results.read import ResultSet


def by_key(per_process: pd.DataFrame, key: list[str]) -> dict[tuple, np.ndarray]:
    """Each estimate's per-process values, by `key` (empty for a run of one process)."""
    if per_process.empty:
        return {}
    values = per_process["value"].to_numpy(float)  # positions per key: no frame per group
    return {k: values[at] for k, at in
            per_process.groupby(key, dropna=False, sort=False).indices.items()}


#: An estimate's figures in one run: value, interval, spread between its processes, and
#: how it was made (a median, or a trimmed mean for two modes: compare.py `_one_sided`).
FIGURES = ("value", "ci_low", "ci_high", "rel_spread_between", "estimator", "modes")
#: How `regimes` starts where two runs' CPU states differed and the estimate was judged in a
#: state both measured.
IN_STATE = "compared in the "


@dataclass(frozen=True)
class Sides:
    """What an estimate is judged on: each run's figures and process values (in `state`
    where the runs' CPU states differed), what `regimes` says, and whether a verdict may
    be given."""

    base: dict[str, float]
    new: dict[str, float]
    base_values: np.ndarray | None
    new_values: np.ndarray | None
    regimes: str = ""
    comparable: bool = True
    state: str | None = None


Beside = dict[tuple, tuple[dict[str, float], np.ndarray | None]]


def in_states(rs: ResultSet, key: list[str]) -> Beside:
    """A run's estimates in a CPU state beside its headline's (`states.parquet`), by `key`'s
    values and the state: figures and process values."""
    table = rs.states()
    if table.empty:
        return {}
    over = table[table["process"].isna()]
    values = by_key(table[table["process"].notna()], [*key, "cpu_state"])
    return {(*(r[k] for k in key), r["cpu_state"]): (
        {k: r.get(k) for k in FIGURES},
        values.get((*(r[k] for k in key), r["cpu_state"])))
        for r in over.to_dict("records")}


def sides_of(row: dict, key: tuple, values: tuple[np.ndarray | None, np.ndarray | None],
             beside: tuple[Beside, Beside]) -> Sides:
    """An estimate's two sides: the headline rows where the runs measured it in one regime;
    where their CPU states differ (one kept a state, the other the other one or both), in a
    state both measured (the base's kept one first, then the new's, then the slow, the
    fast), from the headline or `states.parquet`; where none is, or the submission regimes
    differ, the headline rows, unsure."""
    sides = [{k: row.get(f"{k}_{side}") for k in FIGURES} for side in ("base", "new")]
    said = apart(row)
    if not said:
        return Sides(*sides, *values)
    (b, b_state), (n, n_state) = (states.split_regime(row[f"regime_{side}"])
                                  for side in ("base", "new"))
    own = [state if state in (states.FAST, states.SLOW) else None for state in (b_state,
                                                                                n_state)]
    has = [{s for s in (states.FAST, states.SLOW) if s == own[i] or (*key, s) in beside[i]}
           for i in (0, 1)]
    common = next((s for s in (*own, states.SLOW, states.FAST)
                   if s is not None and s in has[0] and s in has[1]), None)
    if b != n or common is None:
        return Sides(*sides, *values, said, False)
    found = [(sides[i], values[i]) if own[i] == common else beside[i][(*key, common)]
             for i in (0, 1)]
    return Sides(found[0][0], found[1][0], found[0][1], found[1][1],
                 f"{IN_STATE}{common} state: base {b_state}, new {n_state}", True, common)


def apart(row: dict) -> str:
    """'BASE vs NEW' where the runs measured an estimate in different regimes (another
    submission regime, or each a CPU state the other did not name), else "". A regime that
    names no state (the state moved none of the job's figures) compares with any."""
    base, new = row.get("regime_base"), row.get("regime_new")
    if not (isinstance(base, str) and isinstance(new, str)) or base == new:
        return ""
    (b, b_state), (n, n_state) = states.split_regime(base), states.split_regime(new)
    if b == n and None in (b_state, n_state):
        return ""
    return f"{base} vs {new}"
