"""Sequential: N operations issued back to back, one wait at the end.

Per-dispatch cost is the slope of wall time against N (see `stats.round_fits`); CPU cost
per dispatch the slope of issue time, read before the wait. Encodings:
- `submit`: each operation has its own encoder, compute pass and submit;
- `pass`: one encoder holding N compute passes, one submit;
- `dispatch`: one compute pass holding N operations, one submit.
Pipeline and bind group are set for every dispatch in every encoding, as a real workload
whose dispatches differ would do, so encodings differ only in encoder, pass and submit calls.
The layer (wrapper, raw, native) decides what issues the calls; the wait is always the same.
With `bind_group: [reused, per_dispatch]` each wrapper case has a BIND_PER_DISPATCH twin
that creates the bind group before each dispatch (as engines that allocate per op do); the
difference of their issue slopes, rounds paired, is the cost of that per op (`bind_group_ns`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.analysis.samples import by_round
from gpuoverhead.analysis.series import Key, Out, Series, Slopes, View, add_fits
from gpuoverhead.analysis.stats import round_fits
from gpuoverhead.cases import BIND_PER_DISPATCH, TIMESTAMPS, Case
from gpuoverhead.gpu.layers import issuer
from gpuoverhead.gpu.layers.raw import CALLS_PER_OP
from gpuoverhead.gpu.targets import Target

#: The name a suite's `methodologies` asks for it by.
SUITE_NAME = "sequential"


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """Every encoding through every layer, over the N sweep, where the suite asks for it;
    then the wrapper's per-dispatch bind group twins, where asked."""
    if SUITE_NAME not in cfg["methodologies"]:
        return []
    plain = [replace(base, methodology=SUITE_NAME, encoding=e, layer=layer)
             for layer in dict.fromkeys(cfg["layers"]) for e in dict.fromkeys(cfg["encodings"])]
    fresh = "per_dispatch" in cfg["bind_group"]
    return plain + [replace(c, variant=BIND_PER_DISPATCH) for c in plain
                    if fresh and c.layer == "wrapper"]


def claims(case: Case) -> bool:
    return case.methodology == SUITE_NAME and case.sync != TIMESTAMPS


def operation(target: Target, case: Case, native: Any) -> Callable[[int], tuple[int]]:
    """`op(n)`: issue n operations, read the clock, wait. The clock read between the last
    submit and the wait is the sample's issue time (CPU cost), apart from its completion."""
    issue = issuer(target, case.layer, case.encoding, native, case.variant == BIND_PER_DISPATCH)
    wait, clock = target.wait, perf_counter_ns

    def op(n: int) -> tuple[int]:
        issue(n)
        issued = clock()
        wait()
        return (issued,)

    return op


def series(view: View, index: int, case: Case, out: Out) -> None:
    """Per round: the slope (throughput cost per dispatch) and intercept (fixed wait) of
    wall time against N, and the slope of issue time, the CPU cost per dispatch."""
    pos, walls, times = view.measured(index)
    n = view.n(index)
    matrix, round_times = by_round(walls, n), by_round(times, n)[:, 0]
    slope = add_fits(out, case, n, matrix, round_times, ("per_dispatch_ns", "fixed_ns"),
                      "round-median theil-sen of wall time")
    cpu = add_fits(out, case, n, view.issue(pos, index), round_times,
                    ("cpu_per_dispatch_ns",),
                    "round-median theil-sen of issue time (clock read before the wait)")
    view.slopes[(case.encoding, case.layer, case.implementation, case.variant)] = (
        case, slope, cpu, round_times)
    first = view.first_round(index)
    if first is not None:
        out[Key(case, "first_round_per_dispatch_ns", "ns",
                "theil-sen of warm-up round 0's wall time")] = Series(
            round_fits(np.array(n), first[None, :])[0], round_times[:1], 1)


def _layers(out: Out, slopes: Slopes, floor: np.ndarray | None) -> None:
    """CPU cost per dispatch split into api (the native implementation) and python (the
    binding), from issue-time slopes paired round by round, and the FFI check; and what the
    binding multiplies the C loop's issue time by, a ratio per round (`binding_ratio`): the
    layers share their process and each round's state (the CPU's speed, the submission
    regime), which a ratio of the same round cancels where it moves both."""
    for (encoding, layer, impl, variant), (case, _, wrapper, times) in slopes.items():
        if layer != "wrapper" or impl is not None or variant:
            continue
        raw = slopes.get((encoding, "raw", None, ""), (None, None, None, None))[2]
        native = slopes.get((encoding, "native", None, ""), (None, None, None, None))[2]
        calls = CALLS_PER_OP[encoding]
        corrected = raw - calls * floor[: len(raw)] if raw is not None and floor is not None \
            else None
        if native is not None:
            api, how = native, "native issue slope"
        elif corrected is not None:
            api, how = corrected, f"raw issue slope - {calls} x ffi floor (native layer absent)"
        else:
            continue
        n = len(wrapper)
        out[Key(case, "api_ns", "ns", how)] = Series(api, times, n)
        out[Key(case, "python_ns", "ns", "wrapper issue slope - api")] = Series(
            wrapper - api, times, n)
        if native is not None and (ok := native > 0).any():
            out[Key(case, "binding_ratio", "ratio", "median of each round's wrapper issue "
                    "slope / native issue slope")] = Series(wrapper[ok] / native[ok],
                                                            times[ok], int(ok.sum()))
        if native is not None and corrected is not None:
            raw_case = slopes[(encoding, "raw", None, "")][0]
            out[Key(raw_case, "ffi_check_ns", "ns",
                    f"(raw issue slope - {calls} x ffi floor) - native issue slope")] = Series(
                corrected - native, times, n)


def _bind_groups(out: Out, slopes: Slopes) -> None:
    """Per encoding, what creating the bind group costs per op: the issue slope of the
    per-dispatch twin minus the reused case's, rounds paired (negative where the reused one
    is the slower: a difference, never clipped), and their ratio of medians."""
    for (encoding, layer, impl, variant), (case, _, fresh, times) in slopes.items():
        reused = slopes.get((encoding, layer, impl, ""))
        if variant != BIND_PER_DISPATCH or reused is None:
            continue
        r = min(len(fresh), len(reused[2]))
        out[Key(case, "bind_group_ns", "ns", "per-dispatch bind group issue slope - reused "
                "one's, rounds paired")] = Series(fresh[:r] - reused[2][:r], times[:r], r)
        out[Key(case, "bind_group_ratio", "ratio", "median per-dispatch bind group issue "
                "slope / median reused one's")] = Series(fresh[:r], times[:r], r,
                                                          denominator=reused[2][:r])


def derive(out: Out, view: View) -> None:
    _layers(out, view.slopes, view.floor)
    _bind_groups(out, view.slopes)
    _overlapped(out, view)


def _overlapped(out: Out, view: View) -> None:
    """Per op, what an engine that records ahead while the GPU runs pays: the larger of the
    CPU cost of issuing it and the GPU's time for it, rounds paired. The wall slope of
    `pass` and `dispatch` is the two serialized instead (the GPU starts after the one
    submit), so it is no throughput figure on its own."""
    if view.gpu_slopes is None:
        return
    for (_, layer, impl, variant), (case, _, cpu, times) in view.slopes.items():
        if layer == "wrapper" and impl is None and not variant \
                and (r := min(len(cpu), len(view.gpu_slopes))):
            out[Key(case, "overlapped_ns", "ns", "max(CPU issue slope, GPU-time slope), "
                    "rounds paired")] = Series(np.maximum(cpu[:r], view.gpu_slopes[:r]),
                                               times[:r], r)
