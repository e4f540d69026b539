"""The fused decode step's dispatches that overlap or remove its kernel boundaries (issue 57,
round 5; shaders/fusion_decode.wgsl): the attention's blocks (`split`, or `ticket`: combined
once a head by its last block), with workgroups past their own that load gate/up's weights
ahead into the L2 cache (decode_choices.AHEADS), and the MLP in one dispatch of resident
workgroups (Kernels.grid). Each takes the decode Engine whose buffers and pipelines it uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.workloads.decode_choices import AHEAD_MOST_WG, AHEADS, ALL_MATVECS
from gpuoverhead.workloads.decode_model import DECODE_WG, W


def fused_layers(engine: Any, buf: dict) -> tuple[list[list], Any]:
    """Each layer's fused dispatches (Engine._fused_layer) and the residual stream the last
    leaves: buf["x"], or under Kernels.grid (mlp_grid writes the next layer's stream apart
    from the one it reads) two streams in turn, with mlp_grid's barrier counter; the
    `ticket` attention's tickets, a head each."""
    k, s, ctx = engine.kernels, engine.w.shape, engine.ctx
    streams = [buf["x"], ctx.buffer(np.zeros(s.hidden, np.float32)) if k.grid else buf["x"]]
    if k.grid:
        buf["grid"] = ctx.buffer(np.zeros(2, np.uint32))
    if k.attention == "ticket":
        buf["tickets"] = ctx.buffer(np.zeros(s.heads, np.uint32))
    layers = engine.layers
    return [engine._fused_layer(layer, {**buf, "x": streams[i % 2],
                                        "x_next": streams[(i + 1) % 2]}, following)
            for i, (layer, following) in enumerate(zip(layers, [*layers[1:], None],
                                                       strict=True))], \
        streams[len(layers) % 2]


