"""The fused decode step's kernel choices (shaders/fusion_decode.wgsl): how many workgroups
the attention aims at and how its blocks are combined, which kernel takes the LM head, how
the matrix-vector parts (Q/K/V, gate/up, down) sum their rows, and what the latency-bound
kernels load ahead into the L2 cache (AHEADS). The suite's step uses each model's default
(`default`); benchmarks/investigations/decode_kernels.py times it against the other choices
on a GPU (round 5: the `ticket` attention and the loads ahead), so that a choice that wins
there becomes a model's default by its name here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from gpuoverhead.workloads.decode_model import ATTENTION_WORKGROUPS, DECODE_WG, Shape

#: Threads a lane group and per workgroup of norm_matvec4 (the LM head four rows a lane
#: group, its normed vector made once per workgroup).
SHARED_LANES, SHARED_WG = 32, 256
#: The most vec4 loads a lane of the first fused engine's matrix-vector kernels makes of a
#: row (decode.MATVEC_WG says why 4).
LANE_LOADS = 4


@dataclass(frozen=True)
class Matvec:
    """How a matrix-vector part of the fused step runs: each row's (or row pair's) sums by
    subgroup shuffles (fusion_decode_subgroups.wgsl; the device needs subgroups) or through
    workgroup memory, and its lanes: the fewest, from `least_lanes` up in powers of two (to
    the decode workgroup), that leave a lane at most `lane_loads` vec4 of each row."""

    subgroups: bool = False
    lane_loads: int = LANE_LOADS
    least_lanes: int = 32

    def lanes(self, cols: int, most: int) -> int:
        """Threads a row of `cols` columns (vec4 loads: cols / 4), at most `most`."""
        lanes = self.least_lanes
        while lanes < most and cols // 4 > self.lane_loads * lanes:
            lanes *= 2
        return lanes


#: A part's alternatives by name. main: the first fused engine's (the H100's fastest of 2, 4
#: and 8 loads a lane, decode.py); sg: main's lanes with the sums by subgroup shuffles (no
#: barrier where a row is one subgroup's, one where it spans several, against reduce_runs's
#: log2(lanes)); sg-l8, sg-l16: also fewer lanes a row (Qwen2.5-0.5B's gate/up 32 and 16
#: against main's 64), more rows a workgroup and more loads in flight a lane.
MATVECS = {"main": Matvec(), "sg": Matvec(subgroups=True),
           "sg-l8": Matvec(subgroups=True, lane_loads=8, least_lanes=4),
           "sg-l16": Matvec(subgroups=True, lane_loads=16, least_lanes=4)}
#: The parts those alternatives serve, by their Kernels field, and with them the attention's
#: output projection (`out`), a part of its own under a `head` attention alone.
MATVEC_PARTS = ("qkv", "gate_up", "down")
MATVEC_FIELDS = (*MATVEC_PARTS, "out")
#: The fused attention's forms (Kernels.attention). split: attn_part over blocks of the
#: cache, their combine inside the output projection (attn_out, every workgroup combining
#: all blocks); head, head-d16, head-d8: attn_head, the whole cache of a query head at once,
#: normed, then the output projection as a plain matrix-vector product (o_proj,
#: Kernels.out), where the cache holds at most decode_model.HEAD_POSITIONS positions (past
#: them: split). Their dimensions a workgroup (HEAD_DIMS; 0: all of a head's, a workgroup a
#: head): `head-d16` splits each head's values over head_dim / 16 workgroups, each taking
#: its softmax whole (56 workgroups at 0.5B, 96 at 1.5B), `head-d8` over head_dim / 8.
HEAD_DIMS = {"head": 0, "head-d16": 16, "head-d8": 8}
#: ticket (round 5): split's blocks, their combine once a head by its last block to finish
#: (attn_part_ticket, by an atomic ticket), then o_proj as under `head` (Kernels.out).
#: attn_part_ticket needs every block's writes seen by the head's last workgroup within one
#: dispatch: the device-scope barrier naga emits for storageBarrier (decode_kernels.py and
#: tests/gpu/test_decode.py check the logits over many steps).
ATTENTIONS = ("split", *HEAD_DIMS, "ticket")
#: The attentions after which o_proj runs (Kernels.out is a part of its own).
PROJECTED = (*HEAD_DIMS, "ticket")
#: Each subgroup alternative as a device without subgroups runs it: the same lanes, summed
#: through workgroup memory (decode.Engine), named so that run.json never names a subgroup
#: sum that did not run.
WITHOUT_SUBGROUPS = {"sg": "main", "sg-l8": "l8", "sg-l16": "l16"}
#: Every matrix-vector kernel a step may run, by name: the alternatives and those.
ALL_MATVECS = {**MATVECS, **{plain: replace(MATVECS[sg], subgroups=False)
                             for sg, plain in WITHOUT_SUBGROUPS.items()}}


@dataclass(frozen=True)
class Ahead:
    """What the fused step's latency-bound kernels load ahead, by workgroups of their own
    past theirs (the `_ahead` entry points: fusion_decode.wgsl's load_ahead), so that it
    sits in the L2 cache (50 MB on the H100 SXM's and the H200's GH100) when the kernel it
    belongs to reads it: gate/up's first `part_kb` KiB (its gate rows and their up rows
    alike) by attn_part's, the next `out_kb` by attn_out's or o_proj's (capped at all of
    gate/up), and,
    where `qkv`, the next layer's Q/K/V by down's (matvec_add). Under the split and
    `ticket` attentions alone (attn_part's blocks under DECODE_WG positions): the head
    attention and the wide blocks load nothing ahead, and under Kernels.grid down loads
    nothing (it runs inside mlp_grid)."""

    part_kb: int = 0
    out_kb: int = 0
    qkv: bool = False


#: The loads ahead by name (Kernels.ahead; "": none; `gu8+8`: 8 MiB by attn_part, 8 more
#: by attn_out). At 0.5B gate/up is 33.3 MiB in f32 (`gu18+18` loads all of it), at 1.5B
#: 105 MiB.
MB = 1024
AHEADS = {"": Ahead(), "gu8": Ahead(8 * MB), "gu16": Ahead(16 * MB),
          "gu8+8": Ahead(8 * MB, 8 * MB), "gu18+18": Ahead(18 * MB, 18 * MB),
          "qkv": Ahead(qkv=True), "gu8+8,qkv": Ahead(8 * MB, 8 * MB, True)}
#: Workgroups that load ahead in one kernel at most (each thread's loads in a loop past it).
AHEAD_MOST_WG = 1024


@dataclass(frozen=True)
class Kernels:
    """The fused step's kernel choices: the attention's workgroups over all heads
    (decode_model.attention_block: its blocks of the cache halved while heads x blocks
    stays within them), the LM head four rows a lane group with its normed vector made
    once per workgroup (`head4`: norm_matvec4) rather than a workgroup a row
    (norm_matvec), and each matrix-vector part's alternative (MATVECS: Q/K/V with the norm
    and RoPE, gate/up with the norm and SiLU, down with the residual add; `out`, the
    attention's output projection with the residual add, under a `head` attention:
    ATTENTIONS); `early`: Q/K/V and the projections with a residual add load what their
    rows' sums are added to (biases, RoPE angles, the residual) before their dot products,
    so that wait overlaps the weights' (after the sums, a round trip to memory of its
    own); `ahead`: what the attention and down load ahead for the kernels after them
    (AHEADS); `grid`: where not 0, the MLP (gate/up, then down) in one dispatch of that many
    workgroups with a grid-wide barrier between (mlp_grid: an investigation's, for a device
    known to run that many at once; WebGPU cannot say how many), its sums through workgroup
    memory, gate/up's lanes and down's as named. (Each whole layer in one dispatch,
    `layer_grid`, gave wrong logits on the H200 and was slower where right: round 6, in the
    history at commit 83d609a.)"""

    attention_workgroups: int = ATTENTION_WORKGROUPS
    head4: bool = False
    qkv: str = "main"
    gate_up: str = "main"
    down: str = "main"
    attention: str = "split"
    out: str = "main"
    early: bool = False
    ahead: str = ""
    grid: int = 0


#: The suite's fused step (run.json's `kernels`: kernels_note), each model's fastest whole
#: step on the H200 (at 1.5B wgpu-native's, below). Round 2 of issue 57
#: (results/h200/decode-kernels/round2): the LM head four rows a lane group (head4: 133 µs a
#: 0.5B token against 203, 217 against 321 at 1.5B, wgpu-native's timestamps after every
#: dispatch), and at 1.5B the attention over 70 workgroups (5 blocks of 32 positions a head
#: at a cache of 128, where 128 workgroups make 9 of 16; 0.5B keeps 128: 14 heads x 9
#: blocks). Round 3 (results/h200/decode-kernels/round3, decode_kernels.py, 2026-11-29):
#: the matrix-vector parts summed by subgroup shuffles with fewer lanes a row, each model's
#: `best` timed against a fresh build of round 2's step in rounds of their own, every round
#: below every one of its: 0.5B (qkv sg, gate_up sg-l16, down sg-l16) 1.002 ms a token
#: against 1.059 (wgpu-native, 0.947x), 0.987 against 1.058 (Dawn, 0.934x); 1.5B (qkv sg-l8,
#: gate_up sg-l8, down sg-l16: wgpu-native's best) 2.416 against 2.487 (0.972x). Dawn's
#: 1.5B best took gate_up sg-l16 and down sg (2.230 against 2.320); one choice serves both,
#: since its phase-1 swaps put each of wgpu-native's within 0.8% of Dawn's own (gate_up
#: sg-l8 2.284 ms against sg-l16's 2.267, down sg-l16 2.310 against sg's 2.295), under the
#: about 1% that two builds of one step fall apart there (round 2). Round 5
#: (results/h200/decode-kernels/round5): at 1.5B the `ticket` attention with o_proj's lanes
#: sg-l16 was the fastest attention in both implementations (phase 1: 2.313 ms a token
#: against 2.402, wgpu-native; 2.149 against 2.239, Dawn), and each one's `best` with it
#: 0.951x and 0.961x a fresh build of round 3's step, every round below. wgpu-native's best
#: also loaded early and Dawn's did not, so `early` stays off (one choice for both). At
#: 0.5B it lost (wgpu-native 1.033 against 1.005): 0.5B keeps `split`. Round 6
#: (results/h200/decode-kernels/round6, round6b): `early` won phase 2 at 0.5B and on
#: wgpu-native at 1.5B again, but on Dawn at 1.5B it lost phase 1 in rounds 4, 5 and 6
#: (2.187 ms a token against 2.151 in round 6), so it stays off.
DEFAULT_NAME = "subgroups"
DEFAULT = Kernels(head4=True, qkv="sg", gate_up="sg-l16", down="sg-l16")
#: Models whose default differs from DEFAULT, by name.
BY_MODEL = {"qwen2.5-1.5b": Kernels(attention_workgroups=70, head4=True, qkv="sg-l8",
                                    gate_up="sg-l8", down="sg-l16", attention="ticket",
                                    out="sg-l16")}
#: The variant name of the suite's step where the device has no subgroups (the same lanes
#: through workgroup memory: WITHOUT_SUBGROUPS).
WITHOUT_NAME = "workgroup-memory"


def as_run(kernels: Kernels, subgroups: bool) -> Kernels:
    """`kernels` as a device runs them: as named with subgroups; without, each subgroup
    alternative by the name of its workgroup-memory twin (WITHOUT_SUBGROUPS)."""
    if subgroups:
        return kernels
    named = {part: getattr(kernels, part) for part in MATVEC_FIELDS}
    return replace(kernels, **{part: WITHOUT_SUBGROUPS.get(n, n) for part, n in named.items()})


def kernels_note(subgroups: bool) -> dict[str, Any]:
    """What a decode worker writes into run.json (`kernels`): the fused step's kernels as its
    device ran them, named, and whether that device had subgroups."""
    return {"variant": DEFAULT_NAME if subgroups else WITHOUT_NAME, "subgroups": subgroups,
            **asdict(as_run(DEFAULT, subgroups)),
            "by_model": {name: asdict(as_run(k, subgroups)) for name, k in BY_MODEL.items()}}


def default(shape: Shape) -> Kernels:
    """The suite's fused kernels for a model, as named (a device without subgroups runs
    as_run(default(shape), False))."""
    return BY_MODEL.get(shape.name, DEFAULT)


def head_split(positions: int, head_dim: int) -> int:
    """attn_head's threads a position for its scores: the most (up to head_dim / 4, a
    power of two) that keep its passes over the positions as few as one a position allows
    (the tiny model's 17 positions: 8 threads each in one pass; 129: one each)."""
    passes, split = -(-positions // DECODE_WG), 1
    while split < head_dim // 4 and -(-positions // (DECODE_WG // (2 * split))) == passes:
        split *= 2
    return split
