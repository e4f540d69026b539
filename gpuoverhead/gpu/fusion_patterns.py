"""Fusion patterns on the GPU: the same work as K dispatches (unfused) or as one (fused).

Patterns (kernels in `shaders/fusion_<pattern>.wgsl`; `k` is the case's K, L or M):
- `chain`: K elementwise f32 ops (add, multiply, max) over the group's elements, in place;
- `loop`: L dependent steps of a stencil on a ring of cells held by one workgroup (the
  fused form loops inside the shader, as a simulation fused into one dispatch does);
- `rmsnorm`: RMSNorm over rows of 896 values, as five dispatches or one;
- `matmul`: one M x M matmul (variant `single`): no fusion, the GPU work that grows until it
  overtakes the cost of issuing a dispatch (the crossover).

`build` gives each case a `Work`: its buffers, the steps one unit of work dispatches, and how
to check its output. Before sampling, one unit of every case is run and compared with a numpy
reference on fresh random inputs (then the inputs are restored), so a wrong kernel fails in
a second; after sampling, `verify` checks what the timed units left behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.gpu import decode
from gpuoverhead.gpu.kernels import binding_of, grid_for, shader_message
from gpuoverhead.suite.model import MODELS, RMSNORM_HIDDEN, Case, Group

#: One dispatch of a unit: pipeline, bind group (made for that pipeline), grid x and y.
Step = tuple[Any, Any, int, int]
#: Constants of the chain's ops: add A, multiply by B, max with C. Every unit adds A at
#: least once and nothing subtracts, so each unit moves every value (a missing unit shows);
#: the max clamps half of the random inputs at first, so the order of ops matters too. All
#: exact in f32 on these values (halves below 2^23), so unfused, fused and numpy agree bit
#: for bit. (B = -1 looked stronger but makes some K, such as 5, an identity per unit.)
CHAIN_PARAMS = np.array([0.5, 1.0, 2.0 ** 19, 0.0], dtype=np.float32)
#: Elements of a chain checked against numpy after sampling (all of them are compared
#: between the unfused and fused forms).
CHAIN_CHECKED = 256
#: Largest units x steps the dependent loop's numpy reference replays after sampling.
LOOP_REPLAY_MAX = 200_000
LOOP_MULTIPLIER = np.uint32(0x9E3779B1)


@dataclass
class Work:
    """What a case dispatches: unit u runs `sequences[u % len(sequences)]` (the dependent
    loop alternates between two when L is odd); `reset` restores its inputs; `read` its
    output; `reference(units)` is the numpy result of that many units from the inputs."""

    sequences: list[tuple[Step, ...]]
    read: Callable[[], np.ndarray]
    reset: Callable[[], None]
    reference: Callable[[int], np.ndarray | None]
    exact: bool
    units_done: list[int] = field(default_factory=lambda: [0])
    #: Relative tolerance of an inexact output (absolute: a tenth of it, times the largest).
    tolerance: float = 1e-4
    #: The GPU's own count of units done, where the output alone cannot show a missing one.
    counted: Callable[[], int] | None = None
    #: Each sequence cut into the segments the `pass` encoding gives a pass each (the
    #: decode step: per layer); None: one segment.
    segments: list[tuple[tuple[Step, ...], ...]] | None = None

    @property
    def segmented(self) -> list[tuple[tuple[Step, ...], ...]]:
        return self.segments or [(sequence,) for sequence in self.sequences]


class _Context:
    """Pipelines (cached by entry point and constants), buffers and bind groups of a group."""

    def __init__(self, device: Any, group: Group) -> None:
        self.device, self.queue, self.api = device, device.queue, binding_of(device)
        self.kernel = group.kernel
        self.module = None
        self.pipelines: dict[tuple[str, tuple[tuple[str, int], ...]], Any] = {}

    def pipeline(self, entry: str, **constants: int) -> Any:
        key = (entry, tuple(sorted(constants.items())))
        if key not in self.pipelines:
            try:
                if self.module is None:
                    self.module = self.device.create_shader_module(
                        code=self.kernel.source, label=self.kernel.name)
                self.pipelines[key] = self.device.create_compute_pipeline(
                    layout="auto", label=f"{self.kernel.name}:{entry}",
                    compute={"module": self.module, "entry_point": entry,
                             "constants": dict(constants)})
            except self.api.GPUError as exc:
                raise UserError(f"{self.kernel.path}{shader_message(str(exc))}") from None
        return self.pipelines[key]

    def buffer(self, data: np.ndarray, uniform: bool = False) -> Any:
        usage = self.api.BufferUsage
        kind = usage.UNIFORM if uniform else usage.STORAGE
        return self.device.create_buffer_with_data(
            data=np.ascontiguousarray(data), usage=kind | usage.COPY_SRC | usage.COPY_DST)

    def step(self, pipeline: Any, buffers: dict[int, Any], grid: tuple[int, int]) -> Step:
        bind_group = self.device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": b, "resource": {"buffer": buf, "offset": 0, "size": buf.size}}
                     for b, buf in sorted(buffers.items())])
        return pipeline, bind_group, grid[0], grid[1]

    def reader(self, buf: Any, dtype: type, offset: int = 0, count: int | None = None
               ) -> Callable[[], np.ndarray]:
        def read() -> np.ndarray:
            return np.frombuffer(self.queue.read_buffer(buf), dtype=dtype)[offset:][:count]
        return read

    def writer(self, buf: Any, data: np.ndarray) -> Callable[[], None]:
        return lambda: self.queue.write_buffer(buf, 0, np.ascontiguousarray(data))


def build(device: Any, group: Group, rng: np.random.Generator, wait: Callable[[], None]
          ) -> dict[Case, Work]:
    """Every case's Work, checked with one unit against numpy before anything is timed."""
    ctx = _Context(device, group)
    builder = {"chain": _chain, "loop": _loop, "rmsnorm": _rmsnorm, "matmul": _matmul,
               "decode": _decode}
    works = builder[group.fusion](ctx, group, rng)  # type: ignore[index]
    for case, work in works.items():
        _issue(ctx, work, 1)
        wait()
        check(case, work, 1, "before sampling, one unit")
        work.reset()
        work.units_done[0] = 0
    return works


