"""The decode step's model: Qwen2.5's structure with random weights, and its numpy step.

The model has Qwen2.5's structure with random weights, the same in every implementation
and process (seeded by the shape and the cache length; nothing to download). A group's
`elements` is its hidden size and names the shapes (MODELS), its K the length
of the KV cache. Unfused, an engine issues one dispatch per operation (18 per layer);
fused, the 5 per layer a tuned engine uses (shaders/fusion_decode.wgsl: attention split
over the cache, its blocks combined inside the output projection). Both read the same
weights and caches; the new token is written at position K every step, so each step does
the same work and leaves the same logits, which are compared with a numpy step. As in
Qwen2.5, the LM head is the embedding (tied): the step's input is row TOKEN of it (the
token loop's: the row of the token its previous step chose, `Greedy`). The
head is split into row chunks as large as the device's storage bindings and buffers allow
(128 MiB by WebGPU's default limits).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np


@dataclass(frozen=True)
class Shape:
    """A model's sizes: layers, hidden, query and key/value heads, MLP, vocabulary."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    mlp: int
    vocab: int
    #: Dimensions per attention head (the shader holds at most 128).
    head_dim: int = 64

    @property
    def q_size(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.kv_heads * self.head_dim


#: The model shapes by hidden size (a decode benchmark's `elements`): Qwen2.5-0.5B and
#: 1.5B, and a tiny model of the same structure for CPU adapters and CI.
MODELS = {896: Shape("qwen2.5-0.5b", 24, 896, 14, 2, 4864, 151_936),
          1536: Shape("qwen2.5-1.5b", 28, 1536, 12, 2, 8960, 151_936, head_dim=128),
          128: Shape("tiny", 2, 128, 2, 1, 256, 1024)}
#: The longest KV cache (the unfused scores of one head fit a binding many times over).
MAX_CACHE = 8191
#: Cache positions per workgroup of the fused attention at most (its threads, one per
#: position), and at least (a position's dimensions shared by up to 16 threads; and the
#: shader's values need a block of DECODE_WG / (head_dim / 4) positions or more).
ATTENTION_BLOCK = 256
SMALLEST_BLOCK = 16
#: Workgroups the fused attention aims at over all heads: a short cache is split into
#: smaller blocks until heads x blocks would pass this (at 128 positions, 14 workgroups of
#: 256 left most of an H100's 132 SMs idle and each thread a long chain of loads). 0: every
#: block ATTENTION_BLOCK positions (the first fused engine's choice). A model's kernels may
#: aim at another number (decode_choices.BY_MODEL: 70 at 1.5B).
ATTENTION_WORKGROUPS = 128
#: Attention blocks of all heads the fused combine step holds in workgroup memory (16
#: heads up to MAX_CACHE).
MAX_HEAD_BLOCKS = 512
#: f32 in a line of the attention's largest scores and sums (256 bytes: ml_stride).
ML_LINE = 64
#: Positions (the cache and the new token) the `head` attention holds at most: its scores
#: in workgroup memory (shaders/fusion_decode.wgsl's MAX_T); a longer cache takes `split`.
HEAD_POSITIONS = 1024
#: Threads of the largest decode workgroup (each kernel picks its own, up to this).
DECODE_WG = 256
#: The token whose embedding (its row of the tied LM head) every step reads.
TOKEN = 1
#: Bytes of the largest storage binding every WebGPU adapter allows (the default limit).
MAX_BINDING = 128 << 20
#: Relative tolerance of the logits against numpy (f32 sums in another order, 24 layers).
TOLERANCE = 1e-3
#: Seed of the decode weights (with the shape and the cache length): with it the ci suite's
#: tiny model's greedy loop chooses 9 different tokens in its first 8 steps, so a loop that
#: read a fixed row, or the wrong one, fails its check (17 repeated from the 3rd step).
WEIGHTS_SEED = 19
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
    layers: list[dict[str, np.ndarray]]
    final_norm: np.ndarray
    head: np.ndarray

    @classmethod
    def of(cls, shape: Shape, cache: int, precision: str = "f32") -> Weights:
        """The weights every implementation and process measures for this shape and cache:
        the same values everywhere (seeded by the shape and the cache, not the run). With
        `f16` the matrices hold values that f16 represents exactly (the reference then
        computes with what the GPU reads)."""
        w = cls.random(shape, cache, np.random.SeedSequence((WEIGHTS_SEED, shape.hidden, cache)))
        if precision == "f16":
            for layer in w.layers:
                for name in MATRICES:
                    layer[name] = layer[name].astype(np.float16).astype(np.float32)
            w.head = w.head.astype(np.float16).astype(np.float32)
        return w

    @classmethod
    def random(cls, shape: Shape, cache: int, seed: np.random.SeedSequence) -> Weights:
        """A stream of its own per layer and for the head, drawn in threads (numpy fills
        arrays without the GIL): drawing 0.5B values one after another was most of a decode
        worker's start-up (7 s of a 19-37 s start on the H200). The final norm comes from the
        head's stream before the head's thread starts: drawn beside it, a thread that began
        first (beside a busy core) took the norm's values into the head, and that process's
        weights and logits differed from every other's."""
        h = shape.hidden
        streams = [np.random.default_rng(s) for s in seed.spawn(shape.layers + 1)]
        final_norm = streams[-1].uniform(0.8, 1.2, h).astype(np.float32)
        with ThreadPoolExecutor(min(len(streams), os.cpu_count() or 1)) as pool:
            layers = list(pool.map(partial(_layer, shape, cache), streams[:-1]))
            head = pool.submit(_dense, streams[-1], shape.vocab, h)
            return cls(shape, cache, layers, final_norm, head.result())


def _layer(shape: Shape, cache: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    h, f, q, kv = shape.hidden, shape.mlp, shape.q_size, shape.kv_size

    def norm() -> np.ndarray:
        return rng.uniform(0.8, 1.2, h).astype(np.float32)

    def cache_of() -> np.ndarray:  # positions 0 .. cache, the last one written per step
        return rng.standard_normal((cache + 1) * kv, np.float32)

    return {"norm1": norm(), "wqkv": _dense(rng, q + 2 * kv, h),
            "bqkv": rng.standard_normal(q + 2 * kv, np.float32) * np.float32(0.1),
            "wo": _dense(rng, h, q), "norm2": norm(), "wgu": _dense(rng, 2 * f, h),
            "wdown": _dense(rng, h, f), "kcache": cache_of(), "vcache": cache_of()}


def _dense(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Uniform of variance 1/cols (numpy draws it 1.5-4x faster than a normal)."""
    m = rng.random((rows, cols), np.float32)
    m -= np.float32(0.5)
    m *= np.float32((12 / cols) ** 0.5)
    return m


def reference(w: Weights, token: int = TOKEN) -> np.ndarray:
    """The step's logits from the same f32 weights and caches, its input the embedding of
    `token`: the matrix-vector products in f32 (BLAS reads the weights as they are; in
    float64 each product first copied its matrix, 17x slower, for a difference of 2e-7 of
    the largest value against TOLERANCE's 1e-3), the rest in float64."""
    s, t, d = w.shape, w.cache + 1, w.shape.head_dim
    q_size, kv_size, group = s.q_size, s.kv_size, s.heads // s.kv_heads
    x = w.head[token].astype(np.float64)
    for layer in w.layers:
        n = _rmsnorm(x, layer["norm1"])
        qkv = _mv(layer["wqkv"], n) + layer["bqkv"]
        q, k, v = qkv[:q_size], qkv[q_size:q_size + kv_size], qkv[q_size + kv_size:]
        q, k = _rope(q.reshape(-1, d), w.cache), _rope(k.reshape(-1, d), w.cache)
        keys = layer["kcache"].astype(np.float64).reshape(t, s.kv_heads, d).copy()
        values = layer["vcache"].astype(np.float64).reshape(t, s.kv_heads, d).copy()
        keys[-1], values[-1] = k, v.reshape(-1, d)
        out = np.empty((s.heads, d))
        for h in range(s.heads):
            scores = keys[:, h // group] @ q[h] / np.sqrt(d)
            p = np.exp(scores - scores.max())
            out[h] = (p / p.sum()) @ values[:, h // group]
        x = x + _mv(layer["wo"], out.ravel())
        n = _rmsnorm(x, layer["norm2"])
        gate, up = np.split(_mv(layer["wgu"], n), 2)
        x = x + _mv(layer["wdown"], gate / (1 + np.exp(-gate)) * up)
    return _mv(w.head, _rmsnorm(x, w.final_norm))


def _mv(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """matrix @ vector in the matrix's f32, returned in float64."""
    return (matrix @ vector.astype(np.float32)).astype(np.float64)


#: Weight bytes numpy's greedy loop may read in its steps (a float64 step of Qwen2.5-0.5B
#: takes seconds: a worker checks its loop with one step beyond the first, the tiny model
#: with up to 64).
GREEDY_BYTES = 256 << 20


class Greedy:
    """The token loop's numpy twin: greedy decoding from TOKEN, every step at the same
    position (as the GPU loop runs it), so the next token is a function of the last alone.
    Its tokens repeat once one recurs, so the token after any number of steps is known from
    the steps up to the first repeat; past `most` numpy steps (by default what GREEDY_BYTES
    allows, 2 to 64) it is not computed (None)."""

    def __init__(self, w: Weights, first_logits: np.ndarray | None = None,
                 most: int | None = None) -> None:
        self.w = w
        self.most = most if most is not None else \
            min(64, max(2, GREEDY_BYTES // bytes_per_token(w.shape, w.cache)))
        self.tokens = [TOKEN]
        self.logits = {} if first_logits is None else {TOKEN: first_logits}

    def after(self, steps: int) -> int | None:
        """The token after `steps` steps of the loop (steps = 0: TOKEN), or None."""
        tokens = self.tokens
        while steps >= len(tokens) and tokens[-1] not in tokens[:-1]:
            if len(tokens) > self.most:
                return None
            last = tokens[-1]
            logits = self.logits.pop(last, None)
            tokens.append(int(np.argmax(reference(self.w, last) if logits is None
                                        else logits)))
        if steps < len(tokens):
            return tokens[steps]
        start = tokens.index(tokens[-1])
        return tokens[start + (steps - start) % (len(tokens) - 1 - start)]

    def output(self, steps: int) -> np.ndarray | None:
        """The loop's output after `steps` steps as a Work's reference: the token id."""
        token = self.after(steps)
        return None if token is None else np.array([token], np.uint32)


def ml_stride(blocks: int) -> int:
    """f32 between two heads' blocks' largest scores and sums (the shader's MLS): 2 a block,
    rounded up to whole ML_LINE, so that no two heads share a cache line (an SM's L1 may
    hold a stale copy of a line that another SM writes within a dispatch)."""
    return -(-2 * blocks // ML_LINE) * ML_LINE


def attention_block(shape: Shape, cache: int, workgroups: int = ATTENTION_WORKGROUPS) -> int:
    """Positions per block of the fused attention over `cache` earlier positions: halved
    from ATTENTION_BLOCK while heads x blocks stays within `workgroups`."""
    block, t = ATTENTION_BLOCK, cache + 1
    least = max(SMALLEST_BLOCK, 4 * DECODE_WG // shape.head_dim)
    while block > least and shape.heads * -(-t // (block // 2)) <= workgroups:
        block //= 2
    return block


def head_chunks(shape: Shape, largest: int) -> list[tuple[int, int]]:
    """The LM head's row chunks (first row, end): 64 rows a unit, each chunk's f32 values in
    at most `largest` bytes (a storage binding's and a buffer's limit)."""
    rows = max(64, largest // (shape.hidden * 4) // 64 * 64)
    chunks = [(r, min(r + rows, shape.vocab)) for r in range(0, shape.vocab, rows)]
    assert chunks[0][1] > TOKEN
    return chunks


def rope_table(head_dim: int, position: int) -> np.ndarray:
    """cos then sin of the rotary angles of `position`, computed in f64 (as numpy's step)."""
    angle = position * ROPE_THETA ** (-2 * np.arange(head_dim // 2) / head_dim)
    return np.concatenate([np.cos(angle), np.sin(angle)]).astype(np.float32)


def _rmsnorm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x) + EPS) * weight


def bytes_per_token(shape: Shape, cache: int, precision: str = "f32") -> int:
    """Bytes one step must read at least: every weight once (the tied head once), the norms
    and biases, and the KV cache's `cache + 1` positions in every layer (the memory floor's
    numerator)."""
    h, f, q, kv = shape.hidden, shape.mlp, shape.q_size, shape.kv_size
    matrices = shape.layers * ((q + 2 * kv) * h + h * q + 3 * f * h) + shape.vocab * h
    vectors = shape.layers * (2 * h + q + 2 * kv + 2 * (cache + 1) * kv) + 2 * h
    return matrices * (2 if precision == "f16" else 4) + vectors * 4


def _rope(heads: np.ndarray, position: int) -> np.ndarray:
    half, d = heads.shape[1] // 2, heads.shape[1]
    angle = position * ROPE_THETA ** (-2 * np.arange(half) / d)
    a, b = heads[:, :half], heads[:, half:]
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle),
                           b * np.cos(angle) + a * np.sin(angle)], axis=1)
