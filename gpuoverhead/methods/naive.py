"""Naive: one operation, then wait until the GPU is idle; a sample is that op's latency.

Its estimates: the latency per sample and the first warm-up round's (series), and the
inflation of each wrapper-layer sequential slope by it (derived).

This is what a framework pays that synchronizes after every op. Variant `readback` copies
4 bytes of the result into a mappable buffer and maps and reads it instead of a bare wait,
as a framework that reads a value back after each op does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.analysis.series import FUSED_NS, Key, Out, Series, View
from gpuoverhead.cases import Case
from gpuoverhead.gpu.layers.wrapper import submit_each
from gpuoverhead.gpu.targets import Target, binding_of

#: The name a suite's `methodologies` asks for it by.
SUITE_NAME = "naive"


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """A case per `naive_sync` where the suite asks for this methodology."""
    if SUITE_NAME not in cfg["methodologies"]:
        return []
    return [replace(base, sync=s, n_values=(1,)) for s in dict.fromkeys(cfg["naive_sync"])]


def claims(case: Case) -> bool:
    return case.methodology == SUITE_NAME


def operation(target: Target, case: Case, native: object = None) -> Callable[[int], None]:
    if case.sync == "wait":
        wait = target.wait

        def op(n: int) -> None:
            submit_each(target, 1)
            wait()

        return op
    return _readback(target)


def _readback(t: Target) -> Callable[[int], None]:
    wgpu = binding_of(t.device)
    device, queue, pipeline, bind_group = t.device, t.queue, t.pipeline, t.bind_group
    x, y = t.grid
    data, staging, read = t.data, t.staging, wgpu.MapMode.READ

    def op(n: int) -> None:
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(x, y, 1)
        compute.end()
        encoder.copy_buffer_to_buffer(data, 0, staging, 0, 4)
        queue.submit([encoder.finish()])
        staging.map_sync(read)
        staging.read_mapped(0, 4)
        staging.unmap()

    return op


def series(view: View, index: int, case: Case, out: Out) -> None:
    """Latency per sample, and the first warm-up round's (what a short-lived program pays)."""
    _, walls, times = view.measured(index)
    out[Key(case, "latency_ns", "ns", "median")] = Series(walls, times, walls.size)
    if case.sync == "wait":
        view.naive = walls
    rec = view.rec
    first = np.flatnonzero((rec[:, 0] == index) & (rec[:, 2] == 0) & (rec[:, 3] == 1))
    if first.size:
        out[Key(case, "first_round_ns", "ns", "warm-up round 0")] = Series(
            rec[first[:1], 5].astype(float), times[:1], 1)


def derive(out: Out, view: View) -> None:
    """Naive latency over each wrapper-layer slope (rounds paired by index for the CI)."""
    if view.naive is None:
        return
    for (_, layer, _, variant), (case, s, _, t) in view.slopes.items():
        # A fused chain (torch-compile) has no per-dispatch cost to inflate.
        if layer == "wrapper" and not variant and np.median(s) > FUSED_NS:
            r = min(len(view.naive), len(s))
            out[Key(case, "inflation", "ratio", "median naive / median slope")] = Series(
                view.naive[:r], t[:r], r, denominator=s[:r])
