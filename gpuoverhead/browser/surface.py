"""The Vulkan layer that lets headless Chromium put ANGLE on Vulkan where the driver lacks
VK_EXT_headless_surface (NVIDIA's server driver): surface_layer.c, built at first use with
the system's C compiler into a private folder of this user's cache (as the C loop is) and
enabled, as an implicit layer, for the browsers the tool starts with ANGLE on Vulkan (the
GPU flag set, browser/adapter.py) and for nothing else.

Without it no flag set got the H200 an adapter (docs/browser-gpu.md). The layer only lists
the extension and keeps it from the driver; with `--disable-vulkan-surface` nothing calls
it. `GPUOVERHEAD_SURFACE_LAYER=0` starts the browser without it. A layer runs inside the
browser (as root: `--no-sandbox`), so one is loaded only where its folders, library and
manifest are private by the rule the cache folder's other contents follow (gpu/private.py);
otherwise it is built again in a fresh private folder, which run.json's `surface_layer` says.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpuoverhead.gpu import private
from gpuoverhead.gpu.cache_folder import cache_dir

SOURCE = Path(__file__).with_name("surface_layer.c")
NAME = "VK_LAYER_GPUOVERHEAD_headless_surface"
#: `0` starts the browser without the layer.
SWITCH = "GPUOVERHEAD_SURFACE_LAYER"
#: The variable the manifest's `enable_environment` names: set for the browser alone.
ENABLE = "GPUOVERHEAD_HEADLESS_SURFACE"
#: The flag that puts ANGLE (Chromium's GL) on Vulkan: what asks for the extension.
ANGLE_ON_VULKAN = "--use-angle=vulkan"
LIBRARY = "libgpuo_headless_surface.so"
MANIFEST = Path("vulkan") / "implicit_layer.d" / "gpuo_headless_surface.json"
BUILD_S = 60.0


@dataclass(frozen=True)
class Layer:
    """A built layer: `data` is the folder a loader finds its manifest under, as one of
    $XDG_DATA_DIRS (`vulkan/implicit_layer.d/`); `passed_over`, a kept one not used and why."""

    data: Path
    passed_over: str = ""

    def environment(self) -> dict[str, str]:
        """The browser's environment with the layer on (the loader's usual folders kept)."""
        usual = os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
        return {"XDG_DATA_DIRS": f"{self.data}:{usual}", ENABLE: "1"}


def wanted(flags: list[str] | tuple[str, ...]) -> bool:
    """Whether a browser started with `flags` gets the layer: on Linux, where ANGLE runs
    on Vulkan (the last `--use-angle` counts, as in Chromium), unless switched off."""
    angle = [f for f in flags if f.startswith("--use-angle=")]
    return sys.platform.startswith("linux") and bool(angle) and angle[-1] == ANGLE_ON_VULKAN \
        and os.environ.get(SWITCH, "1").strip() != "0"


def state(flags: list[str] | tuple[str, ...]) -> str | None:
    """What run.json and the run's first lines say of the layer for a browser started with
    `flags`: where it was built, or why it is off; None where it is not asked for."""
    angle = [f for f in flags if f.startswith("--use-angle=")]
    if not sys.platform.startswith("linux") or not angle or angle[-1] != ANGLE_ON_VULKAN:
        return None
    if not wanted(flags):
        return f"surface layer off ({SWITCH}=0)"
    found = layer()
    if isinstance(found, str):
        return f"surface layer off: {found}"
    return (f"surface layer on (lists VK_EXT_headless_surface for ANGLE on Vulkan; "
            f"{found.data}){found.passed_over}")


def environment(flags: list[str] | tuple[str, ...]) -> dict[str, str]:
    """What a browser started with `flags` gets in its environment: the layer's variables
    where it is wanted and could be built, else nothing."""
    if not wanted(flags):
        return {}
    found = layer()
    return {} if isinstance(found, str) else found.environment()


def compiler() -> list[str] | None:
    """The C compiler's command: $CC (its arguments too), else cc, gcc or clang."""
    given = shlex.split(os.environ.get("CC", ""))
    if given:
        return given if shutil.which(given[0]) else None
    return next(([c] for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


@functools.cache
def layer() -> Layer | str:
    """The layer, built where this user's cache has none yet; or why there is none (a
    sentence). Once a process."""
    cc = compiler()
    if cc is None:
        return "no C compiler ($CC, cc, gcc or clang) to build it with"
    try:
        version = subprocess.run([*cc, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{shlex.join(cc)} does not run: {exc}"
    key = hashlib.sha256(SOURCE.read_bytes() + shlex.join(cc).encode()
                         + version.encode()).hexdigest()[:16]
    try:
        kept: Path | None = cache_dir() / f"surface-layer-{key}"  # made, and private
    except OSError:
        kept = None
    passed_over = ""
    if kept is not None and os.path.lexists(kept):
        if _whole(kept):
            return Layer(kept)
        if _ours(kept):  # ours, and not whole (a part changed or gone): built again
            shutil.rmtree(kept, ignore_errors=True)
        else:
            passed_over = (f"; {kept} was not this user's own and private, and is not "
                           "used: built again in a fresh folder")
            kept = None
    try:
        built = _build_into(kept, cc)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"building it with {cc[0]} failed: {exc}"
    return built if isinstance(built, str) else Layer(built.data, passed_over)


def _build_into(kept: Path | None, cc: list[str]) -> Layer | str:
    """The layer built in a fresh private folder and moved to `kept`, its place in the
    cache; where that cannot be had, left where it was built (removed at exit)."""
    base = None if kept is None else kept.parent  # the cache folder, checked private
    fresh = Path(tempfile.mkdtemp(prefix=".surface-layer-", dir=base))
    library = fresh / LIBRARY
    built = subprocess.run([*cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o",
                            str(library), str(SOURCE)], capture_output=True, text=True,
                           timeout=BUILD_S)
    if built.returncode:
        shutil.rmtree(fresh, ignore_errors=True)
        said = next((line for line in built.stderr.splitlines() if "error" in line.lower()),
                    built.stderr.strip()[:200] or f"exit {built.returncode}")
        return f"building it with {cc[0]} failed: {said.strip()[:200]}"
    library.chmod(0o700)
    if base is not None and kept is not None:
        _write_manifest(fresh, kept / LIBRARY)
        with contextlib.suppress(OSError):  # another process made it first: theirs is used
            fresh.rename(kept)
            return Layer(kept)
        if _whole(kept):
            shutil.rmtree(fresh, ignore_errors=True)
            return Layer(kept)
    _write_manifest(fresh, library)
    atexit.register(shutil.rmtree, fresh, ignore_errors=True)
    return Layer(fresh)


def _write_manifest(folder: Path, library: Path) -> None:
    """The implicit layer's manifest in `folder`, naming `library` by its full path."""
    manifest = folder / MANIFEST
    manifest.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    for made in (manifest.parent, manifest.parent.parent):
        made.chmod(0o700)  # whatever the umask
    manifest.write_text(json.dumps({
        "file_format_version": "1.1.2",
        "layer": {"name": NAME, "type": "GLOBAL", "library_path": str(library),
                  "api_version": "1.3.0", "implementation_version": "1",
                  "description": "lists VK_EXT_headless_surface for headless Chromium "
                                 "(gpuoverhead/browser/surface_layer.c)",
                  "instance_extensions": [{"name": "VK_EXT_headless_surface",
                                           "spec_version": "1"}],
                  "functions": {"vkGetInstanceProcAddr": "hs_GetInstanceProcAddr",
                                "vkGetDeviceProcAddr": "hs_GetDeviceProcAddr"},
                  "enable_environment": {ENABLE: "1"},
                  "disable_environment": {f"{ENABLE}_OFF": "1"}}}, indent=1))
    manifest.chmod(0o600)


def _whole(folder: Path) -> bool:
    """Whether a layer built before is whole at `folder` and may be used: its folders
    private (gpu/private.py: a library another user could have put there would run inside
    the browser), its library and manifest private regular files."""
    try:
        private.folder(folder / MANIFEST.parent)  # every folder on the way checked
        private.check_file(folder / LIBRARY)
        private.check_file(folder / MANIFEST)
    except OSError:
        return False
    return True


def _ours(path: Path) -> bool:
    """Whether `path` is a private folder of this user's (gpu/private.py) and not a link:
    one to remove and build again, where a link's target is left alone."""
    if path.is_symlink():
        return False
    try:
        private.folder(path)
    except OSError:
        return False
    return True
