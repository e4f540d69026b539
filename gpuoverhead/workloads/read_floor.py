"""The memory floor as this adapter reaches it: read bandwidth measured by a stream kernel
in the worker that runs the decode step (the `stream_read` entry of its shader), on the same
device and through the same implementation.

A data sheet's bandwidth (records.MEMORY_BANDWIDTH_GB_S) says what the memory can do; no
kernel reaches it (H100 read streams get about 90%). The measured figure is the floor a
kernel could reach here, and it exists where no data sheet applies (lavapipe: the host's
memory, shared). The decode step reports its GPU time over both (`floor_multiple`,
`floor_multiple_read`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuoverhead.gpu.pass_timer import PassTimer, timed_pass
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.workloads.work import Context

#: Bytes streamed per read: five times an H100's L2 on a GPU, so that the reads come from
#: memory; less on a software adapter, whose streams are slow and whose figure is loose.
STREAM_BYTES, SOFTWARE_STREAM_BYTES = 256 << 20, 16 << 20
#: vec4 per thread and threads per workgroup of the stream (their product x 16 bytes must
#: divide the stream), reads per timed pass, and passes (the fastest counts: a pass slowed
#: by something else is not the floor).
ROWS, WG, REPEATS, PASSES = 16, 256, 8, 3


def read_gb_s(ctx: Context, tick_ns: float, wait: Callable[[], None], software: bool) -> float:
    """The fastest of PASSES passes of REPEATS full reads of a fresh stream, in GB/s (bytes
    per ns), within the device's binding and buffer limits."""
    limits = ctx.device.limits
    chunk = ROWS * WG * 16
    size = min(SOFTWARE_STREAM_BYTES if software else STREAM_BYTES,
               limits["max-storage-buffer-binding-size"], limits["max-buffer-size"])
    size -= size % chunk
    usage = ctx.api.BufferUsage
    stream = ctx.device.create_buffer(size=size, usage=usage.STORAGE)
    sink = ctx.buffer(np.zeros(4, np.float32))
    fill = ctx.step(ctx.pipeline("stream_fill", WG=WG), {3: stream}, grid_for(size // 4, WG))
    read = ctx.step(ctx.pipeline("stream_read", WG=WG, ROWS=ROWS), {8: stream, 4: sink},
                    grid_for(size // (ROWS * 16), WG))
    timer = PassTimer(ctx.device)
    timed_pass(ctx.device, (fill, read), 1, None, tick_ns, wait)
    best = min(timed_pass(ctx.device, (read,), REPEATS, timer, tick_ns, wait)[0]
               for _ in range(PASSES))
    stream.destroy()
    return REPEATS * size / best
