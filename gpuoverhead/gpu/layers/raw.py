"""Layer `raw`: the same native calls as the wrapper, made directly through the cffi FFI.

Descriptors, handles and the command-buffer array are prepared once, outside the timed
region, so that an operation costs the native calls plus the FFI's per-call overhead and
nothing of the wrapper's logic. What the wrapper releases when its objects are dropped
(pass, encoder, command buffer) is released explicitly here, so both make the same calls.
The loops are spelled out per encoding on purpose: a shared helper would add a Python call
per operation to the layer that is meant to have no Python beyond the FFI.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns

from gpuoverhead.encodings import ENCODINGS
from gpuoverhead.gpu.targets import Target

#: Native calls per operation, per encoding (what the FFI floor is multiplied by).
CALLS_PER_OP = {e.name: e.calls_per_op for e in ENCODINGS}


Issue = Callable[[int], None]
Breakdown = Callable[[], tuple[int, ...]]


# Unrolled timed loops (see the module docstring): over the 60-line limit on purpose.
def build(t: Target) -> tuple[dict[str, Issue], Breakdown]:
    """`issue(n)` per encoding and the timed breakdown of one operation, bound to `t`."""
    ffi, lib = t.binding.ffi_lib()
    device, queue = t.device._internal, t.queue._internal
    pipeline, bind_group = t.pipeline._internal, t.bind_group._internal
    x, y = t.grid
    encoder_desc = ffi.new("WGPUCommandEncoderDescriptor *")
    pass_desc = ffi.new("WGPUComputePassDescriptor *")
    buffer_desc = ffi.new("WGPUCommandBufferDescriptor *")
    commands = ffi.new("WGPUCommandBuffer[1]")
    no_offsets = ffi.NULL
    create_encoder = lib.wgpuDeviceCreateCommandEncoder
    begin_pass = lib.wgpuCommandEncoderBeginComputePass
    set_pipeline = lib.wgpuComputePassEncoderSetPipeline
    set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
    dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
    end_pass = lib.wgpuComputePassEncoderEnd
    release_pass = lib.wgpuComputePassEncoderRelease
    finish = lib.wgpuCommandEncoderFinish
    release_encoder = lib.wgpuCommandEncoderRelease
    submit = lib.wgpuQueueSubmit
    release_buffer = lib.wgpuCommandBufferRelease

    def submit_each(n: int) -> None:
        for _ in range(n):
            encoder = create_encoder(device, encoder_desc)
            compute = begin_pass(encoder, pass_desc)
            set_pipeline(compute, pipeline)
            set_bind_group(compute, 0, bind_group, 0, no_offsets)
            dispatch(compute, x, y, 1)
            end_pass(compute)
            release_pass(compute)
            commands[0] = finish(encoder, buffer_desc)
            release_encoder(encoder)
            submit(queue, 1, commands)
            release_buffer(commands[0])

    def pass_each(n: int) -> None:
        encoder = create_encoder(device, encoder_desc)
        for _ in range(n):
            compute = begin_pass(encoder, pass_desc)
            set_pipeline(compute, pipeline)
            set_bind_group(compute, 0, bind_group, 0, no_offsets)
            dispatch(compute, x, y, 1)
            end_pass(compute)
            release_pass(compute)
        commands[0] = finish(encoder, buffer_desc)
        release_encoder(encoder)
        submit(queue, 1, commands)
        release_buffer(commands[0])

    def one_pass(n: int) -> None:
        encoder = create_encoder(device, encoder_desc)
        compute = begin_pass(encoder, pass_desc)
        for _ in range(n):
            set_pipeline(compute, pipeline)
            set_bind_group(compute, 0, bind_group, 0, no_offsets)
            dispatch(compute, x, y, 1)
        end_pass(compute)
        release_pass(compute)
        commands[0] = finish(encoder, buffer_desc)
        release_encoder(encoder)
        submit(queue, 1, commands)
        release_buffer(commands[0])

    def breakdown() -> tuple[int, ...]:
        clock = perf_counter_ns
        t0 = clock()
        encoder = create_encoder(device, encoder_desc)
        t1 = clock()
        compute = begin_pass(encoder, pass_desc)
        t2 = clock()
        set_pipeline(compute, pipeline)
        t3 = clock()
        set_bind_group(compute, 0, bind_group, 0, no_offsets)
        t4 = clock()
        dispatch(compute, x, y, 1)
        t5 = clock()
        end_pass(compute)
        t6 = clock()
        commands[0] = finish(encoder, buffer_desc)
        t7 = clock()
        submit(queue, 1, commands)
        t8 = clock()
        t.wait()
        t9 = clock()
        release_pass(compute)
        release_encoder(encoder)
        release_buffer(commands[0])
        t10 = clock()
        return (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7,
                t9 - t8, t10 - t9)

    return {"submit": submit_each, "pass": pass_each, "dispatch": one_pass}, breakdown


def ffi_floor(t: Target) -> Callable[[int], None]:
    """`n` calls of a trivial native function through the same FFI: wgpuBufferGetSize, a
    getter of one handle that every implementation has."""
    _, lib = t.binding.ffi_lib()
    get_size, buffer = lib.wgpuBufferGetSize, t.data._internal

    def call(n: int) -> None:
        for _ in range(n):
            get_size(buffer)

    return call
