"""The decode step: one unit of work is one token's step of a transformer with Qwen2.5's
structure (decode_model.py). Unfused, an engine issues one dispatch per operation (18 per
layer); fused, the 5 per layer a tuned engine uses (shaders/fusion_decode.wgsl). Both read
the same weights and caches; the new token is written at position K (the cache length)
every step, so each step does the same work and leaves the same logits, which are compared
with the numpy step; the token loop feeds each step the token its predecessor chose on
the GPU (docs/methodology.md). PyTorch: the same step and loop eagerly, captured as one
CUDA graph (CUDA only), and through torch.compile (where `torch_compile_max_n` > 0), GPU
time from CUDA events on CUDA (decode_torch.py, this workload's `torch_units`).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.cases import TIMESTAMPS, TOKEN_LOOPS, Case, Group
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.resources import SHADERS_DIR
from gpuoverhead.workloads.decode_blocks import ahead_constants, attention_blocks, fused_layers, mlp
from gpuoverhead.workloads.decode_choices import (
    ALL_MATVECS,
    HEAD_DIMS,
    SHARED_LANES,
    SHARED_WG,
    Kernels,
    Matvec,
    as_run,
    default,
    head_split,
    kernels_note,
)
from gpuoverhead.workloads.decode_model import (
    DECODE_WG,
    HEAD_POSITIONS,
    MATRICES,
    MAX_CACHE,
    MAX_HEAD_BLOCKS,
    MODELS,
    TOKEN,
    TOLERANCE,
    Greedy,
    W,
    Weights,
    attention_block,
    head_chunks,
    ml_stride,
    reference,
    rope_table,
)
from gpuoverhead.workloads.decode_torch import torch_fused, torch_units  # noqa: F401
from gpuoverhead.workloads.groups import Request
from gpuoverhead.workloads.work import Context, Step, Work, counted, reads_every

#: Whether PyTorch's forms get GPU times (CUDA events) on CUDA.
GPU_TIMES = True
#: Weight precisions the suite may ask for (f16: read as f16, computed in f32).
PRECISIONS = ("f32", "f16")
#: A step's GPU time has a memory floor: its worker measures the read bandwidth too.
MEMORY_FLOOR = True
#: Threads per workgroup of the matrix-vector kernels whose rows need fewer lanes, and the
#: most vec4 loads a lane makes per row (decode_choices.LANE_LOADS; longer rows get more
#: lanes, up to DECODE_WG, so a lane's loads are in flight together): on the H100
#: (benchmarks/investigations/decode_floor.py --sweep) 64 and 4 gave the fastest fused 0.5B
#: step in both implementations, 3-4% under 128 and 8.
MATVEC_WG = 64
#: The device features that give subgroups, and whether the module must then say `enable
#: subgroups;`: WebGPU's (Dawn) must, wgpu-native's own takes the builtins without it (naga
#: refuses the directive).
SUBGROUP_FEATURES = {"subgroups": True, "subgroup": False}
#: The device features this workload asks for where the adapter offers them (the suite's
#: matrix-vector parts sum by subgroup shuffles: decode_choices.DEFAULT).
FEATURES = tuple(SUBGROUP_FEATURES)
#: Logits per workgroup of the token loop's argmax (its threads, 16 logits each).
ARGMAX_ROWS = DECODE_WG * 16
def groups(req: Request) -> list[Group]:
    """A group per model and cache length, each its own weights: every encoding of each
    form, waited once per N steps and as the token loop (synced and pipelined, runs of
    `loop_tokens` steps), and GPU time once per form (one pass: the GPU's work)."""
    forms = [(v, e, s) for v in ("unfused", "fused") for e in dict.fromkeys(req.cfg["encodings"])
             for s in ("wait", *TOKEN_LOOPS)]
    forms += [(v, "dispatch", TIMESTAMPS) for v in ("unfused", "fused") if TIMESTAMPS in req.syncs]
    loop = (req.cfg["loop_tokens"],)
    return [req.group(elements, DECODE_WG, (replace(
        req.base, elements=elements, workgroup_size=DECODE_WG, k=k, variant=v, encoding=e,
        sync=s, n_values=loop if s in TOKEN_LOOPS else req.base.n_values) for v, e, s in forms))
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
    elif bad := [k for k in cfg["k_sweep"] for e in cfg["elements"] if e in MODELS
                 and MODELS[e].heads * -(-(k + 1) // attention_block(
                     MODELS[e], k, default(MODELS[e]).attention_workgroups))
                 > MAX_HEAD_BLOCKS]:
        found.append(("k_sweep", f"the fused attention combines at most {MAX_HEAD_BLOCKS} "
                                 f"blocks over all heads: a cache of {bad[0]} is too long "
                                 f"for these heads"))
    return found


class Engine:
    """The buffers of one model on a device and the dispatches of one step in either form.

    `ctx` is the group's Context (workloads/work.py: pipelines by entry point and constants,
    buffers, bind groups); `steps(form)` returns the step's dispatches and the logits'
    buffers; `at(cache)` the same engine attending to a shorter cache (a benchmark's two
    cache lengths on one upload), `tuned(...)` with other Kernels (a benchmark's variants);
    the LM head in chunks of at most `head_binding` bytes (None: the device's limits). Its
    fused kernels are the model's default (decode_choices.default) as its device runs them
    (without subgroups, their lanes through workgroup memory: decode_choices.as_run)."""

    def __init__(self, ctx: Any, weights: Weights, precision: str = "f32",
                 head_binding: int | None = None) -> None:
        self.ctx, self.w, s = ctx, weights, weights.shape
        assert max(s.q_size, s.hidden) <= 1536 and s.head_dim <= 128 and s.head_dim % 16 == 0, s
        self.consts = {"H": s.hidden, "NH": s.heads, "NKV": s.kv_heads, "F": s.mlp,
                       "D": s.head_dim}
        self.sg_ctx = subgroup_context(ctx)
        self.cache, self.kernels = weights.cache, as_run(default(s), self.sg_ctx is not None)
        up = ctx.buffer
        self.dtype = dtype = np.float16 if precision == "f16" else np.float32

        def matrix(values: np.ndarray) -> Any:
            return up(values.astype(dtype))

        self.final_norm = up(weights.final_norm)
        self.layers = [{k: (matrix if k in MATRICES else up)(v) for k, v in layer.items()}
                       for layer in weights.layers]
        q, kv = s.q_size, s.kv_size
        # The unfused engine's own weights, as separate tensors (views of the same values).
        self.split = [{"wq": matrix(layer["wqkv"][:q]), "wk": matrix(layer["wqkv"][q:q + kv]),
                       "wv": matrix(layer["wqkv"][q + kv:]), "bq": up(layer["bqkv"][:q]),
                       "bk": up(layer["bqkv"][q:q + kv]), "bv": up(layer["bqkv"][q + kv:]),
                       "wg": matrix(layer["wgu"][:s.mlp]), "wu": matrix(layer["wgu"][s.mlp:])}
                      for layer in weights.layers]
        self.zeros = {n: up(np.zeros(n, np.float32)) for n in {s.hidden, q, kv, s.mlp}}
        self._upload_head(head_binding)

    def _upload_head(self, head_binding: int | None) -> None:
        """The LM head in chunks of at most `head_binding` bytes or the device's limits (for
        f32 rows, f16 too), and a zero bias as long as a chunk."""
        limits, self.head_binding = self.ctx.device.limits, head_binding
        self.chunks = head_chunks(self.w.shape, head_binding or min(
            limits["max-storage-buffer-binding-size"], limits["max-buffer-size"]))
        self.head = [self.ctx.buffer(self.w.head[a:b].astype(self.dtype))
                     for a, b in self.chunks]
        self.head_zeros = self.ctx.buffer(np.zeros(self.chunks[0][1], np.float32))

    def at(self, cache: int) -> Engine:
        """This engine attending to the first `cache` positions of its caches (and writing
        the new token at `cache`): the same buffers, other logits than the weights' own."""
        assert 0 < cache <= self.w.cache
        other = copy.copy(self)
        other.cache = cache
        return other

    def tuned(self, kernels: Kernels, head_binding: int | None = None) -> Engine:
        """This engine with other kernels and its LM head's chunks (uploaded again where
        they differ)."""
        other = copy.copy(self)
        other.kernels = kernels
        if head_binding != self.head_binding:
            other._upload_head(head_binding)
        return other

    def _block(self) -> int:
        return attention_block(self.w.shape, self.cache, self.kernels.attention_workgroups)

    def _p(self, entry: str, ctx: Context | None = None, **extra: int) -> Any:
        t = self.cache + 1
        nb = -(-t // self._block())
        return (ctx or self.ctx).pipeline(entry, **{**self.consts, "T": t, "NB": nb,
                                                    "MLS": ml_stride(nb), "WG": 64, **extra})

    def _mv(self, entry: str, buffers: dict[int, Any], rows: int, cols: int,
            least: int = 0, matvec: Matvec | None = None, ahead: tuple | None = None,
            **extra: int) -> Any:
        """A dispatch of a matrix-vector kernel: `rows` rows (or pairs) of `cols` columns, one
        per lane group, enough lanes that each reads at most `matvec.lane_loads` vec4s of
        each row; workgroups of MATVEC_WG threads, or `least`; the sums by subgroup shuffles
        (entry point `<entry>_sg`) where `matvec` asks and the device has subgroups (without
        them, the same lanes through workgroup memory); None: main's. With `ahead` (a
        buffer and ranges: decode_blocks.ahead_constants), entry point `<entry>_ahead` and
        workgroups past its rows' that load them."""
        matvec = matvec or ALL_MATVECS["main"]
        lanes = matvec.lanes(cols, DECODE_WG)
        wg = max(lanes, MATVEC_WG, least)
        sg = self.sg_ctx if matvec.subgroups else None
        more, loads = ahead_constants(ahead, wg)
        name = entry if ahead is None else f"{entry}_ahead"
        pipeline = self._p(name if sg is None else f"{name}_sg", sg, ROWS=rows, COLS=cols,
                           LANES=lanes, WG=wg, **loads, **extra)
        return self.ctx.step(pipeline, {**buffers, **({12: ahead[0]} if ahead else {})},
                             grid_for(rows + more * (wg // lanes), wg // lanes))

    def _shared(self, entry: str, buffers: dict[int, Any], groups: int, **extra: int) -> Any:
        """A dispatch of a kernel of `groups` lane groups of SHARED_LANES threads,
        SHARED_WG threads a workgroup, that makes its normed vector once per workgroup."""
        return self.ctx.step(self._p(entry, LANES=SHARED_LANES, WG=SHARED_WG, **extra),
                             buffers, grid_for(groups, SHARED_WG // SHARED_LANES))

    def steps(self, form: str, count: Any, token: Any = None
              ) -> tuple[tuple[tuple[Any, ...], ...], Any]:
        """One step's dispatches in `form` (ending with `count`) in segments (the embedding
        copy with the first layer, each further layer, the head), and its logits' buffer.
        With a `token` buffer (one u32), the step of the token loop: its input is that
        token's embedding and its end the argmax of its logits written back there."""
        s, ctx, t = self.w.shape, self.ctx, self.cache + 1
        h, q, kv, f = s.hidden, s.q_size, s.kv_size, s.mlp
        blocks = s.heads * -(-t // self._block())
        assert blocks <= MAX_HEAD_BLOCKS, (s, t)
        buf = {n: ctx.buffer(np.zeros(size, np.float32)) for n, size in
               (("x", h), ("n", h), ("q", q), ("k", kv), ("v", kv), ("o", q), ("y", h),
                ("g", f), ("u", f), ("a", f), ("p", s.heads * t),
                ("ml", s.heads * ml_stride(blocks // s.heads)), ("part", blocks * s.head_dim))}
        buf["rope"] = ctx.buffer(rope_table(s.head_dim, self.cache))
        logits = ctx.buffer(np.zeros(s.vocab, np.float32))
        if form == "fused":
            segments, last = fused_layers(self, buf)
        else:
            segments = [self._unfused_layer(layer, split, buf)
                        for layer, split in zip(self.layers, self.split, strict=True)]
            last = buf["x"]
        segments[0][:0] = self._input(buf["x"], token)
        steps: list[Any] = []
        if form != "fused":
            steps.append(ctx.step(self._p("rmsnorm", WG=DECODE_WG),
                                  {0: self.final_norm, 1: buf["x"], 3: buf["n"]}, (1, 1)))
        for (a, b), weights in zip(self.chunks, self.head, strict=True):
            if form == "fused" and self.kernels.head4:
                steps.append(self._shared("norm_matvec4", {W: weights, 8: last,
                                                           9: self.final_norm, 3: logits},
                                          -(-(b - a) // 4), ROWS=b - a, BASE=a))
            elif form == "fused":
                steps.append(self._mv("norm_matvec", {W: weights, 8: last,
                                                      9: self.final_norm, 3: logits}, b - a, h,
                                      BASE=a))
            else:
                steps.append(self._mv("matvec", {W: weights, 8: buf["n"],
                                                 2: self.head_zeros, 3: logits}, b - a, h,
                                      BASE=a))
        if token is not None:
            steps += argmax_steps(ctx, logits, token, s.vocab)
        steps.append(ctx.step(self._p("count"), {6: count}, (1, 1)))
        return tuple(map(tuple, [*segments, steps])), logits

    def _input(self, x: Any, token: Any) -> list[Any]:
        """The step's first dispatches: row TOKEN of the head into the residual stream `x`,
        or (the token loop) the row `token` names, a dispatch per head chunk (the token
        chosen on the GPU may be in any)."""
        ctx, h = self.ctx, self.w.shape.hidden
        if token is None:
            return [ctx.step(self._p("copy", TOKEN=TOKEN), {W: self.head[0], 3: x},
                             _flat(h // 4))]
        return [ctx.step(self._p("embed", BASE=a, ROWS=b - a), {W: weights, 3: x, 11: token},
                         _flat(h // 4))
                for (a, b), weights in zip(self.chunks, self.head, strict=True)]

    def _matvec(self, w: Any, v: Any, bias: Any, y: Any, rows: int, cols: int) -> Any:
        return self._mv("matvec", {W: w, 8: v, 2: bias, 3: y}, rows, cols)

    def _unfused_layer(self, layer: dict, split: dict, b: dict) -> list[Any]:
        s, step, p = self.w.shape, self.ctx.step, self._p
        h, q, kv, f, t = s.hidden, s.q_size, s.kv_size, s.mlp, self.cache + 1
        half, big = s.head_dim // 2, DECODE_WG
        return [
            step(p("rmsnorm", WG=big), {0: layer["norm1"], 1: b["x"], 3: b["n"]}, (1, 1)),
            self._matvec(split["wq"], b["n"], split["bq"], b["q"], q, h),
            self._matvec(split["wk"], b["n"], split["bk"], b["k"], kv, h),
            self._matvec(split["wv"], b["n"], split["bv"], b["v"], kv, h),
            step(p("rope", ROWS=s.heads), {1: b["rope"], 3: b["q"]}, _flat(s.heads * half)),
            step(p("rope", ROWS=s.kv_heads), {1: b["rope"], 3: b["k"]},
                 _flat(s.kv_heads * half)),
            step(p("kv_store"), {0: b["k"], 1: b["v"], 3: layer["kcache"],
                                 4: layer["vcache"]}, _flat(kv)),
            step(p("scores"), {8: b["q"], 9: layer["kcache"], 3: b["p"]}, _flat(s.heads * t)),
            step(p("softmax", WG=big), {3: b["p"]}, (s.heads, 1)),
            step(p("attend", WG=big), {0: b["p"], 10: layer["vcache"], 3: b["o"]},
                 (q // 4, 1)),
            self._matvec(layer["wo"], b["o"], self.zeros[h], b["y"], h, q),
            step(p("add", ROWS=h), {0: b["y"], 3: b["x"]}, _flat(h)),
            step(p("rmsnorm", WG=big), {0: layer["norm2"], 1: b["x"], 3: b["n"]}, (1, 1)),
            self._matvec(split["wg"], b["n"], self.zeros[f], b["g"], f, h),
            self._matvec(split["wu"], b["n"], self.zeros[f], b["u"], f, h),
            step(p("silu_mul", ROWS=f), {0: b["g"], 1: b["u"], 3: b["a"]}, _flat(f)),
            self._matvec(layer["wdown"], b["a"], self.zeros[h], b["y"], h, f),
            step(p("add", ROWS=h), {0: b["y"], 3: b["x"]}, _flat(h)),
        ]

    def _fused_layer(self, layer: dict, b: dict, following: dict | None) -> list[Any]:
        """Q/K/V, the attention (_attention: 2 dispatches), the MLP (decode_blocks.mlp: 2,
        or 1 under Kernels.grid): 5 dispatches."""
        s, h, q = self.w.shape, self.w.shape.hidden, self.w.shape.q_size
        qkv = {W: layer["wqkv"], 8: b["x"], 9: layer["norm1"], 1: b["rope"], 2: layer["bqkv"],
               3: b["q"], 4: layer["kcache"], 5: layer["vcache"]}
        return [self._mv("qkv_rope", qkv, (q + 2 * s.kv_size) // 2, h,
                         matvec=ALL_MATVECS[self.kernels.qkv], EARLY=int(self.kernels.early)),
                *self._attention(layer, b), *mlp(self, layer, b, following)]

    def _attention(self, layer: dict, b: dict) -> list[Any]:
        """The attention and its output projection with the residual add: under a `head`
        attention (where the cache allows: HEAD_POSITIONS) each query head's whole cache at
        once, normed, over head_dim / HEAD_DIMS workgroups a head, then o_proj (Kernels.out's
        lanes); else its blocks (decode_blocks.attention_blocks: `split` or `ticket`, with
        Kernels.ahead's loads ahead)."""
        s, h, q, t = self.w.shape, self.w.shape.hidden, self.w.shape.q_size, self.cache + 1
        if self.kernels.attention in HEAD_DIMS and t <= HEAD_POSITIONS:
            slices = s.head_dim // (HEAD_DIMS[self.kernels.attention] or s.head_dim)
            return [self.ctx.step(self._p("attn_head", WG=DECODE_WG, DS=slices,
                                          SPLIT=head_split(t, s.head_dim)),
                                  {8: b["q"], 9: layer["kcache"], 10: layer["vcache"],
                                   3: b["o"]}, (s.heads, slices)),
                    self._mv("o_proj", {W: layer["wo"], 8: b["o"], 3: b["x"]}, h, q,
                             matvec=ALL_MATVECS[self.kernels.out],
                             EARLY=int(self.kernels.early))]
        return attention_blocks(self, layer, b)


def argmax_steps(ctx: Context, logits: Any, token: Any, vocab: int) -> list[Step]:
    """The greedy choice over `vocab` logits into `token` (one u32), in a Context of this
    kernel: each workgroup's best of ARGMAX_ROWS logits, then the best of those (the token
    loop's, and the readback workload's sampling on the GPU)."""
    blocks = -(-vocab // ARGMAX_ROWS)
    best = ctx.buffer(np.zeros(2 * blocks, np.float32))
    return [ctx.step(ctx.pipeline("argmax_part", ROWS=vocab, WG=DECODE_WG),
                     {0: logits, 3: best}, (blocks, 1)),
            ctx.step(ctx.pipeline("argmax", NB=blocks, WG=DECODE_WG), {0: best, 11: token},
                     (1, 1))]


def has_subgroups(device: Any) -> bool:
    """Whether `device` (or an adapter) has one of SUBGROUP_FEATURES."""
    return any(f in device.features for f in SUBGROUP_FEATURES)


def kernels_note_of(device: Any) -> dict[str, Any]:
    """run.json's `kernels` of a worker on `device`: the suite's fused kernels as it ran
    them, and whether with subgroups (decode_choices.kernels_note)."""
    return kernels_note(has_subgroups(device))


def subgroup_context(ctx: Context) -> Context | None:
    """A Context on ctx's device compiling its decode kernel with the subgroup entry points
    appended (shaders/fusion_decode_subgroups.wgsl), or None where the device has no
    subgroups."""
    found = [f for f in SUBGROUP_FEATURES if f in ctx.device.features]
    if not found:
        return None
    extra = (SHADERS_DIR / "fusion_decode_subgroups.wgsl").read_text()
    head = "enable subgroups;\n" if SUBGROUP_FEATURES[found[0]] else ""
    return ctx.with_kernel(replace(ctx.kernel, name=f"{ctx.kernel.name}_sg",
                                   source=f"{head}{ctx.kernel.source}\n{extra}"))


def _flat(invocations: int) -> tuple[int, int]:
    return grid_for(invocations, 64)


def webgpu(ctx: Context, group: Group, rng: np.random.Generator) -> dict[Case, Work]:
    """A decode step of the group's model (decode_model.py), unfused and fused, on one set of
    weights; every step leaves the same logits, the numpy step's."""
    weights = Weights.of(MODELS[group.elements], group.cases[0].k, group.precision)
    engine, expected = Engine(ctx, weights, group.precision), reference(weights)
    greedy = Greedy(weights, expected)
    works = {}
    for case in group.cases:
        count = ctx.buffer(np.zeros(1, np.uint32))
        if case.sync in TOKEN_LOOPS:
            works[case] = counted(ctx, _loop_work(ctx, engine, case, count, greedy), count)
            continue
        segments, logits = engine.steps(case.variant, count)
        works[case] = counted(ctx, Work(
            [sum(segments, ())], ctx.reader(logits, np.float32), lambda: None,
            lambda units: expected, exact=False, tolerance=TOLERANCE,
            segments=[segments]), count)
    return works


def _loop_work(ctx: Context, engine: Engine, case: Case, count: Any, greedy: Greedy) -> Work:
    """The token loop of `case`: its output is the token id on the GPU, against numpy's
    greedy tokens after as many steps."""
    start = np.array([TOKEN], np.uint32)
    token = ctx.buffer(start)
    segments, _ = engine.steps(case.variant, count, token)
    return Work([sum(segments, ())], ctx.reader(token, np.uint32), ctx.writer(token, start),
                greedy.output, exact=True,
                segments=[segments],
                readback=(lambda: ctx.queue.read_buffer(token), reads_every(case.sync)))
