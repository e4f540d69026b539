"""A plain C loop's `submit` back to back and at a cadence, outside gpuoverhead: what the native
layer's and the cadence methodology's figures are held against (issue 54).

Per gap G (ms), fresh processes one after another (the gaps alternating), each pinned to one
CPU: bursts of `--burst` ops (each its own encoder, compute pass and submit: the loop of
benchmarks/investigations/plain_loop.c, compiled here into a private temporary folder against
the webgpu.h of the wgpu wheel), one wait a burst, G ms asleep between bursts, for `--seconds`.
It prints, per process, the cost per op (wall time of a burst / its ops, µs) over the process's
age in bins, when its level settled and the level after (gpuoverhead/analysis/settling.py, as
the cadence methodology finds it), then per gap the median over processes; `--json FILE` keeps
every process's bins and levels.

    python benchmarks/investigations/submit_cadence.py [--gaps 0,30] [--seconds 10] [--processes 2]
        [--burst 64] [--cpu N] [--json FILE]

On the lent H200 VMs (issue 54): 16-19 µs back to back, flat for 10 s; with 30 ms gaps
16-22 µs for about 3 s, then 29-37 µs by 5-8 s. On lavapipe: 35-37 and 60-104 µs.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "plain_loop.c"
_SHADER = """@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(1) fn main() { data[0] = data[0] + 1u; }"""


def build(folder: Path) -> Path:
    """plain_loop.c as a shared library in `folder` (a private one: nothing is loaded from a
    place another user could write)."""
    import wgpu

    include = Path(wgpu.__file__).parent / "resources"
    out = folder / "plain_loop.so"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", f"-I{include}",
                    str(SOURCE), "-o", str(out)], check=True)
    return out


def child(gap_ms: float, library: Path, seconds: float, burst: int, cpu: int) -> dict:
    """One process: bursts at the gap for `seconds`; each burst's age (s), wall and issue
    time per op (µs)."""
    os.sched_setaffinity(0, {cpu})
    import wgpu
    from wgpu.backends.wgpu_native import ffi

    native = Path(wgpu.__file__).parent / "resources" / "libwgpu_native-release.so"
    ctypes.CDLL(str(native), mode=ctypes.RTLD_GLOBAL)
    loop = ctypes.CDLL(str(library))
    loop.burst_submit.restype = ctypes.c_uint64
    loop.burst_submit.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_uint32,
                                                          ctypes.POINTER(ctypes.c_uint64)]
    found = wgpu.gpu.enumerate_adapters_sync()
    order = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 4}
    adapter = min(found, key=lambda a: order.get(a.info["adapter_type"], 3))
    device = adapter.request_device_sync()
    pipeline = device.create_compute_pipeline(layout="auto", compute={
        "module": device.create_shader_module(code=_SHADER), "entry_point": "main"})
    buffer = device.create_buffer(size=4, usage=wgpu.BufferUsage.STORAGE)
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": buffer, "offset": 0, "size": 4}}])

    def handle(obj: object) -> int:
        return int(ffi.cast("uintptr_t", obj._internal))

    args = [handle(device), handle(device.queue), handle(pipeline), handle(group)]
    issued = ctypes.c_uint64()
    ages, walls, issues = [], [], []
    loop.burst_submit(*args, burst, ctypes.byref(issued))  # first use: not counted
    start = time.perf_counter()
    while (age := time.perf_counter() - start) < seconds:
        wall = loop.burst_submit(*args, burst, ctypes.byref(issued))
        ages.append(age)
        walls.append(wall / burst / 1e3)
        issues.append(issued.value / burst / 1e3)
        if gap_ms:
            time.sleep(gap_ms / 1e3)
    return {"gap_ms": gap_ms, "cpu": cpu, "device": adapter.info["device"], "age_s": ages,
            "wall_us": walls, "issue_us": issues}


def summarize(found: dict) -> dict:
    """A process's level over its age, when it settled and its level after."""
    from gpuoverhead.analysis.settling import settle

    ages, walls = np.array(found["age_s"]), np.array(found["wall_us"])
    s = settle(ages, walls)
    kept = s.kept(ages)
    return {"gap_ms": found["gap_ms"], "cpu": found["cpu"], "device": found["device"],
            "bursts": int(ages.size), "settled_s": round(s.at_s, 2), "settled": s.settled,
            "level_us": round(float(np.median(walls[kept])), 2),
            "issue_us": round(float(np.median(np.array(found["issue_us"])[kept])), 2),
            "first_s_us": round(float(np.median(walls[ages < 1.0])), 2),
            "bins": [[round(a, 2), round(m, 2)] for a, m in s.level]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gaps", default="0,30", help="ms between bursts, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--processes", type=int, default=2, help="per gap")
    parser.add_argument("--burst", type=int, default=64)
    parser.add_argument("--cpu", type=int, default=None,
                        help="the CPU each process is pinned to (default: the second allowed)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--library", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else allowed[min(1, len(allowed) - 1)]
    if args.child is not None:
        print(json.dumps(child(args.child, Path(args.library), args.seconds, args.burst, cpu)))
        return
    gaps = [float(g) for g in args.gaps.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="plain-loop-"))
    try:
        library = build(folder)
        runs = []
        for p in range(args.processes):
            for gap in gaps:
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", str(gap), "--library", str(library),
                     "--seconds", str(args.seconds), "--burst", str(args.burst),
                     "--cpu", str(cpu)], capture_output=True, text=True, check=True)
                found = summarize(json.loads(proc.stdout.splitlines()[-1]))
                runs.append(found)
                bins = " ".join(f"{m:.1f}" for _, m in found["bins"])
                print(f"gap {gap:g} ms, process {p} (CPU {cpu}): {found['level_us']} µs/op "
                      f"after {found['settled_s']} s{'' if found['settled'] else ' (not settled)'}"
                      f", first second {found['first_s_us']}; over age: {bins}", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for gap in gaps:
        mine = [r for r in runs if r["gap_ms"] == gap]
        print(f"c-loop gap {gap:g} ms: {np.median([r['level_us'] for r in mine]):.2f} µs/op "
              f"(processes {', '.join(str(r['level_us']) for r in mine)}), settled after "
              f"{', '.join(str(r['settled_s']) for r in mine)} s, first second "
              f"{', '.join(str(r['first_s_us']) for r in mine)} µs/op")
    if args.json:
        Path(args.json).write_text(json.dumps({"burst": args.burst, "seconds": args.seconds,
                                               "processes": runs}, indent=1))


if __name__ == "__main__":
    main()
