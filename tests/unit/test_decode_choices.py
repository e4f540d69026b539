"""The suite's fused decode kernels per model (workloads/decode_choices.default)."""

from __future__ import annotations

from gpuoverhead.workloads.decode_choices import KERNELS_NOTE, MATVEC_PARTS, MATVECS, default
from gpuoverhead.workloads.decode_model import DECODE_WG, MODELS, attention_block


def test_each_model_s_default_is_its_measured_choice():
    """The LM head four rows a lane group everywhere, and the attention at a cache of 128 in
    9 blocks of 16 positions a head at 0.5B, 5 of 32 at 1.5B: the H200's fastest
    (results/h200/decode-kernels/round2); run.json's note names both."""
    blocks = {shape.name: -(-129 // attention_block(shape, 128,
                                                    default(shape).attention_workgroups))
              for shape in MODELS.values()}
    assert blocks["qwen2.5-0.5b"] == 9 and blocks["qwen2.5-1.5b"] == 5
    assert all(default(shape).head4 for shape in MODELS.values())
    assert all(getattr(default(shape), part) == "main" for shape in MODELS.values()
               for part in MATVEC_PARTS)  # not yet measured (decode_kernels.py)
    assert KERNELS_NOTE["attention_workgroups"] == default(MODELS[896]).attention_workgroups
    assert KERNELS_NOTE["by_model"]["qwen2.5-1.5b"]["attention_workgroups"] == \
        default(MODELS[1536]).attention_workgroups


def test_each_matvec_alternative_s_lanes_a_row_at_the_models_shapes():
    """Lanes a row of gate/up and Q/K/V (the hidden size's columns) and of down (the MLP
    size's), 0.5B then 1.5B: main's 4 loads a lane at most, sg the same, sg-l8 and sg-l16
    fewer lanes and more loads, all capped at the decode workgroup."""
    lanes = {name: [m.lanes(cols, DECODE_WG) for cols in (896, 1536, 4864, 8960)]
             for name, m in MATVECS.items()}
    assert lanes == {"main": [64, 128, 256, 256], "sg": [64, 128, 256, 256],
                     "sg-l8": [32, 64, 256, 256], "sg-l16": [16, 32, 128, 256]}
    assert MATVECS["main"].lanes(128, DECODE_WG) == 32 and MATVECS["sg-l16"].lanes(128, 256) == 4