def verify(works: dict[Case, Work], counts: dict[Case, int]) -> list[str]:
    """After sampling: each case against numpy where affordable, and the unfused and fused
    forms of the same K against each other (they saw the same inputs and units). Returns a
    note for each case whose numpy reference was too long to replay."""
    skipped = [f"{case.id}: numpy replay of {counts[case]} units skipped (over "
               f"{LOOP_REPLAY_MAX} loop steps); checked against its other form instead"
               for case, work in works.items()
               if not check(case, work, counts[case], f"after {counts[case]} units")]
    for case, work in works.items():
        if case.variant != "fused":
            continue
        twin = next((c for c in works if c.variant == "unfused" and c.k == case.k
                     and c.sync == case.sync and c.encoding == case.encoding), None)
        if twin is not None and counts[twin] == counts[case]:
            _compare(case, work.read(), works[twin].read(), work,
                     f"fused vs unfused after {counts[case]} units")
    return skipped


def check(case: Case, work: Work, units: int, when: str) -> bool:
    """The output of `work` against its numpy reference after `units` units, and the GPU's
    count of units where it keeps one; False where the reference was too long to replay."""
    if work.counted is not None and (done := work.counted()) != units:
        raise IntegrityError(f"{case.id}: output check failed ({when}): the GPU counted "
                             f"{done} units of work, {units} were issued")
    want = work.reference(units)
    _compare(case, work.read(), want, work, when)
    return want is not None


def _compare(case: Case, got: np.ndarray, want: np.ndarray | None, work: Work, when: str
             ) -> None:
    if want is None:
        return
    got = got[: want.size]
    if work.exact:
        bad = np.flatnonzero(got != want)
    else:
        scale = float(np.max(np.abs(want))) or 1.0
        bad = np.flatnonzero(~np.isclose(got, want, rtol=work.tolerance,
                                         atol=work.tolerance / 10 * scale))
    if bad.size:
        i = int(bad[0])
        raise IntegrityError(f"{case.id}: output check failed ({when}): {bad.size} of "
                             f"{want.size} values wrong (element {i}: expected {want[i]}, "
                             f"found {got[i]})")


def _issue(ctx: _Context, work: Work, units: int) -> None:
    """Units of work outside any timed region (the timed ops are in methods/fusion.py)."""
    encoder = ctx.device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    for u in range(work.units_done[0], work.units_done[0] + units):
        for pipeline, bind_group, x, y in work.sequences[u % len(work.sequences)]:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(x, y, 1)
    compute.end()
    ctx.queue.submit([encoder.finish()])
    work.units_done[0] += units


