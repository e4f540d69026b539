"""Find the adapters a WebGPU implementation offers, describe them, and pick one.

The description uses the words of the result schema: `backend` (vulkan, metal, d3d12,
opengl), `adapter_type` as the implementation reports it (DiscreteGPU, IntegratedGPU, CPU,
...), and `vendor` normalized from the PCI vendor id.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuoverhead.errors import UserError
from gpuoverhead.gpu.bindings import Binding
from gpuoverhead.gpu.output import captured
from gpuoverhead.records import AdapterInfo, LeftOut

BACKENDS = ("vulkan", "metal", "d3d12", "opengl")
#: The device limits that bound one storage buffer: raised (to the need, or to the
#: adapter's own) where a workload's buffers are larger than the defaults.
BUFFER_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size")
#: The backends each platform can have (sys.platform prefix): Metal only on macOS, D3D12
#: only on Windows; Vulkan on macOS only through MoltenVK.
PLATFORM_BACKENDS = {"linux": ("vulkan", "opengl"), "win32": ("d3d12", "vulkan", "opengl"),
                     "darwin": ("metal", "vulkan")}

#: PCI vendor ids (and Khronos ids for vendors without one) to normalized vendor names.
VENDORS = {
    0x10DE: "nvidia",
    0x1002: "amd",
    0x1022: "amd",
    0x8086: "intel",
    0x106B: "apple",
    0x10005: "mesa",
    0x1414: "microsoft",
    0x13B5: "arm",
    0x5143: "qualcomm",
    0x14E4: "broadcom",
    0x1010: "imagination",
    0x19E5: "huawei",
}

_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "Unknown": 3, "CPU": 4}
_BACKEND_RANK = {"vulkan": 0, "metal": 0, "d3d12": 0, "opengl": 1}
NO_ADAPTER = (
    "no WebGPU adapter found; for a software one on Linux install Mesa's lavapipe "
    "(apt-get install mesa-vulkan-drivers)"
)


@dataclass
class FoundAdapter:
    """An adapter object with its description; it can create one device."""

    info: AdapterInfo
    adapter: Any

    def details(self) -> dict[str, Any]:
        """Everything the implementation reports, for run.json."""
        return {
            "info": dict(self.adapter.info),
            "features": sorted(self.adapter.features),
            "limits": dict(self.adapter.limits),
        }


def normalize_backend(name: str) -> str:
    """Lower-case schema name for an implementation's backend name ('OpenGLES' -> 'opengl')."""
    low = name.lower()
    return "opengl" if low.startswith("opengl") or low == "gl" else low


def vendor_name(vendor_id: int, reported: str = "") -> str:
    """Normalized vendor from the PCI id; falls back to the reported name or the hex id."""
    if vendor_id in VENDORS:
        return VENDORS[vendor_id]
    return reported.strip().lower() or f"0x{vendor_id:04x}"


#: Software rasterizers that some drivers report as GPUs: Microsoft's WARP (vendor 0x1414,
#: device 0x8C, listed once as IntegratedGpu and once as Cpu on D3D12), Mesa's llvmpipe,
#: Google's SwiftShader.
_SOFTWARE_NAMES = ("microsoft basic render driver", "llvmpipe", "swiftshader")
_WARP = (0x1414, 0x8C)


def describe(adapter: Any, implementation: str) -> AdapterInfo:
    return describe_info(dict(adapter.info), "timestamp-query" in adapter.features,
                         implementation)


def describe_info(info: dict[str, Any], timestamps: bool, implementation: str) -> AdapterInfo:
    """An adapter's description from the info dict an implementation reports: software
    rasterizers are CPU adapters whatever type they claim, and Metal's vendor id 0 (with an
    empty vendor name) is Apple."""
    vendor_id = int(info.get("vendor_id", 0) or 0)
    device = str(info.get("device", "")) or "unknown device"
    backend = normalize_backend(str(info.get("backend_type", "unknown")))
    adapter_type = str(info.get("adapter_type", "Unknown"))
    if (vendor_id, int(info.get("device_id", 0) or 0)) == _WARP or any(
            name in device.lower() for name in _SOFTWARE_NAMES):
        adapter_type = "CPU"
    apple = backend == "metal" and vendor_id == 0 or device.lower().startswith("apple")
    return AdapterInfo(
        implementation=implementation,
        backend=backend,
        adapter_type=adapter_type,
        vendor="apple" if apple else vendor_name(vendor_id, str(info.get("vendor", ""))),
        vendor_id=0x106B if apple and vendor_id == 0 else vendor_id,
        device=device,
        driver=str(info.get("description", "")),
        timestamps=timestamps,
    )


