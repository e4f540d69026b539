"""Which CPUs make `submit` slow? One device, the C loop of ../shared/repro (copied to
.repro/, built as plain_loop.so), the calling thread pinned to each CPU in turn (Linux):
prints, per CPU, the median native `submit` cost per op (µs, N = 256, one wait), and the
CPUs within 1.3x of the fastest as an --affinity list.

    python benchmarks/cpu_probe.py [ROUNDS]      # from the repository root
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path

import numpy as np
import wgpu
from wgpu.backends.wgpu_native import ffi

SHADER = """@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&a)) { a[g.x] = a[g.x] + 1.0; } }"""
N, X = 256, 16


def loop() -> ctypes.CDLL:
    lib = Path(wgpu.__file__).parent / "resources" / "libwgpu_native-release.so"
    ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    found = ctypes.CDLL(str(Path(".repro") / "plain_loop.so"))
    found.seq_submit.restype = ctypes.c_uint64
    found.seq_submit.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_uint32] * 2
    return found


def handles() -> tuple[tuple[int, ...], list]:
    found = [a for a in wgpu.gpu.enumerate_adapters_sync()
             if a.info["backend_type"].lower() == "vulkan"]
    adapter = sorted(found, key=lambda a: a.info["adapter_type"] == "CPU")[0]
    dev = adapter.request_device_sync()
    pipe = dev.create_compute_pipeline(layout="auto", compute={
        "module": dev.create_shader_module(code=SHADER), "entry_point": "main"})
    buf = dev.create_buffer(size=4096, usage=wgpu.BufferUsage.STORAGE)
    bg = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": 4096}}])
    keep = [dev, pipe, buf, bg]
    return tuple(int(ffi.cast("uintptr_t", o._internal)) for o in (dev, dev.queue, pipe, bg)), keep


def main(rounds: int = 3) -> None:
    c_loop, (h, _keep) = loop(), handles()
    cpus = sorted(os.sched_getaffinity(0))
    cost: dict[int, list[float]] = {c: [] for c in cpus}
    for _ in range(rounds):  # rounds over all CPUs, so a slow minute shows as such
        for cpu in cpus:
            os.sched_setaffinity(0, {cpu})
            c_loop.seq_submit(*h, 32, X)
            cost[cpu] += [c_loop.seq_submit(*h, N, X) / N / 1e3 for _ in range(3)]
    os.sched_setaffinity(0, cpus)
    median = {c: round(float(np.median(v)), 2) for c, v in cost.items()}
    fastest = min(median.values())
    good = [c for c, v in median.items() if v <= 1.3 * fastest]
    print(json.dumps({"submit_us_by_cpu": median, "good": ",".join(map(str, good))}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
