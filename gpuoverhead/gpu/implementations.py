"""WebGPU implementations behind one interface: wgpu-native (package `wgpu`) and Dawn
(package `wgpudawn`, the same Python API). Everything that differs between them lives here:
how to import them, their FFI, how to ask for a device, their timestamp period, versions.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

#: Dawn masks the low bits of timestamps unless this device toggle is disabled.
DAWN_QUANTIZATION_TOGGLE = "timestamp_quantization"


@dataclass(frozen=True)
class Implementation:
    name: str
    package: str
    backend_module: str

    def module(self) -> Any:
        return importlib.import_module(self.package)

    def backend(self) -> Any:
        return importlib.import_module(self.backend_module)

    def ffi_lib(self) -> tuple[Any, Any]:
        """The cffi `ffi` and the unchecked `lib` of the native library the binding loaded."""
        if self.name == "wgpu-native":
            from wgpu.backends.wgpu_native._ffi import ffi, lib

            return ffi, lib
        backend = self.backend()
        return backend.ffi, backend.lib

    def request_device(self, adapter: Any, features: list[str], limits: dict[str, int]
                       ) -> tuple[Any, dict[str, Any]]:
        """A device, and notes for run.json (Dawn: whether timestamps are unquantized)."""
        if self.name == "dawn":
            extras = importlib.import_module(f"{self.backend_module}.extras")
            try:
                device = extras.request_device_sync(
                    adapter, required_features=features, required_limits=limits,
                    disable_toggles=[DAWN_QUANTIZATION_TOGGLE])
                return device, {"timestamp_quantization_disabled": True}
            except ValueError as exc:
                note = f"could not disable {DAWN_QUANTIZATION_TOGGLE}: {exc}"
                device = adapter.request_device_sync(required_features=features,
                                                     required_limits=limits)
                return device, {"timestamp_quantization_disabled": False, "note": note}
        return adapter.request_device_sync(required_features=features,
                                           required_limits=limits), {}

    def only(self, backend: str) -> None:
        """Enumerate `backend`'s adapters alone from now on in this process: a worker needs
        one, and starting every backend costs it 0.3 s on lavapipe (wgpu-native only; to be
        called before the first enumeration)."""
        if self.name == "wgpu-native" and backend in _WGPU_BACKENDS:
            from wgpu.backends.wgpu_native.extras import set_instance_extras

            set_instance_extras(backends=[_WGPU_BACKENDS[backend]])

    def tick_ns(self, queue: Any) -> float:
        """Nanoseconds per timestamp tick (Dawn reports nanoseconds, as WebGPU specifies)."""
        if self.name == "wgpu-native":
            _, lib = self.ffi_lib()
            return float(lib.wgpuQueueGetTimestampPeriod(queue._internal))
        return 1.0

    def versions(self) -> dict[str, Any]:
        backend = self.backend()
        return {"package": self.package,
                "package_version": getattr(self.module(), "__version__", None),
                "native_version": str(getattr(backend, "__version__", "")),
                "library": str(getattr(backend, "lib_path", ""))}


#: wgpu-native's instance backend flag per backend name of gpu/adapters.py.
_WGPU_BACKENDS = {"vulkan": "Vulkan", "metal": "Metal", "d3d12": "DX12", "opengl": "GL"}

IMPLEMENTATIONS = {
    "wgpu-native": Implementation("wgpu-native", "wgpu", "wgpu.backends.wgpu_native"),
    "dawn": Implementation("dawn", "wgpudawn", "wgpudawn.backends.dawn"),
}


def get(name: str) -> Implementation:
    return IMPLEMENTATIONS[name]


def installed(names: list[str] | None = None) -> tuple[list[Implementation], dict[str, str]]:
    """The implementations (of those named, or all) that import here, and why each other
    one does not. Only those named are imported: a worker process loads no native library
    but the one it measures."""
    found, missing = [], {}
    for impl in IMPLEMENTATIONS.values():
        if names is not None and impl.name not in names:
            continue
        try:
            impl.backend()
            found.append(impl)
        except ModuleNotFoundError:
            missing[impl.name] = (f"{impl.name}: the package {impl.package} is not installed "
                                  f"(pip install {impl.package})")
        except Exception as exc:  # a native library that fails to load
            missing[impl.name] = f"{impl.name}: {impl.package} is not usable: {exc}"
    return found, missing


#: `--implementation torch` selects the PyTorch baselines (torch-eager, -cudagraph, -compile).
TORCH = "torch"


#: `--implementation chromium`: WebGPU in a headless Chromium (gpuoverhead/browser).
CHROMIUM = "chromium"


def parse(option: str) -> list[str] | None:
    """`--implementation`: a name, or `all` (None: every installed one, torch and a
    Chromium included where found)."""
    if option == "all":
        return None
    if option not in (*IMPLEMENTATIONS, TORCH, CHROMIUM):
        from gpuoverhead.errors import UserError

        raise UserError(f"unknown implementation {option!r}; choose one of "
                        f"{', '.join(IMPLEMENTATIONS)}, {CHROMIUM}, {TORCH} or all")
    return [option]
