"""The read bandwidth of each stream kernel of workloads/read_floor.py (STREAMS), one line each,
at streams of 64 MiB to 512 MiB, on the best adapter of each WebGPU implementation here
(its binding limits raised as a decode worker's are), and once more after the GPU sat idle
for 3 s: which kernel and size set the decode step's measured floor (the worker keeps only
the fastest), and what moves it.

    python benchmarks/investigations/read_streams.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpuoverhead.drivers.webgpu import BINDINGS  # noqa: E402
from gpuoverhead.gpu import adapters  # noqa: E402
from gpuoverhead.gpu.wait import waiter  # noqa: E402
from gpuoverhead.suite.shaders import fusion_kernel  # noqa: E402
from gpuoverhead.workloads import read_floor  # noqa: E402
from gpuoverhead.workloads.work import Context  # noqa: E402

#: Stream sizes, and the limits raised to the adapter's so that the largest binds.
SIZES = (64 << 20, 128 << 20, 256 << 20, 512 << 20)
def main() -> None:
    streams = read_floor.STREAMS
    saved = (streams, read_floor.STREAM_BYTES, read_floor.SOFTWARE_STREAM_BYTES)
    for binding in BINDINGS:
        if (missing := binding.missing()) is not None:
            print(missing)
            continue
        found = adapters.discover([binding])[0]
        if not found or "timestamp-query" not in found[0].adapter.features:
            print(f"{binding.name}: no adapter with timestamp queries")
            continue
        best = found[0]
        raised = {k: best.adapter.limits[k] for k in adapters.BUFFER_LIMITS}
        device, _ = binding.request_device(best.adapter, ["timestamp-query"], raised)
        ctx = Context(device, SimpleNamespace(kernel=fusion_kernel("decode")))
        tick, wait = binding.tick_ns(device.queue), waiter(device)
        for size in SIZES:
            read_floor.STREAM_BYTES = read_floor.SOFTWARE_STREAM_BYTES = size
            for blocked, rows in streams:
                read_floor.STREAMS = ((blocked, rows),)
                line(binding.name, best.info.device, size, blocked, rows,
                     read_floor.read_gb_s(ctx, tick, wait, best.info.is_software))
        time.sleep(3.0)
        line(binding.name, best.info.device, size, blocked, rows,
             read_floor.read_gb_s(ctx, tick, wait, best.info.is_software), " after 3 s idle")
        read_floor.STREAMS, read_floor.STREAM_BYTES, read_floor.SOFTWARE_STREAM_BYTES = saved
        device.destroy()


def line(name: str, device: str, size: int, blocked: int, rows: int, gb_s: float,
         note: str = "") -> None:
    print(f"{name:12} {device}: {size >> 20:4} MiB, {'blocked' if blocked else 'grid-stride'}"
          f" {rows:3} vec4 a thread: {gb_s:8.1f} GB/s{note}", flush=True)


if __name__ == "__main__":
    main()