def ahead_constants(ahead: tuple | None, wg: int) -> tuple[int, dict[str, int]]:
    """Workgroups of `wg` threads that load `ahead` (a buffer, its first vec4, vec4 a range,
    the second range's offset: fusion_decode.wgsl's load_ahead), eight vec4 a thread in
    flight, at most AHEAD_MOST_WG; and its constants. None: none."""
    if ahead is None:
        return 0, {}
    _, first, n, gap = ahead
    more = min(AHEAD_MOST_WG, -(-2 * n // (8 * wg)))
    return more, {"AHEAD_WG": more, "AHEAD_AT": first, "AHEAD_N": n, "AHEAD_GAP": gap}


def gate_up_ahead(engine: Any, layer: dict) -> tuple[tuple | None, tuple | None]:
    """What attn_part and attn_out load ahead of gate/up (Kernels.ahead: its first part_kb
    KiB of gate rows and their up rows, then out_kb more), as load_ahead's (buffer, first
    vec4, vec4 a range, the second range's offset); None: nothing."""
    s, plan = engine.w.shape, AHEADS[engine.kernels.ahead]
    row = s.hidden * np.dtype(engine.dtype).itemsize * 2  # a gate row and its up row
    first = min(s.mlp, plan.part_kb * 1024 // row)
    second = min(s.mlp, first + plan.out_kb * 1024 // row)
    h4, gap = s.hidden // 4, s.mlp * s.hidden // 4
    return tuple(None if b <= a else (layer["wgu"], a * h4, (b - a) * h4, gap)
                 for a, b in ((0, first), (first, second)))


def attention_blocks(engine: Any, layer: dict, b: dict) -> list[Any]:
    """The attention over blocks of the cache and its output projection with the residual
    add: attn_part (attn_part_wide for blocks of DECODE_WG positions), then their combine
    inside the projection (attn_out); or, under `ticket` where the blocks are shorter,
    attn_part_ticket combining each head's blocks in its last, then o_proj (Kernels.out's
    lanes). Under shorter blocks attn_part and the projection also load Kernels.ahead's
    share of gate/up ahead (gate_up_ahead), in workgroups past their own."""
    s, t, k = engine.w.shape, engine.cache + 1, engine.kernels
    h, q, block = s.hidden, s.q_size, engine._block()
    blocks = -(-t // block)
    parts = {8: b["q"], 9: layer["kcache"], 10: layer["vcache"], 3: b["ml"], 4: b["part"]}
    part, out = gate_up_ahead(engine, layer) if block < DECODE_WG else (None, None)
    ticket = k.attention == "ticket" and block < DECODE_WG
    more, loads = ahead_constants(part, DECODE_WG)
    rows = -(-more // blocks)  # its workgroups that load ahead: rows past the heads
    loads |= {"AHEAD_WG": rows * blocks} if part else {}
    if ticket:  # no load ahead: `ahead` bound all the same, to a buffer it never writes
        attend = engine.ctx.step(engine._p("attn_part_ticket", WG=DECODE_WG, AB=block,
                                           **loads),
                                 {**parts, 5: b["o"], 12: (part or (layer["wgu"],))[0],
                                  13: b["tickets"]}, (blocks, s.heads + rows))
        return [attend, engine._mv("o_proj", {W: layer["wo"], 8: b["o"], 3: b["x"]}, h, q,
                                   matvec=ALL_MATVECS[k.out], EARLY=int(k.early), ahead=out)]
    if part is None:
        attend = engine.ctx.step(engine._p("attn_part" if block < DECODE_WG else
                                           "attn_part_wide", WG=DECODE_WG, AB=block),
                                 parts, (blocks, s.heads))
    else:
        attend = engine.ctx.step(engine._p("attn_part_ahead", WG=DECODE_WG, AB=block, **loads),
                                 {**parts, 12: part[0]}, (blocks, s.heads + rows))
    return [attend,
            engine._mv("attn_out", {W: layer["wo"], 0: b["ml"], 10: b["part"], 3: b["x"]}, h,
                       q, least=DECODE_WG, ahead=out)]


def mlp(engine: Any, layer: dict, b: dict, following: dict | None) -> list[Any]:
    """The MLP: gate/up (its norm and SiLU) then down with the residual add, down loading
    the `following` layer's Q/K/V ahead where Kernels.ahead asks (none after the last); or
    both in one dispatch (Kernels.grid: mlp_grid)."""
    s, k = engine.w.shape, engine.kernels
    if k.grid:
        return [mlp_grid(engine, layer, b)]
    whole = (s.q_size + 2 * s.kv_size) * s.hidden // 4  # the next Q/K/V in vec4, two ranges
    loads = (following["wqkv"], 0, -(-whole // 2), whole // 2) \
        if AHEADS[k.ahead].qkv and following is not None else None
    return [engine._mv("gate_up", {W: layer["wgu"], 8: b["x"], 9: layer["norm2"],
                                   3: b["a"]}, s.mlp, s.hidden, matvec=ALL_MATVECS[k.gate_up]),
            engine._mv("matvec_add", {W: layer["wdown"], 8: b["a"], 3: b["x"]}, s.hidden,
                       s.mlp, matvec=ALL_MATVECS[k.down], EARLY=int(k.early), ahead=loads)]


def mlp_grid(engine: Any, layer: dict, b: dict) -> Any:
    """gate/up and down in one dispatch of Kernels.grid workgroups (mlp_grid), each stage's
    lanes as its Kernels names them, DECODE_WG threads a workgroup: the residual stream from
    b["x"] into b["x_next"]."""
    s, k = engine.w.shape, engine.kernels
    lanes = ALL_MATVECS[k.gate_up].lanes(s.hidden, DECODE_WG)
    lanes2 = ALL_MATVECS[k.down].lanes(s.mlp, DECODE_WG)
    return engine.ctx.step(
        engine._p("mlp_grid", WG=DECODE_WG, LANES=lanes, LANES2=lanes2,
                  GU_WG=-(-s.mlp // (DECODE_WG // lanes)),
                  DOWN_WG=-(-s.hidden // (DECODE_WG // lanes2))),
        {W: layer["wgu"], 8: b["x"], 9: layer["norm2"], 3: b["a"], 12: layer["wdown"],
         4: b["x_next"], 13: b["grid"]}, grid_for(k.grid, 1))

