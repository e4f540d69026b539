"""What issuing one dispatch costs on each CPU, measured in place before a run.

On a lent GPU VM one vCPU of 16 ran `submit` 3.4x slower than the others; a worker process
that landed there decided its job's interval. The probe issues the run's own path (encode
one empty dispatch and submit it, through wgpu-native on the best adapter) with the calling
thread pinned to each CPU in turn, in short windows over several rounds, and keeps each
CPU's best window: a CPU slow at its best is slow for good (or busy throughout), while one
that met a slow state in some windows is not. On the lent H200 VMs every vCPU switches
between two speeds in 0.1-3 s stretches (a Python loop 1.2 or 2.2 µs a step, the
wrapper's `submit` about 40 or 60 µs with it: issue 54), and the median of a CPU's windows
sampled whichever it was in then, at a factor (1.5-1.8x) the rule below leaves out at: the
run now takes its figures from the rounds of one state (analysis/states.py), not from a
choice of CPUs. It times the issue alone (the clock is read before the wait). A plain
Python loop is timed beside it: where the driver works on threads of its own (lavapipe), a
CPU shared with a busy process slowed the issue by 1.45x only and the loop by 2x; a slow
vCPU's `submit` shows in the issue alone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Seconds of one window of a path on one CPU, and the rounds over all CPUs (the best is
#: kept).
WINDOW_S = 0.01
ROUNDS = 4
_SHADER = """@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(1) fn main() { data[0] = data[0] + 1u; }"""


#: The name of the Python loop's path in a Probe.
LOOP = "a Python loop"


@dataclass(frozen=True)
class Probe:
    """Per path timed (its description), the seconds of one step per CPU (its best window)."""

    seconds: dict[str, dict[int, float]]
    took_s: float


def measure(cpus: list[int]) -> Probe:
    """Each CPU's cost of each path; the thread's CPUs are restored after."""
    started = time.perf_counter()
    paths: dict[str, tuple[Callable[[], None], Callable[[], None]]] = {}
    if (found := _webgpu_issue()) is not None:
        issue, name, wait = found
        paths[name] = (issue, wait)
    paths[LOOP] = (_python_loop, lambda: None)
    before = os.sched_getaffinity(0)
    costs: dict[str, dict[int, list[float]]] = {name: {c: [] for c in cpus} for name in paths}
    try:
        for _ in range(ROUNDS):
            for cpu in cpus:
                os.sched_setaffinity(0, {cpu})
                for name, (step, finish) in paths.items():
                    costs[name][cpu].append(_window(step))
                    finish()
    finally:
        os.sched_setaffinity(0, before)
    return Probe({name: {c: float(np.min(v)) for c, v in by_cpu.items()}
                  for name, by_cpu in costs.items()}, time.perf_counter() - started)


def _window(step: Callable[[], None]) -> float:
    """Seconds of one `step` over a window on the current CPU (the first step, which pays
    for the CPU's caches, not counted)."""
    step()
    count, t0 = 0, time.perf_counter()
    while (now := time.perf_counter()) - t0 < WINDOW_S:
        step()
        count += 1
    return (now - t0) / max(count, 1)


def _python_loop() -> None:
    sum(range(200))


def _webgpu_issue() -> tuple[Callable[[], None], str, Callable[[], None]] | None:
    """Encode and submit one dispatch on wgpu-native's best adapter, and its wait; None where
    there is no such adapter."""
    try:
        import wgpu

        from gpuoverhead.gpu import adapters
        from gpuoverhead.gpu.wait import waiter

        found = wgpu.gpu.enumerate_adapters_sync()
    except Exception:  # no binding, or a native library that cannot start here
        return None
    if not found:
        return None
    adapter = min(found, key=lambda a: adapters.rank(adapters.describe(a, "probe")))
    device = adapter.request_device_sync()
    pipeline = device.create_compute_pipeline(layout="auto", compute={
        "module": device.create_shader_module(code=_SHADER), "entry_point": "main"})
    buffer = device.create_buffer(size=4, usage=wgpu.BufferUsage.STORAGE)
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": buffer, "offset": 0, "size": 4}}])
    queue = device.queue

    def issue() -> None:
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(1)
        compute.end()
        queue.submit([encoder.finish()])

    name = adapters.describe(adapter, "probe").device
    return issue, f"encode and submit one dispatch ({wgpu.__name__}, {name})", waiter(device)
