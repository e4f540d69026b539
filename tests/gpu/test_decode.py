"""The fused decode step's kernel variants (workloads/decode.Kernels) on lavapipe: each one's
logits and greedy tokens against numpy, and a broken one caught; the streamed kernels
(Kernels' Stream choices) likewise."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import BACKEND

from gpuoverhead.drivers import webgpu
from gpuoverhead.gpu import adapters
from gpuoverhead.suite.shaders import atomic_kernel, fusion_kernel
from gpuoverhead.workloads.decode import Engine, Kernels, Stream
from gpuoverhead.workloads.decode_model import (
    MODELS,
    TOLERANCE,
    Greedy,
    Shape,
    Weights,
    reference,
)
from gpuoverhead.workloads.work import Context

#: Every choice alone, both atomic kernels (3 dispatches a layer) and all at once.
VARIANTS = {"head4": Kernels(head4=True), "layer4": Kernels(layer4=True),
            "atomic_mlp": Kernels(atomic_mlp=True), "attn_wo": Kernels(attn_wo=True),
            "atomic": Kernels(atomic_mlp=True, attn_wo=True),
            "all": Kernels(head4=True, layer4=True, atomic_mlp=True, attn_wo=True)}
#: Heads of 128 dimensions over a cache of 300 (attn_part: 19 blocks of 16 a head; attn_wo:
#: two blocks of 256, its online softmax), and a vocabulary that leaves the last workgroup of
#: norm_matvec4 rows past the end (1000 = 31 x 32 + 8).
SHAPES = {"tiny": (MODELS[128], 16),
          "wide": (Shape("test-wide", 2, 128, 4, 2, 256, 1000, head_dim=128), 300)}


@pytest.fixture(scope="module")
def contexts() -> tuple[Context, Context]:
    """A lavapipe device with float atomics: the decode kernel's Context and the atomic one's."""
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND,
                            None)[0]
    device = found.adapter.request_device_sync(required_features=["shader-float32-atomic"])
    ctx = Context(device, SimpleNamespace(kernel=fusion_kernel("decode")))
    return ctx, ctx.with_kernel(atomic_kernel(ctx.kernel))


def _step(ctx: Context, engine: Engine) -> np.ndarray:
    count = ctx.buffer(np.zeros(1, np.uint32))
    segments, logits = engine.steps("fused", count)
    ctx.submit(sum(segments, ()))
    ctx.submit(sum(segments, ()))  # a second step leaves the same logits
    assert ctx.reader(count, np.uint32)()[0] == 2
    return ctx.reader(logits, np.float32)()


def _agrees(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE / 10 * np.abs(want).max()))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_kernel_variant_matches_numpy(contexts, variant, shape):
    """Each variant's fused step leaves numpy's logits, two steps running."""
    ctx, atomic = contexts
    weights = Weights.of(*SHAPES[shape])
    kernels = VARIANTS[variant]
    engine = Engine(ctx, weights).tuned(kernels, ctx=atomic if kernels.atomic_mlp or
                                        kernels.attn_wo else ctx)
    segments = engine.steps("fused", ctx.buffer(np.zeros(1, np.uint32)))[0]
    names = {p.label.split(":")[-1] for p, *_ in sum(segments, ())}
    assert len(segments[1]) == 5 - kernels.atomic_mlp - kernels.attn_wo
    assert ("norm_matvec4" in names) == kernels.head4
    assert ("gate_up4" in names) == (kernels.layer4 and not kernels.atomic_mlp)
    assert ("qkv_rope4" in names) == kernels.layer4
    assert ("mlp_atomic" in names) == kernels.atomic_mlp
    assert ("attn_wo" in names) == kernels.attn_wo != any(n.startswith("attn_part")
                                                           for n in names)
    assert _agrees(_step(ctx, engine), reference(weights))


def test_the_atomic_variant_feeds_its_tokens_as_numpy_greedy_does(contexts):
    """The token loop's step with every choice: its input stream is the one the layers
    alternate from, and each step reads the token the one before chose."""
    ctx, atomic = contexts
    weights = Weights.of(*SHAPES["tiny"])
    engine = Engine(ctx, weights).tuned(VARIANTS["all"], ctx=atomic)
    greedy = Greedy(weights)
    token = ctx.buffer(np.array([greedy.after(0)], np.uint32))
    loop = sum(engine.steps("fused", ctx.buffer(np.zeros(1, np.uint32)), token)[0], ())
    for steps in range(1, 4):
        ctx.submit(loop)
        assert ctx.reader(token, np.uint32)()[0] == greedy.after(steps)


#: Breakages of the atomic kernels' streams (variant, text, replacement): attn_out's copy
#: leaves out the attention's output; attn_wo leaves the next stream unzeroed; the atomic
#: MLP after it leaves out the stream it reads; attn_wo leaves out the last position, or
#: does not rescale a block's sums to the next block's largest score (two blocks: wide).
BROKEN = {"copy without attention": ("atomic_mlp", "tiny", "        out1[r] = v;\n",
                                     "        out1[r] = v - s;\n"),
          "stream not zeroed": ("atomic", "tiny", "out1[wid.x * RC + r] = 0.0;",
                                "out1[wid.x * RC + r] = 1e-3;"),
          "stream not added": ("atomic", "tiny", "ADDX == 1u && m0 == 0u", "ADDX == 2u"),
          "last position left out": ("attn_wo", "tiny",
                                     "ps[lid] = select(0.0, exp(s - m), t < T);",
                                     "ps[lid] = select(0.0, exp(s - m), t + 1u < T);"),
          "blocks not rescaled": ("attn_wo", "wide", "let scale = exp(top - m);",
                                  "let scale = 1.0;")}


@pytest.mark.parametrize("broken", BROKEN)
def test_an_atomic_kernel_that_breaks_its_stream_fails(contexts, broken):
    """Each breakage of the atomic kernels' streams changes the logits past the check."""
    ctx, atomic = contexts
    variant, shape, text, replacement = BROKEN[broken]
    source = atomic.kernel.source.replace(text, replacement)
    assert source != atomic.kernel.source
    engine = Engine(ctx, Weights.of(*SHAPES[shape])).tuned(
        VARIANTS[variant], ctx=ctx.with_kernel(replace(atomic.kernel, source=source)))
    assert not _agrees(_step(ctx, engine), reference(engine.w))


