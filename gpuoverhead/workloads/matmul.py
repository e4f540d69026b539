"""One M x M matmul per size (variant `single`): no fusion, the GPU work that grows until it
overtakes the cost of issuing a dispatch (the crossover; shaders/fusion_matmul.wgsl).
PyTorch: `torch.mm`, timed with CUDA events on CUDA.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuoverhead.suite.model import Case, Group
from gpuoverhead.workloads.torch_ops import work
from gpuoverhead.workloads.work import Context, Work, counted

#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = True


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
