"""One M x M matmul per size (variant `single`): no fusion, the GPU work that grows until it
overtakes the cost of issuing a dispatch (the crossover; shaders/fusion_matmul.wgsl).
PyTorch: `torch.mm`, timed with CUDA events on CUDA.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group
from gpuoverhead.workloads.groups import Request
from gpuoverhead.workloads.torch_ops import work
from gpuoverhead.workloads.work import Context, Work, counted

#: The shader's tile: a size M is a multiple of it, a workgroup is a tile.
MATMUL_TILE = 16
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = True
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)


def groups(req: Request) -> list[Group]:
    """One group over the sizes M (the suite's `k_sweep`), each a `single` form."""
    wg = MATMUL_TILE ** 2
    return [req.group(max(req.ks) ** 2, wg,
                      (replace(req.base, elements=m * m, workgroup_size=wg, k=m,
                               variant="single", sync=s) for m in req.ks for s in req.syncs))]


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    if bad := [k for k in cfg["k_sweep"] if k % MATMUL_TILE]:
        return [("k_sweep", f"matmul sizes (k_sweep) must be multiples of {MATMUL_TILE}, "
                            f"not {bad[0]}")]
    return []


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    inputs: dict[int, tuple[Any, Any, np.ndarray]] = {}
    works = {}
    for case in group.cases:
        m = case.k
        if m not in inputs:
            a = rng.uniform(-1, 1, (m, m)).astype(np.float32)
            b = rng.uniform(-1, 1, (m, m)).astype(np.float32)
            inputs[m] = (ctx.buffer(a), ctx.buffer(b),
                         (a.astype(np.float64) @ b.astype(np.float64)).ravel())
        ab, bb, expected = inputs[m]
        zeros = np.zeros(m * m, dtype=np.float32)
        c, count = ctx.buffer(zeros), ctx.buffer(np.zeros(1, np.uint32))
        tiles = m // 16
        steps = (ctx.step(ctx.pipeline("main", M=m), {0: ab, 1: bb, 2: c, 3: count},
                          (tiles, tiles)),)
        works[case] = counted(ctx, Work([steps], ctx.reader(c, np.float32),
                                         ctx.writer(c, zeros), lambda units, e=expected: e,
                                         exact=False), count)
    return works


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    units, outputs = {}, {}
    inputs: dict[int, tuple[Any, Any, np.ndarray]] = {}
    for case in group.cases:
        m = case.k
        if m not in inputs:
            a = rng.uniform(-1, 1, (m, m)).astype(np.float32)
            b = rng.uniform(-1, 1, (m, m)).astype(np.float32)
            inputs[m] = (torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev),
                         (a.astype(np.float64) @ b.astype(np.float64)).ravel())
        a_t, b_t, expected = inputs[m]
        c = torch.zeros((m, m), dtype=torch.float32, device=dev)
        units[case] = lambda a=a_t, b=b_t, c=c: (lambda: torch.mm(a, b, out=c))
        outputs[case] = work(lambda c=c: c.cpu().numpy().ravel(), lambda c=c: c.zero_(),
                              lambda n, e=expected: e, exact=False)
    return units, outputs


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """One M x M matmul has no fused form: `torch.mm` per size is its only form."""
    return ()
