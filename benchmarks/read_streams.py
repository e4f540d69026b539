"""The read bandwidth of each stream kernel of workloads/read_floor.py (STREAMS), one line each,
on the best adapter of each WebGPU implementation here: which kernel sets the decode step's
measured floor (the worker keeps only the fastest), and how far each is from the others.

    python benchmarks/read_streams.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuoverhead.drivers.webgpu import BINDINGS  # noqa: E402
from gpuoverhead.gpu import adapters  # noqa: E402
from gpuoverhead.gpu.wait import waiter  # noqa: E402
from gpuoverhead.suite.shaders import fusion_kernel  # noqa: E402
from gpuoverhead.workloads import read_floor  # noqa: E402
from gpuoverhead.workloads.work import Context  # noqa: E402


def main() -> None:
    streams = read_floor.STREAMS
    for binding in BINDINGS:
        if (missing := binding.missing()) is not None:
            print(missing)
            continue
        found = adapters.discover([binding])[0]
        if not found or "timestamp-query" not in found[0].adapter.features:
            print(f"{binding.name}: no adapter with timestamp queries")
            continue
        best = found[0]
        device, _ = binding.request_device(best.adapter, ["timestamp-query"], {})
        ctx = Context(device, SimpleNamespace(kernel=fusion_kernel("decode")))
        tick, wait = binding.tick_ns(device.queue), waiter(device)
        for blocked, rows in streams:
            read_floor.STREAMS = ((blocked, rows),)
            gb_s = read_floor.read_gb_s(ctx, tick, wait, best.info.is_software)
            print(f"{binding.name:12} {best.info.device}: "
                  f"{'blocked' if blocked else 'grid-stride'} {rows:3} vec4 a thread: "
                  f"{gb_s:8.1f} GB/s", flush=True)
        read_floor.STREAMS = streams
        device.destroy()


if __name__ == "__main__":
    main()
