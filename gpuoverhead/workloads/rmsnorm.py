"""RMSNorm over rows of 896 values (Qwen2.5-0.5B's hidden size), as five dispatches or one
(shaders/fusion_rmsnorm.wgsl). PyTorch: the ops eagerly, or through torch.compile.
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
from gpuoverhead.workloads.work import Context, Step, Work, counted

#: A row's values (Qwen2.5-0.5B's hidden size), and the dispatches of the unfused form.
RMSNORM_HIDDEN = 896
RMSNORM_STEPS = 5
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)


def groups(req: Request) -> list[Group]:
    """K is fixed: the steps of one normalization."""
    return per_elements(req, [RMSNORM_STEPS], lambda _: req.cfg["workgroup_size"])


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    if bad := [e for e in cfg["elements"] if e % RMSNORM_HIDDEN]:
        found.append(("elements", f"RMSNorm rows have {RMSNORM_HIDDEN} values: elements "
                                  f"must be multiples of {RMSNORM_HIDDEN}, not {bad[0]}"))
    wg = cfg["workgroup_size"]
    if wg & (wg - 1) or wg > 1024:
        found.append(("workgroup_size", f"RMSNorm reduces a row in a tree: workgroup_size must "
                                        f"be a power of two up to 1024, not {wg}"))
    return found


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    rows = x.astype(np.float64).reshape(-1, RMSNORM_HIDDEN)
    scale = 1.0 / np.sqrt(np.mean(rows * rows, axis=1, keepdims=True) + 1e-6)
    return (rows * scale * w.astype(np.float64)).ravel()


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    wg, elements = group.workgroup_size, group.elements
    rows = elements // RMSNORM_HIDDEN
    x = rng.standard_normal(elements).astype(np.float32)
    w = rng.uniform(0.5, 1.5, RMSNORM_HIDDEN).astype(np.float32)
    xb, wb = ctx.buffer(x), ctx.buffer(w)
    expected = reference(x, w)
    flat, per_row = grid_for(elements, wg), (rows, 1)
    works = {}
    for case in group.cases:
        zeros = np.zeros(elements, dtype=np.float32)
        sq, t, y = ctx.buffer(zeros), ctx.buffer(zeros), ctx.buffer(zeros)
        ss, r = ctx.buffer(np.zeros(rows, np.float32)), ctx.buffer(np.zeros(rows, np.float32))

        def p(entry: str) -> Any:
            return ctx.pipeline(entry, WG=wg, H=RMSNORM_HIDDEN)

        count = ctx.buffer(np.zeros(1, np.uint32))
        if case.variant == "fused":
            steps: tuple[Step, ...] = (ctx.step(p("fused"), {0: xb, 1: wb, 6: y, 7: count},
                                                per_row),)
        else:
            steps = (ctx.step(p("square"), {0: xb, 2: sq}, flat),
                     ctx.step(p("sumsq"), {2: sq, 3: ss}, per_row),
                     ctx.step(p("inv_rms"), {3: ss, 4: r}, grid_for(rows, wg)),
                     ctx.step(p("apply_scale"), {0: xb, 4: r, 5: t}, flat),
                     ctx.step(p("weight"), {5: t, 1: wb, 6: y, 7: count}, flat))
        works[case] = counted(ctx, Work([steps], ctx.reader(y, np.float32),
                                         ctx.writer(y, zeros), lambda units: expected,
                                         exact=False), count)
    return works


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any
             ) -> tuple[dict, dict]:
    x_np = rng.standard_normal(group.elements).astype(np.float32)
    w_np = rng.uniform(0.5, 1.5, RMSNORM_HIDDEN).astype(np.float32)
    expected = reference(x_np, w_np)
    x = torch.from_numpy(x_np).to(dev).view(-1, RMSNORM_HIDDEN)
    w = torch.from_numpy(w_np).to(dev)

    def norm(x: Any) -> Any:
        sq = x * x
        ss = sq.sum(dim=-1, keepdim=True)
        r = torch.rsqrt(ss / RMSNORM_HIDDEN + 1e-6)
        t = x * r
        return t * w

    units, outputs = {}, {}
    for case in group.cases:
        y = torch.zeros_like(x)

        def eager(y: Any = y) -> None:
            y.copy_(norm(x))

        def fused(y: Any = y) -> Callable[[], None]:
            fn = compiled(norm, torch)
            return lambda: y.copy_(fn(x))

        units[case] = (lambda eager=eager: eager) if case.implementation == EAGER else fused
        outputs[case] = work(lambda y=y: y.cpu().numpy().ravel(), lambda y=y: y.zero_(),
                              lambda n: expected, exact=False)
    return units, outputs


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """The fused RMSNorm is torch.compile's (where the suite allows compiling)."""
    return (COMPILE,) if group.torch_compile_max_n > 0 else ()
