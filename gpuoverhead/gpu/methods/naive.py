"""Naive: one operation, then wait until the GPU is idle; a sample is that op's latency.

This is what a framework pays that synchronizes after every op. Variant `readback` copies
4 bytes of the result into a mappable buffer and maps and reads it instead of a bare wait,
as a framework that reads a value back after each op does.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuoverhead.gpu.kernels import Target, binding_of
from gpuoverhead.gpu.layers.wrapper import submit_each
from gpuoverhead.suite.model import Case


def operation(target: Target, case: Case) -> Callable[[int], None]:
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
