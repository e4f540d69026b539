"""Where a worker process's start-up goes, per implementation: each step timed in a fresh
interpreter (import, adapter discovery, device, pipeline, targets, native loop, clock
calibration; for PyTorch: import, first CUDA work, the baseline's operations). Run from the
repository root: `python benchmarks/worker_start.py [IMPLEMENTATION...]`."""

from __future__ import annotations

import json
import subprocess
import sys
import time

STEPS = r"""
import json, sys, time
t = time.perf_counter()
marks = {}
def mark(name):
    global t
    now = time.perf_counter(); marks[name] = round(now - t, 3); t = now
name = sys.argv[1]
import numpy as np
from gpuoverhead.run import worker
mark("import worker")
from gpuoverhead.suite.expand import load_suite
from gpuoverhead.resources import DEFAULT_SUITE
group = load_suite(DEFAULT_SUITE).groups[0]
mark("load suite")
if name == "torch":
    import torch
    mark("import torch")
    torch.zeros(1, device="cuda" if torch.cuda.is_available() else "cpu").sum().item()
    mark("first tensor op")
    from gpuoverhead.drivers import pytorch
    from dataclasses import replace
    g = replace(group, cases=pytorch._cases(group, pytorch.device_name()))
    pytorch.operations(g, np.random.default_rng(0), {})
    mark("operations")
else:
    from gpuoverhead.drivers import webgpu
    from gpuoverhead.gpu import adapters
    from gpuoverhead.gpu.targets import build_targets, compile_pipeline
    from gpuoverhead.gpu.layers import native
    from gpuoverhead.gpu.wait import waiter
    binding = webgpu.binding(name)
    binding.only("vulkan")
    found = adapters.discover([binding])[0]
    mark("discover")
    device, _ = binding.request_device(found[0].adapter, ["timestamp-query"], {})
    mark("device")
    pipeline = compile_pipeline(device, group.kernel, group.workgroup_size)
    mark("pipeline")
    build_targets(device, pipeline, group, np.random.default_rng(0), binding, waiter(device))
    mark("targets")
    native.load()
    mark("native loop")
from gpuoverhead.run.rounds import timer_cost_ns
timer_cost_ns()
mark("clock calibration")
print(json.dumps(marks))
"""

if __name__ == "__main__":
    for name in sys.argv[1:] or ["wgpu-native", "dawn", "torch"]:
        for _ in range(2):
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", STEPS, name], capture_output=True,
                                  text=True)
            total = time.perf_counter() - start
            steps = json.loads(proc.stdout) if proc.returncode == 0 else proc.stderr[-300:]
            print(f"{name:12s} {total:5.2f} s  {steps}")
