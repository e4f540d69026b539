"""GPU time: one compute pass of N dispatches with timestamp queries at its start and end.

The slope of GPU time against N is the GPU's execution time per dispatch. Reading the
timestamps back is part of this case's operation, so its wall time is not an overhead
figure and is not estimated; only its GPU time is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuoverhead.workload import Target, binding_of


def operation(target: Target) -> Callable[[int], tuple[int, int]]:
    wgpu = binding_of(target.device)

    device, queue, pipeline, bind_group = target.device, target.queue, target.pipeline, \
        target.bind_group
    x, y = target.grid
    query_set = device.create_query_set(type=wgpu.QueryType.timestamp, count=2)
    resolved = device.create_buffer(
        size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    writes = {"query_set": query_set, "beginning_of_pass_write_index": 0,
              "end_of_pass_write_index": 1}

    def op(n: int) -> tuple[int, int]:
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass(timestamp_writes=writes)
        for _ in range(n):
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(x, y, 1)
        compute.end()
        encoder.resolve_query_set(query_set, 0, 2, resolved, 0)
        queue.submit([encoder.finish()])
        begin, end = np.frombuffer(queue.read_buffer(resolved), dtype=np.uint64)
        return int(begin), int(end)

    return op

