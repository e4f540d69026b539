"""The fused decode step's kernel choices (shaders/fusion_decode.wgsl): how many workgroups
the attention aims at, which kernel takes the LM head, and how the matrix-vector parts (Q/K/V,
gate/up, down) sum their rows. The suite's step uses each model's default (`default`);
benchmarks/investigations/decode_kernels.py times it against `main` (the first fused
engine's choices) and against each part's alternatives (MATVECS) on a GPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpuoverhead.workloads.decode_model import ATTENTION_WORKGROUPS, Shape

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
#: The parts those alternatives serve, by their Kernels field.
MATVEC_PARTS = ("qkv", "gate_up", "down")


@dataclass(frozen=True)
class Kernels:
    """The fused step's kernel choices: the attention's workgroups over all heads
    (decode_model.attention_block: its blocks of the cache halved while heads x blocks
    stays within them), the LM head four rows a lane group with its normed vector made
    once per workgroup (`head4`: norm_matvec4) rather than a workgroup a row
    (norm_matvec), and each matrix-vector part's alternative (MATVECS: Q/K/V with the norm
    and RoPE, gate/up with the norm and SiLU, down with the residual add)."""

    attention_workgroups: int = ATTENTION_WORKGROUPS
    head4: bool = False
    qkv: str = "main"
    gate_up: str = "main"
    down: str = "main"


#: The suite's fused step (run.json's `kernels`, KERNELS_NOTE): the fastest whole steps on
#: the H200 in the second GPU call of issue 57 (results/h200/decode-kernels/round2), in both
#: implementations: the LM head four rows a lane group (head4: 133 µs a 0.5B token against
#: 203, 217 against 321 at 1.5B, wgpu-native's timestamps after every dispatch), and at 1.5B
#: the attention over 70 workgroups (5 blocks of 32 positions a head at a cache of 128,
#: where 128 workgroups make 9 of 16; 0.5B keeps 128: 14 heads x 9 blocks). Whole steps at
#: a cache of 128: 0.5B 1.058 ms a token against main's 1.135 (wgpu-native), 1.051 against
#: 1.134 (Dawn); 1.5B 2.481 against 2.623, 2.315 against 2.431.
DEFAULT_NAME, DEFAULT = "tuned", Kernels(head4=True)
#: Models whose default differs from DEFAULT, by name.
BY_MODEL = {"qwen2.5-1.5b": Kernels(attention_workgroups=70, head4=True)}
#: What a decode worker writes into run.json: the fused step's kernels, named.
KERNELS_NOTE = {"variant": DEFAULT_NAME, **asdict(DEFAULT),
                "by_model": {name: asdict(k) for name, k in BY_MODEL.items()}}


def default(shape: Shape) -> Kernels:
    """The suite's fused kernels for a model."""
    return BY_MODEL.get(shape.name, DEFAULT)
