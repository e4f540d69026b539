"""Fusion: N units of the same work, unfused (K dispatches each) or fused (one), in one
compute pass, one submit and one wait, through the implementation's Python API.

The slope of wall time against N is the cost of one unit with the wait amortized (an engine
that syncs once per many layers); the samples at N = 1 are what a unit costs when it is
synced on its own. Their ratios between the unfused and the fused form are the fusion
speedups (estimates.py). A `timestamps` twin times the same pass on the GPU instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuoverhead.fusion import Work
from gpuoverhead.workload import binding_of


def operation(work: Work, device: Any, wait: Callable[[], None], timestamps: bool
              ) -> Callable[[int], object]:
    queue = device.queue
    sequences, done = work.sequences, work.units_done
    period = len(sequences)
    if not timestamps:
        def op(n: int) -> None:
            u = done[0]
            encoder = device.create_command_encoder()
            compute = encoder.begin_compute_pass()
            for i in range(u, u + n):
                for pipeline, bind_group, x, y in sequences[i % period]:
                    compute.set_pipeline(pipeline)
                    compute.set_bind_group(0, bind_group)
                    compute.dispatch_workgroups(x, y, 1)
            compute.end()
            queue.submit([encoder.finish()])
            done[0] = u + n
            wait()

        return op

    wgpu = binding_of(device)
    query_set = device.create_query_set(type=wgpu.QueryType.timestamp, count=2)
    resolved = device.create_buffer(
        size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    writes = {"query_set": query_set, "beginning_of_pass_write_index": 0,
              "end_of_pass_write_index": 1}

    def timed(n: int) -> tuple[int, int]:
        u = done[0]
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass(timestamp_writes=writes)
        for i in range(u, u + n):
            for pipeline, bind_group, x, y in sequences[i % period]:
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, bind_group)
                compute.dispatch_workgroups(x, y, 1)
        compute.end()
        encoder.resolve_query_set(query_set, 0, 2, resolved, 0)
        queue.submit([encoder.finish()])
        done[0] = u + n
        begin, end = np.frombuffer(queue.read_buffer(resolved), dtype=np.uint64)
        return int(begin), int(end)

    return timed
