"""Layer `native`: compile layers/native_loop.c at run time and drive it from Python.

The loop is built as a small extension module through cffi's API mode, which compiles with
setuptools' compiler discovery: the C compiler Python was built with or $CC (arguments
included) on Linux and macOS, MSVC found through vswhere on Windows, no developer prompt
needed. It is built against the webgpu.h that ships in the wgpu wheel, cached per source,
header, interpreter and compiler in the OS's cache folder (or, where that cannot be written
or is not private, a private folder under the temporary one; gpu/cache_folder.py), and
handed the function pointers of the library that the binding already loaded, so it calls
exactly what `raw` calls. A kept module is loaded only where it is this user's own and
private and its bytes are those built (a digest beside it), and one that is not, or that
does not load, is built again, said in a line. Where
no compiler is found, or no folder can be written, the layer is skipped, and `load` says
why.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuoverhead import encodings
from gpuoverhead.gpu import private
from gpuoverhead.gpu.cache_folder import cache_dir, note, temporary_cache_dir
from gpuoverhead.gpu.output import captured
from gpuoverhead.gpu.targets import Target
from gpuoverhead.whole_files import atomic

SOURCE = Path(__file__).with_name("native_loop.c")
#: wgpu-native functions in the order of the C `Procs` struct.
PROCS = ("wgpuDeviceCreateCommandEncoder", "wgpuCommandEncoderBeginComputePass",
         "wgpuComputePassEncoderSetPipeline", "wgpuComputePassEncoderSetBindGroup",
         "wgpuComputePassEncoderDispatchWorkgroups", "wgpuComputePassEncoderEnd",
         "wgpuComputePassEncoderRelease", "wgpuCommandEncoderFinish",
         "wgpuCommandEncoderRelease", "wgpuQueueSubmit", "wgpuCommandBufferRelease")
ENCODINGS = {e.name: e.native_code for e in encodings.ENCODINGS}
#: A larger file is not a loop module (37 kB with gcc on Linux): it is not read.
MAX_BYTES = 64 << 20
#: What Python sees of the loop (handles as void *: the C side has their real types).
_CDEF = """
int gpuoverhead_issue(const void *procs, void *device, void *queue, void *pipeline,
                      void *group, uint32_t x, uint32_t y, int encoding, uint32_t n);
"""


@dataclass
class NativeLoop:
    """The loaded loop module and where it came from."""

    ffi: Any
    lib: Any
    path: Path
    compiler: str


def compiler() -> str | None:
    """What builds the loop, described (for the cache key and run.json), or None: MSVC on
    Windows (setuptools finds it); elsewhere $CC (it may carry arguments), else the compiler
    Python was built with, else cc, gcc or clang; None too where it cannot be run."""
    if sys.platform == "win32":
        return "msvc"
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
    words = shlex.split(cc)
    if not words or not shutil.which(words[0]):
        if os.environ.get("CC"):
            return None
        words = next(([c] for c in ("cc", "gcc", "clang") if shutil.which(c)), [])
        if not words:
            return None
    try:
        proc = subprocess.run([*words, "--version"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.SubprocessError):  # $CC a script with no #!, or one that
        return None                                 # hangs: no compiler to build with
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    return f"{shlex.join(words)}: {first}".strip(": ")


def load() -> NativeLoop | str:
    """The compiled loop, or the reason it cannot be had (a note, not an error): from the
    OS's cache folder, else (read-only home, unwritable $XDG_CACHE_HOME) the temporary one."""
    import wgpu

    described = compiler()
    if described is None:
        return "native layer skipped: no C compiler ($CC, cc, gcc or clang) on PATH"
    headers = Path(wgpu.__file__).parent / "resources"
    header = headers / "webgpu.h"
    if not header.is_file():
        return f"native layer skipped: {header} is missing from the wgpu package"
    tag = sysconfig.get_config_var("EXT_SUFFIX") or sys.implementation.cache_tag
    key = hashlib.sha256(SOURCE.read_bytes() + header.read_bytes()
                         + f"{described}|{tag}".encode()).hexdigest()[:16]
    name = f"_gpuoverhead_native_{key}"
    tried = []
    for folder in (cache_dir, temporary_cache_dir):
        try:
            return _load_from(folder() / f"{name}{tag}", name, headers, described)
        except OSError as exc:  # a folder that cannot be made or written: the next one
            tried.append(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc.strerror
                         or exc))
    said = "; ".join(dict.fromkeys(tried))  # without a home folder both are the temporary one
    return f"native layer skipped: no cache folder can be written ({said})"