def discover(bindings: Sequence[Binding], named: bool = False
             ) -> tuple[list[FoundAdapter], list[str]]:
    """Every adapter these bindings offer, best first, and notes on the bindings that offered
    none (one that is not installed is noted only where it was `named`)."""
    notes: list[str] = []
    found: list[FoundAdapter] = []
    for binding in bindings:
        if (missing := binding.missing()) is not None:
            notes += [LeftOut(binding.name, missing.removeprefix(f"{binding.name}: "),
                              missing)] if named else []
            continue
        try:
            offered, said = _enumerated(binding)
        except Exception as exc:  # a native library that cannot start an instance here
            notes.append(LeftOut(binding.name, f"it could not enumerate adapters ({exc})",
                                 f"{binding.name} could not enumerate adapters: {exc}"))
            continue
        if not offered:
            why = f" (it said: {'; '.join(dict.fromkeys(said))})" if said else ""
            notes.append(LeftOut(binding.name, f"it offers no adapter on this machine{why}",
                                 f"{binding.name} offers no adapter on this machine{why}; Dawn "
                                 "rejects some drivers, Mesa 22's lavapipe among them"))
        found += [FoundAdapter(describe(a, binding.name), a) for a in offered]
    # WARP is listed twice (as an integrated GPU and as a CPU): once described, keep one.
    unique = {f.info: f for f in reversed(found)}
    return sorted(unique.values(), key=lambda f: rank(f.info)), notes


#: How Dawn starts what it prints on rejecting a driver ("Warning: Vulkan ... required.").
_SAID = re.compile(r"^(?:Warning|Error): (.+)$", re.MULTILINE)


def _enumerated(binding: Binding) -> tuple[list[Any], list[str]]:
    """The binding's adapters, and what its library printed on the way, as the reasons it
    gave: Dawn writes why it rejects a driver to file descriptor 2, which had put three
    lines of its own before the tool's first line."""
    with tempfile.TemporaryFile() as sink:
        with captured(sink):
            offered = binding.module().gpu.enumerate_adapters_sync()
        sink.seek(0)
        text = sink.read().decode(errors="replace")
    return offered, [m.strip() for m in _SAID.findall(text)]


def rank(info: AdapterInfo) -> tuple[int, int]:
    """Sort key: discrete before integrated before software; native APIs before OpenGL."""
    return (_TYPE_RANK.get(info.adapter_type, 3), _BACKEND_RANK.get(info.backend, 1))


def check_backend(backend: str | None) -> None:
    """A UserError for a backend that no adapter can have here."""
    if backend is None:
        return
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    here = next((v for k, v in PLATFORM_BACKENDS.items() if sys.platform.startswith(k)), None)
    if here is not None and backend not in here:
        raise UserError(f"backend {backend} does not exist on {sys.platform}; this platform "
                        f"can have {', '.join(here)}")


def select(found: list[FoundAdapter], backend: str | None, substring: str | None
           ) -> list[FoundAdapter]:
    """Per implementation, the best adapter matching `backend` and a case-insensitive
    `substring` of its name; at least one, or a UserError listing what is there."""
    check_backend(backend)
    if not found:
        raise UserError(NO_ADAPTER)
    matches = [
        f for f in found
        if (backend is None or f.info.backend == backend)
        and (substring is None or substring.lower() in f.info.device.lower())
    ]
    if not matches:
        wanted = " and ".join(
            x for x in (backend and f"backend {backend}",
                        substring and f"name ~ {substring!r}") if x
        )
        present = "; ".join(f.info.label for f in found)
        raise UserError(f"no adapter with {wanted}; present: {present}")
    best: dict[str, FoundAdapter] = {}
    for f in matches:
        best.setdefault(f.info.implementation, f)
    return list(best.values())
