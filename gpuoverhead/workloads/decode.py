"""The decode step: one unit of work is one token's step of a transformer with Qwen2.5's
structure (decode_model.py). Unfused, an engine issues one dispatch per operation (18 per
layer); fused, the 5 per layer a tuned engine uses (shaders/fusion_decode.wgsl). Both read
the same weights and caches; the new token is written at position K (the cache length)
every step, so each step does the same work and leaves the same logits, which are compared
with the numpy step. PyTorch: the same step eagerly, captured as one CUDA graph (CUDA
only), and through torch.compile (where `torch_compile_max_n` > 0), GPU time from CUDA
events on CUDA.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.cases import TIMESTAMPS, Case, Group
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.torch_forms import COMPILE, EAGER, GRAPH
from gpuoverhead.workloads.decode_model import DECODE_WG as WG
from gpuoverhead.workloads.decode_model import (
    EPS,
    HEAD,
    MATRICES,
    MAX_BINDING,
    MAX_CACHE,
    MODELS,
    ROPE_THETA,
    TOLERANCE,
    W,
    Weights,
    reference,
)
from gpuoverhead.workloads.groups import Request
from gpuoverhead.workloads.torch_ops import graph_of
from gpuoverhead.workloads.work import Context, Work, counted

#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = True
#: Weight precisions the suite may ask for (f16: read as f16, computed in f32).
PRECISIONS = ("f32", "f16")


def groups(req: Request) -> list[Group]:
    """A group per model and cache length, each its own weights: every encoding of each
    form, and GPU time once per form (one pass: the GPU's work)."""
    forms = [(v, e, "wait") for v in ("unfused", "fused")
             for e in dict.fromkeys(req.cfg["encodings"])]
    forms += [(v, "dispatch", TIMESTAMPS) for v in ("unfused", "fused") if TIMESTAMPS in req.syncs]
    return [req.group(elements, WG, (replace(req.base, elements=elements, workgroup_size=WG,
                                             k=k, variant=v, encoding=e, sync=s)
                                     for v, e, s in forms))
            for elements in req.cfg["elements"] for k in req.ks]


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    shapes = ", ".join(f"{h} ({m.name})" for h, m in MODELS.items())
    if bad := [e for e in cfg["elements"] if e not in MODELS]:
        found.append(("elements", f"a decode step's elements name the model by its hidden "
                                  f"size: one of {shapes}, not {bad[0]}"))
    if bad := [k for k in cfg["k_sweep"] if k > MAX_CACHE]:
        found.append(("k_sweep", f"the KV cache (k_sweep) holds at most {MAX_CACHE} "
                                 f"positions, not {bad[0]}"))
    return found


class Engine:
    """The buffers of one model on a device and the dispatches of one step in either form.

    `ctx` is the group's Context (workloads/work.py: pipelines by entry point and constants,
    buffers, bind groups); `steps(form)` returns the step's dispatches and the logits'
    buffers."""

    def __init__(self, ctx: Any, weights: Weights, precision: str = "f32") -> None:
        self.ctx, self.w, s = ctx, weights, weights.shape
        self.consts = {"WG": WG, "H": s.hidden, "NH": s.heads, "NKV": s.kv_heads, "F": s.mlp,
                       "T": weights.cache + 1}
        up = ctx.buffer
        dtype = np.float16 if precision == "f16" else np.float32

        def matrix(values: np.ndarray) -> Any:
            return up(values.astype(dtype))

        self.embedding, self.final_norm = up(weights.embedding), up(weights.final_norm)
        self.layers = [{k: (matrix if k in MATRICES else up)(v) for k, v in layer.items()}
                       for layer in weights.layers]
        q, kv = s.heads * HEAD, s.kv_heads * HEAD
        # The unfused engine's own weights, as separate tensors (views of the same values).
        self.split = [{"wq": matrix(layer["wqkv"][:q]), "wk": matrix(layer["wqkv"][q:q + kv]),
                       "wv": matrix(layer["wqkv"][q + kv:]), "bq": up(layer["bqkv"][:q]),
                       "bk": up(layer["bqkv"][q:q + kv]), "bv": up(layer["bqkv"][q + kv:]),
                       "wg": matrix(layer["wgu"][:s.mlp]), "wu": matrix(layer["wgu"][s.mlp:]),
                       "norm_bias": up(np.concatenate([layer["norm1"], layer["bqkv"]]))}
                      for layer in weights.layers]
        rows = max(64, MAX_BINDING // (s.hidden * 4) // 64 * 64)
        self.chunks = [(r, min(r + rows, s.vocab)) for r in range(0, s.vocab, rows)]
        self.head = [matrix(weights.head[a:b]) for a, b in self.chunks]
        self.zeros = {n: up(np.zeros(n, np.float32))
                      for n in {s.hidden, q, kv, s.mlp, *(b - a for a, b in self.chunks)}}

    def _p(self, entry: str, **extra: int) -> Any:
        return self.ctx.pipeline(entry, **{**self.consts, **extra})

    def steps(self, form: str, count: Any) -> tuple[tuple[tuple[Any, ...], ...], list[Any]]:
        """One step's dispatches in `form` (ending with `count`) in segments (the embedding
        copy with the first layer, each further layer, the head), and its logits' chunks."""
        s, ctx, c = self.w.shape, self.ctx, self.consts
        h, q, kv, f = s.hidden, s.heads * HEAD, s.kv_heads * HEAD, s.mlp
        buf = {n: ctx.buffer(np.zeros(size, np.float32)) for n, size in
               (("x", h), ("n", h), ("q", q), ("k", kv), ("v", kv), ("o", q), ("y", h),
                ("g", f), ("u", f), ("a", f), ("p", s.heads * c["T"]))}
        out = [ctx.buffer(np.zeros(b - a, np.float32)) for a, b in self.chunks]
        step = ctx.step
        layer_of = self._fused_layer if form == "fused" else self._unfused_layer
        segments = [layer_of(layer, split, buf)
                    for layer, split in zip(self.layers, self.split, strict=True)]
        segments[0].insert(0, step(self._p("copy"), {0: self.embedding, 3: buf["x"]},
                                   (-(-h // WG), 1)))
        steps: list[Any] = []
        if form != "fused":
            steps.append(step(self._p("rmsnorm"), {0: self.final_norm, 1: buf["x"],
                                                   3: buf["n"]}, (1, 1)))
        for (a, b), weights, logits in zip(self.chunks, self.head, out, strict=True):
            rows = b - a
            if form == "fused":
                steps.append(step(self._p("norm_matvec", ROWS=rows), {
                    W: weights, 1: buf["x"], 2: self.final_norm, 3: logits}, _rows(rows)))
            else:
                steps.append(step(self._p("matvec", ROWS=rows, COLS=h), {
                    W: weights, 1: buf["n"], 2: self.zeros[rows], 3: logits}, _rows(rows)))
        steps.append(step(self._p("count"), {6: count}, (1, 1)))
        return tuple(map(tuple, [*segments, steps])), out

    def _matvec(self, w: Any, v: Any, bias: Any, y: Any, rows: int, cols: int) -> Any:
        return self.ctx.step(self._p("matvec", ROWS=rows, COLS=cols),
                             {W: w, 1: v, 2: bias, 3: y}, _rows(rows))

    def _unfused_layer(self, layer: dict, split: dict, b: dict) -> list[Any]:
        s, step, p = self.w.shape, self.ctx.step, self._p
        h, q, kv, f, t = s.hidden, s.heads * HEAD, s.kv_heads * HEAD, s.mlp, self.consts["T"]
        return [
            step(p("rmsnorm"), {0: layer["norm1"], 1: b["x"], 3: b["n"]}, (1, 1)),
            self._matvec(split["wq"], b["n"], split["bq"], b["q"], q, h),
            self._matvec(split["wk"], b["n"], split["bk"], b["k"], kv, h),
            self._matvec(split["wv"], b["n"], split["bv"], b["v"], kv, h),
            step(p("rope", ROWS=s.heads), {3: b["q"]}, _flat(s.heads * HEAD // 2)),
            step(p("rope", ROWS=s.kv_heads), {3: b["k"]}, _flat(s.kv_heads * HEAD // 2)),
            step(p("kv_store"), {0: b["k"], 1: b["v"], 3: layer["kcache"],
                                 4: layer["vcache"]}, _flat(kv)),
            step(p("scores"), {0: b["q"], 1: layer["kcache"], 3: b["p"]}, _flat(s.heads * t)),
            step(p("softmax"), {3: b["p"]}, (s.heads, 1)),
            step(p("attend"), {0: b["p"], 1: layer["vcache"], 3: b["o"]}, _flat(q)),
            self._matvec(layer["wo"], b["o"], self.zeros[h], b["y"], h, q),
            step(p("add", ROWS=h), {0: b["y"], 3: b["x"]}, _flat(h)),
            step(p("rmsnorm"), {0: layer["norm2"], 1: b["x"], 3: b["n"]}, (1, 1)),
            self._matvec(split["wg"], b["n"], self.zeros[f], b["g"], f, h),
            self._matvec(split["wu"], b["n"], self.zeros[f], b["u"], f, h),
            step(p("silu_mul", ROWS=f), {0: b["g"], 1: b["u"], 3: b["a"]}, _flat(f)),
            self._matvec(layer["wdown"], b["a"], self.zeros[h], b["y"], h, f),
            step(p("add", ROWS=h), {0: b["y"], 3: b["x"]}, _flat(h)),
        ]

    def _fused_layer(self, layer: dict, split: dict, b: dict) -> list[Any]:
        s, step, p = self.w.shape, self.ctx.step, self._p
        h, q, f = s.hidden, s.heads * HEAD, s.mlp
        pairs = (s.heads + 2 * s.kv_heads) * HEAD // 2
        return [
            step(p("qkv_rope"), {W: layer["wqkv"], 1: b["x"], 2: split["norm_bias"],
                                 3: b["q"], 4: layer["kcache"], 5: layer["vcache"]},
                 _rows(pairs)),
            step(p("attention"), {0: b["q"], 1: layer["kcache"], 2: layer["vcache"],
                                  3: b["o"]}, (s.heads, 1)),
            step(p("matvec_add", ROWS=h, COLS=q), {W: layer["wo"], 1: b["o"],
                                                   2: self.zeros[h], 3: b["x"]}, _rows(h)),
            step(p("gate_up"), {W: layer["wgu"], 1: b["x"], 2: layer["norm2"], 3: b["a"]},
                 _rows(f)),
            step(p("matvec_add", ROWS=h, COLS=f), {W: layer["wdown"], 1: b["a"],
                                                   2: self.zeros[h], 3: b["x"]}, _rows(h)),
        ]


def _flat(invocations: int) -> tuple[int, int]:
    return grid_for(invocations, WG)


def _rows(rows: int) -> tuple[int, int]:
    """A workgroup per row."""
    return grid_for(rows, 1)


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    """A decode step of the group's model (decode_model.py), unfused and fused, on one set of
    weights; every step leaves the same logits, the numpy step's."""
    weights = Weights.of(MODELS[group.elements], group.cases[0].k, group.precision)
    engine, expected = Engine(ctx, weights, group.precision), reference(weights)
    works = {}
    for case in group.cases:
        count = ctx.buffer(np.zeros(1, np.uint32))
        segments, logits = engine.steps(case.variant, count)
        readers = [ctx.reader(b, np.float32) for b in logits]
        works[case] = counted(ctx, Work(
            [sum(segments, ())], lambda rs=readers: np.concatenate([r() for r in rs]),
            lambda: None, lambda units: expected, exact=False, tolerance=TOLERANCE,
            segments=[segments]), count)
    return works


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    w = Weights.of(MODELS[group.elements], group.cases[0].k)
    expected, s = reference(w), w.shape
    t, half, cache = (lambda a: torch.from_numpy(a).to(dev)), HEAD // 2, w.cache
    q_size, kv_size, per_kv = s.heads * HEAD, s.kv_heads * HEAD, \
        s.heads // s.kv_heads
    layers = [{k: t(v) for k, v in layer.items() if not k.endswith("cache")}
              for layer in w.layers]
    # Tensors of their own (not views): torch.compile's static addresses are per tensor.
    caches = [(t(layer["kcache"].reshape(cache + 1, s.kv_heads, HEAD)),
               t(layer["vcache"].reshape(cache + 1, s.kv_heads, HEAD)))
              for layer in w.layers]
    emb, final_norm, head = t(w.embedding), t(w.final_norm), t(w.head)
    angle = t((cache * ROPE_THETA ** (-2 * np.arange(half) / HEAD))
              .astype(np.float32))
    cos, sin = torch.cos(angle), torch.sin(angle)

    def norm(x: Any, weight: Any) -> Any:
        return x * torch.rsqrt(x.pow(2).mean() + EPS) * weight

    def rope(v: Any) -> Any:
        a, b = v[:, :half], v[:, half:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=1)

    def step(logits: Any) -> None:
        x = emb.clone()
        for layer, (keys, values) in zip(layers, caches, strict=True):
            qkv = layer["wqkv"] @ norm(x, layer["norm1"]) + layer["bqkv"]
            q = rope(qkv[:q_size].view(s.heads, HEAD))
            keys[cache] = rope(qkv[q_size:q_size + kv_size].view(s.kv_heads, HEAD))
            values[cache] = qkv[q_size + kv_size:].view(s.kv_heads, HEAD)
            scores = torch.einsum("gqd,tgd->gqt", q.view(s.kv_heads, per_kv, HEAD),
                                  keys) / HEAD ** 0.5
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
                       GRAPH: lambda mine=mine: graph_of(mine, torch),
                       COMPILE: lambda mine=mine, fixed=fixed: _compiled_step(mine, fixed,
                                                                              torch)
                       }[case.implementation]
        outputs[case] = Work([], lambda logits=logits: logits.cpu().numpy(),
                                    lambda: None, lambda n: expected, exact=False,
                                    tolerance=TOLERANCE)
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


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """The fused step: one CUDA graph (CUDA only), and torch.compile where the suite allows."""
    return ((GRAPH,) if kind == "cuda" else ()) + \
        ((COMPILE,) if group.torch_compile_max_n > 0 else ())
