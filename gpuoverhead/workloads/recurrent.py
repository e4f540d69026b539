"""The recurrent step: a state of H values becomes sigmoid(W h + b) every step, L steps a
unit. Unfused, a step is six dispatches, a matrix-vector product and five pointwise ops (add,
negate, exp, add, reciprocal), as an eager framework issues them; fused, one dispatch per
step (shaders/fusion_recurrent.wgsl). The product, in both, is a kernel an engine would
ship: a group of lanes per output value reading its row of W coalesced, their sums added in
workgroup memory (`product_constants`). It is the shape of the worked CPU/GPU crossover
example (issue 28): per step H^2 multiply-adds and five ops over H values, sequentially
dependent. PyTorch: the six ops eagerly, the unit captured as one CUDA graph, or through
torch.compile. With a batch (`batch: B`), B states side by side stepped with the same W
and b: the product becomes a (B x H) by (H x H) matrix product, the pointwise ops run over
B x H values, and a step still issues six ops (or one).

With `host_reads`, what a host sync costs in a pipeline (issue 28): loops of one-step units,
each issued as it comes, the state's first value (4 bytes; PyTorch: `.item()`) read back
after every step, every READBACK_EVERY steps, or only after the last (methods/fusion.py),
unfused and fused; and the HYBRID step, every other stage on the host: the product on the
GPU, its result read back, the five pointwise ops in numpy, the state written back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.cases import HYBRID, READ_LOOPS, SYNCED, Case, Group
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.torch_forms import COMPILE, EAGERLY, GRAPH
from gpuoverhead.workloads.groups import Request, per_elements
from gpuoverhead.workloads.torch_ops import compiled, graph_of, work
from gpuoverhead.workloads.work import Context, Step, Work, read_state_half, reads_every

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
#: Whether the suite may ask for a batch, and for host-read loops (suite/schema.py).
BATCHED = HOST_READS = True
#: The host-read loops' forms: (variant, sync); the hybrid step reads every step.
LOOPS = (*((v, s) for v in ("unfused", "fused") for s in READ_LOOPS), (HYBRID, SYNCED))
#: The pointwise ops of an unfused step, in order (entry points of the shader).
POINTWISE = ("add_bias", "negate", "exponent", "add_one", "reciprocal")
#: The product's lanes (threads per output value) double from MIN_LANES until each lane
#: makes at most LANE_LOADS loads of its row, up to MAX_LANES: the rule of the decode step's
#: matrix-vector kernels (workloads/decode.py), whose loads a lane issues together. Short
#: rows take few lanes (a lane group per row, several rows a subgroup), since a reduction
#: step per doubling is all that more lanes would add there; workgroups hold at least
#: PRODUCT_WG threads.
MIN_LANES, MAX_LANES, LANE_LOADS, PRODUCT_WG = 4, 256, 4, 64


def groups(req: Request) -> list[Group]:
    """A group per H: each L unfused and fused (groups.per_elements); with `host_reads` also
    the LOOPS, runs of `loop_tokens` one-step units, sampled with them."""
    found = per_elements(req, req.ks, lambda _: req.cfg["workgroup_size"])
    if not req.cfg["host_reads"]:
        return found
    return [replace(g, cases=g.cases + tuple(
        replace(g.cases[0], k=1, variant=v, sync=s, n_values=(req.cfg["loop_tokens"],))
        for v, s in LOOPS)) for g in found]


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    if bad := [e for e in cfg["elements"] if e > MAX_HIDDEN]:
        return [("elements", f"the recurrent step's state (elements) holds at most "
                             f"{MAX_HIDDEN} values (W is elements^2 f32), not {bad[0]}")]
    return []


def model(hidden: int, rng: np.random.Generator, batch: int = 1) -> tuple[np.ndarray, ...]:
    """The initial states (B x H, flat), W and b, in f32."""
    h = rng.uniform(0, 1, hidden * batch).astype(np.float32)
    w = (rng.standard_normal((hidden, hidden)) * GAIN / np.sqrt(hidden)).astype(np.float32)
    return h, w, rng.uniform(-1, 1, hidden).astype(np.float32)


def reference(h: np.ndarray, w: np.ndarray, b: np.ndarray, steps: int) -> np.ndarray | None:
    """`steps` steps in f64 (the states flat, as they are stored), or None where that is too
    long to replay."""
    if steps * w.size * (h.size // b.size) > REPLAY_MAX:
        return None
    x = h.astype(np.float64).reshape(-1, b.size)
    w64, b64 = w.astype(np.float64), b.astype(np.float64)
    for _ in range(steps):
        x = 1.0 / (np.exp(-(x @ w64.T + b64)) + 1.0)
    return x.ravel()


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    hidden, total = group.elements, group.elements * group.batch
    h, w, b = model(hidden, rng, group.batch)
    both = np.concatenate([h, np.zeros(total, np.float32)])
    weights, bias = ctx.buffer(w), ctx.buffer(b)
    works = {}
    for case in group.cases:
        state = ctx.buffer(both)
        buffers = {0: state, 1: weights, 2: bias, 3: weights}  # W as f32 and as vec4
        sequences = [_sequence(ctx, case, buffers, parity, hidden, total)
                     for parity in ((0, 1) if case.k % 2 else (0,))]
        work = Work(sequences, lambda: np.empty(0), ctx.writer(state, both),
                    lambda units, k=case.k: reference(h, w, b, units * k), exact=False,
                    tolerance=TOLERANCE)
        read_state_half(ctx, work, state, np.float32, total, case.k)
        if case.sync in READ_LOOPS:
            read = _host_stage(ctx, work, state, b, total) if case.variant == HYBRID else \
                _first_value(ctx, work, state, total, case.k)
            work.readback = (read, reads_every(case.sync))
        works[case] = work
    return works


def _first_value(ctx: Context, work: Work, state: Any, total: int, k: int
                 ) -> Callable[[], object]:
    """A loop's host read: the first 4 bytes of the half the units done left the state in."""
    queue, done = ctx.queue, work.units_done
    return lambda: queue.read_buffer(state, (done[0] * k) % 2 * total * 4, 4)


