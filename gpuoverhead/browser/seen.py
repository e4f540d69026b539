"""The adapters browsers offered on this machine, kept a day (gpuoverhead/gpu/kept.py): every
worker starts its own browser anyway. An entry is keyed by the executable (path, size, time
of change), the flags it starts with (a flag set's among them) and the variables that
choose its Vulkan driver and layers."""

from __future__ import annotations

import contextlib
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


def _key(executable: str, chosen: Sequence[str]) -> list[Any]:
    found = os.stat(executable)
    return [os.path.realpath(executable), found.st_size, found.st_mtime_ns,
            launcher.flags(chosen), [os.environ.get(v) for v in _DRIVER_VARIABLES]]


def get(executable: str, chosen: Sequence[str] = ()) -> Any | None:
    """What was kept for this browser started with the flag set `chosen`, or None."""
    try:
        return kept.get(FILE, _key(executable, chosen), KEEP_S)
    except OSError:
        return None


def put(executable: str, value: Any, chosen: Sequence[str] = ()) -> None:
    """Keep `value` for this browser and flag set (JSON)."""
    with contextlib.suppress(OSError):
        kept.put(FILE, _key(executable, chosen), value)
