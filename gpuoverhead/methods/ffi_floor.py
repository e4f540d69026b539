"""FFI floor: the cost of one trivial native call through the binding's FFI, the unit that
`raw` layer costs are corrected by (`api` = raw issue slope - calls x floor, where the C
loop is absent)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpuoverhead.analysis.samples import by_round
from gpuoverhead.analysis.series import Out, View, add_fits
from gpuoverhead.cases import FFI_FLOOR, Case
from gpuoverhead.gpu.layers.raw import ffi_floor
from gpuoverhead.gpu.targets import Target

#: Not a suite's methodology: it comes with the `raw` layer, which it corrects.
SUITE_NAME = None
#: The floor's sweep is the N sweep times this: one call costs far less than a dispatch.
CALLS_PER_N = 16


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """The floor beside the raw layer's sequential cases, whose split it corrects."""
    if "raw" not in cfg["layers"] or "sequential" not in cfg["methodologies"]:
        return []
    return [replace(base, methodology=FFI_FLOOR, encoding="-", sync="-", layer="raw",
                    n_values=tuple(n * CALLS_PER_N for n in base.n_values))]


def claims(case: Case) -> bool:
    return case.methodology == FFI_FLOOR


def operation(target: Target, case: Case, native: object = None) -> Callable[[int], None]:
    return ffi_floor(target)


def series(view: View, index: int, case: Case, out: Out) -> None:
    """The cost of one trivial native call through the FFI (slope against calls)."""
    _, walls, times = view.measured(index)
    n = view.n(index)
    view.floor = add_fits(out, case, n, by_round(walls, n), by_round(times, n)[:, 0],
                           ("ffi_floor_ns",), "round-median theil-sen")


def derive(out: Out, view: View) -> None:
    """The floor corrects the layer split (methods/sequential.py)."""
