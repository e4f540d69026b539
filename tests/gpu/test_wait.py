"""The completion wait really waits for the GPU, and the kernels really do their work."""

from __future__ import annotations

from time import perf_counter_ns

import numpy as np
import pytest
from conftest import BACKEND

from gpuoverhead.cases import Case, Group, Kernel, Sampling
from gpuoverhead.drivers import webgpu
from gpuoverhead.errors import IntegrityError
from gpuoverhead.gpu import adapters
from gpuoverhead.gpu.layers.wrapper import one_pass, submit_each
from gpuoverhead.gpu.targets import build_targets, compile_pipeline, grid_for
from gpuoverhead.gpu.wait import waiter
from gpuoverhead.resources import SHADERS_DIR

ELEMENTS = 1 << 22


def _target(kernel_name: str, elements: int):
    binding = webgpu.binding("wgpu-native")
    found = adapters.select(adapters.discover([binding])[0], BACKEND, None)[0]
    device = found.adapter.request_device_sync()
    path = SHADERS_DIR / f"{kernel_name}.wgsl"
    writes = "first" if kernel_name == "empty" else "all"
    kernel = Kernel(kernel_name, path, path.read_text(), writes)
    case = Case("t", kernel_name, elements, 64, "sequential", "submit", "wait", (1,))
    group = Group("t", kernel, elements, 64, Sampling(1, 0.1, 3, 3, 1), (case,))
    pipeline = compile_pipeline(device, kernel, 64)
    return build_targets(device, pipeline, group, np.random.default_rng(0), binding,
                         waiter(device))[case]


@pytest.mark.slow
def test_wait_blocks_until_the_dispatches_are_done():
    target = _target("add_one", ELEMENTS)
    submit_each(target, 1)  # first use: pipeline compilation stays out of the timing
    target.wait()
    issued, waited = [], []
    for _ in range(3):  # the least of three: one preemption while issuing decides nothing
        t0 = perf_counter_ns()
        one_pass(target, 8)  # one submit: lavapipe runs a submit while the next one waits
        issued.append(perf_counter_ns() - t0)
        target.wait()
        waited.append(perf_counter_ns() - t0)
    # 8 dispatches over 4M values take a while even on a fast GPU; issuing them takes µs.
    assert min(waited) > 5 * min(issued), (issued, waited)
    target.dispatched = 1 + 3 * 8
    target.verify("t")  # raises unless every element grew by exactly 9


def test_empty_kernel_touches_only_its_counter():
    target = _target("empty", 4096)
    submit_each(target, 5)
    target.wait()
    target.dispatched = 5
    target.verify("t")
    target.dispatched = 4  # one dispatch fewer than ran: the check must see it
    with pytest.raises(IntegrityError, match="1 of 4096 values wrong"):
        target.verify("t")


def test_grid_covers_more_than_one_dimension_of_workgroups():
    assert grid_for(64, 64) == (1, 1)
    x, y = grid_for(70_000 * 64, 64)
    assert x == 65535 and x * y * 64 >= 70_000 * 64


def test_the_wait_of_wgpu_native_is_its_blocking_device_poll():
    target = _target("empty", 1)
    assert target.wait.__name__ == "_poll_wait"
