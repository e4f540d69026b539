"""The memory floor as this adapter reaches it: read bandwidth measured by a stream kernel
in the worker that runs the decode step (the `stream_read` entry of its shader), on the same
device and through the same implementation.

A data sheet's bandwidth (records.MEMORY_BANDWIDTH_GB_S) says what the memory can do; no
kernel reaches it (H100 read streams get about 90%). The measured figure is the floor a
kernel could reach here, and it exists where no data sheet applies (lavapipe: the host's
memory, shared). The decode step reports its GPU time over both (`floor_multiple`,
`floor_multiple_read`).

Beside it, the GPU's own time per dispatch in one pass (`dispatch_gpu_ns`), measured in the
same worker: with the floor, it takes a token's GPU time apart (methods/fusion.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from gpuoverhead.gpu.pass_timer import PassTimer, timed_pass
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.workloads.work import Context

#: Bytes streamed per read: five times an H100's L2 on a GPU, so that the reads come from
#: memory; less on a software adapter, whose streams are slow and whose figure is loose.
STREAM_BYTES, SOFTWARE_STREAM_BYTES = 256 << 20, 16 << 20
#: The stream's read kernels, (BLOCKED, ROWS): a workgroup reading one contiguous span
#: (BLOCKED = 1) or a grid-stride loop (0), ROWS vec4 a thread; the fastest sets the floor
#: (on the H100 a grid-stride read of 16 gave 1.75 TB/s, slower than the decode step).
STREAMS = ((1, 16), (1, 64), (0, 16))
#: Threads per workgroup, reads per timed pass, and passes per kernel (the fastest counts: a
#: pass slowed by something else is not the floor). On a software adapter two reads a pass:
#: one of its stream takes tens of ms, far above the timer's tick, and eight took 2.5 s of
#: each decode worker's 3.9 s start-up on lavapipe.
WG, REPEATS, SOFTWARE_REPEATS, PASSES = 256, 8, 2, 3
#: Seconds of streaming before the timed passes on a GPU: its clocks rise from idle (the
#: decode worker's GPU waits seconds on numpy's checks before the stream;
#: benchmarks/investigations/read_streams.py: 1.80 TB/s after 3 s idle, 3.10 TB/s warm,
#: H100, wgpu-native).
WARM_S = 0.3
#: Dispatches of the `count` kernel in the short and the long pass whose difference times
#: one dispatch, and passes of each (the medians count): on the H200 a dispatch in a pass
#: takes about 1.9 µs of GPU time, so the long pass about 1 ms, far above the timer's tick.
SHORT, LONG, DISPATCH_PASSES = 64, 576, 5


def read_gb_s(ctx: Context, tick_ns: float, wait: Callable[[], None], software: bool) -> float:
    """The fastest of the STREAMS kernels' passes of REPEATS full reads of a fresh stream, in
    GB/s (bytes per ns), within the device's binding and buffer limits."""
    limits = ctx.device.limits
    chunk = max(rows for _, rows in STREAMS) * WG * 16
    size = min(SOFTWARE_STREAM_BYTES if software else STREAM_BYTES,
               limits["max-storage-buffer-binding-size"], limits["max-buffer-size"])
    size -= size % chunk
    stream = ctx.device.create_buffer(size=size, usage=ctx.api.BufferUsage.STORAGE)
    sink = ctx.buffer(np.zeros(4, np.float32))
    timer = PassTimer(ctx.device)
    fill = ctx.step(ctx.pipeline("stream_fill", WG=WG), {3: stream}, grid_for(size // 4, WG))
    timed_pass(ctx.device, (fill,), 1, None, tick_ns, wait)
    if not software:  # an idle GPU's clocks: 1.8 TB/s on the H100 after 3 s idle, 3.0 warm
        until = time.perf_counter() + WARM_S
        while time.perf_counter() < until:
            timed_pass(ctx.device, (fill,), REPEATS, None, tick_ns, wait)
    best, repeats = math.inf, SOFTWARE_REPEATS if software else REPEATS
    for blocked, rows in STREAMS:
        read = ctx.step(ctx.pipeline("stream_read", WG=WG, ROWS=rows, BLOCKED=blocked),
                        {8: stream, 4: sink}, grid_for(size // (rows * 16), WG))
        timed_pass(ctx.device, (read,), 1, None, tick_ns, wait)
        best = min(best, *(timed_pass(ctx.device, (read,), repeats, timer, tick_ns, wait)[0]
                           for _ in range(PASSES)))
    stream.destroy()
    return repeats * size / best


def dispatch_gpu_ns(ctx: Context, tick_ns: float, wait: Callable[[], None]) -> float:
    """The GPU's own time per dispatch inside one pass: the step's `count` kernel (one
    thread adding one to a counter, each dispatch after the one before, as the step's are),
    the median of DISPATCH_PASSES passes of LONG dispatches less that of SHORT's (taken in
    turn), over LONG - SHORT: the pass's own begin and end cancel."""
    count = ctx.step(ctx.pipeline("count"), {6: ctx.buffer(np.zeros(1, np.uint32))}, (1, 1))
    timer = PassTimer(ctx.device)
    timed_pass(ctx.device, (count,), SHORT, None, tick_ns, wait)
    passes = np.array([[timed_pass(ctx.device, (count,), n, timer, tick_ns, wait)[0]
                        for n in (SHORT, LONG)] for _ in range(DISPATCH_PASSES)])
    short, long = np.median(passes, axis=0)
    return float(long - short) / (LONG - SHORT)
