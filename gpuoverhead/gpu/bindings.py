"""WebGPU Python bindings behind one record: how to import one, reach its FFI, ask for a
device, read its timestamp period and versions.

What differs between bindings (wgpu-native's `wgpu`, Dawn's `wgpudawn`: the same Python
API) is data on the record, never a test of its name; the records themselves are declared
by the WebGPU driver (drivers/webgpu.py).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

from gpuoverhead.gpu.kept_header import kept_header

#: wgpu-native's instance backend flag per backend name of gpu/adapters.py.
INSTANCE_BACKENDS = {"vulkan": "Vulkan", "metal": "Metal", "d3d12": "DX12", "opengl": "GL"}


@dataclass(frozen=True)
class Binding:
    #: The implementation's name in results (`implementation` column).
    name: str
    package: str
    backend_module: str
    #: Module holding the cffi `ffi` and unchecked `lib` of the native library.
    ffi_module: str
    #: Module whose `set_instance_extras` limits enumeration to one backend (None: none).
    instance_extras: str | None = None
    #: A device toggle that unmasks the timestamps' low bits, and the module whose
    #: `request_device_sync` takes toggles (None: timestamps are not quantized).
    quantization_toggle: str | None = None
    toggles_module: str | None = None
    #: Whether the queue reports a timestamp period (else ticks are ns, as WebGPU says).
    queue_period: bool = False
    #: Backends on which every device of an adapter uses the adapter's one context, behind a
    #: lock that each enumerated adapter object holds for itself (wgpu-hal's GLES: one EGL
    #: context an instance): a process's devices there must come from one adapter object,
    #: or two threads make the context current at once (EGL's BadAccess, an abort).
    shared_context: tuple[str, ...] = ()

    def module(self) -> Any:
        return _imported(self.package)

    def backend(self) -> Any:
        return _imported(self.backend_module)

    def ffi_lib(self) -> tuple[Any, Any]:
        """The cffi `ffi` and the unchecked `lib` of the native library the binding loaded."""
        found = _imported(self.ffi_module)
        return found.ffi, found.lib

    def request_device(self, adapter: Any, features: list[str], limits: dict[str, int]
                       ) -> tuple[Any, dict[str, Any]]:
        """A device, and notes for run.json (whether timestamps are unquantized). A driver
        that has no memory left for it says so in a RuntimeError; it is a MemoryError here,
        which every caller already ends in one line (or an error row in a worker)."""
        try:
            return self._request_device(adapter, features, limits)
        except RuntimeError as exc:
            if "not enough memory" in str(exc).lower():
                raise MemoryError(f"the driver has no memory left for a device: "
                                  f"{' '.join(str(exc).split())}") from None
            raise

    def _request_device(self, adapter: Any, features: list[str], limits: dict[str, int]
                        ) -> tuple[Any, dict[str, Any]]:
        if self.quantization_toggle is None or self.toggles_module is None:
            return adapter.request_device_sync(required_features=features,
                                               required_limits=limits), {}
        extras = _imported(self.toggles_module)
        try:
            device = extras.request_device_sync(
                adapter, required_features=features, required_limits=limits,
                disable_toggles=[self.quantization_toggle])
            return device, {"timestamp_quantization_disabled": True}
        except ValueError as exc:
            note = f"could not disable {self.quantization_toggle}: {exc}"
            device = adapter.request_device_sync(required_features=features,
                                                 required_limits=limits)
            return device, {"timestamp_quantization_disabled": False, "note": note}

    def only(self, backend: str) -> None:
        """Enumerate `backend`'s adapters alone from now on in this process: a worker needs
        one, and starting every backend costs it 0.3 s on lavapipe (to be called before the
        first enumeration; bindings without instance extras enumerate all)."""
        if self.instance_extras is not None and backend in INSTANCE_BACKENDS:
            extras = _imported(self.instance_extras)
            extras.set_instance_extras(backends=[INSTANCE_BACKENDS[backend]])

    def tick_ns(self, queue: Any) -> float:
        """Nanoseconds per timestamp tick."""
        if self.queue_period:
            _, lib = self.ffi_lib()
            return float(lib.wgpuQueueGetTimestampPeriod(queue._internal))
        return 1.0

    def versions(self) -> dict[str, Any]:
        backend = self.backend()
        return {"package": self.package,
                "package_version": getattr(self.module(), "__version__", None),
                "native_version": str(getattr(backend, "__version__", "")),
                "library": str(getattr(backend, "lib_path", ""))}

    def missing(self) -> str | None:
        """None where the binding imports here, else why not."""
        try:
            self.backend()
        except ModuleNotFoundError:
            return f"{self.name}: the package {self.package} is not installed " \
                   f"(pip install {self.package})"
        except Exception as exc:  # a native library that fails to load
            return f"{self.name}: {self.package} is not usable: {exc}"
        return None


def _imported(name: str) -> Any:
    """A binding's module; imported with its C header's parse kept (gpu/kept_header.py)."""
    if name in sys.modules:
        return sys.modules[name]
    with kept_header():
        return importlib.import_module(name)
