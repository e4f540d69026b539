"""The worker's quick cffi type names give the very types cffi's own parser gives."""

from __future__ import annotations

from functools import partial

import pytest

from gpuoverhead.run.quick_types import narrow_parse, quick_types, resolve

_ffi = pytest.importorskip("wgpu.backends.wgpu_native._ffi").ffi


def _sample_names() -> list[str]:
    """Typedefs of every kind in the header: structs, enums, handles, flags, callbacks."""
    from cffi import model

    kinds: dict[type, list[str]] = {}
    for key, (tp, _) in _ffi._parser._declarations.items():
        if key.startswith("typedef "):
            kinds.setdefault(type(tp), []).append(key[8:])
    assert len(kinds) >= 4, kinds.keys()  # struct, enum, pointer, primitive, function...
    assert model.StructType in kinds and model.PointerType in kinds
    return [n for names in kinds.values() for n in names[:3]]


@pytest.mark.parametrize("suffix", ["", " *", "[]", "[3]", "*"])
def test_quick_types_equal_cffis_parse(suffix):
    names = _sample_names()
    for name in names:
        cdecl = name + suffix
        quick = resolve(_ffi._parser, cdecl)
        assert quick is not None, cdecl
        slow = _ffi._parser.parse_type(cdecl)
        assert quick == slow, cdecl
        with _ffi._lock:  # cffi's own calls hold it
            assert _ffi._get_cached_btype(quick) is _ffi._get_cached_btype(slow)


def test_anything_else_is_left_to_cffi_and_the_patch_is_undone():
    from cffi.api import FFI

    for cdecl in ("uint32_t []", "const WGPUBufferDescriptor *", "WGPUBool **",
                  "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)", "NotAType *"):
        assert resolve(_ffi._parser, cdecl) is None, cdecl
    before = FFI._typeof_locked
    with quick_types():
        assert FFI._typeof_locked is not before
        assert _ffi.typeof("WGPUBufferDescriptor *") is _ffi.typeof("WGPUBufferDescriptor*")
        assert _ffi.sizeof("WGPUBufferDescriptor[4]") == 4 * _ffi.sizeof("WGPUBufferDescriptor")
    assert FFI._typeof_locked is before


#: Names a run's parent and worker met that are not simple typedef names (callbacks'
#: signatures, primitives), and others of the kinds a header has.
OTHERS = ("void(WGPULogLevel, WGPUStringView, void *)", "char []", "intptr_t", "uint32_t []",
          "void(WGPUDevice const *, WGPUDeviceLostReason, WGPUStringView, void *, void *)",
          "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)",
          "const WGPUBufferDescriptor *", "WGPUBool **", "struct WGPUBufferDescriptor",
          "WGPUBufferMapCallback", "int(*)(WGPUBool, ...)")


@pytest.mark.parametrize("cdecl", OTHERS)
def test_a_parse_declaring_only_the_typedefs_named_gives_cffis_type(cdecl):
    parser = _ffi._parser
    slow = parser.parse_type_and_quals(cdecl)
    parser._parse = partial(narrow_parse, parser)
    try:
        quick = parser.parse_type_and_quals(cdecl)
    finally:
        del parser._parse
    assert quick == slow, cdecl
    rendered = [tp.as_function_pointer() if tp.is_raw_function else tp  # as FFI.typeof
                for tp, _ in (quick, slow)]
    with _ffi._lock:
        assert _ffi._get_cached_btype(rendered[0]) is _ffi._get_cached_btype(rendered[1])


def test_a_name_that_is_no_type_fails_as_in_cffi():
    from cffi import CDefError

    with pytest.raises(CDefError) as slow:
        _ffi.typeof("NotAType *")
    with quick_types(), pytest.raises(CDefError) as quick:
        _ffi.typeof("NotAType *")
    assert str(quick.value) == str(slow.value)
    assert "_parse" not in vars(_ffi._parser)  # the narrowing is undone
