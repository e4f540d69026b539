"""Layers: what drives the native calls of an operation.

- `wrapper`: the implementation's public Python API (what a Python user pays);
- `raw`: the same native calls straight through the FFI, arguments prepared once;
- `native`: a C loop making the same calls with no Python in between.
The difference between layers, per dispatch, separates Python cost from API cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpuoverhead.gpu.layers import raw, wrapper
from gpuoverhead.gpu.targets import Target

if TYPE_CHECKING:
    from gpuoverhead.gpu.layers.native import NativeLoop

Issue = Callable[[int], None]


def issuer(target: Target, layer: str, encoding: str, native: NativeLoop | None,
           fresh: bool = False) -> Issue:
    """`issue(n)`: n operations in `encoding` driven by `layer`, without waiting; `fresh`:
    each creates its bind group (the wrapper layer's loops only: the suite offers no other)."""
    if layer == "wrapper":
        issue = (wrapper.FRESH_ISSUERS if fresh else wrapper.ISSUERS)[encoding]
        return lambda n: issue(target, n)
    if fresh:
        raise ValueError(f"layer {layer!r} has no per-dispatch bind group")
    if layer == "raw":
        return raw.build(target)[0][encoding]
    if layer == "native" and native is not None:
        from gpuoverhead.gpu.layers import native as native_layer

        return native_layer.issuers(native, target)[encoding]
    raise ValueError(f"layer {layer!r} is not available")
