"""The adapters browsers offered on this machine, kept a day (gpuoverhead/gpu/kept.py): every
worker starts its own browser anyway. An entry is keyed by the executable (path, size, time
of change), the flags it starts with and the variables that choose its Vulkan driver."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from gpuoverhead.browser import launcher
from gpuoverhead.gpu import kept

FILE = "browsers.json"
#: Seconds an entry is trusted (a driver or a browser updated in place changes the answer).
KEEP_S = 86400.0
_DRIVER_VARIABLES = ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "DISPLAY", "WAYLAND_DISPLAY")


def _key(executable: str) -> list[Any]:
    found = os.stat(executable)
    return [os.path.realpath(executable), found.st_size, found.st_mtime_ns, launcher.flags(),
            [os.environ.get(v) for v in _DRIVER_VARIABLES]]


def get(executable: str) -> Any | None:
    """What was kept for this browser, or None."""
    try:
        return kept.get(FILE, _key(executable), KEEP_S)
    except OSError:
        return None


def put(executable: str, value: Any) -> None:
    """Keep `value` for this browser (JSON)."""
    with contextlib.suppress(OSError):
        kept.put(FILE, _key(executable), value)