def _load_from(path: Path, name: str, headers: Path, described: str) -> NativeLoop | str:
    """The loop module at `path`, built there first where none was, or where the one there
    is not this user's own and private or does not load (said); OSError where its folder
    cannot be written."""
    if _kept(path):
        try:
            return _imported(path, name, described)
        except (ImportError, AttributeError) as exc:  # damaged: a traceback on every run
            note(f"{path} does not load ({_first_words(exc)}): the C loop is built again")
    failed = _build(name, headers, path, described)
    if failed:
        return failed
    try:
        return _imported(path, name, described)
    except (ImportError, AttributeError) as exc:
        return f"native layer skipped: the C loop built as {path} does not load: " \
               f"{_first_words(exc)}"


def _kept(path: Path) -> bool:
    """Whether a loop built before is at `path` to be loaded: only where it is this user's
    own and private (gpu/private.py), and its bytes those built (the digest kept beside it:
    a module cut short crashed the loader with SIGBUS); one that is not is said, and built
    again over it. One without a digest (kept by an earlier version) is built again."""
    try:
        private.check_file(path)
        blob = private.read(path, MAX_BYTES)
        kept = private.read(_digest_file(path), 100).decode(errors="replace").strip()
    except FileNotFoundError:
        return False
    except private.NotPrivate as exc:
        note(f"{exc.reason}: the C loop there is not loaded, but built again")
        return False
    if len(blob) > MAX_BYTES:  # its tail unread, so unchecked by the digest
        note(f"{path} is over {MAX_BYTES >> 20} MiB, no C loop: built again")
        return False
    if kept != hashlib.sha256(blob).hexdigest():
        note(f"{path} is not the C loop as it was built (its bytes differ from its digest "
             f"in {_digest_file(path).name}): built again")
        return False
    return True


def _digest_file(path: Path) -> Path:
    return path.with_name(f"{path.name}.sha256")


def _imported(path: Path, name: str, described: str) -> NativeLoop:
    """The loop module at `path`, loaded: ImportError where it is not a module, and
    AttributeError where it is not the loop's."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.lib.gpuoverhead_issue  # noqa: B018  (a loop module, not another)
    return NativeLoop(module.ffi, module.lib, path, described)


def _first_words(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _build(name: str, headers: Path, path: Path, described: str) -> str | None:
    """Compile the loop module into `path` (atomically: workers may look at the same time);
    None, or why it failed."""
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(_CDEF)
    ffi.set_source(name, SOURCE.read_text(), include_dirs=[str(headers)])
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=path.parent))
    log = work / "compiler.log"
    try:
        with open(log, "wb") as sink, captured(sink), _home(work):  # not on the terminal
            built = Path(ffi.compile(tmpdir=str(work), verbose=False))
        built.chmod(0o700)  # only this user's to write, whatever the umask (gpu/private.py)
        digest = hashlib.sha256(built.read_bytes()).hexdigest().encode()
        os.replace(built, path)
        atomic(_digest_file(path), lambda p: private.write(p, digest))
    except Exception as exc:  # the compiler's first error, said in one line
        text = log.read_text(errors="replace") if log.is_file() else ""
        said = [line for line in text.splitlines() if "error" in line.lower()] \
            or str(exc).splitlines() or [type(exc).__name__]
        return f"native layer skipped: building with {described.split(':')[0]} failed: " \
               f"{said[0].strip()[:200]}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return None


@contextlib.contextmanager
def _home(folder: Path) -> Iterator[None]:
    """$HOME set to `folder` while the loop compiles, where this user has none (no $HOME and
    no passwd entry): setuptools in a fresh venv reads ~/.pydistutils.cfg and stopped with
    "Could not determine home directory"; where there is one, nothing changes."""
    try:
        Path.home()
    except RuntimeError:
        os.environ["HOME"] = str(folder)
        try:
            yield
        finally:
            os.environ.pop("HOME", None)
        return
    yield


def issuers(loop: NativeLoop, t: Target) -> dict[str, Callable[[int], None]]:
    """`issue(n)` per encoding: one call into C that issues all n operations, through the
    functions of the library that `t`'s implementation loaded."""
    wffi, wlib = t.binding.ffi_lib()

    def pointer(cdata: Any) -> Any:
        return loop.ffi.cast("void *", int(wffi.cast("uintptr_t", cdata)))

    procs = loop.ffi.new(f"void *[{len(PROCS)}]")
    for i, name in enumerate(PROCS):
        procs[i] = pointer(wffi.addressof(wlib, name))
    args = (procs, pointer(t.device._internal), pointer(t.queue._internal),
            pointer(t.pipeline._internal), pointer(t.bind_group._internal), *t.grid)
    issue = loop.lib.gpuoverhead_issue

    def make(code: int) -> Callable[[int], None]:
        def run(n: int) -> None:
            issue(*args, code, n)
        return run

    return {name: make(code) for name, code in ENCODINGS.items()}
