"""The suite's fused decode kernels per model (workloads/decode_choices.default)."""

from __future__ import annotations

from gpuoverhead.resources import SHADERS_DIR
from gpuoverhead.workloads.decode_choices import (
    ALL_MATVECS,
    MATVEC_PARTS,
    MATVECS,
    WITHOUT_SUBGROUPS,
    default,
    head_split,
    kernels_note,
)
from gpuoverhead.workloads.decode_model import (
    DECODE_WG,
    HEAD_POSITIONS,
    ML_LINE,
    MODELS,
    attention_block,
    ml_stride,
)


def test_each_model_s_default_is_its_measured_choice():
    """The LM head four rows a lane group everywhere, and the attention at a cache of 128 in
    9 blocks of 16 positions a head at 0.5B, 5 of 32 at 1.5B (results/h200/decode-kernels/
    round2); the matrix-vector parts each model's `best` of round3, summed by subgroup
    shuffles (1.5B: wgpu-native's, within 0.8% of Dawn's own in its phase-1 swaps)."""
    blocks = {shape.name: -(-129 // attention_block(shape, 128,
                                                    default(shape).attention_workgroups))
              for shape in MODELS.values()}
    assert blocks["qwen2.5-0.5b"] == 9 and blocks["qwen2.5-1.5b"] == 5
    assert all(default(shape).head4 for shape in MODELS.values())
    parts = {shape.name: tuple(getattr(default(shape), part) for part in MATVEC_PARTS)
             for shape in MODELS.values()}
    assert parts["qwen2.5-0.5b"] == ("sg", "sg-l16", "sg-l16")
    assert parts["qwen2.5-1.5b"] == ("sg-l8", "sg-l8", "sg-l16")


def test_1_5b_s_attention_is_round_5_s_ticket_with_its_projection_by_sg_l16():
    """At 1.5B the attention's blocks combined once a head (`ticket`, the fastest attention
    in both implementations in round 5), then o_proj with sg-l16's lanes; loads early and
    ahead off (wgpu-native's best loaded early, Dawn's did not); 0.5B keeps `split`, where
    the ticket lost."""
    big, small = default(MODELS[1536]), default(MODELS[896])
    assert (big.attention, big.out, big.early, big.ahead, big.grid) == \
        ("ticket", "sg-l16", False, "", 0)
    assert (small.attention, small.early, small.ahead, small.grid) == ("split", False, "", 0)
    assert kernels_note(True)["by_model"]["qwen2.5-1.5b"]["attention"] == "ticket"
    assert kernels_note(False)["by_model"]["qwen2.5-1.5b"]["out"] == "l16"


def test_run_json_s_note_names_the_kernels_that_ran():
    """With subgroups the note names the suite's choices; without, each part's
    workgroup-memory twin (the same lanes), never a subgroup alternative, and says so."""
    for subgroups in (True, False):
        note = kernels_note(subgroups)
        assert note["subgroups"] is subgroups
        assert note["variant"] == ("subgroups" if subgroups else "workgroup-memory")
        chosen = [note, *note["by_model"].values()]
        assert note["attention_workgroups"] == default(MODELS[896]).attention_workgroups
        assert note["by_model"]["qwen2.5-1.5b"]["attention_workgroups"] == \
            default(MODELS[1536]).attention_workgroups
        ran = [ALL_MATVECS[k[part]] for k in chosen for part in MATVEC_PARTS]
        assert all(m.subgroups is subgroups for m in ran), chosen
    assert (kernels_note(False)["gate_up"], kernels_note(False)["by_model"]["qwen2.5-1.5b"]
            ["qkv"]) == ("l16", "l8")


def test_each_matvec_alternative_s_lanes_a_row_at_the_models_shapes():
    """Lanes a row of gate/up and Q/K/V (the hidden size's columns) and of down (the MLP
    size's), 0.5B then 1.5B: main's 4 loads a lane at most, sg the same, sg-l8 and sg-l16
    fewer lanes and more loads, all capped at the decode workgroup."""
    lanes = {name: [m.lanes(cols, DECODE_WG) for cols in (896, 1536, 4864, 8960)]
             for name, m in MATVECS.items()}
    assert lanes == {"main": [64, 128, 256, 256], "sg": [64, 128, 256, 256],
                     "sg-l8": [32, 64, 256, 256], "sg-l16": [16, 32, 128, 256]}
    assert MATVECS["main"].lanes(128, DECODE_WG) == 32 and MATVECS["sg-l16"].lanes(128, 256) == 4


def test_each_subgroup_alternative_s_twin_takes_its_lanes_through_workgroup_memory():
    """What runs without subgroups keeps the alternative's lanes at every shape."""
    for sg, plain in WITHOUT_SUBGROUPS.items():
        twin, alternative = ALL_MATVECS[plain], MATVECS[sg]
        assert alternative.subgroups and not twin.subgroups
        assert all(twin.lanes(cols, DECODE_WG) == alternative.lanes(cols, DECODE_WG)
                   for cols in (128, 256, 896, 1536, 4864, 8960))


def test_the_head_attention_s_threads_a_score_keep_its_passes_fewest():
    """Threads a position's score: as many as one pass still holds (17 positions: 8 of a
    head of 64's 16 vec4), one a position where a pass takes 256 (129, 301 over two
    passes), at most head_dim / 4."""
    assert [head_split(t, d) for t, d in ((17, 64), (129, 64), (301, 128), (65, 128),
                                          (2, 64), (1024, 128))] == [8, 1, 1, 2, 16, 1]


def test_the_head_attention_holds_as_many_positions_as_its_shader():
    """HEAD_POSITIONS is the shader's MAX_T: a longer cache would overrun its scores."""
    source = (SHADERS_DIR / "fusion_decode.wgsl").read_text()
    assert f"const MAX_T: u32 = {HEAD_POSITIONS}u;" in source


def test_each_head_s_largest_scores_and_sums_start_a_line_of_their_own():
    """ml_stride (the shader's MLS): room for a head's 2 f32 a block, rounded up to whole
    256-byte lines, so the ticket's combine of one head never caches another's line."""
    assert [ml_stride(nb) for nb in (1, 5, 9, 32, 33)] == [64, 64, 64, 64, 128]
    assert all(ml_stride(nb) >= 2 * nb and ml_stride(nb) % ML_LINE == 0 and 4 * ML_LINE == 256
               for nb in range(1, 513))
