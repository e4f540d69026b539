"""Kernels a suite names: shipped ones by name, or `.wgsl` files kept inside the suite's folder."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gpuoverhead.errors import UserError
from gpuoverhead.resources import SHADERS_DIR
from gpuoverhead.suite.model import Kernel

_WRITES_DIRECTIVE = re.compile(r"//\s*gpuoverhead:\s*writes\s*=\s*(all|first)\b")
_FUSION_DIRECTIVE = re.compile(r"//\s*gpuoverhead:\s*fusion\s*=")

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
    match = _WRITES_DIRECTIVE.search(source)
    writes = match.group(1) if match else "all"
    return Kernel(name=Path(name).stem, path=path, source=source, writes=writes)  # type: ignore[arg-type]


def _read_shader(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read shader {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UserError(f"cannot read shader {path}: not UTF-8 text") from None


def fusion_kernel(pattern: str) -> Kernel:
    path = SHADERS_DIR / f"fusion_{pattern}.wgsl"
    return Kernel(name=path.stem, path=path, source=_read_shader(path), writes="all")


def f16_kernel(kernel: Kernel) -> Kernel:
    """The decode kernel reading its weights as f16 (the adapter needs `shader-f16`)."""
    source = kernel.source.replace("alias W = f32;", "alias W = f16;")
    assert source != kernel.source, "the decode kernel declares its weights' type as W"
    return replace(kernel, name=f"{kernel.name}_f16", source=f"enable f16;\n{source}")


