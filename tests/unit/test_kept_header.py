"""A binding's C header parsed once (gpu/kept_header.py): the kept parse gives every type
the header declares as a fresh parse gives it, and a damaged file is parsed again."""

from __future__ import annotations

import pytest

from gpuoverhead.gpu import kept_header
from gpuoverhead.run.quick_types import quick_types

wgpu_ffi = pytest.importorskip("wgpu.backends.wgpu_native._ffi")


def _layout(ffi) -> dict[str, tuple]:
    """Each declared type's C name and size, and each struct's fields with their offsets
    and types; each constant's value. (Type names resolved from the declarations without
    pycparser, run/quick_types.py: 432 names, 20-60 ms each the slow way.)"""
    with quick_types():
        items = [(key, *_entry(ffi, key, tp))
                 for key, (tp, _) in ffi._parser._declarations.items()]
    found = {key: value for key, *value in items}
    found["int constants"] = tuple(sorted(ffi._parser._int_constants.items()))
    return found


def _entry(ffi, key: str, tp) -> tuple:
    kind, _, name = key.partition(" ")
    if kind != "typedef":
        return (str(tp),)
    ctype = ffi.typeof(name)
    fields = tuple((f, ffi.offsetof(ctype, f), field.type.cname)
                   for f, field in ctype.fields or ()) if ctype.kind == "struct" else ()
    size = ffi.sizeof(ctype) if ctype.kind not in ("function", "void") else None
    return (ctype.cname, size, fields)


def _fresh(header: str, cached: bool):
    from cffi import FFI

    ffi = FFI()
    if cached:
        with kept_header.kept_header():
            ffi.cdef(header)
    else:
        ffi.cdef(header)
    return ffi


def test_the_kept_parse_declares_what_a_fresh_parse_declares(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    header = wgpu_ffi.get_wgpu_header()
    want = _layout(_fresh(header, cached=False))
    first = _fresh(header, cached=True)  # parses and keeps
    assert kept_header._file(header).is_file()
    kept = _fresh(header, cached=True)  # takes the kept parse
    assert len(want) > 400
    assert _layout(first) == want
    assert _layout(kept) == want
    lib = kept.dlopen(wgpu_ffi.lib_path)
    assert lib.wgpuGetVersion() == wgpu_ffi.lib.wgpuGetVersion()
    assert kept.new("WGPUBufferDescriptor *").size == 0


def test_a_damaged_kept_parse_is_parsed_again_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    header = wgpu_ffi.get_wgpu_header()
    path = kept_header._file(header)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a pickle")
    ffi = _fresh(header, cached=True)
    assert ffi.sizeof("WGPUBufferDescriptor") > 0
    assert path.read_bytes() != b"not a pickle"
    assert kept_header._load(path) is not None


def test_short_sources_and_a_second_cdef_are_left_to_cffi(tmp_path, monkeypatch):
    from cffi import FFI

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ffi = _fresh("typedef struct { int a; } S;", cached=True)
    assert ffi.sizeof("S") == 4
    ffi = FFI()
    ffi.cdef("typedef struct { int a; } S;")
    with kept_header.kept_header():  # declarations of its own already: not replaced
        ffi.cdef(wgpu_ffi.get_wgpu_header())
    assert ffi.sizeof("S") == 4 and ffi.sizeof("WGPUBufferDescriptor") > 0
    assert not any(tmp_path.rglob("*.pickle"))


def test_a_cache_folder_that_cannot_be_had_leaves_the_parse_to_cffi(tmp_path, monkeypatch):
    header = wgpu_ffi.get_wgpu_header()
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where a folder would go
    assert _fresh(header, cached=True).sizeof("WGPUBufferDescriptor") > 0
    assert list(tmp_path.iterdir()) == [blocker] and blocker.read_text() == ""

    def not_private() -> None:  # gpu/cache_folder.py's refusal of a shared /tmp folder
        raise PermissionError("not a private folder of this user")

    monkeypatch.setattr(kept_header, "cache_dir", not_private)
    assert _fresh(header, cached=True).sizeof("WGPUBufferDescriptor") > 0
