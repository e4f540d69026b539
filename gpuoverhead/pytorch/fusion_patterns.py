"""PyTorch baselines of the fusion patterns: does fusing pay on CUDA as it does on WebGPU?

- `chain`, `rmsnorm`: unfused = the ops in eager mode (one kernel launch each); fused = the
  same function through `torch.compile` (Inductor fuses it into one kernel), where the
  suite's `torch_compile_max_n` allows K (compiling on a CPU is slow: CI sets it to 0);
- `loop`: unfused = L eager steps (each step is several kernels: torch has no one-kernel
  stencil); fused = the L steps captured once as a CUDA graph and replayed (CUDA only): one
  launch, as the WebGPU fused form is one dispatch; torch.compile cannot take L unrolled steps;
- `matmul`: `torch.mm` per size, with GPU time from CUDA events (CUDA only) for the crossover;
- `decode`: the same step as gpu/decode.py on the same weights: unfused = eager ops,
  fused = the step captured as one CUDA graph (CUDA only) and the step through
  torch.compile (where `torch_compile_max_n` > 0), GPU time from CUDA events on CUDA.
Outputs are checked as the WebGPU ones are (same references, same rules).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import replace
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.drivers.torch_forms import COMPILE, EAGER, GRAPH
from gpuoverhead.gpu import decode
from gpuoverhead.gpu import fusion_patterns as fusion
from gpuoverhead.suite.model import MODELS, RMSNORM_HIDDEN, TIMESTAMPS, Case, Group

_MASK = 0xFFFFFFFF


def cases(group: Group, kind: str) -> tuple[Case, ...]:
    """The torch cases of a fusion group, in the forms that exist on this device."""
    if group.precision != "f32":  # the f16 step is WebGPU's alone so far
        return ()
    out = []
    for case in group.cases:
        if case.sync == TIMESTAMPS and not (kind == "cuda" and group.fusion in ("matmul",
                                                                                 "decode")):
            continue
        if case.encoding != "dispatch":  # torch has no command encodings to choose
            continue
        if case.variant in ("unfused", "single"):
            out.append(replace(case, implementation=EAGER))
        elif group.fusion in ("loop", "decode"):
            if kind == "cuda":
                out.append(replace(case, implementation=GRAPH))
            if group.fusion == "decode" and group.torch_compile_max_n > 0:
                out.append(replace(case, implementation=COMPILE))
        elif case.k <= group.torch_compile_max_n or group.fusion == "rmsnorm" and \
                group.torch_compile_max_n > 0:
            out.append(replace(case, implementation=COMPILE))
    return tuple(out)


def operations(group: Group, rng: np.random.Generator, notes: dict[str, Any]
               ) -> tuple[Group, dict[Case, Callable[[int], Any]],
                          Callable[[dict[Case, int]], None], bool]:
    """The group as it runs here, each case's timed op, the output check after sampling,
    and whether the ops return GPU times (CUDA events, in ns)."""
    import torch

    from gpuoverhead.drivers.torch_forms import device_name

    kind = device_name()
    dev = torch.device(kind)
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference is f32 (and f64) math
    sync = (torch.cuda.synchronize if kind == "cuda" else
            torch.mps.synchronize if kind == "mps" else (lambda: None))
    builder = {"chain": _chain, "loop": _loop, "rmsnorm": _rmsnorm, "matmul": _matmul,
               "decode": _decode}
    units, outputs = builder[group.fusion](group, rng, dev, torch)  # type: ignore[index]
    ops: dict[Case, Callable[[int], Any]] = {}
    kept = []
    timings = notes.setdefault("torch_fusion_build_s", {})
    for case in group.cases:
        start = time.perf_counter()
        try:
            unit = units[case]()
            unit()  # compiles or captures, and runs one unit
            sync()
        except Exception as exc:  # compile or capture failures are data, not a crash
            timings[case.id] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            continue
        timings[case.id] = round(time.perf_counter() - start, 3)
        fusion.check(case, outputs[case], 1, "before sampling, one unit")
        ops[case] = _timed(unit, sync, torch) if case.sync == TIMESTAMPS else _op(unit, sync)
        kept.append(case)
    for case in kept:
        outputs[case].reset()
    if kind == "cuda" and any(c.implementation == COMPILE for c in kept):
        # Where CUDA graphs were skipped, torch-compile is Inductor's kernels launched one
        # by one: say so in run.json rather than only in a log line.
        from torch._dynamo.utils import counters

        notes["torch_compile_cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])

    def verify(counts: dict[Case, int]) -> list[str]:
        works = {case: outputs[case] for case in kept}
        return fusion.verify(works, counts)

    return replace(group, cases=tuple(kept)), ops, verify, kind == "cuda"


def _op(unit: Callable[[], None], sync: Callable[[], None]) -> Callable[[int], tuple[int]]:
    def op(n: int) -> tuple[int]:
        for _ in range(n):
            unit()
        launched = perf_counter_ns()
        sync()
        return (launched,)

    return op


def _timed(unit: Callable[[], None], sync: Callable[[], None], torch: Any
           ) -> Callable[[int], tuple[int, int]]:
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def op(n: int) -> tuple[int, int]:
        begin.record()
        for _ in range(n):
            unit()
        end.record()
        sync()
        return 0, int(round(begin.elapsed_time(end) * 1e6))

    return op


def _work(read: Callable[[], np.ndarray], reset: Callable[[], None],
          reference: Callable[[int], np.ndarray | None], exact: bool,
          done: list[int] | None = None) -> fusion.Work:
    return fusion.Work([], read, reset, reference, exact, done if done is not None else [0])


def _compiled(fn: Callable[..., Any], torch: Any) -> Callable[..., Any]:
    return torch.compile(fn, dynamic=False)


def _chain(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    a, b, c = (float(v) for v in fusion.CHAIN_PARAMS[:3])
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
            fn = _compiled(chain, torch)
            return lambda: x.copy_(fn(x))

        units[case] = (lambda eager=eager: eager) if case.implementation == EAGER else fused
        outputs[case] = _work(lambda x=x: x.cpu().numpy(),
                              lambda x=x, i=initial: x.copy_(torch.from_numpy(i)),
                              lambda n, i=initial[:fusion.CHAIN_CHECKED], k=case.k:
                              fusion.chain_reference(i, k, n), exact=True)
    return units, outputs


def _loop(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    units, outputs = {}, {}
    inputs: dict[int, np.ndarray] = {}
    mult = int(fusion.LOOP_MULTIPLIER)
    for case in group.cases:
        initial = inputs.setdefault(case.k, rng.integers(0, 1 << 32, group.elements,
                                                         dtype=np.uint32))
        x = torch.from_numpy(initial.astype(np.int64)).to(dev)

        def steps(x: Any = x, k: int = case.k) -> None:
            for _ in range(k):
                right = torch.roll(x, -1)
                mixed = torch.roll(x, 1) ^ (((right << 5) & _MASK) | (right >> 27))
                x.copy_((mixed * mult + x) & _MASK)

        def graph(steps: Any = steps, x: Any = x) -> Callable[[], None]:
            saved = x.clone()
            replay = _graph_of(steps, torch)
            x.copy_(saved)  # the warm-up ran a unit: undo it, the check counts units
            return replay

        units[case] = (lambda steps=steps: steps) if case.implementation == EAGER else graph
        outputs[case] = _work(lambda x=x: x.cpu().numpy().astype(np.uint32),
                              lambda x=x, i=initial: x.copy_(torch.from_numpy(
                                  i.astype(np.int64))),
                              lambda n, i=initial, k=case.k: fusion.loop_reference(i, n * k)
                              if n * k <= fusion.LOOP_REPLAY_MAX else None, exact=True)
    return units, outputs


def _graph_of(steps: Callable[[], None], torch: Any) -> Callable[[], None]:
    """`steps` captured as one CUDA graph (after a warm-up run on a side stream, as torch
    asks); returns its replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        steps()
    torch.cuda.current_stream().wait_stream(stream)
    captured = torch.cuda.CUDAGraph()
    with torch.cuda.graph(captured):
        steps()
    return captured.replay


