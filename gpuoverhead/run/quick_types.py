"""A worker's start-up without cffi re-parsing the whole header for each new type name.

The bindings ask cffi for types by name (`ffi.new("WGPUBufferDescriptor *")`). cffi parses
each new name with pycparser after declaring every typedef the header has (432 for
wgpu-native's), about 20 ms a name on the 2-core development machine; a worker asks for 30
to 40 names before its first sample, 0.6-0.8 s of its start-up. Here a name that is a
typedef of the header, alone or followed by `*`, `[]` or `[n]`, is resolved from the
declarations cffi already parsed, giving the very type the slow path gives (the same cffi
type object, cached the same way). Anything else (a callback's signature, `char[]`,
`intptr_t`: 5 names in a run's parent, 8 in a worker, 30-40 ms each) is parsed by cffi as
before, but with only the typedefs its text names declared to pycparser: which names are
types is all that the declarations change of a parse (cffi's `_parse` says so), and only
the names in the text are looked up, so the parse is the same, in 1-2 ms.

A worker runs under it from start to end, and the parent while it plans. Only a type's
first use changes (in `prepare`, or the warm-up round that first meets it: the 14 names
a worker met while sampling cost it 0.26 s of CPU here): every later call finds the type in
cffi's cache, where it is the same object either way, so no measured round sees a change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

#: A typedef name alone, or with one pointer or one array (no qualifiers, no other syntax).
_SIMPLE = re.compile(r"\s*([A-Za-z_]\w*)\s*(\*|\[\s*(\d*)\s*\])?\s*")
#: A C identifier (a typedef name, a keyword, a primitive).
_NAME = re.compile(r"[A-Za-z_]\w*")


def resolve(parser: Any, cdecl: str) -> Any:
    """cffi's model type of `cdecl` from `parser`'s declarations, or None where `cdecl` is
    not that simple (cffi's `Parser.parse_type` then does it)."""
    from cffi import model

    found = _SIMPLE.fullmatch(cdecl)
    declared = found and getattr(parser, "_declarations", {}).get("typedef " + found[1])
    if not declared:
        return None
    tp, quals = declared
    if found[2] is None:
        return tp
    if found[2] == "*":
        return tp.as_function_pointer() if isinstance(tp, model.RawFunctionType) else \
            model.PointerType(tp, quals)
    return model.ArrayType(tp, int(found[3]) if found[3] else None)


def narrow_parse(parser: Any, csource: str) -> Any:
    """cffi's `Parser._parse` of `csource` with only the typedefs it names declared."""
    from cffi.cparser import Parser

    every = parser._declarations
    named = set(_NAME.findall(csource))
    parser._declarations = {k: v for k, v in every.items()
                            if k.startswith("typedef ") and k[8:] in named}
    try:
        return Parser._parse(parser, csource)
    finally:
        parser._declarations = every


@contextmanager
def quick_types() -> Iterator[None]:
    """Within it, every cffi FFI resolves simple typedef names without pycparser."""
    try:
        from cffi.api import FFI
    except ImportError:
        yield
        return
    slow = FFI._typeof_locked

    def typeof_locked(self: Any, cdecl: Any) -> Any:
        if isinstance(cdecl, str) and cdecl not in self._parsed_types:
            tp = resolve(self._parser, cdecl)
            if tp is not None:
                raw = tp.is_raw_function
                tp = tp.as_function_pointer() if raw else tp
                self._parsed_types[cdecl] = (self._get_cached_btype(tp), raw)
            else:  # under the FFI's lock, as cffi's own parses
                self._parser._parse = partial(narrow_parse, self._parser)
                try:
                    return slow(self, cdecl)
                finally:
                    del self._parser._parse
        return slow(self, cdecl)

    FFI._typeof_locked = typeof_locked
    try:
        yield
    finally:
        FFI._typeof_locked = slow