S = Stream
#: The streamed kernels in two sets of shapes: each lane's loads in one batch, the attention
#: in blocks of 256 (attn_part_wide); and several batches a lane, two or four rows (pairs) a
#: lane group of few lanes, the normed vector made once per workgroup.
STREAMS = {"one batch": Kernels(qkv=S(32, 1, 64), attention_workgroups=0, attn_out=S(64, 4),
                                gate_up=S(32, 1, 256, 32), down=S(128, 2, 256, 32),
                                head=S(32, 4, 256, 32)),
           "batches": Kernels(qkv=S(16, 2, 64, 4, True), attn_out=S(8, 2, 64, 4),
                              gate_up=S(8, 2, 64, 8, True), down=S(16, 4, 128, 8),
                              head=S(16, 2, 128, 2, True))}
#: Rows that no lane group's columns fill (hidden 96: 24 vec4 over 16 or 32 lanes; the MLP's
#: 192: 48), and a vocabulary whose last lane group of 4 rows overlaps the one before (1001).
STREAM_SHAPES = {**SHAPES, "ragged": (Shape("test-ragged", 2, 96, 2, 1, 192, 1001), 16)}
STREAMED = ("qkv_s", "attn_out_s", "gate_up_s", "down_s", "head_s")


@pytest.mark.parametrize("shape", STREAM_SHAPES)
@pytest.mark.parametrize("variant", STREAMS)
def test_each_stream_kernel_matches_numpy(contexts, variant, shape):
    """A step of streamed kernels in place of every matrix-vector kernel leaves numpy's
    logits, two steps running."""
    ctx, _ = contexts
    weights = Weights.of(*STREAM_SHAPES[shape])
    engine = Engine(ctx, weights).tuned(STREAMS[variant])
    segments = engine.steps("fused", ctx.buffer(np.zeros(1, np.uint32)))[0]
    names = [p.label.split(":")[-1] for p, *_ in sum(segments, ())]
    assert all(names.count(n) == (1 if n == "head_s" else 2) for n in STREAMED), names
    assert _agrees(_step(ctx, engine), reference(weights))


#: Breakages of the stream kernels (variant, shape, text, replacement): a ragged row's
#: column past its end counted (the last one again), batches after the first not loaded.
STREAM_BROKEN = {"column past the row": ("one batch", "ragged", "if (c < cols4) {",
                                         "if (c <= cols4) {"),
                 "later batches not loaded": ("batches", "tiny", "w = stream_load(first, lane, b);",
                                              "w = w0;")}


@pytest.mark.parametrize("broken", STREAM_BROKEN)
def test_a_stream_kernel_that_breaks_fails(contexts, broken):
    """Each breakage of the stream kernels changes the logits past the check."""
    ctx, _ = contexts
    variant, shape, text, replacement = STREAM_BROKEN[broken]
    source = ctx.kernel.source.replace(text, replacement)
    assert source != ctx.kernel.source
    engine = Engine(ctx, Weights.of(*STREAM_SHAPES[shape])).tuned(
        STREAMS[variant], ctx=ctx.with_kernel(replace(ctx.kernel, source=source)))
    assert not _agrees(_step(ctx, engine), reference(engine.w))
