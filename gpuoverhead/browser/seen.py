"""The adapters browsers offered on this machine, kept a day: starting a browser to ask took
2.9 s of the ci suite's 3.3 s of planning on the 2-core machine, and every worker starts its
own browser anyway. An entry is keyed by the executable (path, size, time of change), the
flags it starts with (a flag set's among them) and the variables that choose its Vulkan
driver and layers; a damaged or foreign
file is ignored, and one that cannot be written is let be."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuoverhead.browser import launcher
from gpuoverhead.gpu.layers.native import cache_dir

FILE = "browsers.json"
#: Seconds an entry is trusted (a driver or a browser updated in place changes the answer).
KEEP_S = 86400.0
_DRIVER_VARIABLES = ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "DISPLAY", "WAYLAND_DISPLAY",
                     "VK_LAYER_PATH", "VK_INSTANCE_LAYERS", "XDG_DATA_DIRS", "LD_LIBRARY_PATH",
                     "GPUOVERHEAD_HEADLESS_SURFACE")


def key(executable: str, chosen: Sequence[str] = ()) -> str:
    found = os.stat(executable)
    return json.dumps([os.path.realpath(executable), found.st_size, found.st_mtime_ns,
                       launcher.flags(chosen), [os.environ.get(v) for v in _DRIVER_VARIABLES]])


def get(executable: str, chosen: Sequence[str] = ()) -> Any | None:
    """What was kept for this browser started with the flag set `chosen`, or None."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        entry = json.loads((cache_dir() / FILE).read_text()).get(key(executable, chosen))
        if isinstance(entry, dict) and 0 <= time.time() - entry["time"] < KEEP_S:
            return entry["value"]
    return None


def put(executable: str, value: Any, chosen: Sequence[str] = ()) -> None:
    """Keep `value` for this browser and flag set (JSON), replacing the file atomically."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        path = cache_dir() / FILE
        try:
            found = json.loads(path.read_text())
            found = found if isinstance(found, dict) else {}
        except (OSError, ValueError):
            found = {}
        found[key(executable, chosen)] = {"time": time.time(), "value": value}
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False,
                                         suffix=".tmp") as out:
            json.dump(found, out)
        Path(out.name).replace(path)
