"""The fused decode step's kernel choices (shaders/fusion_decode.wgsl): which kernel takes
each part of a layer and the LM head, and in what shape. The suite's step uses DEFAULT;
benchmarks/decode_kernels.py times the others on a GPU and picks, per part, the fastest.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpuoverhead.workloads.decode_model import ATTENTION_WORKGROUPS, DECODE_WG, Shape

#: Threads a row (a lane group) and per workgroup of the kernels that take four rows a lane
#: group and make their normed vector once per workgroup (norm_matvec4, gate_up4,
#: mlp_atomic); qkv_rope4 takes 64 and 64, a lane group a workgroup: Q/K/V's 1,152 rows
#: (0.5B) would fill 36 workgroups of 256, 288 of 64 for the H200's 132 SMs.
SHARED_LANES, SHARED_WG = 32, 256
QKV4_LANES = QKV4_WG = 64
#: attn_wo's output rows a workgroup (its override RC): 196 workgroups at 0.5B (14 heads x
#: 14 row blocks), 288 at 1.5B, each working out its head's attention (128 positions: 66 KB
#: of the caches at 0.5B, from L2) for RC rows of 64 (0.5B) or 128 (1.5B) columns.
WO_ROWS = 64
#: A stream kernel's weight loads a lane issues together at most (the shader's MAX_BATCH).
MAX_BATCH = 32


@dataclass(frozen=True)
class Stream:
    """A streamed kernel's shape (shaders/fusion_decode.wgsl's `_s` kernels): `lanes` threads
    a lane group, `rows` rows (pairs: Q/K/V's rope halves, gate and up) a lane group, `wg`
    threads a workgroup, at most `loads` weight loads a lane in flight together (a batch), and
    for a norm kernel the normed vector made once per workgroup in workgroup memory (`shared`)
    rather than by each lane for its columns."""

    lanes: int = 32
    rows: int = 1
    wg: int = 256
    loads: int = 16
    shared: bool = False

    def constants(self, cols: int, groups: int = 1) -> dict[str, int]:
        """The pipeline's constants for rows of `cols` columns, `groups` groups of rows."""
        k = self.rows * groups
        assert k <= 4 and self.loads >= k and self.wg % self.lanes == 0, (self, groups)
        ni = -(-cols // 4 // self.lanes)
        return {"LANES": self.lanes, "WG": self.wg, "R": self.rows, "G": groups, "COLS": cols,
                "NI": ni, "BATCH": min(ni, self.loads // k, MAX_BATCH)}


@dataclass(frozen=True)
class Kernels:
    """The fused step's kernel choices (benchmarks/decode_kernels.py times each variant):
    the attention's workgroups (attention_block; 0: blocks of 256), attn_out's weights
    loaded before its combine (`ahead`), the LM head four rows a lane group with its normed
    vector made once per workgroup (`head4`: norm_matvec4) rather than a workgroup a row,
    Q/K/V and gate/up the same way (`layer4`: qkv_rope4, gate_up4), and the MLP in one
    dispatch adding into the residual stream with float atomics (`atomic_mlp`: mlp_atomic,
    where the device has shader-float32-atomic; the Context's kernel must be
    suite.shaders.atomic_kernel's), and the attention with the output projection in one
    dispatch adding into the stream with float atomics (`attn_wo`, the same feature): 4
    dispatches a layer, 3 with `atomic_mlp`. A Stream for `qkv`, `attn_out`, `gate_up`,
    `down` or `head` puts that kernel's streamed form (`qkv_s`, ...) in its place."""

    attention_workgroups: int = ATTENTION_WORKGROUPS
    ahead: int = 1
    head4: bool = False
    layer4: bool = False
    atomic_mlp: bool = False
    attn_wo: bool = False
    qkv: Stream | None = None
    attn_out: Stream | None = None
    gate_up: Stream | None = None
    down: Stream | None = None
    head: Stream | None = None

    def check(self, shape: Shape) -> None:
        """Asserts that these kernels take the model's sizes."""
        d4 = shape.head_dim // 4
        assert not self.attn_wo or (shape.hidden % WO_ROWS == 0 and
                                    WO_ROWS * d4 // DECODE_WG in (4, 8)), shape
        assert shape.mlp % (2 * SHARED_WG // SHARED_LANES) == 0, shape
        assert not (self.attn_out and (self.attn_wo or self.atomic_mlp)), self
        for stream, length in ((self.qkv, shape.head_dim // 2), (self.gate_up, shape.mlp),
                               (self.attn_out, shape.hidden), (self.down, shape.hidden)):
            assert stream is None or length % stream.rows == 0, (stream, shape)




#: The suite's fused step (run.json's `kernels`, KERNELS_NOTE): the LM head four rows a lane
#: group (head4), the fastest on the H200 in both implementations and models (issue 57's
#: first GPU call: 0.5B 1.068 ms a token against main's 1.141 in wgpu-native, 1.059 against
#: 1.140 in Dawn; 1.5B 2.520 against 2.625, 2.332 against 2.429).
DEFAULT_NAME, DEFAULT = "head4", Kernels(head4=True)
#: What a decode worker writes into run.json: the fused step's kernels, named.
KERNELS_NOTE = {"variant": DEFAULT_NAME, **asdict(DEFAULT)}
