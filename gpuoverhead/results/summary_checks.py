"""What a summary table read from a run folder must hold before any reader trusts it: the
columns every reader needs, numbers where numbers go, text in the key columns, and one unit
a metric (a hand-edited or foreign table otherwise compares as if it were ours)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from gpuoverhead.errors import UserError

#: Summary columns every reader needs, and those of them that hold numbers.
_REQUIRED = ("benchmark", "case", "implementation", "elements", "methodology", "metric",
             "value", "ci_low", "ci_high")
_NUMERIC = ("elements", "value", "ci_low", "ci_high")
#: Columns that hold numbers where present (older sets lack them), and text (keys).
_NUMERIC_IF_ANY = ("rel_spread_between", "rel_ci_within", "ci_level")
_TEXT = ("case", "implementation", "metric", "call", "cpu_state", "regime", "estimator")


def check_columns(summary: pd.DataFrame, where: Path) -> None:
    """The columns every reader needs, of the kinds they read (a UserError naming the file)."""
    missing = [c for c in _REQUIRED if c not in summary]
    if missing:
        raise UserError(f"{where}: no {', '.join(missing)} column(s): not a gpuoverhead summary")
    wrong = [c for c in (*_NUMERIC, *(c for c in _NUMERIC_IF_ANY if c in summary))
             if len(summary) and not pd.api.types.is_numeric_dtype(summary[c])]
    if wrong:
        raise UserError(f"{where}: column(s) {', '.join(wrong)} hold text, not numbers")
    odd = [c for c in _TEXT if c in summary and not _texts(summary[c])]
    if odd:
        raise UserError(f"{where}: column(s) {', '.join(odd)} hold other than text")


def _texts(values: pd.Series) -> bool:
    """Every value text, None or NaN: from the column's type where it says so (pandas 3's
    `str`, gaps NaN), a Python call a value only where it does not (a few ms a table)."""
    kind, types = values.dtype, pd.api.types
    if isinstance(kind, pd.StringDtype) and kind.na_value is not pd.NA or (
            types.is_object_dtype(kind) and types.infer_dtype(values, skipna=False) == "string"):
        return True
    return bool(values.map(lambda v: v is None or isinstance(v, str)
                           or (isinstance(v, float) and math.isnan(v))).all())


def check_units(summary: pd.DataFrame, where: Path) -> None:
    """Every metric in one unit, and the `_ns` metrics in ns: numbers in other units (a
    hand-edited or foreign table) would be compared as if they were the same."""
    if not {"metric", "unit"} <= set(summary.columns):
        raise UserError(f"{where}: no metric/unit columns: not a gpuoverhead summary")
    check_pairs(zip(summary["metric"].to_numpy(), summary["unit"].to_numpy(), strict=True),
                where)


def check_pairs(pairs: Iterable[tuple[Any, Any]], where: Path) -> None:
    """check_units of (metric, unit) pairs (a run has a few: each is looked at once)."""
    units: dict[Any, list[Any]] = {}
    for metric, unit in dict.fromkeys(pairs):
        units.setdefault(metric, []).append(unit)
    for metric, found in units.items():
        if len(found) > 1 or (str(metric).endswith("_ns") and found[0] != "ns"):
            raise UserError(f"{where}: mixed units: metric {metric!r} comes in "
                            f"{', '.join(map(str, found))}; gpuoverhead writes it in "
                            f"{'ns' if str(metric).endswith('_ns') else 'one unit'}")
