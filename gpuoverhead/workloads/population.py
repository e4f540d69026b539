"""The population: many independent cells, each iterating a cheap Rastrigin-like evaluation
for L steps; unfused a dispatch per step, fused one dispatch whose threads loop L steps
(shaders/fusion_population.wgsl). Beside the dependent loop it shows fusion where no step
waits on another cell: the work is parallel, only the dispatches are removed. PyTorch: the
steps eagerly, captured as one CUDA graph, or through torch.compile, as for the loop.

The evaluation is integer (u32, wrapping) rather than Rastrigin's f32 cosine so that the
unfused and fused forms, numpy and PyTorch agree bit for bit after any number of steps: an
f32 map iterated thousands of times would amplify rounding differences past any tolerance
that still caught a missing step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.workloads import chain, loop
from gpuoverhead.workloads.work import Context, Work

_MASK = 0xFFFFFFFF
#: The Rastrigin constant A and the multiplier of the move (the shader's).
_A, _MULTIPLIER = 10, 0x9E3779B1
#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = False
#: Weight precisions the suite may ask for.
PRECISIONS = ("f32",)

# A thread a cell in workgroups of the suite's size, as the chain's; any sizes will do.
groups, problems = chain.groups, chain.problems
# The fused forms in PyTorch are the loop's: the L eager steps as one CUDA graph (CUDA only),
# and torch.compile of them up to the suite's torch_compile_max_n.
torch_fused = loop.torch_fused


def _wave(v: Any) -> Any:
    """A triangle wave of period 256 (0 at multiples of 256, 127 halfway): Rastrigin's
    1 - cos in integers."""
    t = v & 255
    return t ^ ((t >> 7) * 255)


def step(x: Any) -> Any:
    """One step of every cell: `x` holds u32 values in int64 (numpy or torch alike: int64
    products wrap modulo 2^64, so their low 32 bits are the u32 ones)."""
    a, b = x & 0xFFFF, x >> 16
    f = (a * a + b * b + _A * (_wave(a) + _wave(b))) & _MASK
    return ((x ^ (((f << 13) & _MASK) | (f >> 19))) * _MULTIPLIER + 1) & _MASK


def reference(x: np.ndarray, steps: int) -> np.ndarray:
    """`steps` steps of the cells `x` (u32), as the kernel computes them."""
    y = x.astype(np.int64)
    for _ in range(steps):
        y = step(y)
    return y.astype(np.uint32)


def _checked(initial: np.ndarray, k: int) -> Callable[[int], np.ndarray | None]:
    """The numpy reference after n units of L = k steps, on the first cells (all cells are
    compared between the forms), where replaying it is affordable (the loop's bound)."""
    x = initial[:chain.CHAIN_CHECKED]
    return lambda n: reference(x, n * k) if n * k <= loop.LOOP_REPLAY_MAX else None


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    grid = grid_for(group.elements, group.workgroup_size)
    inputs: dict[int, np.ndarray] = {}
    works = {}
    for case in group.cases:
        initial = inputs.setdefault(case.k, rng.integers(0, 1 << 32, group.elements,
                                                         dtype=np.uint32))
        cells = ctx.buffer(initial)
        fused = case.variant == "fused"
        pipeline = ctx.pipeline("main", WG=group.workgroup_size, STEPS=case.k if fused else 1)
        one = ctx.step(pipeline, {0: cells}, grid)
        works[case] = Work([(one,) if fused else (one,) * case.k],
                           ctx.reader(cells, np.uint32), ctx.writer(cells, initial),
                           _checked(initial, case.k), exact=True)
    return works


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    return loop.stepped_units(group, rng, dev, torch, step, _checked)
