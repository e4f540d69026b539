"""The fused decode step's kernel choices (shaders/fusion_decode.wgsl): how many workgroups
the attention aims at, and which kernel takes the LM head. The suite's step uses each
model's default (`default`); benchmarks/investigations/decode_kernels.py times it against
`main` (the first fused engine's choices) on a GPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpuoverhead.workloads.decode_model import ATTENTION_WORKGROUPS, Shape

#: Threads a lane group and per workgroup of norm_matvec4 (the LM head four rows a lane
#: group, its normed vector made once per workgroup).
SHARED_LANES, SHARED_WG = 32, 256


@dataclass(frozen=True)
class Kernels:
    """The fused step's kernel choices: the attention's workgroups over all heads
    (decode_model.attention_block: its blocks of the cache halved while heads x blocks
    stays within them), and the LM head four rows a lane group with its normed vector made
    once per workgroup (`head4`: norm_matvec4) rather than a workgroup a row
    (norm_matvec)."""

    attention_workgroups: int = ATTENTION_WORKGROUPS
    head4: bool = False


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
