"""A transformer's decode step as a fusion pattern: one unit of work is one token's step.

The model has Qwen2.5's structure with random weights, the same in every implementation
and process (seeded by the shape and the cache length; nothing to download). A group's
`elements` is its hidden size and names the shapes (suite/model.MODELS), its K the length
of the KV cache. Unfused, an engine issues one dispatch per operation (18 per layer);
fused, the 5 per layer a tuned engine uses (shaders/fusion_decode.wgsl). Both read the same
weights and caches; the new token is written at position K every step, so each step does
the same work and leaves the same logits, which are compared with a numpy step. The LM
head is split into row chunks of at most 128 MiB, WebGPU's default largest storage
binding, instead of asking the adapter for more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuoverhead.gpu.kernels import grid_for
from gpuoverhead.suite.model import DECODE_WG as WG
from gpuoverhead.suite.model import Shape

#: Bytes of the largest storage binding every WebGPU adapter allows (the default limit).
MAX_BINDING = 128 << 20
#: Relative tolerance of the logits against numpy (f32 sums in another order, 24 layers).
TOLERANCE = 1e-3
HEAD = 64
#: Seed of the decode weights (with the shape and the cache length).
WEIGHTS_SEED = 17
ROPE_THETA = 1e6
EPS = 1e-6
#: A layer's weight matrices (with the LM head, what `precision: f16` stores as f16).
MATRICES = ("wqkv", "wo", "wgu", "wdown")
#: The binding the kernels read weight matrices from (as `W`: f32 or f16).
W = 7




@dataclass
class Weights:
    """Random weights of a model and a KV cache of `cache` earlier positions per layer."""

    shape: Shape
    cache: int
    embedding: np.ndarray
    layers: list[dict[str, np.ndarray]]
    final_norm: np.ndarray
    head: np.ndarray

    @classmethod
    def of(cls, shape: Shape, cache: int, precision: str = "f32") -> Weights:
        """The weights every implementation and process measures for this shape and cache:
        the same values everywhere (seeded by the shape and the cache, not the run). With
        `f16` the matrices hold values that f16 represents exactly (the reference then
        computes with what the GPU reads)."""
        w = cls.random(shape, cache, np.random.default_rng((WEIGHTS_SEED, shape.hidden, cache)))
        if precision == "f16":
            for layer in w.layers:
                for name in MATRICES:
                    layer[name] = layer[name].astype(np.float16).astype(np.float32)
            w.head = w.head.astype(np.float16).astype(np.float32)
        return w

    @classmethod
    def random(cls, shape: Shape, cache: int, rng: np.random.Generator) -> Weights:
        h, f, q, kv = shape.hidden, shape.mlp, shape.heads * HEAD, shape.kv_heads * HEAD

        def dense(rows: int, cols: int) -> np.ndarray:
            return (rng.standard_normal((rows, cols), np.float32) / np.float32(cols ** 0.5))

        def norm() -> np.ndarray:
            return rng.uniform(0.8, 1.2, h).astype(np.float32)

        def cache_of() -> np.ndarray:  # positions 0 .. cache, the last one written per step
            return rng.standard_normal((cache + 1) * kv, np.float32)

        layers = [{"norm1": norm(), "wqkv": dense(q + 2 * kv, h),
                   "bqkv": rng.standard_normal(q + 2 * kv, np.float32) * np.float32(0.1),
                   "wo": dense(h, q), "norm2": norm(), "wgu": dense(2 * f, h),
                   "wdown": dense(h, f), "kcache": cache_of(), "vcache": cache_of()}
                  for _ in range(shape.layers)]
        return cls(shape, cache, rng.standard_normal(h, np.float32), layers, norm(),
                   dense(shape.vocab, h))


def reference(w: Weights) -> np.ndarray:
    """The step's logits in float64 from the same f32 weights and caches."""
    s, t = w.shape, w.cache + 1
    q_size, kv_size, group = s.heads * HEAD, s.kv_heads * HEAD, s.heads // s.kv_heads
    x = w.embedding.astype(np.float64)
    for layer in w.layers:
        n = _rmsnorm(x, layer["norm1"])
        qkv = layer["wqkv"] @ n + layer["bqkv"]
        q, k, v = qkv[:q_size], qkv[q_size:q_size + kv_size], qkv[q_size + kv_size:]
        q, k = _rope(q.reshape(-1, HEAD), w.cache), _rope(k.reshape(-1, HEAD), w.cache)
        keys = layer["kcache"].astype(np.float64).reshape(t, s.kv_heads, HEAD).copy()
        values = layer["vcache"].astype(np.float64).reshape(t, s.kv_heads, HEAD).copy()
        keys[-1], values[-1] = k, v.reshape(-1, HEAD)
        out = np.empty((s.heads, HEAD))
        for h in range(s.heads):
            scores = keys[:, h // group] @ q[h] / np.sqrt(HEAD)
            p = np.exp(scores - scores.max())
            out[h] = (p / p.sum()) @ values[:, h // group]
        x = x + layer["wo"] @ out.ravel()
        n = _rmsnorm(x, layer["norm2"])
        gate, up = np.split(layer["wgu"] @ n, 2)
        x = x + layer["wdown"] @ (gate / (1 + np.exp(-gate)) * up)
    return w.head @ _rmsnorm(x, w.final_norm)


def _rmsnorm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x) + EPS) * weight


def _rope(heads: np.ndarray, position: int) -> np.ndarray:
    half = HEAD // 2
    angle = position * ROPE_THETA ** (-2 * np.arange(half) / HEAD)
    a, b = heads[:, :half], heads[:, half:]
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle),
                           b * np.cos(angle) + a * np.sin(angle)], axis=1)


class Engine:
    """The buffers of one model on a device and the dispatches of one step in either form.

    `ctx` is gpu/fusion_patterns' context (pipelines by entry point and constants, buffers,
    bind groups); `steps(form)` returns the step's dispatches and the logits' buffers."""

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
