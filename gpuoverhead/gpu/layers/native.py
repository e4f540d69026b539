"""Layer `native`: compile layers/native_loop.c at run time and drive it from Python.

The loop is compiled with the system C compiler against the webgpu.h that ships in the wgpu
wheel, cached per source, header and compiler, and handed the function pointers of the
wgpu-native library that the binding already loaded, so it calls exactly what `raw` calls.
Where no compiler is found the layer is skipped, and `load` says why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuoverhead.gpu import implementations
from gpuoverhead.gpu.kernels import Target

SOURCE = Path(__file__).with_name("native_loop.c")
#: wgpu-native functions in the order of the C `Procs` struct.
PROCS = ("wgpuDeviceCreateCommandEncoder", "wgpuCommandEncoderBeginComputePass",
         "wgpuComputePassEncoderSetPipeline", "wgpuComputePassEncoderSetBindGroup",
         "wgpuComputePassEncoderDispatchWorkgroups", "wgpuComputePassEncoderEnd",
         "wgpuComputePassEncoderRelease", "wgpuCommandEncoderFinish",
         "wgpuCommandEncoderRelease", "wgpuQueueSubmit", "wgpuCommandBufferRelease")
ENCODINGS = {"submit": 0, "pass": 1, "dispatch": 2}
_CDEF = f"""
typedef struct {{ void *f[{len(PROCS)}]; }} Procs;
int gpuoverhead_issue(const Procs *p, void *device, void *queue, void *pipeline, void *group,
                      uint32_t x, uint32_t y, int encoding, uint32_t n);
"""


@dataclass
class NativeLoop:
    """The loaded loop library and where it came from."""

    ffi: Any
    lib: Any
    path: Path
    compiler: str


def find_compiler() -> str | None:
    """$CC, else the first of cc, gcc, clang on PATH (MSVC is not supported yet)."""
    candidates = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    return next((shutil.which(c) for c in candidates if shutil.which(c)), None)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpuoverhead"


def _compiler_version(cc: str) -> str:
    proc = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    return proc.stdout.splitlines()[0] if proc.stdout else cc


def load() -> NativeLoop | str:
    """The compiled loop, or the reason it cannot be had (a note, not an error)."""
    import wgpu

    if sys.platform == "win32":
        return "native layer not supported on Windows yet (needs an MSVC build step)"
    cc = find_compiler()
    if cc is None:
        return "native layer skipped: no C compiler (cc, gcc or clang) on PATH"
    headers = Path(wgpu.__file__).parent / "resources"
    header = headers / "webgpu.h"
    if not header.is_file():
        return f"native layer skipped: {header} is missing from the wgpu package"
    version = _compiler_version(cc)
    key = hashlib.sha256(SOURCE.read_bytes() + header.read_bytes() + version.encode()).hexdigest()
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    path = _cache_dir() / f"native_loop-{key[:16]}{suffix}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        cmd = [cc, "-O2", "-shared", "-fPIC", "-I", str(headers), "-o", str(tmp), str(SOURCE)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["no output"])[0]
            return f"native layer skipped: {Path(cc).name} failed: {first}"
        os.replace(tmp, path)
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(_CDEF)
    return NativeLoop(ffi, ffi.dlopen(str(path)), path, version)


def issuers(loop: NativeLoop, t: Target) -> dict[str, Callable[[int], None]]:
    """`issue(n)` per encoding: one call into C that issues all n operations, through the
    functions of the library that `t`'s implementation loaded."""
    wffi, wlib = implementations.get(t.implementation).ffi_lib()

    def pointer(cdata: Any) -> Any:
        return loop.ffi.cast("void *", int(wffi.cast("uintptr_t", cdata)))

    procs = loop.ffi.new("Procs *")
    for i, name in enumerate(PROCS):
        procs.f[i] = pointer(wffi.addressof(wlib, name))
    args = (procs, pointer(t.device._internal), pointer(t.queue._internal),
            pointer(t.pipeline._internal), pointer(t.bind_group._internal), *t.grid)
    issue = loop.lib.gpuoverhead_issue

    def make(code: int) -> Callable[[int], None]:
        def run(n: int) -> None:
            issue(*args, code, n)
        return run

    return {name: make(code) for name, code in ENCODINGS.items()}
