"""GPU time: one compute pass of N dispatches with timestamp queries at its start and end.

The slope of GPU time against N is the GPU's execution time per dispatch. Reading the
timestamps back is part of this case's operation, so its wall time is not an overhead
figure and is not estimated; only its GPU time is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpuoverhead.analysis.samples import by_round
from gpuoverhead.analysis.series import Out, View, add_fits
from gpuoverhead.cases import FUSION, TIMESTAMPS, Case
from gpuoverhead.gpu.pass_timer import PassTimer
from gpuoverhead.gpu.targets import Target

#: Not a suite's methodology: the GPU-time twin of the sequential cases (`gpu_timestamps`).
SUITE_NAME = None


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """One `dispatch` pass timed on the GPU, beside sequential cases, where asked."""
    if not (cfg["gpu_timestamps"] and "sequential" in cfg["methodologies"]):
        return []
    return [replace(base, methodology="sequential", encoding="dispatch", sync=TIMESTAMPS)]


def claims(case: Case) -> bool:
    return case.sync == TIMESTAMPS and case.methodology != FUSION


def operation(target: Target, case: Case, native: object = None
              ) -> Callable[[int], tuple[int, int]]:
    device, queue, pipeline, bind_group = target.device, target.queue, target.pipeline, \
        target.bind_group
    x, y = target.grid
    timer = PassTimer(device)

    def op(n: int) -> tuple[int, int]:
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass(timestamp_writes=timer.writes)
        for _ in range(n):
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(x, y, 1)
        compute.end()
        timer.resolve(encoder)
        queue.submit([encoder.finish()])
        return timer.read(queue)

    return op


def series(view: View, index: int, case: Case, out: Out) -> None:
    """Slope and intercept of GPU time (timestamp queries) against N, per round."""
    pos, _, times = view.measured(index)
    gpu = view.gpu(pos, index)
    if gpu is None or view.timer is None:
        return
    note = (f"round-median theil-sen (timer quantized to {view.timer.resolution_ns:.0f} ns)"
            if view.timer.quantized else "round-median theil-sen")
    n = view.n(index)
    view.gpu_slopes = add_fits(out, case, n, gpu, by_round(times, n)[:, 0],
                               ("gpu_ns", "gpu_fixed_ns"), note)


def derive(out: Out, view: View) -> None:
    """GPU time is a figure of its own (the fusion module pairs it with wall time)."""
