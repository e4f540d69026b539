"""A binding's C header parsed once, not again in every process that imports it.

Importing wgpu-native's binding parses its C header (webgpu.h and wgpu.h) with pycparser:
0.22 s of CPU on the 2-core development machine, paid by a run's parent and again by each
of its worker processes (several hundred in the tests). What the parse gives depends only
on the header's text and on cffi: cffi's parsed declarations are kept (pickled) in the
cache folder under a hash of both, and a later `cdef` of the same text takes them instead
(under 5 ms). A pickle can run any code as it loads, so the file is read only where it is
this user's own and private (gpu/private.py), and by an unpickler that makes nothing but
cffi's type classes (cffi.model), whose result must have the shape the writer writes (the
parser's attributes, each of its type; declarations that are types). A file that does not
pass, does not load, or that another version wrote, is parsed again and replaced, said
once in a line; a kept parse that the binding's import then fails with is removed. One that
cannot be written is let be. Nothing is timed while this runs: it wraps a binding's import
only.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import pickle
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuoverhead.gpu import private
from gpuoverhead.gpu.cache_folder import cache_dir, note
from gpuoverhead.whole_files import atomic

#: Headers shorter than this parse in less time than a file takes to read: left to cffi.
MIN_CHARS = 20_000
#: A larger file is not one this module wrote (wgpu-native's parse: 170 kB).
MAX_BYTES = 16 << 20
#: The parser's attributes that only hold state while it parses (weak references to
#: pycparser's syntax tree; types still to complete, empty once a parse has ended).
_TRANSIENT = ("_structnode2type", "_recomplete")


def _file(csource: str) -> Path:
    import cffi

    key = hashlib.sha256("\0".join((csource, cffi.__version__, sys.version)).encode())
    return cache_dir() / f"cffi-{key.hexdigest()[:24]}.pickle"


class _TypesOnly(pickle.Unpickler):
    """An unpickler that makes nothing but cffi's type classes: no function to call, no
    other class's code to run."""

    def find_class(self, module: str, name: str) -> Any:
        from cffi import model

        found = getattr(model, name, None) if module == "cffi.model" else None
        if not (isinstance(found, type) and issubclass(found, model.BaseTypeByIdentity)):
            raise pickle.UnpicklingError(f"{module}.{name} is not one of cffi's types")
        return found


def _load(path: Path) -> dict[str, Any] | None:
    """The parser state kept at `path`, or None: where there is none, and where it is not
    private, does not load or is not the shape `_store` writes (said)."""
    try:
        blob = private.read(path, MAX_BYTES)
    except FileNotFoundError:
        return None
    except private.NotPrivate as exc:
        note(f"{exc.reason}: the C header kept there is not loaded, but parsed again")
        return None
    except OSError:
        return None
    try:
        if len(blob) > MAX_BYTES:
            raise ValueError(f"over {MAX_BYTES >> 20} MiB")
        state = _TypesOnly(io.BytesIO(blob)).load()
        problem = _problem(state)
    except Exception as exc:  # what a damaged pickle raises has no list: each is damage
        problem = " ".join(str(exc).split())[:100] or type(exc).__name__
    if problem is None:
        return state
    note(f"{path} is not a parsed C header ({problem}): parsed again")
    return None


def _problem(state: Any) -> str | None:
    """What makes `state` other than a cffi parser's attributes as `_store` keeps them
    (each a fresh parser's one of its type; the declarations cffi's types, or a macro's
    value), or None."""
    from cffi import cparser, model

    if not isinstance(state, dict):
        return f"a {type(state).__name__}"
    fresh = {k: v for k, v in vars(cparser.Parser()).items() if k not in _TRANSIENT}
    for key, value in fresh.items():
        if key not in state:
            return f"no {key}"
        if value is not None and type(state[key]) is not type(value):
            return f"{key} is a {type(state[key]).__name__}"
    if any(not isinstance(k, str) or not k.startswith("_") or k in _TRANSIENT for k in state):
        return "attributes that are not a parser's"
    declared = state["_declarations"]
    if not declared or not all(
            isinstance(k, str) and type(v) is tuple and len(v) == 2 and type(v[1]) is int
            and (isinstance(v[0], model.BaseTypeByIdentity)
                 or k.startswith("macro ") and isinstance(v[0], int | str))
            for k, v in declared.items()):
        return "declarations that are not types"
    if not all(isinstance(k, str) and type(v) is int for k, v in state["_int_constants"].items()):
        return "constants that are not integers"
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
        atomic(path, lambda p: private.write(p, blob))


@contextlib.contextmanager
def kept_header() -> Iterator[None]:
    """Within it, a first `cdef` of a long header in a fresh FFI takes the kept parse."""
    try:
        from cffi.api import FFI
    except ImportError:
        yield
        return
    slow = FFI._cdef
    taken: list[Path] = []

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
        taken.append(path)
        return None

    FFI._cdef = cdef
    try:
        yield
    except Exception:
        for path in taken:  # not the parse it seemed: the next import parses again
            with contextlib.suppress(OSError):
                path.unlink()
                note(f"{path}: the import failed with this kept C header: removed")
        raise
    finally:
        FFI._cdef = slow
