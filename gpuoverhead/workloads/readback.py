"""Readback and sampling (issue 29): what it costs to bring a GPU result to the host. Per
element count (f32-sized values: 1 is 4 bytes, 262,144 is 1 MiB) three forms, each unit a
host call that ends with its data in numpy (cases.HOST_UNITS):

- `read`: the values, written by a kernel (shaders/fusion_readback.wgsl), read back;
- `argmax-gpu`: as many f32 logits (seeded normal values) reduced to their argmax on the
  GPU by the decode step's kernels (decode.argmax_steps) and its 4 bytes read back, the
  dispatches and the copy in one submit;
- `argmax-cpu`: every logit read back and numpy's argmax taken.

A WebGPU read is the copy into a MAP_READ buffer made once, the submit, the map, the bytes
copied into numpy, the unmap (`_staged`), as an engine that reads every step keeps its
staging buffer; `queue.read_buffer` would also create and destroy one per read. PyTorch:
`.cpu()` of the values, `torch.argmax(logits).item()`, `.cpu()` of the logits and numpy's
argmax (on a CPU device `.cpu()` copies nothing: a baseline of the host work alone). No CPU
reference: on the CPU there is nothing to read back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.cases import DECODE_KERNEL, GPU_ARGMAX, HOST_UNITS, READ, Case, Group, Kernel
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.torch_forms import EAGER
from gpuoverhead.workloads import decode
from gpuoverhead.workloads.groups import Request
from gpuoverhead.workloads.torch_ops import work
from gpuoverhead.workloads.work import Context, Step, Work

#: Most values: WebGPU's default largest storage binding (128 MiB) of 4-byte values.
MAX_ELEMENTS = 1 << 25
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA: a readback is host work.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)
#: What the token holds before a unit writes it (no argmax of a vocabulary below 2^32).
NO_TOKEN = np.uint32(0xFFFFFFFF)


def groups(req: Request) -> list[Group]:
    """A group per element count, its three forms sampled interleaved (no GPU-time twin: the
    time is the host's)."""
    wg = req.cfg["workgroup_size"]
    return [req.group(e, wg, (replace(req.base, elements=e, workgroup_size=wg, k=1, variant=v)
                              for v in HOST_UNITS)) for e in req.cfg["elements"]]


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    if bad := [e for e in cfg["elements"] if e > MAX_ELEMENTS]:
        found.append(("elements", f"a readback reads at most {MAX_ELEMENTS} values (one "
                                  f"128 MiB storage binding), not {bad[0]}"))
    if cfg["gpu_timestamps"]:
        found.append(("gpu_timestamps", "a readback is timed on the host: the readback "
                                        "workload has no GPU-time cases (set "
                                        "gpu_timestamps: false)"))
    return found


def pattern(elements: int, seed: int) -> np.ndarray:
    """What the kernel writes: value i is (i * 0x9E3779B1) ^ seed, wrapping u32."""
    i = np.arange(elements, dtype=np.uint32)
    return (i * np.uint32(0x9E3779B1)) ^ np.uint32(seed)


def logits(elements: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(elements).astype(np.float32)


class _Held:
    """A unit's last result (the output its Work checks) and the pattern's seed: `reset`
    moves to the next seed and forgets the result, so the check after sampling sees a read
    made during sampling, of values written after the check before it."""

    def __init__(self, rng: np.random.Generator, empty: np.ndarray) -> None:
        self.seed, self.empty = int(rng.integers(1, 1 << 31)), empty
        self.last: Any = empty

    def forget(self) -> None:
        self.seed += 1
        self.last = self.empty


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    n, wg = group.elements, group.workgroup_size
    scores = logits(n, rng)
    shared, want = ctx.buffer(scores), int(np.argmax(scores))
    argmax_ctx = Context(ctx.device, replace(group, kernel=_argmax_kernel(group)))
    works = {}
    for case in group.cases:
        if case.variant == READ:
            works[case] = _read_work(ctx, n, wg, _Held(rng, np.zeros(n, np.uint32)))
        elif case.variant == GPU_ARGMAX:
            token = ctx.buffer(np.array([NO_TOKEN]))
            on_gpu = _staged(ctx, token, 4, tuple(decode.argmax_steps(argmax_ctx, shared,
                                                                      token, n)))
            works[case] = _token_work(rng, lambda read=on_gpu: read().view(np.uint32)[0],
                                      want, ctx.writer(token, np.array([NO_TOKEN])))
        else:
            every = _staged(ctx, shared, 4 * n)
            works[case] = _token_work(rng, lambda read=every: np.argmax(
                read().view(np.float32)), want)
    return works


def _argmax_kernel(group: Group) -> Kernel:
    """The decode step's kernel, shipped beside this workload's (its argmax entry points)."""
    path = group.kernel.path.with_name(f"{DECODE_KERNEL}.wgsl")
    return replace(group.kernel, name=DECODE_KERNEL, path=path, source=path.read_text())


def _read_work(ctx: Context, n: int, wg: int, held: _Held) -> Work:
    """The `read` form: the values the pattern kernel wrote, read back."""
    data = ctx.buffer(np.zeros(n, np.uint32))
    seed = ctx.buffer(np.zeros(4, np.uint32), uniform=True)
    fill = ctx.step(ctx.pipeline("pattern", WG=wg), {0: data, 1: seed}, grid_for(n, wg))
    read = _staged(ctx, data, 4 * n)

    def write_pattern() -> None:
        """Seed `held.seed`'s values, written by the kernel (submitted: a read waits)."""
        ctx.queue.write_buffer(seed, 0, np.array([held.seed, 0, 0, 0], np.uint32))
        ctx.queue.submit([_encoded(ctx.device, (fill,)).finish()])

    def reset() -> None:
        held.forget()
        write_pattern()

    def unit() -> None:
        held.last = read().view(np.uint32)

    write_pattern()
    return Work([], lambda: held.last, reset, lambda _: pattern(n, held.seed), exact=True,
                host=unit)


def _encoded(device: Any, steps: tuple[Step, ...]) -> Any:
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


def _staged(ctx: Context, src: Any, size: int, steps: tuple[Step, ...] = ()
            ) -> Callable[[], np.ndarray]:
    """A read of `src`'s first `size` bytes: `steps` (if any) and the copy into a MAP_READ
    buffer made once, one submit; the map, the bytes copied out, the unmap."""
    usage, mode = ctx.api.BufferUsage, ctx.api.MapMode.READ
    staging = ctx.device.create_buffer(size=size, usage=usage.MAP_READ | usage.COPY_DST)
    device, queue = ctx.device, ctx.queue

    def read() -> np.ndarray:
        encoder = _encoded(device, steps)
        encoder.copy_buffer_to_buffer(src, 0, staging, 0, size)
        queue.submit([encoder.finish()])
        staging.map_sync(mode)
        out = np.frombuffer(staging.read_mapped(0, size), np.uint8)
        staging.unmap()
        return out

    return read


def _token_work(rng: np.random.Generator, argmax: Callable[[], Any], want: int,
                clear: Callable[[], None] = lambda: None) -> Work:
    """An argmax form, each unit `argmax()`: its output the token the last unit found,
    against numpy's `want`; `clear` resets what the unit writes on the device."""
    held = _Held(rng, np.array([NO_TOKEN]))

    def reset() -> None:
        held.forget()
        clear()

    def unit() -> None:
        held.last = argmax()

    return Work([], lambda: np.array([held.last], np.uint32).ravel(), reset,
                lambda _: np.array([want], np.uint32), exact=True, host=unit)


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any
                ) -> tuple[dict, dict]:
    n = group.elements
    scores = logits(n, rng)
    on_device, want = torch.from_numpy(scores).to(dev), int(np.argmax(scores))
    units, outputs = {}, {}
    for case in group.cases:
        if case.variant == READ:
            held = _Held(rng, np.zeros(n, np.uint32))
            # int32 on the device (torch has no uint32 copy everywhere): the same bytes
            values = torch.from_numpy(pattern(n, held.seed).view(np.int32)).to(dev)

            def reset(held: _Held = held, values: Any = values) -> None:
                held.forget()
                values.copy_(torch.from_numpy(pattern(n, held.seed).view(np.int32)))

            def read(held: _Held = held, values: Any = values) -> None:
                held.last = values.cpu().numpy().view(np.uint32)

            units[case] = lambda read=read: read
            outputs[case] = work(lambda held=held: held.last, reset,
                                 lambda _, held=held: pattern(n, held.seed), exact=True)
            continue
        found = (lambda: torch.argmax(on_device).item()) if case.variant == GPU_ARGMAX else \
            (lambda: np.argmax(on_device.cpu().numpy()))
        outputs[case] = _token_work(rng, found, want)
        units[case] = lambda host=outputs[case].host: host
    return units, outputs


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """Every form runs eagerly (there is nothing to fuse)."""
    return (EAGER,)
