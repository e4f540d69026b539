"""GPU objects for a group of cases, and the integrity check of what their dispatches did.

Each case gets its own storage buffer filled with random u32 values, so that after the
group has run, each buffer must have grown by exactly the number of dispatches that case
issued (warm-up included). A kernel whose dispatches did not run would look fast; this is
how such a run is caught.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group, Kernel
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.gpu.bindings import Binding

MAX_WORKGROUPS_PER_DIM = 65535


@dataclass
class Target:
    """What one case dispatches into; `dispatched` counts every dispatch issued to it.
    `bind` is the bind group's descriptor (create_bind_group's arguments), for the loops
    that create one per dispatch."""

    device: Any
    queue: Any
    pipeline: Any
    bind_group: Any
    bind: dict[str, Any]
    grid: tuple[int, int]
    data: Any
    staging: Any
    initial: np.ndarray
    writes: str
    binding: Binding
    wait: Callable[[], None]
    dispatched: int = 0

    def verify(self, case_id: str) -> None:
        """Read the buffer back; raise IntegrityError unless it grew by `dispatched`."""
        got = np.frombuffer(self.queue.read_buffer(self.data), dtype=np.uint32)
        want = self.initial.copy()
        if self.writes == "all":
            want += np.uint32(self.dispatched)
        else:
            want[0] += np.uint32(self.dispatched)
        bad = np.flatnonzero(got != want)
        if bad.size:
            i = int(bad[0])
            raise IntegrityError(
                f"{case_id}: output check failed: {bad.size} of {got.size} values wrong "
                f"(element {i}: expected {int(want[i])} after {self.dispatched} dispatches, "
                f"found {int(got[i])}); the kernel's dispatches did not do what it declares"
            )


def grid_for(elements: int, workgroup_size: int) -> tuple[int, int]:
    """Workgroup counts (x, y) that cover `elements` invocations within the per-dimension limit."""
    groups = -(-elements // workgroup_size)
    x = min(groups, MAX_WORKGROUPS_PER_DIM)
    return x, -(-groups // x)


def compile_pipeline(device: Any, kernel: Kernel, workgroup_size: int) -> Any:
    """A compute pipeline for `kernel`; WGSL errors become a one-line UserError with file:line."""
    wgpu = binding_of(device)
    try:
        module = device.create_shader_module(code=kernel.source, label=kernel.name)
        return device.create_compute_pipeline(
            layout="auto",
            compute={"module": module, "entry_point": "main",
                     "constants": {"WG": workgroup_size}},
            label=kernel.name,
        )
    except wgpu.GPUError as exc:
        raise UserError(f"{kernel.path}{shader_message(str(exc))}") from None


def parse_shader(device: Any, kernel: Kernel) -> None:
    """A workload's kernel file parsed and validated (its pipelines, each with its own
    constants, are built in the worker); WGSL errors become a one-line UserError."""
    wgpu = binding_of(device)
    try:
        device.create_shader_module(code=kernel.source, label=kernel.name)
    except wgpu.GPUError as exc:
        raise UserError(f"{kernel.path}{shader_message(str(exc))}") from None


def shader_message(text: str) -> str:
    where = re.search(r"wgsl:(\d+):(\d+)", text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    reason = next((ln for ln in lines if "error" in ln.lower() and "Validation Error" not in ln),
                  lines[-1] if lines else "shader rejected")
    reason = re.sub(r"^Shader '[^']*' ", "", reason)
    loc = f":{where.group(1)}:{where.group(2)}" if where else ""
    return f"{loc}: shader rejected: {reason}"


def build_targets(device: Any, pipeline: Any, group: Group, rng: np.random.Generator,
                  binding: Binding, wait: Callable[[], None]) -> dict[Case, Target]:
    """One buffer, bind group and readback staging buffer per case of `group`."""
    wgpu = binding_of(device)

    grid = grid_for(group.elements, group.workgroup_size)
    targets = {}
    for case in group.cases:
        initial = rng.integers(0, 1 << 20, size=group.elements, dtype=np.uint32)
        data = device.create_buffer_with_data(
            data=initial,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST,
        )
        staging = device.create_buffer(
            size=4, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        )
        bind = {"layout": pipeline.get_bind_group_layout(0), "entries": [
            {"binding": 0, "resource": {"buffer": data, "offset": 0, "size": data.size}}]}
        targets[case] = Target(device, device.queue, pipeline, device.create_bind_group(**bind),
                               bind, grid, data, staging, initial, group.kernel.writes, binding,
                               wait)
    return targets


def binding_of(device: Any) -> Any:
    """The binding package (wgpu or wgpudawn) a device comes from, for its flags and enums."""
    return __import__(type(device).__module__.split(".")[0])