def chain_reference(x: np.ndarray, k: int, units: int) -> np.ndarray:
    """`units` applications of the K-op chain, in f32 as the kernel computes it."""
    a, b, c = (np.float32(v) for v in CHAIN_PARAMS[:3])
    x = x.astype(np.float32, copy=True)
    for _ in range(units):
        for s in range(k):
            op = s % 3
            x = x + a if op == 0 else x * b if op == 1 else np.maximum(x, c)
    return x


def _chain(ctx: _Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
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
                           lambda units, x=checked, k=case.k: chain_reference(x, k, units),
                           exact=True)
    return works


def loop_reference(x: np.ndarray, steps: int) -> np.ndarray:
    """`steps` steps of the dependent loop's stencil on the ring `x` (u32, wrapping)."""
    x = x.astype(np.uint32, copy=True)
    for _ in range(steps):
        right = np.roll(x, -1)
        x = (np.roll(x, 1) ^ ((right << np.uint32(5)) | (right >> np.uint32(27)))) \
            * LOOP_MULTIPLIER + x
    return x


def _loop(ctx: _Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
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
                    lambda units, x=initial, k=case.k: loop_reference(x, units * k)
                    if units * k <= LOOP_REPLAY_MAX else None, exact=True)
        read_all = ctx.reader(state, np.uint32)

        def read(work: Work = work, k: int = case.k, read_all: Any = read_all) -> np.ndarray:
            half = (work.units_done[0] * k) % 2
            return read_all()[half * cells:(half + 1) * cells]

        work.read = read
        works[case] = work
    return works


def _loop_sequence(ctx: _Context, case: Case, buffers: dict[int, Any], parity: int
                   ) -> tuple[Step, ...]:
    """One unit of the loop starting from half `parity`: L steps, or one looping dispatch."""
    cells = case.elements
    if case.variant == "fused":
        fused = ctx.pipeline("fused", WG=cells, STEPS=case.k, PARITY=parity)
        return (ctx.step(fused, buffers, (1, 1)),)
    step = [ctx.step(ctx.pipeline("advance", WG=cells, PARITY=p), buffers, (1, 1)) for p in (0, 1)]
    return tuple(step[(parity + j) % 2] for j in range(case.k))


def rmsnorm_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    rows = x.astype(np.float64).reshape(-1, RMSNORM_HIDDEN)
    scale = 1.0 / np.sqrt(np.mean(rows * rows, axis=1, keepdims=True) + 1e-6)
    return (rows * scale * w.astype(np.float64)).ravel()


def _rmsnorm(ctx: _Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    wg, elements = group.workgroup_size, group.elements
    rows = elements // RMSNORM_HIDDEN
    x = rng.standard_normal(elements).astype(np.float32)
    w = rng.uniform(0.5, 1.5, RMSNORM_HIDDEN).astype(np.float32)
    xb, wb = ctx.buffer(x), ctx.buffer(w)
    expected = rmsnorm_reference(x, w)
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
        works[case] = _counted(ctx, Work([steps], ctx.reader(y, np.float32),
                                         ctx.writer(y, zeros), lambda units: expected,
                                         exact=False), count)
    return works


def _decode(ctx: _Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    """A decode step of the group's model (gpu/decode.py), unfused and fused, on one set of
    weights; every step leaves the same logits, the numpy step's."""
    weights = decode.Weights.of(MODELS[group.elements], group.cases[0].k, group.precision)
    engine, expected = decode.Engine(ctx, weights, group.precision), decode.reference(weights)
    works = {}
    for case in group.cases:
        count = ctx.buffer(np.zeros(1, np.uint32))
        segments, logits = engine.steps(case.variant, count)
        readers = [ctx.reader(b, np.float32) for b in logits]
        works[case] = _counted(ctx, Work(
            [sum(segments, ())], lambda rs=readers: np.concatenate([r() for r in rs]),
            lambda: None, lambda units: expected, exact=False, tolerance=decode.TOLERANCE,
            segments=[segments]), count)
    return works


def _matmul(ctx: _Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
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
        works[case] = _counted(ctx, Work([steps], ctx.reader(c, np.float32),
                                         ctx.writer(c, zeros), lambda units, e=expected: e,
                                         exact=False), count)
    return works


def _counted(ctx: _Context, work: Work, count: Any) -> Work:
    """`work` with the GPU's unit counter in `count`, read by the check and reset with it."""
    zero, clear, read = np.zeros(1, np.uint32), work.reset, ctx.reader(count, np.uint32)

    def reset() -> None:
        clear()
        ctx.queue.write_buffer(count, 0, zero)

    work.reset, work.counted = reset, lambda: int(read()[0])
    return work