def _decode(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    w = decode.Weights.of(MODELS[group.elements], group.cases[0].k)
    expected, s = decode.reference(w), w.shape
    t, half, cache = (lambda a: torch.from_numpy(a).to(dev)), decode.HEAD // 2, w.cache
    q_size, kv_size, per_kv = s.heads * decode.HEAD, s.kv_heads * decode.HEAD, \
        s.heads // s.kv_heads
    layers = [{k: t(v) for k, v in layer.items() if not k.endswith("cache")}
              for layer in w.layers]
    # Tensors of their own (not views): torch.compile's static addresses are per tensor.
    caches = [(t(layer["kcache"].reshape(cache + 1, s.kv_heads, decode.HEAD)),
               t(layer["vcache"].reshape(cache + 1, s.kv_heads, decode.HEAD)))
              for layer in w.layers]
    emb, final_norm, head = t(w.embedding), t(w.final_norm), t(w.head)
    angle = t((cache * decode.ROPE_THETA ** (-2 * np.arange(half) / decode.HEAD))
              .astype(np.float32))
    cos, sin = torch.cos(angle), torch.sin(angle)

    def norm(x: Any, weight: Any) -> Any:
        return x * torch.rsqrt(x.pow(2).mean() + decode.EPS) * weight

    def rope(v: Any) -> Any:
        a, b = v[:, :half], v[:, half:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=1)

    def step(logits: Any) -> None:
        x = emb.clone()
        for layer, (keys, values) in zip(layers, caches, strict=True):
            qkv = layer["wqkv"] @ norm(x, layer["norm1"]) + layer["bqkv"]
            q = rope(qkv[:q_size].view(s.heads, decode.HEAD))
            keys[cache] = rope(qkv[q_size:q_size + kv_size].view(s.kv_heads, decode.HEAD))
            values[cache] = qkv[q_size + kv_size:].view(s.kv_heads, decode.HEAD)
            scores = torch.einsum("gqd,tgd->gqt", q.view(s.kv_heads, per_kv, decode.HEAD),
                                  keys) / decode.HEAD ** 0.5
            out = torch.einsum("gqt,tgd->gqd", torch.softmax(scores, dim=-1), values)
            x = x + layer["wo"] @ out.reshape(-1)
            gate, up = (layer["wgu"] @ norm(x, layer["norm2"])).split(s.mlp)
            x = x + layer["wdown"] @ (torch.nn.functional.silu(gate) * up)
        logits.copy_(head @ norm(x, final_norm))

    units, outputs = {}, {}
    for case in group.cases:  # each its own logits: the forms are compared with each other
        logits = torch.zeros(s.vocab, device=dev)
        mine = functools.partial(step, logits)
        fixed = [logits, emb, final_norm, head, cos, sin,
                 *(t for layer in layers for t in layer.values()),
                 *(t for pair in caches for t in pair)]
        units[case] = {EAGER: lambda mine=mine: mine,
                       GRAPH: lambda mine=mine: _graph_of(mine, torch),
                       COMPILE: lambda mine=mine, fixed=fixed: _compiled_step(mine, fixed,
                                                                              torch)
                       }[case.implementation]
        outputs[case] = fusion.Work([], lambda logits=logits: logits.cpu().numpy(),
                                    lambda: None, lambda n: expected, exact=False,
                                    tolerance=decode.TOLERANCE)
    return units, outputs


def _compiled_step(step: Callable[[], None], fixed: list[Any], torch: Any
                   ) -> Callable[[], None]:
    """The whole step through torch.compile: Inductor's fused kernels, replayed as CUDA
    graphs on CUDA (`reduce-overhead`), as an engine built on torch.compile runs it. The
    step writes its KV caches and logits in place; their addresses are marked static (as
    a static KV cache is) or CUDA graphs would be skipped for the mutated inputs."""
    for tensor in fixed:
        torch._dynamo.mark_static_address(tensor)
    return torch.compile(step, mode="reduce-overhead" if torch.cuda.is_available() else None,
                         dynamic=False, fullgraph=True)


def _rmsnorm(group: Group, rng: np.random.Generator, dev: Any, torch: Any
             ) -> tuple[dict, dict]:
    x_np = rng.standard_normal(group.elements).astype(np.float32)
    w_np = rng.uniform(0.5, 1.5, RMSNORM_HIDDEN).astype(np.float32)
    expected = fusion.rmsnorm_reference(x_np, w_np)
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
            fn = _compiled(norm, torch)
            return lambda: y.copy_(fn(x))

        units[case] = (lambda eager=eager: eager) if case.implementation == EAGER else fused
        outputs[case] = _work(lambda y=y: y.cpu().numpy().ravel(), lambda y=y: y.zero_(),
                              lambda n: expected, exact=False)
    return units, outputs


def _matmul(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
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
        outputs[case] = _work(lambda c=c: c.cpu().numpy().ravel(), lambda c=c: c.zero_(),
                              lambda n, e=expected: e, exact=False)
    return units, outputs
