"""A binding's C header parsed once, not again in every process that imports it.

Importing wgpu-native's binding parses its C header (webgpu.h and wgpu.h) with pycparser:
0.22 s of CPU on the 2-core development machine, paid by a run's parent and again by each
of its worker processes (several hundred in the tests). What the parse gives depends only
on the header's text and on cffi: cffi's parsed declarations are kept (pickled) in the
cache folder under a hash of both, and a later `cdef` of the same text takes them instead
(under 5 ms). A file that does not load, or that another version wrote, is parsed again
and replaced; one that cannot be written is let be. Nothing is timed while this runs: it
wraps a binding's import only.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuoverhead.gpu.cache_folder import cache_dir
from gpuoverhead.whole_files import atomic

#: Headers shorter than this parse in less time than a file takes to read: left to cffi.
MIN_CHARS = 20_000
#: The parser's attributes that only hold state while it parses (weak references to
#: pycparser's syntax tree; types still to complete, empty once a parse has ended).
_TRANSIENT = ("_structnode2type", "_recomplete")


def _file(csource: str) -> Path:
    import cffi

    key = hashlib.sha256("\0".join((csource, cffi.__version__, sys.version)).encode())
    return cache_dir() / f"cffi-{key.hexdigest()[:24]}.pickle"


def _load(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(Exception):  # missing, damaged or foreign: parse again
        state = pickle.loads(path.read_bytes())
        if isinstance(state, dict) and isinstance(state.get("_declarations"), dict):
            return state
    return None


def _store(path: Path, parser: Any) -> None:
    """Keep the parser's declarations at `path`, whole or not at all."""
    if parser._recomplete:
        return
    state = {k: v for k, v in vars(parser).items() if k not in _TRANSIENT}
    try:
        blob = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic(path, lambda p: p.write_bytes(blob))


@contextlib.contextmanager
def kept_header() -> Iterator[None]:
    """Within it, a first `cdef` of a long header in a fresh FFI takes the kept parse."""
    try:
        from cffi.api import FFI
    except ImportError:
        yield
        return
    slow = FFI._cdef

    def cdef(self: Any, csource: Any, override: bool = False, **options: Any) -> None:
        if (override or any(options.values()) or not isinstance(csource, str)
                or len(csource) < MIN_CHARS or self._parser._declarations):
            return slow(self, csource, override=override, **options)
        try:
            path = _file(csource)
        except OSError:  # no private cache folder here (gpu/cache_folder.py): parse
            return slow(self, csource, override=override, **options)
        state = _load(path)
        if state is None:
            slow(self, csource, override=override, **options)
            _store(path, self._parser)
            return None
        with self._lock:
            self._cdef_version = object()
            vars(self._parser).update(state, _structnode2type=weakref.WeakKeyDictionary(),
                                      _recomplete=[])
            self._cdefsources.append(csource)
        return None

    FFI._cdef = cdef
    try:
        yield
    finally:
        FFI._cdef = slow
