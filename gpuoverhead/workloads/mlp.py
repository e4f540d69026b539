"""A small MLP at batch 1, y = W2 relu(W1 x + b1) + b2 (issue 29: the study's single-workgroup
mega-kernel against the same work in multi-workgroup dispatches). Unfused, two dispatches
(layer 1 with its relu writes the hidden vector, layer 2 reads it), each a lane group of
MLP_LANES threads per output row, WG / MLP_LANES rows a workgroup, as many workgroups as the
rows take; fused, one dispatch of one workgroup doing both layers with a barrier between
(shaders/fusion_mlp.wgsl). Fusing saves a dispatch but leaves one workgroup (one SM, one
CPU thread on lavapipe) all the work. PyTorch: the ops eagerly (addmv, relu, addmv), as one
CUDA graph, or through torch.compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group
from gpuoverhead.torch_forms import COMPILE, EAGER, GRAPH
from gpuoverhead.workloads.groups import Request, per_elements
from gpuoverhead.workloads.torch_ops import compiled, graph_of, work
from gpuoverhead.workloads.work import Context, Work, counted

#: The hidden layer's size over the input's (D, the suite's `elements`): a transformer
#: MLP's expansion.
MLP_EXPANSION = 4
#: Dispatches of the unfused form (the groups' K): one a layer.
MLP_LAYERS = 2
#: Threads summing one output row (a warp's worth: its loads adjacent in memory).
MLP_LANES = 32
#: Largest D: both matrices (2 x 4 D^2 f32) lie in one binding, and WebGPU's default
#: binding holds 128 MiB (the drivers raise limits for `elements` only).
MLP_MAX_INPUT = 2048
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)


def groups(req: Request) -> list[Group]:
    """A group per D, K fixed: the two layers."""
    return per_elements(req, [MLP_LAYERS], lambda _: req.cfg["workgroup_size"])


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    if bad := [e for e in cfg["elements"] if e % 4 or e > MLP_MAX_INPUT]:
        found.append(("elements", f"the MLP reads its weights (2 x {MLP_EXPANSION} D^2 f32, "
                                  f"D = elements) as vec4 from one binding of at most "
                                  f"128 MiB: D must be a multiple of 4 up to "
                                  f"{MLP_MAX_INPUT}, not {bad[0]}"))
    wg = cfg["workgroup_size"]
    if wg & (wg - 1) or not MLP_LANES <= wg <= 1024:
        found.append(("workgroup_size", f"the MLP sums each row over {MLP_LANES} lanes: "
                                        f"workgroup_size must be a power of two from "
                                        f"{MLP_LANES} to 1024, not {wg}"))
    return found


def model(d: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """x, W1, b1, W2, b2 in f32; each weight row scaled by 1/sqrt(its length), so the hidden
    and output values stay of order one at every D."""
    h = MLP_EXPANSION * d
    x = rng.standard_normal(d).astype(np.float32)
    w1 = (rng.standard_normal((h, d)) / np.sqrt(d)).astype(np.float32)
    w2 = (rng.standard_normal((d, h)) / np.sqrt(h)).astype(np.float32)
    b1, b2 = (rng.uniform(-0.5, 0.5, n).astype(np.float32) for n in (h, d))
    return x, w1, b1, w2, b2


def reference(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray,
              b2: np.ndarray) -> np.ndarray:
    """y in f64."""
    f64 = [a.astype(np.float64) for a in (x, w1, b1, w2, b2)]
    hidden = np.maximum(f64[1] @ f64[0] + f64[2], 0.0)
    return f64[3] @ hidden + f64[4]


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    d, wg = group.elements, group.workgroup_size
    h, rows = MLP_EXPANSION * d, wg // MLP_LANES
    x, w1, b1, w2, b2 = model(d, rng)
    expected = reference(x, w1, b1, w2, b2)
    weights = ctx.buffer(np.concatenate([w1.ravel(), w2.ravel()]))
    biases = ctx.buffer(np.concatenate([b1, b2]))

    def p(entry: str) -> Any:
        return ctx.pipeline(entry, WG=wg, LANES=MLP_LANES, D=d, H=h)

    works = {}
    for case in group.cases:
        zeros = np.zeros(d, dtype=np.float32)
        acts = ctx.buffer(np.concatenate([x, np.zeros(h, np.float32)]))
        y, count = ctx.buffer(zeros), ctx.buffer(np.zeros(1, np.uint32))
        if case.variant == "fused":
            steps = (ctx.step(p("fused"), {0: weights, 1: biases, 2: acts, 3: y, 4: count},
                              (1, 1)),)
        else:
            steps = (ctx.step(p("layer1"), {0: weights, 1: biases, 2: acts}, (-(-h // rows), 1)),
                     ctx.step(p("layer2"), {0: weights, 1: biases, 2: acts, 3: y, 4: count},
                              (-(-d // rows), 1)))
        works[case] = counted(ctx, Work([steps], ctx.reader(y, np.float32),
                                         ctx.writer(y, zeros), lambda units: expected,
                                         exact=False), count)
    return works


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any
                ) -> tuple[dict, dict]:
    arrays = model(group.elements, rng)
    expected = reference(*arrays)
    x, w1, b1, w2, b2 = (torch.from_numpy(a).to(dev) for a in arrays)

    def mlp(x: Any) -> Any:
        return torch.addmv(b2, w2, torch.relu(torch.addmv(b1, w1, x)))

    units, outputs = {}, {}
    for case in group.cases:
        hidden, y = torch.empty_like(b1), torch.zeros_like(b2)

        def eager(hidden: Any = hidden, y: Any = y) -> None:
            torch.addmv(b1, w1, x, out=hidden)
            hidden.relu_()
            torch.addmv(b2, w2, hidden, out=y)

        def fused(y: Any = y, eager: Any = eager, form: str | None = case.implementation
                  ) -> Callable[[], None]:
            if form == GRAPH:
                return graph_of(eager, torch)
            fn = compiled(mlp, torch)
            return lambda: y.copy_(fn(x))

        units[case] = (lambda eager=eager: eager) if case.implementation == EAGER else fused
        outputs[case] = work(lambda y=y: y.cpu().numpy(), lambda y=y: y.zero_(),
                             lambda n: expected, exact=False)
    return units, outputs


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """The fused MLP: one CUDA graph of the eager ops (CUDA only), and torch.compile where
    the suite allows compiling."""
    return ((GRAPH,) if kind == "cuda" else ()) + \
        ((COMPILE,) if group.torch_compile_max_n > 0 else ())
