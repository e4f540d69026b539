"""The fused decode step's kernel choices (workloads/decode_choices.Kernels) on lavapipe: each
one's logits and the default's greedy tokens against numpy (with subgroups and without), the
suite's step through its subgroup entry points, a broken LM head caught; the
matrix-vector parts' alternatives (MATVECS) against numpy with subgroups and without (the
same lanes through workgroup memory), and a broken subgroup sum caught; the head attention
(attn_head, o_proj) with subgroups and without, its fallback to blocks past HEAD_POSITIONS,
and a broken attn_head caught; the loads ahead (Kernels.ahead) against numpy, their ranges
read, and a broken split between a kernel's own workgroups and those loading caught; the
attention combined once a head by its last block (`ticket`) over several steps, and its
ticket broken caught."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import BACKEND

from gpuoverhead.drivers import webgpu
from gpuoverhead.gpu import adapters
from gpuoverhead.suite.shaders import fusion_kernel
from gpuoverhead.workloads import decode
from gpuoverhead.workloads.decode import SUBGROUP_FEATURES, Engine, Kernels
from gpuoverhead.workloads.decode_choices import (
    AHEADS,
    BY_MODEL,
    HEAD_DIMS,
    MATVEC_PARTS,
    MATVECS,
    Ahead,
    as_run,
    default,
)
from gpuoverhead.workloads.decode_model import (
    MODELS,
    TOLERANCE,
    Greedy,
    Shape,
    Weights,
    attention_block,
    reference,
)
from gpuoverhead.workloads.work import Context

#: The first fused engine's kernels (main), the LM head four rows a lane group, and the
#: attention over 1.5B's default of 70 workgroups.
VARIANTS = {"main": Kernels(), "head4": Kernels(head4=True),
            **BY_MODEL}
#: Heads of 128 dimensions over a cache of 300 (attn_part: 19 blocks of 16 a head over 128
#: workgroups, 10 of 32 over 70), and a vocabulary that leaves the last workgroup of
#: norm_matvec4 rows past the end (1000 = 31 x 32 + 8).
SHAPES = {"tiny": (MODELS[128], 16),
          "wide": (Shape("test-wide", 2, 128, 4, 2, 256, 1000, head_dim=128), 300)}


@pytest.fixture(scope="module")
def ctx() -> Context:
    """A lavapipe device and the decode kernel's Context."""
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND,
                            None)[0]
    return Context(found.adapter.request_device_sync(),
                   SimpleNamespace(kernel=fusion_kernel("decode")))


@pytest.fixture(scope="module")
def sg_ctx() -> Context:
    """The decode kernel's Context on a lavapipe device with subgroups (of 8 invocations on
    this machine's lavapipe: the tiny model's `sg` sums 32 lanes a row over four subgroups,
    `sg-l16` 4 lanes within one, the wide model's `sg-l8` 8 lanes, one whole subgroup)."""
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND,
                            None)[0]
    features = [f for f in SUBGROUP_FEATURES if f in found.adapter.features]
    if not features:
        pytest.skip("this adapter has no subgroups")
    return Context(found.adapter.request_device_sync(required_features=features),
                   SimpleNamespace(kernel=fusion_kernel("decode")))


def _all_parts(name: str) -> Kernels:
    return Kernels(head4=True, **{part: name for part in MATVEC_PARTS})


