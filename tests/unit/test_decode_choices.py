"""The suite's fused decode kernels per model (workloads/decode_choices.default)."""

from __future__ import annotations

from gpuoverhead.workloads.decode_choices import KERNELS_NOTE, default
from gpuoverhead.workloads.decode_model import MODELS, attention_block


def test_each_model_s_default_is_its_measured_choice():
    """The LM head four rows a lane group everywhere, and the attention at a cache of 128 in
    9 blocks of 16 positions a head at 0.5B, 5 of 32 at 1.5B: the H200's fastest
    (results/h200/decode-kernels/round2); run.json's note names both."""
    blocks = {shape.name: -(-129 // attention_block(shape, 128,
                                                    default(shape).attention_workgroups))
              for shape in MODELS.values()}
    assert blocks["qwen2.5-0.5b"] == 9 and blocks["qwen2.5-1.5b"] == 5
    assert all(default(shape).head4 for shape in MODELS.values())
    assert KERNELS_NOTE["attention_workgroups"] == default(MODELS[896]).attention_workgroups
    assert KERNELS_NOTE["by_model"]["qwen2.5-1.5b"]["attention_workgroups"] == \
        default(MODELS[1536]).attention_workgroups
