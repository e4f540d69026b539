"""GPU time: one compute pass of N dispatches with timestamp queries at its start and end.

The slope of GPU time against N is the GPU's execution time per dispatch. Reading the
timestamps back is part of this case's operation, so its wall time is not an overhead
figure and is not estimated; only its GPU time is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.analysis.samples import by_round
from gpuoverhead.analysis.series import Out, View, add_fits
from gpuoverhead.cases import FUSION, TIMESTAMPS, Case
from gpuoverhead.gpu.targets import Target, binding_of

#: Not a suite's methodology: the GPU-time twin of the sequential cases (`gpu_timestamps`).
SUITE_NAME = None


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """One `dispatch` pass timed on the GPU, beside sequential cases, where asked."""
    if not (cfg["gpu_timestamps"] and "sequential" in cfg["methodologies"]):
        return []
    return [replace(base, methodology="sequential", encoding="dispatch", sync=TIMESTAMPS)]


def claims(case: Case) -> bool:
    return case.sync == TIMESTAMPS and case.methodology != FUSION


class PassTimer:
    """Timestamp queries at the start and end of one compute pass, and their readback."""

    def __init__(self, device: Any) -> None:
        wgpu = binding_of(device)
        self.query_set = device.create_query_set(type=wgpu.QueryType.timestamp, count=2)
        self.resolved = device.create_buffer(
            size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        #: `timestamp_writes` of the timed `begin_compute_pass`.
        self.writes = {"query_set": self.query_set, "beginning_of_pass_write_index": 0,
                       "end_of_pass_write_index": 1}

    def resolve(self, encoder: Any) -> None:
        """Record the copy of both timestamps into the readable buffer (after the pass)."""
        encoder.resolve_query_set(self.query_set, 0, 2, self.resolved, 0)

    def read(self, queue: Any) -> tuple[int, int]:
        """The pass's begin and end ticks, once its submission has run."""
        begin, end = np.frombuffer(queue.read_buffer(self.resolved), dtype=np.uint64)
        return int(begin), int(end)


def timed_pass(device: Any, sequence: tuple, repeats: int, timer: PassTimer | None,
               tick_ns: float, wait: Callable[[], None]) -> tuple[float | None, float]:
    """GPU ns (timestamps; None without a timer) and wall ns (submit to done) of `repeats`
    times `sequence` (steps: pipeline, bind group, grid x, grid y) in one compute pass: a
    figure for a sequence of kernels outside the sampled cases (the read floor, the decode
    step in benchmarks/decode_floor.py)."""
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass(timestamp_writes=timer.writes if timer else None)
    for _ in range(repeats):
        for pipeline, bind_group, x, y in sequence:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(x, y, 1)
    compute.end()
    if timer:
        timer.resolve(encoder)
    command = encoder.finish()
    start = perf_counter_ns()
    device.queue.submit([command])
    wait()
    wall = perf_counter_ns() - start
    if timer is None:
        return None, wall
    begin, end = timer.read(device.queue)
    return (end - begin) * tick_ns, wall


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
