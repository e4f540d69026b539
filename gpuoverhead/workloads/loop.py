"""The dependent loop: L steps of a stencil on a ring of cells held by one workgroup; unfused
a dispatch per step, fused one dispatch that loops inside the shader, as a simulation fused
into one dispatch does (shaders/fusion_loop.wgsl). PyTorch: the steps eagerly, captured as
one CUDA graph, or unrolled by torch.compile (for L up to `torch_compile_max_n`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group
from gpuoverhead.torch_forms import COMPILE, EAGER, GRAPH
from gpuoverhead.workloads.groups import Request, per_elements
from gpuoverhead.workloads.torch_ops import compiled, graph_in_place, work
from gpuoverhead.workloads.work import Context, Step, Work, read_state_half

_MASK = 0xFFFFFFFF
#: Largest units x steps the dependent loop's numpy reference replays after sampling.
LOOP_REPLAY_MAX = 200_000
LOOP_MULTIPLIER = np.uint32(0x9E3779B1)
#: The most cells the dependent loop holds in one workgroup.
LOOP_MAX_CELLS = 256
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)


def groups(req: Request) -> list[Group]:
    """A workgroup holds all cells: its size is the element count."""
    return per_elements(req, req.ks, lambda elements: elements)


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    if max(cfg["elements"]) > LOOP_MAX_CELLS:
        return [("elements", f"the dependent loop keeps all cells in one workgroup: at "
                             f"most {LOOP_MAX_CELLS} elements")]
    return []


def reference(x: np.ndarray, steps: int) -> np.ndarray:
    """`steps` steps of the dependent loop's stencil on the ring `x` (u32, wrapping). Each
    neighbour is gathered through an index of the ring, not np.roll (4x the time a step: the
    check after sampling replays up to LOOP_REPLAY_MAX steps a case, seconds of a worker)."""
    x = x.astype(np.uint32, copy=True)
    ring = np.arange(x.size)
    before, after = np.roll(ring, 1), np.roll(ring, -1)
    for _ in range(steps):
        right = x[after]
        x = (x[before] ^ ((right << np.uint32(5)) | (right >> np.uint32(27)))) \
            * LOOP_MULTIPLIER + x
    return x


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    cells = group.elements
    inputs: dict[int, np.ndarray] = {}
    works = {}
    for case in group.cases:
        initial = inputs.setdefault(case.k, rng.integers(0, 1 << 32, cells, dtype=np.uint32))
        both = np.concatenate([initial, np.zeros(cells, dtype=np.uint32)])
        state = ctx.buffer(both)
        sequences = [_loop_sequence(ctx, case, {0: state}, parity)
                     for parity in ((0, 1) if case.k % 2 else (0,))]
        work = Work(sequences, lambda: np.empty(0), ctx.writer(state, both),
                    _checked(initial, case.k), exact=True)
        read_state_half(ctx, work, state, np.uint32, cells, case.k)
        works[case] = work
    return works


def _loop_sequence(ctx: Context, case: Case, buffers: dict[int, Any], parity: int
                   ) -> tuple[Step, ...]:
    """One unit of the loop starting from half `parity`: L steps, or one looping dispatch."""
    cells = case.elements
    if case.variant == "fused":
        fused = ctx.pipeline("fused", WG=cells, STEPS=case.k, PARITY=parity)
        return (ctx.step(fused, buffers, (1, 1)),)
    step = [ctx.step(ctx.pipeline("advance", WG=cells, PARITY=p), buffers, (1, 1)) for p in (0, 1)]
    return tuple(step[(parity + j) % 2] for j in range(case.k))


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    mult = int(LOOP_MULTIPLIER)

    def step(t: Any) -> Any:
        """One step on the ring in int64, wrapped to u32 (torch has no u32 shifts)."""
        right = torch.roll(t, -1)
        mixed = torch.roll(t, 1) ^ (((right << 5) & _MASK) | (right >> 27))
        return (mixed * mult + t) & _MASK

    return stepped_units(group, rng, dev, torch, step, _checked)


def _checked(initial: np.ndarray, k: int) -> Callable[[int], np.ndarray | None]:
    """The numpy reference after n units of L = k steps, where replaying it is affordable."""
    return lambda n: reference(initial, n * k) if n * k <= LOOP_REPLAY_MAX else None


def stepped_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any,
                  step: Callable[[Any], Any],
                  checked: Callable[[np.ndarray, int], Callable[[int], np.ndarray | None]]
                  ) -> tuple[dict, dict]:
    """The PyTorch forms of a unit of L = k applications of `step` to u32 state held in
    int64 (the loop, the population): the steps eagerly, captured as one CUDA graph, or
    compiled as one function (Dynamo unrolls the L steps); outputs against `checked`."""
    units, outputs = {}, {}
    inputs: dict[int, np.ndarray] = {}
    for case in group.cases:
        initial = inputs.setdefault(case.k, rng.integers(0, 1 << 32, group.elements,
                                                         dtype=np.uint32))
        x = torch.from_numpy(initial.astype(np.int64)).to(dev)

        def eager(x: Any = x, k: int = case.k) -> None:
            for _ in range(k):
                x.copy_(step(x))

        def steps(t: Any, k: int = case.k) -> Any:
            for _ in range(k):
                t = step(t)
            return t

        def fused(x: Any = x, eager: Any = eager, steps: Any = steps,
                  form: str | None = case.implementation) -> Callable[[], None]:
            if form == GRAPH:
                return graph_in_place(eager, x, torch)
            fn = compiled(steps, torch)
            return lambda: x.copy_(fn(x))

        units[case] = (lambda eager=eager: eager) if case.implementation == EAGER else fused
        outputs[case] = work(lambda x=x: x.cpu().numpy().astype(np.uint32),
                              lambda x=x, i=initial: x.copy_(torch.from_numpy(
                                  i.astype(np.int64))),
                              checked(initial, case.k), exact=True)
    return units, outputs


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """The fused loop is its L eager steps captured once as a CUDA graph (CUDA only), and
    torch.compile of the L steps for L up to the suite's `torch_compile_max_n`: Dynamo
    unrolls the loop, so compile time grows with L until it fails (RecursionError, or the
    suite's `compile_limit_s`), which is a result too."""
    return ((GRAPH,) if kind == "cuda" else ()) + \
        ((COMPILE,) if case.k <= group.torch_compile_max_n else ())