def _host_stage(ctx: Context, work: Work, state: Any, b: np.ndarray, total: int
                ) -> Callable[[], None]:
    """The hybrid step's host stage, after its one-step unit (the product): the product read
    back, the five pointwise ops in numpy (f32, into an array made once), written back."""
    queue, done, z = ctx.queue, work.units_done, np.empty((total // b.size, b.size), np.float32)

    def stage() -> None:
        offset = done[0] % 2 * total * 4
        np.add(np.frombuffer(queue.read_buffer(state, offset, total * 4), np.float32)
               .reshape(z.shape), b, out=z)
        _pointwise_rest(z)
        queue.write_buffer(state, offset, z)

    return stage


def _pointwise_rest(z: np.ndarray) -> None:
    """The four pointwise ops after the bias, in place: z becomes 1 / (exp(-z) + 1)."""
    np.negative(z, out=z)
    np.exp(z, out=z)
    np.add(z, 1.0, out=z)
    np.reciprocal(z, out=z)


#: The buffers each entry point reads (auto layouts omit the rest): the state alone, but for
#: the product (W both ways, and b for H) and the bias.
_BINDINGS = {"matvec": (0, 1, 2, 3), "fused": (0, 1, 2, 3), "add_bias": (0, 2)}


def product_constants(hidden: int) -> dict[str, int]:
    """The product's pipeline constants for rows of `hidden` values: vec4 loads where they
    divide a row, LANES by the lane rule (MIN_LANES), LOADS each lane's loads of its row."""
    vec4 = hidden % 4 == 0
    loads = hidden // 4 if vec4 else hidden
    lanes = MIN_LANES
    while lanes < MAX_LANES and loads > LANE_LOADS * lanes:
        lanes *= 2
    return {"WG": max(lanes, PRODUCT_WG), "LANES": lanes, "LOADS": -(-loads // lanes),
            "VEC4": int(vec4)}


def _sequence(ctx: Context, case: Case, buffers: dict[int, Any], parity: int, hidden: int,
              total: int) -> tuple[Step, ...]:
    """One unit from half `parity`: L steps, each six dispatches or one over the `total`
    values of the states; the product a lane group per value, the rest a thread per value."""
    wg, product = case.workgroup_size, product_constants(hidden)
    per_product = (product, product["WG"] // product["LANES"])  # values a workgroup
    shapes = {"matvec": per_product, "fused": per_product}
    entries = {"fused": ("fused",), HYBRID: ("matvec",)}.get(case.variant,
                                                             ("matvec", *POINTWISE))

    def dispatch(entry: str, p: int) -> Step:
        consts, values = shapes.get(entry, ({"WG": wg}, wg))
        return ctx.step(ctx.pipeline(entry, PARITY=p, **consts),
                        {b: buffers[b] for b in _BINDINGS.get(entry, (0,))},
                        grid_for(total, values))

    step = [tuple(dispatch(e, p) for e in entries) for p in (0, 1)]
    return tuple(s for j in range(case.k) for s in step[(parity + j) % 2])


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any
                ) -> tuple[dict, dict]:
    hidden, shape = group.elements, (group.batch, group.elements)
    h, w, b = model(hidden, rng, group.batch)
    wt, bt = torch.from_numpy(w).to(dev).t(), torch.from_numpy(b).to(dev)  # states are rows
    units, outputs = {}, {}
    for case in group.cases:
        x = torch.from_numpy(h.reshape(shape).copy()).to(dev)
        z = torch.empty(shape, device=dev)

        def eager(x: Any = x, z: Any = z, k: int = case.k) -> None:
            """Six ops a step; an odd L ends with a copy back into x (one op a unit)."""
            pair = (x, z)
            for s in range(k):
                src, dst = pair[s % 2], pair[(s + 1) % 2]
                torch.mm(src, wt, out=dst)
                dst.add_(bt).neg_().exp_().add_(1.0).reciprocal_()
            if k % 2:
                x.copy_(z)

        def steps(t: Any, k: int = case.k) -> Any:
            for _ in range(k):
                t = torch.sigmoid(torch.mm(t, wt) + bt)
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
        outputs[case] = work(lambda x=x: x.cpu().numpy().ravel(),
                              lambda x=x: x.copy_(torch.from_numpy(h.reshape(shape))),
                              lambda n, k=case.k: reference(h, w, b, n * k), exact=False)
        if case.sync in READ_LOOPS:
            units[case], read = _torch_loop(case, units[case], x, z, wt, b, torch)
            outputs[case].readback = (read, reads_every(case.sync))
    return units, outputs


def _torch_loop(case: Case, unit: Callable, x: Any, z: Any, wt: Any, b: np.ndarray,
                torch: Any) -> tuple[Callable, Callable[[], object]]:
    """A loop's unit maker and host read: the state's first value by `.item()`; the hybrid
    step's unit is the product alone, its read the host stage (the product copied to the
    host, the pointwise ops in numpy into an array made once, the state copied back)."""
    if case.variant != HYBRID:
        return unit, x.view(-1)[0].item
    y = np.empty(tuple(z.shape), np.float32)

    def stage() -> None:
        np.add(z.cpu().numpy(), b, out=y)
        _pointwise_rest(y)
        x.copy_(torch.from_numpy(y))

    return (lambda: lambda: torch.mm(x, wt, out=z)), stage


def numpy_units(group: Group, rng: np.random.Generator) -> tuple[dict, dict]:
    """The step in plain numpy on the CPU, the same six ops in f32 into preallocated
    arrays (no allocation in the timed loop), on the same inputs as the other builds."""
    hidden, shape = group.elements, (group.batch, group.elements)
    h, w, b = model(hidden, rng, group.batch)
    wt = w.T  # states are rows: X W^T
    units, outputs = {}, {}
    for case in group.cases:
        x, z = h.reshape(shape).copy(), np.empty(shape, np.float32)

        def unit(x: np.ndarray = x, z: np.ndarray = z, k: int = case.k) -> None:
            pair = (x, z)
            for s in range(k):
                src, dst = pair[s % 2], pair[(s + 1) % 2]
                np.matmul(src, wt, out=dst)
                np.add(dst, b, out=dst)
                _pointwise_rest(dst)
            if k % 2:
                x[:] = z

        units[case] = lambda unit=unit: unit
        outputs[case] = work(lambda x=x: x.ravel().copy(),
                             lambda x=x: x.__setitem__(slice(None), h.reshape(shape)),
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
