"""What every workload shares: the Work a case dispatches, the pipelines and buffers of a
group (`Context`), and the output checks against numpy (before sampling: one unit on fresh
inputs; after: what the timed units left behind, and the fused form against the unfused).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.cases import PIPELINED, READBACK_EVERY, SYNCED, Case, Group, Kernel
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.gpu.targets import binding_of, shader_message

#: One dispatch of a unit: pipeline, bind group (made for that pipeline), grid x and y.
Step = tuple[Any, Any, int, int]
#: What an argmax readback holds before its first unit (no vocabulary reaches 2^32).
NO_TOKEN = 0xFFFFFFFF


@dataclass
class Work:
    """What a case dispatches: unit u runs `sequences[u % len(sequences)]` (the dependent
    loop alternates between two when L is odd); `reset` restores its inputs; `read` its
    output; `reference(units)` is the numpy result of that many units from the inputs."""

    sequences: list[tuple[Step, ...]]
    read: Callable[[], np.ndarray]
    reset: Callable[[], None]
    reference: Callable[[int], np.ndarray | None]
    exact: bool
    units_done: list[int] = field(default_factory=lambda: [0])
    #: Relative tolerance of an inexact output (absolute: a tenth of it, times the largest).
    tolerance: float = 1e-4
    #: The GPU's own count of units done, where the output alone cannot show a missing one.
    counted: Callable[[], int] | None = None
    #: Each sequence cut into the segments the `pass` encoding gives a pass each (the
    #: decode step: per layer); None: one segment.
    segments: list[tuple[tuple[Step, ...], ...]] | None = None
    #: A host-read loop's (the decode token loop, the recurrent step's `host_reads`): the
    #: read of what its steps leave on the GPU, and after how many steps it is read
    #: (read_loop); None: a unit is waited for instead. The hybrid recurrent step's "read"
    #: is its host stage, so a unit is whole only after it: checks run it after each unit.
    readback: tuple[Callable[[], object], int] | None = None
    #: A unit that is a host call and no dispatch of `sequences` (the readback workload's
    #: reads): it ends with its data on the host, so nothing waits after it.
    host: Callable[[], object] | None = None

    @property
    def segmented(self) -> list[tuple[tuple[Step, ...], ...]]:
        return self.segments or [(sequence,) for sequence in self.sequences]


class Context:
    """Pipelines (cached by entry point and constants), buffers and bind groups of a group."""

    def __init__(self, device: Any, group: Group) -> None:
        self.device, self.queue, self.api = device, device.queue, binding_of(device)
        self.kernel = group.kernel
        self.module = None
        self.pipelines: dict[tuple[str, tuple[tuple[str, int], ...]], Any] = {}

    def pipeline(self, entry: str, **constants: int) -> Any:
        key = (entry, tuple(sorted(constants.items())))
        if key not in self.pipelines:
            try:
                if self.module is None:
                    self.module = self.device.create_shader_module(
                        code=self.kernel.source, label=self.kernel.name)
                self.pipelines[key] = self.device.create_compute_pipeline(
                    layout="auto", label=f"{self.kernel.name}:{entry}",
                    compute={"module": self.module, "entry_point": entry,
                             "constants": dict(constants)})
            except self.api.GPUError as exc:
                raise UserError(f"{self.kernel.path}{shader_message(str(exc))}") from None
        return self.pipelines[key]

    def buffer(self, data: np.ndarray, uniform: bool = False) -> Any:
        usage = self.api.BufferUsage
        kind = usage.UNIFORM if uniform else usage.STORAGE
        return self.device.create_buffer_with_data(
            data=np.ascontiguousarray(data), usage=kind | usage.COPY_SRC | usage.COPY_DST)

    def step(self, pipeline: Any, buffers: dict[int, Any], grid: tuple[int, int]) -> Step:
        bind_group = self.device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": b, "resource": {"buffer": buf, "offset": 0, "size": buf.size}}
                     for b, buf in sorted(buffers.items())])
        return pipeline, bind_group, grid[0], grid[1]

    def reader(self, buf: Any, dtype: type, offset: int = 0, count: int | None = None
               ) -> Callable[[], np.ndarray]:
        def read() -> np.ndarray:
            return np.frombuffer(self.queue.read_buffer(buf), dtype=dtype)[offset:][:count]
        return read

    def writer(self, buf: Any, data: np.ndarray) -> Callable[[], None]:
        return lambda: self.queue.write_buffer(buf, 0, np.ascontiguousarray(data))

    def with_kernel(self, kernel: Kernel) -> Context:
        """A Context on the same device compiling another shipped kernel (the readback
        workload's argmax is the decode step's)."""
        other = copy.copy(self)
        other.kernel, other.module, other.pipelines = kernel, None, {}
        return other

    def submit(self, steps: tuple[Step, ...]) -> None:
        """`steps` in one pass and submit, outside any timed region (not waited for)."""
        self.queue.submit([encoded(self.device, steps).finish()])

    def staged(self, src: Any, size: int, steps: tuple[Step, ...] = (), argmax: bool = False
               ) -> Staged:
        return Staged(self, src, size, steps, argmax)


class Staged:
    """A readback as an engine makes it, one per `unit()`: `steps` (if any) and the copy of
    `src`'s first `size` bytes into a MAP_READ buffer made once, one submit; the map, the
    bytes copied out, the unmap; with `argmax`, numpy's argmax of them as f32. `result()`
    is what the last unit got, as u32 values (after `forget`, NO_TOKEN in each)."""

    def __init__(self, ctx: Context, src: Any, size: int, steps: tuple[Step, ...],
                 argmax: bool) -> None:
        usage, mode = ctx.api.BufferUsage, ctx.api.MapMode.READ
        staging = ctx.device.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)
        device, queue, self.argmax = ctx.device, ctx.queue, argmax
        self.forget()

        def unit() -> None:
            encoder = encoded(device, steps)
            encoder.copy_buffer_to_buffer(src, 0, staging, 0, size)
            queue.submit([encoder.finish()])
            staging.map_sync(mode)
            out = np.frombuffer(staging.read_mapped(0, size), np.uint8)
            staging.unmap()
            self.last = np.argmax(out.view(np.float32)) if argmax else out

        self.unit, self.size = unit, size

    def forget(self) -> None:
        self.last: Any = NO_TOKEN if self.argmax else None

    def result(self) -> np.ndarray:
        if self.argmax:
            return np.array([self.last], np.uint32)
        return np.full(self.size // 4, NO_TOKEN, np.uint32) if self.last is None else \
            self.last.view(np.uint32)


def encoded(device: Any, steps: tuple[Step, ...]) -> Any:
    """A command encoder with `steps` in one compute pass (none: no pass)."""
    encoder = device.create_command_encoder()
    if steps:
        compute = encoder.begin_compute_pass()
        for pipeline, bind_group, x, y in steps:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(x, y, 1)
        compute.end()
    return encoder


def verify_outputs(works: dict[Case, Work], counts: dict[Case, int]) -> list[str]:
    """After sampling: each case against numpy where affordable, and the unfused and fused
    forms of the same K against each other (they saw the same inputs and units). Returns a
    note for each case whose numpy reference was too long to replay."""
    skipped = [f"{case.id}: numpy replay of {counts[case]} units skipped (too long to "
               "replay); checked against its other form instead"
               for case, work in works.items()
               if not check(case, work, counts[case], f"after {counts[case]} units")]
    for case, work in works.items():
        if case.variant != "fused":
            continue
        twin = next((c for c in works if c.variant == "unfused" and c.k == case.k
                     and c.sync == case.sync and c.encoding == case.encoding), None)
        if twin is not None and counts[twin] == counts[case]:
            compare_output(case, work.read(), works[twin].read(), work,
                     f"fused vs unfused after {counts[case]} units")
    return skipped


def check(case: Case, work: Work, units: int, when: str) -> bool:
    """The output of `work` against its numpy reference after `units` units, and the GPU's
    count of units where it keeps one; False where the reference was too long to replay."""
    if work.counted is not None and (done := work.counted()) != units:
        raise IntegrityError(f"{case.id}: output check failed ({when}): the GPU counted "
                             f"{done} units of work, {units} were issued")
    want = work.reference(units)
    compare_output(case, work.read(), want, work, when)
    return want is not None


def compare_output(case: Case, got: np.ndarray, want: np.ndarray | None, work: Work, when: str
             ) -> None:
    if want is None:
        return
    got = got[: want.size]
    if work.exact:
        bad = np.flatnonzero(got != want)
    else:
        scale = float(np.max(np.abs(want))) or 1.0
        bad = np.flatnonzero(~np.isclose(got, want, rtol=work.tolerance,
                                         atol=work.tolerance / 10 * scale))
    if bad.size:
        i = int(bad[0])
        raise IntegrityError(f"{case.id}: output check failed ({when}): {bad.size} of "
                             f"{want.size} values wrong (element {i}: expected {want[i]}, "
                             f"found {got[i]})")


def read_state_half(ctx: Context, work: Work, buf: Any, dtype: type, size: int,
                    steps_per_unit: int) -> None:
    """Point `work.read` at the half of `buf` (two halves of `size` values, stepped back and
    forth) that holds the state after the units done, `steps_per_unit` steps each."""
    read_all = ctx.reader(buf, dtype)

    def read() -> np.ndarray:
        half = (work.units_done[0] * steps_per_unit) % 2
        return read_all()[half * size:(half + 1) * size]

    work.read = read


def read_loop(step: Callable[[], None], readback: tuple[Callable[[], object], int]
              ) -> Callable[[int], tuple[int]]:
    """The timed op of a host-read loop: N steps, the value read back after every `every`-th
    step (never where `every` is 0) and after the last (which the sample then includes). It
    returns the clock at its end less the time spent in those reads, so that the sample's
    issue time is the CPU time of the steps outside the reads (a read's own CPU cost counted
    with its wait)."""
    read, every = readback

    def op(n: int) -> tuple[int]:
        waited = 0
        for i in range(1, n + 1):
            step()
            if i == n or every and i % every == 0:
                start = perf_counter_ns()
                read()
                waited += perf_counter_ns() - start
        return (perf_counter_ns() - waited,)

    return op


def units_op(unit: Callable[[], object], sync: Callable[[], None]
             ) -> Callable[[int], tuple[int]]:
    """The timed op of units issued one call each: N calls, the clock read (issue time),
    then `sync`."""
    def op(n: int) -> tuple[int]:
        for _ in range(n):
            unit()
        launched = perf_counter_ns()
        sync()
        return (launched,)

    return op


def reads_every(sync: str) -> int:
    """Steps between a host-read loop's reads in `sync` (0: none but after the last)."""
    return {SYNCED: 1, PIPELINED: READBACK_EVERY}.get(sync, 0)


def issue(ctx: Context, work: Work, units: int) -> None:
    """Units of work outside any timed region (the timed ops are in methods/fusion.py)."""
    encoder = ctx.device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    for u in range(work.units_done[0], work.units_done[0] + units):
        for pipeline, bind_group, x, y in work.sequences[u % len(work.sequences)]:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(x, y, 1)
    compute.end()
    ctx.queue.submit([encoder.finish()])
    work.units_done[0] += units


def counted(ctx: Context, work: Work, count: Any) -> Work:
    """`work` with the GPU's unit counter in `count`, read by the check and reset with it."""
    zero, clear, read = np.zeros(1, np.uint32), work.reset, ctx.reader(count, np.uint32)

    def reset() -> None:
        clear()
        ctx.queue.write_buffer(count, 0, zero)

    work.reset, work.counted = reset, lambda: int(read()[0])
    return work
