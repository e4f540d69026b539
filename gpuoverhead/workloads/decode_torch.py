"""The decode step's PyTorch forms (decode.py's workload): the same step and token loop as
the WebGPU engines, eagerly, captured as one CUDA graph (CUDA only), and through
torch.compile (where `torch_compile_max_n` > 0); their logits and tokens checked against
numpy's step and greedy loop (decode_model.py).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from gpuoverhead.cases import TOKEN_LOOPS, Case, Group
from gpuoverhead.torch_forms import COMPILE, EAGER, GRAPH
from gpuoverhead.workloads.decode_model import (
    EPS,
    MODELS,
    TOKEN,
    TOLERANCE,
    Greedy,
    Weights,
    reference,
    rope_table,
)
from gpuoverhead.workloads.torch_ops import compiled_step, graph_of
from gpuoverhead.workloads.work import Work, reads_every


def torch_units(group: Group, rng: np.random.Generator, dev: Any, torch: Any) -> tuple[dict, dict]:
    w = Weights.of(MODELS[group.elements], group.cases[0].k)
    expected, s = reference(w), w.shape
    t, d, cache = (lambda a: torch.from_numpy(a).to(dev)), s.head_dim, w.cache
    half, q_size, kv_size, per_kv = d // 2, s.q_size, s.kv_size, s.heads // s.kv_heads
    layers = [{k: t(v) for k, v in layer.items() if not k.endswith("cache")}
              for layer in w.layers]
    # Tensors of their own (not views): torch.compile's static addresses are per tensor.
    caches = [(t(layer["kcache"].reshape(cache + 1, s.kv_heads, d)),
               t(layer["vcache"].reshape(cache + 1, s.kv_heads, d)))
              for layer in w.layers]
    final_norm, head = t(w.final_norm), t(w.head)
    emb = head[TOKEN]  # tied: the embedding is a row of the head
    cos, sin = t(rope_table(d, cache)).split(half)

    def norm(x: Any, weight: Any) -> Any:
        return x * torch.rsqrt(x.pow(2).mean() + EPS) * weight

    def rope(v: Any) -> Any:
        a, b = v[:, :half], v[:, half:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=1)

    def step(logits: Any, token: Any = None) -> None:
        """One step; with a `token` tensor, the token loop's: its input that token's row
        of the head, its end the argmax of the logits written back there."""
        x = emb.clone() if token is None else head.index_select(0, token)[0]
        for layer, (keys, values) in zip(layers, caches, strict=True):
            qkv = layer["wqkv"] @ norm(x, layer["norm1"]) + layer["bqkv"]
            q = rope(qkv[:q_size].view(s.heads, d))
            keys[cache] = rope(qkv[q_size:q_size + kv_size].view(s.kv_heads, d))
            values[cache] = qkv[q_size + kv_size:].view(s.kv_heads, d)
            scores = torch.einsum("gqd,tgd->gqt", q.view(s.kv_heads, per_kv, d),
                                  keys) / d ** 0.5
            out = torch.einsum("gqt,tgd->gqd", torch.softmax(scores, dim=-1), values)
            x = x + layer["wo"] @ out.reshape(-1)
            gate, up = (layer["wgu"] @ norm(x, layer["norm2"])).split(s.mlp)
            x = x + layer["wdown"] @ (torch.nn.functional.silu(gate) * up)
        logits.copy_(head @ norm(x, final_norm))
        if token is not None:
            token.copy_(torch.argmax(logits))

    units, outputs = {}, {}
    greedy = Greedy(w, expected)
    for case in group.cases:  # each its own logits: the forms are compared with each other
        logits = torch.zeros(s.vocab, device=dev)
        token = torch.full((1,), TOKEN, dtype=torch.int64, device=dev) \
            if case.sync in TOKEN_LOOPS else None
        mine = functools.partial(step, logits, token)
        fixed = [logits, final_norm, head, cos, sin,
                 *(t for layer in layers for t in layer.values()),
                 *(t for pair in caches for t in pair), *([] if token is None else [token])]
        units[case] = {EAGER: lambda mine=mine: mine,
                       GRAPH: lambda mine=mine: graph_of(mine, torch),
                       COMPILE: lambda mine=mine, fixed=fixed: compiled_step(mine, fixed,
                                                                             torch)
                       }[case.implementation]
        outputs[case] = _torch_output(case, logits, token, expected, greedy)
    return units, outputs


def _torch_output(case: Case, logits: Any, token: Any, expected: np.ndarray, greedy: Greedy
                  ) -> Work:
    """A PyTorch form's output: its logits against numpy's, or (the token loop) its token
    against numpy's greedy tokens, read back with `.item()`."""
    if token is None:
        return Work([], lambda: logits.cpu().numpy(), lambda: None, lambda n: expected,
                    exact=False, tolerance=TOLERANCE)
    return Work([], lambda: token.cpu().numpy().astype(np.uint32),
                lambda: token.fill_(TOKEN), greedy.output,
                exact=True, readback=(token.item, reads_every(case.sync)))


def torch_fused(case: Case, kind: str, group: Group) -> tuple[str, ...]:
    """The fused step: one CUDA graph (CUDA only), and torch.compile where the suite allows."""
    return ((GRAPH,) if kind == "cuda" else ()) + \
        ((COMPILE,) if group.torch_compile_max_n > 0 else ())
