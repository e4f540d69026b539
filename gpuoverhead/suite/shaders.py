"""Kernels a suite names: shipped ones by name, or `.wgsl` files kept inside the suite's folder.

A suite's kernel is checked against the contract the output check relies on (one
`array<u32>` storage buffer at group 0, binding 0) before anything compiles it: a kernel that
binds something else would pass `validate` and then fail inside a worker. The fusion
patterns' kernels bind their own buffers; their workloads check them.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gpuoverhead.cases import Kernel
from gpuoverhead.errors import UserError
from gpuoverhead.resources import SHADERS_DIR
from gpuoverhead.suite.source import MAX_BYTES, read_capped

_WRITES_DIRECTIVE = re.compile(r"//\s*gpuoverhead:\s*writes\s*=\s*(all|first)\b")
_FUSION_DIRECTIVE = re.compile(r"//\s*gpuoverhead:\s*fusion\s*=")
#: Where a WGSL comment starts (`//` to the end of the line, `/*`), and inside a block
#: comment what opens or closes one (they nest).
_COMMENT = re.compile(r"//[^\n]*|/\*")
_NESTED = re.compile(r"/\*|\*/")
#: Statements (what lies between `;`, `{` and `}`); in one, a variable's declaration after
#: its `var`: `<space> name: type`. Searched statement by statement, so time stays linear.
_STATEMENT = re.compile(r"[^;{}]+")
_VAR = re.compile(r"\bvar\b")
_DECLARED = re.compile(r"\s*(?:<(?P<space>[^>]*)>)?\s*(?P<name>\w+)\s*:\s*(?P<type>.*)",
                       re.DOTALL)
_ATTR = re.compile(r"@\s*(group|binding)\s*\(\s*([^()]*?)\s*\)")
_CONTRACT = ("a kernel binds one `var<storage, read_write>` of `array<u32>` at @group(0) "
             "@binding(0), and nothing else")


def resolve_kernel(suite_path: Path, name: str, outside_shaders: bool = False) -> Kernel:
    """Resolve a kernel: a shipped one by name, or a `.wgsl` path relative to the suite,
    inside the suite's folder unless `outside_shaders` (a suite from elsewhere must not read
    arbitrary files by naming `../../x.wgsl` or an absolute path)."""
    if not name.endswith(".wgsl") and (Path(name).is_absolute() or "/" in name or "\\" in name
                                       or name.startswith(".")):
        raise UserError(f"kernel {name!r} is neither a shipped kernel's name nor a .wgsl path")
    if name.endswith(".wgsl"):
        folder = suite_path.parent.resolve()
        path = (folder / name).resolve()
        if not outside_shaders and not path.is_relative_to(folder):
            raise UserError(f"shader path {name!r} leads outside the suite's folder {folder}; "
                            "pass --outside-shaders to allow it")
    else:
        path = SHADERS_DIR / f"{name}.wgsl"
        if not path.is_file() or name.startswith("fusion_"):
            shipped = sorted(p.stem for p in SHADERS_DIR.glob("*.wgsl")
                             if not p.stem.startswith("fusion_"))
            raise UserError(f"unknown kernel {name!r}; shipped kernels: {', '.join(shipped)} "
                            "(fusion kernels are named by `fusion: <pattern>`)")
    source = _read_shader(path)
    if _FUSION_DIRECTIVE.search(source):
        raise UserError(f"{path} is a fusion pattern's kernel; name it with `fusion:`")
    _check_bindings(path, source)
    match = _WRITES_DIRECTIVE.search(source)
    writes = match.group(1) if match else "all"
    return Kernel(name=Path(name).stem, path=path, source=source, writes=writes)  # type: ignore[arg-type]


def _read_shader(path: Path) -> str:
    """A regular file's text, capped as a suite is."""
    try:
        raw = read_capped(path, MAX_BYTES)
        if len(raw) > MAX_BYTES:
            raise UserError(f"cannot read shader {path}: larger than {MAX_BYTES // 1024} KiB: "
                            "not a kernel")
        return raw.decode("utf-8")
    except OSError as exc:
        raise UserError(f"cannot read shader {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UserError(f"cannot read shader {path}: not UTF-8 text") from None


def _check_bindings(path: Path, source: str) -> None:
    """Raise a UserError at `path:line` unless the kernel binds exactly what its buffer is:
    one read-write storage `array<u32>` (or of `atomic<u32>`) at group 0, binding 0."""
    code = _without_comments(source)
    found = False
    for statement in _STATEMENT.finditer(code):
        text = statement.group()
        var = _VAR.search(text)
        attrs = list(_ATTR.finditer(text, 0, var.start())) if var else []
        declared = _DECLARED.match(text, var.end()) if var and attrs else None
        if declared is None:
            continue
        line = code.count("\n", 0, statement.start() + attrs[0].start()) + 1
        given = {a.group(1): a.group(2) for a in attrs}
        slot = (_literal(given.get("group")), _literal(given.get("binding")))
        if slot != (0, 0) or found:
            said = " ".join(f"@{k}({v})" for k, v in given.items())
            again = " a second time" if slot == (0, 0) else ""
            raise UserError(f"{path}:{line}: binds {said}{again}; {_CONTRACT}")
        space = re.sub(r"\s", "", declared["space"] or "")
        kind = re.sub(r"\s", "", declared["type"])
        if space != "storage,read_write" or kind not in ("array<u32>", "array<atomic<u32>>"):
            decl = f"var<{declared['space'].strip()}>" if declared["space"] else "var"
            raise UserError(f"{path}:{line}: binds `{decl}` of `{declared['type'].strip()}` at "
                            f"@group(0) @binding(0); {_CONTRACT}")
        if len(re.findall(rf"\b{declared['name']}\b", code)) < 2:  # the pipeline drops it
            raise UserError(f"{path}:{line}: binds `{declared['name']}` but never uses it, so "
                            "the pipeline has no binding 0; the kernel must add 1 to it")
        found = True
    if not found:
        raise UserError(f"{path}: binds nothing at @group(0) @binding(0); {_CONTRACT}")


def _literal(text: str | None) -> int | None:
    """An attribute's integer literal (`0`, `0u`, `0x0i`), or None where it is not one."""
    match = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[iu]?", text or "")
    return int(match.group(1), 0) if match else None


def _without_comments(source: str) -> str:
    """`source` with each comment turned into a space and the newlines it held (WGSL's block
    comments nest), so that line numbers still count."""
    out: list[str] = []
    pos = 0
    while (match := _COMMENT.search(source, pos)) is not None:
        out.append(source[pos:match.start()])
        end, depth = match.end(), int(match.group() == "/*")
        while depth and (inner := _NESTED.search(source, end)) is not None:
            depth += 1 if inner.group() == "/*" else -1
            end = inner.end()
        end = len(source) if depth else end  # an unclosed comment runs to the end
        out.append(" " + "\n" * source.count("\n", match.start(), end))
        pos = end
    out.append(source[pos:])
    return "".join(out)


def fusion_kernel(pattern: str) -> Kernel:
    path = SHADERS_DIR / f"fusion_{pattern}.wgsl"
    return Kernel(name=path.stem, path=path, source=_read_shader(path), writes="all")


def f16_kernel(kernel: Kernel) -> Kernel:
    """The decode kernel reading its weights as f16 (the adapter needs `shader-f16`)."""
    source = kernel.source.replace("alias W = f32;", "alias W = f16;")
    assert source != kernel.source, "the decode kernel declares its weights' type as W"
    return replace(kernel, name=f"{kernel.name}_f16", source=f"enable f16;\n{source}")
