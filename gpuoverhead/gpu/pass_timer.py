"""Timestamp queries around one compute pass, and a sequence of kernels timed by them: what
the GPU-time cases (methods/timestamps.py, methods/fusion.py), the read floor
(workloads/read_floor.py) and benchmarks/investigations/decode_floor.py share."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.gpu.targets import binding_of


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
    step in benchmarks/investigations/decode_floor.py)."""
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
