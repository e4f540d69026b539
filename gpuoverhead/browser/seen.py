"""The adapters browsers offered on this machine, kept a day (gpuoverhead/gpu/kept.py): every
worker starts its own browser anyway. An entry is keyed by the executable (path, size, time
of change), the flags it starts with (a flag set's among them) and the variables that
choose its Vulkan driver and layers, and taken only where it reads as browser/adapter.py
keeps it: one damaged entry had made every run say `error: …/chromium: None` for a day."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from typing import Any

from gpuoverhead.browser import launcher
from gpuoverhead.gpu import kept

FILE = "browsers.json"
#: Seconds an entry is trusted (a driver or a browser updated in place changes the answer).
KEEP_S = 86400.0
_DRIVER_VARIABLES = ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "DISPLAY", "WAYLAND_DISPLAY",
                     "VK_LAYER_PATH", "VK_INSTANCE_LAYERS", "XDG_DATA_DIRS", "LD_LIBRARY_PATH",
                     "GPUOVERHEAD_HEADLESS_SURFACE", "GPUOVERHEAD_SURFACE_LAYER")


#: What the page's gpuo.info() answers (browser/page/runner.js), key by key: every answer
#: has these ...
_PAGE = {"crossOriginIsolated": bool, "userAgent": str, "timerResolutionUs": float}
#: ... and either an adapter's ...
_ADAPTER = {"vendor": str, "architecture": str, "device": str, "description": str,
            "driver": str, "backend": str, "type": str, "isFallbackAdapter": bool,
            "features": list}
#: ... or why there is none.
_NO_ADAPTER = {"error": str}


def _key(executable: str, chosen: Sequence[str]) -> list[Any]:
    found = os.stat(executable)
    return [os.path.realpath(executable), found.st_size, found.st_mtime_ns,
            launcher.flags(chosen), [os.environ.get(v) for v in _DRIVER_VARIABLES]]


def get(executable: str, chosen: Sequence[str] = ()) -> dict[str, Any] | None:
    """What was kept for this browser started with the flag set `chosen` (`info`, `version`,
    `status`), or None: where none was kept, and where it is not such an answer (said)."""
    try:
        return kept.get(FILE, _key(executable, chosen), KEEP_S, _as_answer)
    except OSError:
        return None


def _as_answer(found: Any) -> dict[str, Any] | None:
    """`found` where it is an answer as browser/adapter.py keeps it, else None: `info` as
    gpuo.info() gives it (each key of its kind, of its type), the browser's version, and
    chrome://gpu's words (strings, or none)."""
    if not isinstance(found, dict) or set(found) != {"info", "version", "status"}:
        return None
    info, version, status = found["info"], found["version"], found["status"]
    if not (isinstance(info, dict) and isinstance(version, str) and isinstance(status, dict)
            and all(isinstance(k, str) and (v is None or isinstance(v, str))
                    for k, v in status.items())):
        return None
    want = {**_PAGE, **(_NO_ADAPTER if "error" in info else _ADAPTER)}
    if set(info) != set(want) or not all(_is(info[k], kind) for k, kind in want.items()):
        return None
    return found if all(isinstance(f, str) for f in info.get("features", ())) else None


def _is(value: Any, kind: type) -> bool:
    """Whether a JSON value is of `kind` (a float: any finite number, never a bool)."""
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool) \
            and math.isfinite(value)
    return type(value) is kind


def put(executable: str, value: Any, chosen: Sequence[str] = ()) -> None:
    """Keep `value` for this browser and flag set (JSON)."""
    with contextlib.suppress(OSError):
        kept.put(FILE, _key(executable, chosen), value)
