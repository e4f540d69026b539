"""Readback and sampling (issue 29): what it costs to bring a GPU result to the host. Per
element count (f32-sized values: 1 is 4 bytes, 262,144 is 1 MiB) three forms, each unit a
host call that ends with its data in numpy (cases.HOST_UNITS):

- `read`: the values, a pattern whose seed changes at each reset, written then by a kernel
  (shaders/fusion_readback.wgsl), read back;
- `argmax-gpu`: as many f32 logits (seeded normal values) reduced to their argmax on the
  GPU by the decode step's kernels (decode.argmax_steps) and its 4 bytes read back, the
  dispatches and the copy in one submit;
- `argmax-cpu`: every logit read back and numpy's argmax taken.

A WebGPU read is the copy into a MAP_READ buffer made once, the submit, the map, the bytes
copied into numpy, the unmap (work.Staged; the page does the same in JS), as an engine
that reads every step keeps its staging buffer; `queue.read_buffer` would also create and
destroy one per read. PyTorch: `.cpu()` of the values, `torch.argmax(logits).item()`,
`.cpu()` of the logits and numpy's argmax (on a CPU device `.cpu()` copies nothing: a
baseline of the host work alone). No CPU reference: on the CPU there is nothing to read
back.
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
from gpuoverhead.workloads.work import NO_TOKEN, Context, Work

#: Most values: WebGPU's default largest storage binding (128 MiB) of 4-byte values.
MAX_ELEMENTS = 1 << 25
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA: a readback is host work.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)


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


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    n, wg = group.elements, group.workgroup_size
    scores = logits(n, rng)
    shared, want = ctx.buffer(scores), np.array([np.argmax(scores)], np.uint32)
    argmax_ctx = ctx.with_kernel(_argmax_kernel(group))
    works = {}
    for case in group.cases:
        if case.variant == READ:
            works[case] = _read_work(ctx, n, wg, int(rng.integers(1, 1 << 31)))
            continue
        resets = []
        if case.variant == GPU_ARGMAX:
            token = ctx.buffer(np.array([NO_TOKEN], np.uint32))
            read = ctx.staged(token, 4, tuple(decode.argmax_steps(argmax_ctx, shared, token,
                                                                  n)))
            resets.append(ctx.writer(token, np.array([NO_TOKEN], np.uint32)))
        else:
            read = ctx.staged(shared, 4 * n, argmax=True)
        works[case] = Work([], read.result, _then(read.forget, *resets), lambda _, w=want: w,
                           exact=True, host=read.unit)
    return works


def _argmax_kernel(group: Group) -> Kernel:
    """The decode step's kernel, shipped beside this workload's (its argmax entry points)."""
    path = group.kernel.path.with_name(f"{DECODE_KERNEL}.wgsl")
    return replace(group.kernel, name=DECODE_KERNEL, path=path, source=path.read_text())


def _read_work(ctx: Context, n: int, wg: int, first: int) -> Work:
    """The `read` form: values written with seed `first`; each reset has the kernel write
    the next seed's, so the check after sampling sees a read made during sampling."""
    seed = [first]
    data = ctx.buffer(pattern(n, first))
    seed_buffer = ctx.buffer(np.zeros(4, np.uint32), uniform=True)
    fill = ctx.step(ctx.pipeline("pattern", WG=wg), {0: data, 1: seed_buffer},
                    grid_for(n, wg))
    read = ctx.staged(data, 4 * n)

    def reset() -> None:
        read.forget()
        seed[0] += 1
        ctx.writer(seed_buffer, np.array([seed[0], 0, 0, 0], np.uint32))()
        ctx.submit((fill,))

    return Work([], read.result, reset, lambda _: pattern(n, seed[0]), exact=True,
                host=read.unit)


def _then(*calls: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        for call in calls:
            call()
    return run


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any
                ) -> tuple[dict, dict]:
    """The forms on torch's device: `.cpu()` of the values (int32 there: the same bytes),
    `torch.argmax(...).item()`, `.cpu()` of the logits and numpy's argmax; each unit keeps
    what it got for the check, and a reset forgets it (the values move to the next seed)."""
    n = group.elements
    scores = logits(n, rng)
    on_device, want = torch.from_numpy(scores).to(dev), np.array([np.argmax(scores)], np.uint32)
    units, outputs = {}, {}
    for case in group.cases:
        last: list[Any] = [None]
        if case.variant == READ:
            seed = [int(rng.integers(1, 1 << 31))]
            values = torch.from_numpy(pattern(n, seed[0]).view(np.int32)).to(dev)

            def reset(seed: list[int] = seed, values: Any = values, last: list = last) -> None:
                last[0], seed[0] = None, seed[0] + 1
                values.copy_(torch.from_numpy(pattern(n, seed[0]).view(np.int32)))

            def take(values: Any = values) -> Any:
                return values.cpu().numpy()

            output = work(lambda last=last: np.full(n, NO_TOKEN, np.uint32) if last[0] is None
                          else last[0].view(np.uint32), reset,
                          lambda _, seed=seed: pattern(n, seed[0]), exact=True)
        else:
            take = (lambda: torch.argmax(on_device).item()) if case.variant == GPU_ARGMAX \
                else (lambda: np.argmax(on_device.cpu().numpy()))
            output = work(lambda last=last: np.array(
                [NO_TOKEN if last[0] is None else last[0]], np.uint32),
                lambda last=last: last.__setitem__(0, None), lambda _: want, exact=True)

        def unit(take: Callable[[], Any] = take, last: list = last) -> None:
            last[0] = take()

        units[case], outputs[case] = (lambda unit=unit: unit), output
    return units, outputs


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """Every form runs eagerly (there is nothing to fuse)."""
    return (EAGER,)
