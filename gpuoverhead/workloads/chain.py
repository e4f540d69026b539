"""The chain: K elementwise f32 ops (add, multiply, max) over the group's elements, in
place; unfused a dispatch per op, fused one (shaders/fusion_chain.wgsl). PyTorch: the ops
eagerly, or the chain through torch.compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.torch_forms import COMPILE, EAGER
from gpuoverhead.workloads.groups import Request, per_elements
from gpuoverhead.workloads.torch_ops import compiled, work
from gpuoverhead.workloads.work import Context, Work

#: Constants of the chain's ops: add A, multiply by B, max with C. Every unit adds A at
#: least once and nothing subtracts, so each unit moves every value (a missing unit shows);
#: the max clamps half of the random inputs at first, so the order of ops matters too. All
#: exact in f32 on these values (halves below 2^23), so unfused, fused and numpy agree bit
#: for bit. (B = -1 looked stronger but makes some K, such as 5, an identity per unit.)
CHAIN_PARAMS = np.array([0.5, 1.0, 2.0 ** 19, 0.0], dtype=np.float32)

#: Elements of a chain checked against numpy after sampling (all of them are compared
#: between the unfused and fused forms).
CHAIN_CHECKED = 256
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)


def groups(req: Request) -> list[Group]:
    return per_elements(req, req.ks, lambda _: req.cfg["workgroup_size"])


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """Any sizes will do."""
    return []


def reference(x: np.ndarray, k: int, units: int) -> np.ndarray:
    """`units` applications of the K-op chain, in f32 as the kernel computes it."""
    a, b, c = (np.float32(v) for v in CHAIN_PARAMS[:3])
    x = x.astype(np.float32, copy=True)
    for _ in range(units):
        for s in range(k):
            op = s % 3
            x = x + a if op == 0 else x * b if op == 1 else np.maximum(x, c)
    return x


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    wg = group.workgroup_size
    grid = grid_for(group.elements, wg)
    params = ctx.buffer(CHAIN_PARAMS, uniform=True)
    single = [ctx.pipeline("main", WG=wg, STEPS=1, FIRST=f) for f in range(3)]
    inputs: dict[int, np.ndarray] = {}
    works = {}
    for case in group.cases:
        initial = inputs.setdefault(case.k, rng.integers(0, 1 << 20, group.elements)
                                    .astype(np.float32))
        data = ctx.buffer(initial)
        buffers = {0: data, 1: params}
        if case.variant == "fused":
            steps = (ctx.step(ctx.pipeline("main", WG=wg, STEPS=case.k, FIRST=0), buffers,
                              grid),)
        else:
            per_op = [ctx.step(p, buffers, grid) for p in single]
            steps = tuple(per_op[s % 3] for s in range(case.k))
        checked = initial[:CHAIN_CHECKED]
        works[case] = Work([steps], ctx.reader(data, np.float32), ctx.writer(data, initial),
                           lambda units, x=checked, k=case.k: reference(x, k, units),
                           exact=True)
    return works


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    a, b, c = (float(v) for v in CHAIN_PARAMS[:3])
    units, outputs = {}, {}
    inputs: dict[int, np.ndarray] = {}
    for case in group.cases:
        initial = inputs.setdefault(case.k, rng.integers(0, 1 << 20, group.elements)
                                    .astype(np.float32))
        x = torch.from_numpy(initial.copy()).to(dev)

        def eager(x: Any = x, k: int = case.k) -> None:
            for s in range(k):
                op = s % 3
                if op == 0:
                    x.add_(a)
                elif op == 1:
                    x.mul_(b)
                else:
                    x.clamp_(min=c)

        def chain(t: Any, k: int = case.k) -> Any:
            for s in range(k):
                op = s % 3
                t = t + a if op == 0 else t * b if op == 1 else torch.clamp(t, min=c)
            return t

        def fused(x: Any = x, chain: Any = chain) -> Callable[[], None]:
            fn = compiled(chain, torch)
            return lambda: x.copy_(fn(x))

        units[case] = (lambda eager=eager: eager) if case.implementation == EAGER else fused
        outputs[case] = work(lambda x=x: x.cpu().numpy(),
                              lambda x=x, i=initial: x.copy_(torch.from_numpy(i)),
                              lambda n, i=initial[:CHAIN_CHECKED], k=case.k:
                              reference(i, k, n), exact=True)
    return units, outputs


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """The fused chain is torch.compile's, for K up to the suite's `torch_compile_max_n`."""
    return (COMPILE,) if case.k <= group.torch_compile_max_n else ()