def _entries(engine: Engine) -> list[str]:
    segments = engine.steps("fused", engine.ctx.buffer(np.zeros(1, np.uint32)))[0]
    return [p.label.split(":")[-1] for p, *_ in sum(segments, ())]


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
def test_each_kernel_variant_matches_numpy(ctx, variant, shape):
    """Each variant's fused step leaves numpy's logits, two steps running, with the kernels
    and attention blocks it names (1.5B's: the `ticket` attention's)."""
    weights = Weights.of(*SHAPES[shape])
    kernels = VARIANTS[variant]
    engine = Engine(ctx, weights).tuned(kernels)
    segments = engine.steps("fused", ctx.buffer(np.zeros(1, np.uint32)))[0]
    names = [p.label.split(":")[-1] for p, *_ in sum(segments, ())]
    assert len(segments[1]) == 5
    assert ("norm_matvec4" in names) == kernels.head4 != ("norm_matvec" in names)
    block = attention_block(weights.shape, weights.cache, kernels.attention_workgroups)
    attention = [d for d in segments[1]
                 if d[0].label.split(":")[-1] in ("attn_part", "attn_part_ticket")]
    assert len(attention) == 1 and attention[0][2:] == (-(-(weights.cache + 1) // block),
                                                        weights.shape.heads)
    assert _agrees(_step(ctx, engine), reference(weights))


@pytest.mark.parametrize("device", ["sg_ctx", "ctx"])
def test_the_default_kernels_feed_their_tokens_as_numpy_greedy_does(request, device):
    """The token loop's step with the suite's kernels, through subgroup shuffles where the
    device has subgroups and through workgroup memory where not (the kernels the engine
    names are those that run): each step reads the token the one before chose."""
    ctx = request.getfixturevalue(device)
    weights = Weights.of(*SHAPES["tiny"])
    engine = Engine(ctx, weights)
    assert engine.kernels == as_run(default(weights.shape), device == "sg_ctx")
    assert (device == "sg_ctx") == ("gate_up_sg" in _entries(engine))
    greedy = Greedy(weights)
    token = ctx.buffer(np.array([greedy.after(0)], np.uint32))
    loop = sum(engine.steps("fused", ctx.buffer(np.zeros(1, np.uint32)), token)[0], ())
    for steps in range(1, 4):
        ctx.submit(loop)
        assert ctx.reader(token, np.uint32)()[0] == greedy.after(steps)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("model", ["default", *BY_MODEL])
def test_the_suite_s_kernels_match_numpy_through_subgroups(sg_ctx, model, shape):
    """The suite's step (DEFAULT, and 1.5B's choice) on a device with subgroups: every
    matrix-vector part through its subgroup entry point, numpy's logits, two steps
    running."""
    weights = Weights.of(*SHAPES[shape])
    engine = Engine(sg_ctx, weights)
    assert engine.kernels == default(weights.shape)
    if model != "default":
        engine = engine.tuned(BY_MODEL[model])
    names = _entries(engine)
    assert {"qkv_rope_sg", "gate_up_sg", "matvec_add_sg"} <= set(names)
    assert not {"qkv_rope", "gate_up", "matvec_add"} & set(names)
    assert _agrees(_step(sg_ctx, engine), reference(weights))


def test_a_head4_kernel_that_leaves_out_a_row_fails(ctx):
    """norm_matvec4 writing three of its lane group's four rows changes the logits past the
    check."""
    source = ctx.kernel.source.replace("for (var i = 0u; i < 4u; i = i + 1u) {",
                                       "for (var i = 0u; i < 3u; i = i + 1u) {")
    assert source != ctx.kernel.source
    engine = Engine(ctx.with_kernel(replace(ctx.kernel, source=source)),
                    Weights.of(*SHAPES["tiny"])).tuned(Kernels(head4=True))
    assert not _agrees(_step(engine.ctx, engine), reference(engine.w))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("alternative", [n for n in MATVECS if n != "main"])
def test_each_matvec_alternative_matches_numpy(sg_ctx, alternative, shape):
    """Q/K/V, gate/up and down all under one alternative leave numpy's logits, two steps
    running, through their subgroup entry points."""
    weights = Weights.of(*SHAPES[shape])
    engine = Engine(sg_ctx, weights).tuned(_all_parts(alternative))
    names = _entries(engine)
    assert {"qkv_rope_sg", "gate_up_sg", "matvec_add_sg"} <= set(names)
    assert not {"qkv_rope", "gate_up", "matvec_add"} & set(names)
    assert _agrees(_step(sg_ctx, engine), reference(weights))


def test_a_matvec_alternative_without_subgroups_sums_in_workgroup_memory(ctx):
    """On a device without subgroups an alternative's lanes run the plain entry points, and
    the logits still match."""
    weights = Weights.of(*SHAPES["tiny"])
    engine = Engine(ctx, weights).tuned(_all_parts("sg-l16"))
    assert engine.sg_ctx is None
    assert not any(name.endswith("_sg") for name in _entries(engine))
    assert _agrees(_step(ctx, engine), reference(weights))


@pytest.mark.parametrize(("alternative", "broken", "instead"), [
    ("sg", "if (LANES > sg) {", "if (false) {"),  # 32 lanes a row: four subgroups' sums
    ("sg-l16", "min(LANES, sg) / 2u;", "min(LANES, sg) / 4u;")])  # 4 lanes: half of them
def test_a_subgroup_sum_that_leaves_lanes_out_fails(sg_ctx, alternative, broken, instead):
    """run_sum without its sums across subgroups, or without its first shuffle, changes the
    logits past the check."""
    engine = Engine(sg_ctx, Weights.of(*SHAPES["tiny"])).tuned(_all_parts(alternative))
    source = engine.sg_ctx.kernel.source.replace(broken, instead)
    assert source != engine.sg_ctx.kernel.source
    engine.sg_ctx = sg_ctx.with_kernel(replace(engine.sg_ctx.kernel, source=source))
    assert not _agrees(_step(sg_ctx, engine), reference(engine.w))


@pytest.mark.parametrize(("device", "attention", "out", "early", "shape"), [
    ("ctx", "head", "main", False, "tiny"), ("ctx", "head", "main", False, "wide"),
    ("sg_ctx", "head", "sg-l16", True, "tiny"), ("ctx", "head-d16", "sg", True, "wide"),
    ("sg_ctx", "head-d8", "sg-l8", False, "wide")])
def test_the_head_attention_matches_numpy(request, device, attention, out, early, shape):
    """attn_head (the tiny model's 17 positions: 8 threads a position's score in one pass;
    the wide model's 301: one thread each over two passes), a workgroup a head or 16 or 8
    dimensions a workgroup (4 or 8 a head of 64, 8 or 16 of 128), and o_proj after it, through
    workgroup memory and through subgroup shuffles, with the biases, angles and residuals
    loaded before the dot products (early) or after, leave numpy's logits, two steps
    running."""
    ctx = request.getfixturevalue(device)
    weights = Weights.of(*SHAPES[shape])
    engine = Engine(ctx, weights).tuned(Kernels(head4=True, attention=attention, out=out,
                                                early=early))
    segments = engine.steps("fused", ctx.buffer(np.zeros(1, np.uint32)))[0]
    grid = [d[2:] for d in segments[1] if d[0].label.endswith("attn_head")]
    slices = weights.shape.head_dim // (HEAD_DIMS[attention] or weights.shape.head_dim)
    assert grid == [(weights.shape.heads, slices)]
    names = _entries(engine)
    assert ("o_proj_sg" if device == "sg_ctx" else "o_proj") in names
    assert not {"attn_part", "attn_out"} & set(names)
    assert _agrees(_step(ctx, engine), reference(weights))


def test_the_head_attention_takes_blocks_past_its_positions(ctx, monkeypatch):
    """A cache longer than the head attention holds (HEAD_POSITIONS, here made 100) runs
    attn_part and attn_out instead, and still leaves numpy's logits."""
    monkeypatch.setattr(decode, "HEAD_POSITIONS", 100)
    weights = Weights.of(*SHAPES["wide"])
    engine = Engine(ctx, weights).tuned(Kernels(head4=True, attention="head"))
    assert {"attn_part", "attn_out"} <= set(_entries(engine))
    assert "attn_head" in _entries(engine.at(16))
    assert _agrees(_step(ctx, engine), reference(weights))


HEAD, EARLY = Kernels(head4=True, attention="head"), Kernels(head4=True, attention="head",
                                                              early=True)


@pytest.mark.parametrize(("shape", "kernels", "broken", "instead"), [
    ("tiny", HEAD, "for (var j = 0u; j < SPLIT; j = j + 1u) {",  # half a score's threads
     "for (var j = 0u; j < SPLIT / 2u; j = j + 1u) {"),
    ("wide", HEAD, "select(0.0, sc[min(t + 3u * runs, end)], t + 3u * runs < T)",
     "select(0.0, sc[min(t + 3u * runs, end)], false)"),  # a quarter of the positions
    ("tiny", replace(HEAD, attention="head-d16"), "let c0 = wid.y * cols + dl;",
     "let c0 = dl;"),  # every slice a head's first
    ("tiny", EARLY, "        return out0[r];\n", "        return 0.0;\n"),  # no residual
    ("tiny", EARLY, "return vec4<f32>(in2[r0], in2[r0 + D / 2u], in1[j], in1[D / 2u + j]);",
     "return vec4<f32>(in2[r0], in2[r0 + D / 2u], in1[j], 0.0);")])  # no sine
def test_a_head_attention_that_drops_a_share_fails(ctx, shape, kernels, broken, instead):
    """attn_head summing half of a position's score threads, leaving out the last position
    of every batch of values, or every workgroup of a head taking its first dimensions; the
    early loads' residual or RoPE's sine left out: each changes the logits past the
    check."""
    source = ctx.kernel.source.replace(broken, instead)
    assert source != ctx.kernel.source
    weights = Weights.of(*SHAPES[shape])
    engine = Engine(ctx.with_kernel(replace(ctx.kernel, source=source)), weights).tuned(kernels)
    assert not _agrees(_step(engine.ctx, engine), reference(weights))


#: The tiny model's loads ahead in part: gate/up's first 64 of 256 row pairs (a KiB each)
#: by attn_part, the next 64 by attn_out, and the next layer's Q/K/V by down.
PART_AHEAD = Ahead(64, 64, qkv=True)


@pytest.mark.parametrize("device", ["sg_ctx", "ctx"])
def test_the_loads_ahead_leave_numpy_s_logits(request, device, monkeypatch):
    """attn_part, attn_out and down with workgroups that load gate/up's rows and the next
    layer's Q/K/V ahead (the last layer's down none), through subgroups and without, leave
    numpy's logits, two steps running."""
    ctx = request.getfixturevalue(device)
    monkeypatch.setitem(AHEADS, "part", PART_AHEAD)
    weights = Weights.of(*SHAPES["tiny"])
    engine = Engine(ctx, weights).tuned(replace(as_run(default(weights.shape),
                                                       device == "sg_ctx"), ahead="part"))
    segments = engine.steps("fused", ctx.buffer(np.zeros(1, np.uint32)))[0]
    first, last = ([d[0].label.split(":")[-1] for d in layer] for layer in segments[:2])
    down = "matvec_add_ahead_sg" if device == "sg_ctx" else "matvec_add_ahead"
    assert first[2:] == ["attn_part_ahead", "attn_out_ahead", first[4], down]
    assert last[1:3] == ["attn_part_ahead", "attn_out_ahead"] and down not in last
    # 64 rows x 32 vec4 twice, 8 vec4 a thread: two workgroups of 256 threads, in rows of
    # the grid past the heads
    blocks = -(-(weights.cache + 1) // attention_block(weights.shape, weights.cache))
    assert segments[1][1][2:] == (blocks, weights.shape.heads + -(-2 // blocks))
    assert _agrees(_step(ctx, engine), reference(weights))


@pytest.mark.parametrize(("at", "loaded"), [(4, True), (12, True), (34, True), (42, True),
                                            (3, False), (14, False), (33, False),
                                            (44, False)])
def test_load_ahead_reads_its_two_ranges(ctx, at, loaded):
    """load_ahead's workgroups (two of matvec_add_ahead's four, past its two of rows) read
    vec4 4-13 and 34-43 of `ahead` (AHEAD_AT 4, AHEAD_N 10, AHEAD_GAP 30), and nothing
    else: a 3e38 there (the sum it writes out) reaches out0[0]; elsewhere out0 keeps its
    zeros (zero weights)."""
    ahead = np.zeros((64, 4), np.float32)
    ahead[at, 0] = 3.0e38
    out = ctx.buffer(np.zeros(4, np.float32))
    pipeline = ctx.pipeline("matvec_add_ahead", ROWS=4, COLS=4, LANES=32, WG=64, AHEAD_WG=2,
                            AHEAD_AT=4, AHEAD_N=10, AHEAD_GAP=30)
    ctx.submit([ctx.step(pipeline, {7: ctx.buffer(np.zeros(16, np.float32)),
                                    8: ctx.buffer(np.zeros(4, np.float32)), 3: out,
                                    12: ctx.buffer(ahead)}, (4, 1))])
    assert list(ctx.reader(out, np.float32)()) == [3.0e38 if loaded else 0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(("broken", "instead"), [
    ("let own = (ROWS + WG / LANES - 1u) / (WG / LANES);",  # a workgroup of rows loads
     "let own = (ROWS + WG / LANES - 1u) / (WG / LANES) - 1u;"),
    ("    if (wid.y >= NH) {\n", "    if (wid.y + 1u >= NH) {\n")])  # a head loads
def test_a_kernel_that_loads_ahead_in_its_own_workgroups_fails(ctx, monkeypatch, broken,
                                                               instead):
    """A workgroup of down's or attn_out's rows, or the attention's last head, taken for
    one that loads ahead changes the logits past the check."""
    monkeypatch.setitem(AHEADS, "part", PART_AHEAD)
    source = ctx.kernel.source.replace(broken, instead)
    assert source != ctx.kernel.source
    weights = Weights.of(*SHAPES["tiny"])
    engine = Engine(ctx.with_kernel(replace(ctx.kernel, source=source)), weights).tuned(
        Kernels(head4=True, ahead="part"))
    assert not _agrees(_step(engine.ctx, engine), reference(weights))


def _each_step_agrees(ctx: Context, engine: Engine, steps: int) -> list[bool]:
    """Whether each of `steps` steps, each submitted and read on its own, leaves numpy's
    logits (a race between workgroups may spoil some steps and not others)."""
    count = ctx.buffer(np.zeros(1, np.uint32))
    segments, logits = engine.steps("fused", count)
    want, out = reference(engine.w), []
    for _ in range(steps):
        ctx.submit(sum(segments, ()))
        out.append(_agrees(ctx.reader(logits, np.float32)(), want))
    assert ctx.reader(count, np.uint32)()[0] == steps
    return out


@pytest.mark.parametrize(("device", "out", "shape"), [("ctx", "main", "tiny"),
                                                      ("sg_ctx", "sg-l16", "wide")])
def test_the_attention_combined_by_each_head_s_last_block_matches_numpy(request, device, out,
                                                                        shape):
    """attn_part_ticket (the tiny model's 2 blocks a head, the wide model's 19 over 4
    heads, their workgroups on lavapipe's threads at once) and o_proj after it, through
    workgroup memory and subgroups, leave numpy's logits in each of 4 steps: the tickets
    go back to 0 for the next layer and step."""
    ctx = request.getfixturevalue(device)
    engine = Engine(ctx, Weights.of(*SHAPES[shape])).tuned(
        Kernels(head4=True, attention="ticket", out=out))
    names = _entries(engine)
    assert "attn_part_ticket" in names and not {"attn_part", "attn_out"} & set(names)
    assert all(_each_step_agrees(ctx, engine, 4))


@pytest.mark.parametrize(("broken", "instead"), [
    ("workgroupUniformLoad(&last_block) == NB - 1u",
     "workgroupUniformLoad(&last_block) == NB - 2u"),
    ("            atomicStore(&tickets[wid.y], 0u);\n", "")])
def test_an_attention_combined_before_its_last_block_fails(ctx, broken, instead):
    """The last block but one of a head combining (before the last wrote its partial
    results: it reads those the layer before left), or the tickets never set back to 0 (no
    block of a later layer combines): some step's logits past the check."""
    source = ctx.kernel.source.replace(broken, instead)
    assert source != ctx.kernel.source
    weights = Weights.of(*SHAPES["wide"])
    engine = Engine(ctx.with_kernel(replace(ctx.kernel, source=source)), weights).tuned(
        Kernels(head4=True, attention="ticket"))
    assert not all(_each_step_agrees(engine.ctx, engine, 2))


def _grid_sync(ctx: Context, dispatches: int, rounds: int = 4, spin: int = 4096
               ) -> list[int]:
    """grid_sync's counters (arrivals, gave up, stale reads at fresh addresses and at one
    address) after `dispatches` dispatches of one workgroup, `rounds` rounds each."""
    tickets = ctx.buffer(np.zeros(4, np.uint32))
    step = ctx.step(ctx.pipeline("grid_sync", WG=64, ROUNDS=rounds, SPIN=spin),
                    {3: ctx.buffer(np.zeros(rounds, np.float32)),
                     4: ctx.buffer(np.zeros(1, np.float32)), 13: tickets}, (1, 1))
    ctx.submit((step,) * dispatches)
    return ctx.reader(tickets, np.uint32)().tolist()


def test_a_grid_barrier_passes_with_its_counter_never_set_back(ctx):
    """grid_sync's barriers (two a round) over one workgroup, in two dispatches on one
    counter: every arrival counted, none gave up, every value read the round's (a grid of
    more workgroups than lavapipe runs at once would give up: decode_kernels.py's probe
    takes the H200's counts as an option)."""
    assert _grid_sync(ctx, 2) == [16, 0, 0, 0]


def test_a_grid_barrier_that_waits_for_too_many_gives_up_and_says_so(ctx):
    """A barrier waiting for one more arrival than the grid has gives up after SPIN loads
    of the counter, each time, and counts it: no hang, and the probe's verdict fails."""
    source = ctx.kernel.source.replace("let goal = (ticket / workgroups + 1u) * workgroups;",
                                       "let goal = (ticket / workgroups + 1u) * workgroups + 1u;")
    assert source != ctx.kernel.source
    assert _grid_sync(ctx.with_kernel(replace(ctx.kernel, source=source)), 1, spin=64)[:2] \
        == [8, 8]


@pytest.mark.parametrize(("shape", "layers"), [("tiny", 2), ("wide", 3)])
def test_the_mlp_in_one_dispatch_of_one_workgroup_matches_numpy(ctx, shape, layers):
    """mlp_grid (gate/up, a grid barrier, down) in one workgroup, all of both stages' rows
    in turn, its residual stream alternating two buffers (three layers: the head reads the
    second), leaves numpy's logits in each of 3 steps. More workgroups than one are left to
    a GPU: on this lavapipe two workgroups pass the barrier's count yet read each other's
    rows wrong (decode_kernels.py's probe and its checks judge them on the H200)."""
    model, cache = SHAPES[shape]
    weights = Weights.of(replace(model, layers=layers), cache)
    engine = Engine(ctx, weights).tuned(Kernels(head4=True, grid=1))
    names = _entries(engine)
    assert names.count("mlp_grid") == layers and not {"gate_up", "matvec_add"} & set(names)
    assert all(_each_step_agrees(ctx, engine, 3))


def test_an_mlp_in_one_dispatch_that_drops_the_residual_fails(ctx):
    """mlp_grid's down writing its sums without the residual stream: logits past the
    check."""
    source = ctx.kernel.source.replace("out1[r] = x4[r / 4u][r % 4u] + red[lid].x;",
                                       "out1[r] = red[lid].x;")
    assert source != ctx.kernel.source
    weights = Weights.of(*SHAPES["tiny"])
    engine = Engine(ctx.with_kernel(replace(ctx.kernel, source=source)), weights).tuned(
        Kernels(head4=True, grid=1))
    assert not any(_each_step_agrees(engine.ctx, engine, 1))
