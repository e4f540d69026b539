"""The recurrent step: a state of H values becomes sigmoid(W h + b) every step, L steps a
unit. Unfused, a step is six dispatches, a matrix-vector product and five pointwise ops (add,
negate, exp, add, reciprocal), as an eager framework issues them; fused, one dispatch per
step (shaders/fusion_recurrent.wgsl). It is the shape of the worked CPU/GPU crossover
example (issue 28): per step H^2 multiply-adds and five ops over H values, sequentially
dependent. PyTorch: the six ops eagerly, the unit captured as one CUDA graph, or through
torch.compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.torch_forms import COMPILE, EAGERLY, GRAPH
from gpuoverhead.workloads.groups import Request, per_elements
from gpuoverhead.workloads.torch_ops import compiled, graph_of, work
from gpuoverhead.workloads.work import Context, Step, Work, read_state_half

#: Largest H: W is H x H f32, 64 MiB at 4096, under WebGPU's default 128 MiB binding.
MAX_HIDDEN = 4096
#: W's entries are N(0, GAIN^2 / H), so W's spectral radius is about GAIN: with sigmoid's
#: slope at most 1/4 the step contracts (f32 rounding does not grow over steps, the GPU stays
#: within tolerance of numpy), slowly enough that the state still moves after many steps.
GAIN = 3.5
#: Most multiply-adds the numpy reference replays after sampling (beyond: fused vs unfused).
REPLAY_MAX = 1e9
TOLERANCE = 1e-4
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)
#: The pointwise ops of an unfused step, in order (entry points of the shader).
POINTWISE = ("add_bias", "negate", "exponent", "add_one", "reciprocal")


def groups(req: Request) -> list[Group]:
    return per_elements(req, req.ks, lambda _: req.cfg["workgroup_size"])


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    if bad := [e for e in cfg["elements"] if e > MAX_HIDDEN]:
        return [("elements", f"the recurrent step's state (elements) holds at most "
                             f"{MAX_HIDDEN} values (W is elements^2 f32), not {bad[0]}")]
    return []


def model(hidden: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """The initial state, W and b, in f32."""
    h = rng.uniform(0, 1, hidden).astype(np.float32)
    w = (rng.standard_normal((hidden, hidden)) * GAIN / np.sqrt(hidden)).astype(np.float32)
    return h, w, rng.uniform(-1, 1, hidden).astype(np.float32)


def reference(h: np.ndarray, w: np.ndarray, b: np.ndarray, steps: int) -> np.ndarray | None:
    """`steps` steps in f64, or None where that is too long to replay."""
    if steps * w.size > REPLAY_MAX:
        return None
    x, w64, b64 = h.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    for _ in range(steps):
        x = 1.0 / (np.exp(-(w64 @ x + b64)) + 1.0)
    return x


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    hidden = group.elements
    h, w, b = model(hidden, rng)
    both = np.concatenate([h, np.zeros(hidden, np.float32)])
    weights, bias = ctx.buffer(w), ctx.buffer(b)
    works = {}
    for case in group.cases:
        state = ctx.buffer(both)
        buffers = {0: state, 1: weights, 2: bias}
        sequences = [_sequence(ctx, case, buffers, parity)
                     for parity in ((0, 1) if case.k % 2 else (0,))]
        work = Work(sequences, lambda: np.empty(0), ctx.writer(state, both),
                    lambda units, k=case.k: reference(h, w, b, units * k), exact=False,
                    tolerance=TOLERANCE)
        read_state_half(ctx, work, state, np.float32, hidden, case.k)
        works[case] = work
    return works


def _sequence(ctx: Context, case: Case, buffers: dict[int, Any], parity: int
              ) -> tuple[Step, ...]:
    """One unit from half `parity`: L steps, each six dispatches or one."""
    wg = case.workgroup_size
    grid = grid_for(case.elements, wg)
    entries = ("fused",) if case.variant == "fused" else ("matvec", *POINTWISE)
    pointwise = {b: buf for b, buf in buffers.items() if b != 1}  # no W: auto layouts omit it
    step = [tuple(ctx.step(ctx.pipeline(e, WG=wg, PARITY=p),
                           pointwise if e in POINTWISE else buffers, grid) for e in entries)
            for p in (0, 1)]
    return tuple(s for j in range(case.k) for s in step[(parity + j) % 2])


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any
                ) -> tuple[dict, dict]:
    hidden = group.elements
    h, w, b = model(hidden, rng)
    wt, bt = torch.from_numpy(w).to(dev), torch.from_numpy(b).to(dev)
    units, outputs = {}, {}
    for case in group.cases:
        x, z = torch.from_numpy(h.copy()).to(dev), torch.empty(hidden, device=dev)

        def eager(x: Any = x, z: Any = z, k: int = case.k) -> None:
            """Six ops a step; an odd L ends with a copy back into x (one op a unit)."""
            pair = (x, z)
            for s in range(k):
                src, dst = pair[s % 2], pair[(s + 1) % 2]
                torch.mv(wt, src, out=dst)
                dst.add_(bt).neg_().exp_().add_(1.0).reciprocal_()
            if k % 2:
                x.copy_(z)

        def steps(t: Any, k: int = case.k) -> Any:
            for _ in range(k):
                t = torch.sigmoid(torch.mv(wt, t) + bt)
            return t

        def fused(x: Any = x, eager: Any = eager, steps: Any = steps,
                  form: str | None = case.implementation) -> Callable[[], None]:
            if form == GRAPH:
                saved = x.clone()
                replay = graph_of(eager, torch)
                x.copy_(saved)  # the warm-up ran a unit: undo it, the check counts units
                return replay
            fn = compiled(steps, torch)
            return lambda: x.copy_(fn(x))

        units[case] = (lambda eager=eager: eager) if case.implementation in EAGERLY else fused
        outputs[case] = work(lambda x=x: x.cpu().numpy(),
                              lambda x=x: x.copy_(torch.from_numpy(h)),
                              lambda n, k=case.k: reference(h, w, b, n * k), exact=False)
    return units, outputs


def numpy_units(group: Group, rng: np.random.Generator) -> tuple[dict, dict]:
    """The step in plain numpy on the CPU, the same six ops in f32 into preallocated
    arrays (no allocation in the timed loop), on the same inputs as the other builds."""
    hidden = group.elements
    h, w, b = model(hidden, rng)
    units, outputs = {}, {}
    for case in group.cases:
        x, z = h.copy(), np.empty(hidden, np.float32)

        def unit(x: np.ndarray = x, z: np.ndarray = z, k: int = case.k) -> None:
            pair = (x, z)
            for s in range(k):
                src, dst = pair[s % 2], pair[(s + 1) % 2]
                np.matmul(w, src, out=dst)
                np.add(dst, b, out=dst)
                np.negative(dst, out=dst)
                np.exp(dst, out=dst)
                np.add(dst, 1.0, out=dst)
                np.reciprocal(dst, out=dst)
            if k % 2:
                x[:] = z

        units[case] = lambda unit=unit: unit
        outputs[case] = work(lambda x=x: x.copy(), lambda x=x: x.__setitem__(slice(None), h),
                             lambda n, k=case.k: reference(h, w, b, n * k), exact=False)
    return units, outputs


def ops_issued(case: Case) -> int:
    """Ops the host issues per unit, for the sequential throughput (time per op issued):
    WebGPU's dispatches (six a step unfused, one fused), eager calls (six a step, and a copy
    back for an odd L; numpy alike), one CUDA graph replay, or a compiled call and its copy
    back."""
    if case.implementation is None:
        return case.k * (6 if case.variant == "unfused" else 1)
    return {GRAPH: 1, COMPILE: 2}.get(case.implementation, 6 * case.k + case.k % 2)


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """A CUDA graph of the unit on CUDA, and torch.compile for L up to the suite's
    `torch_compile_max_n`."""
    return ((GRAPH,) if kind == "cuda" else ()) + \
        ((COMPILE,) if case.k <= group.torch_compile_max_n else ())
