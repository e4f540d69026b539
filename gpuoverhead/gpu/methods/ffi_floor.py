"""FFI floor: the cost of one trivial native call through the binding's FFI, the unit that
`raw` layer costs are corrected by (`api` = raw issue slope - calls x floor, where the C
loop is absent)."""

from __future__ import annotations

from collections.abc import Callable

from gpuoverhead.analysis.samples import by_round
from gpuoverhead.analysis.series import Out, View, add_fits
from gpuoverhead.gpu.layers.raw import ffi_floor
from gpuoverhead.gpu.targets import Target
from gpuoverhead.suite.model import FFI_FLOOR, Case


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
    """The floor corrects the layer split (gpu/methods/sequential.py)."""
