"""Answers this machine gave before, kept in the cache folder for a while.

Asking again is what made a run's planning slow: a browser started to list its adapters
(2.9 s of the ci suite's 3.3 s on the 2-core machine), torch imported to find its device
(0.9 s there, more where CUDA starts), the CPU probe (0.85 s). An entry is keyed by what
would change its answer and by this boot (a reboot may bring other CPUs and drivers), and
trusted for the caller's `keep_s`; a damaged or foreign file is ignored, and one that cannot
be written is let be.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from gpuoverhead.gpu.cache_folder import cache_dir
from gpuoverhead.whole_files import atomic


def boot() -> str:
    """This boot's id where the OS gives one (Linux), else ''."""
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return ""


def get(file: str, key: Any, keep_s: float) -> Any | None:
    """The value kept under `key` (JSON) in `file` within the last `keep_s`, or None."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError, RecursionError):
        found = json.loads((cache_dir() / file).read_text())
        entry = found.get(_text(key)) if isinstance(found, dict) else None
        if isinstance(entry, dict) and 0 <= time.time() - entry["time"] < keep_s:
            return entry["value"]
    return None


def put(file: str, key: Any, value: Any) -> None:
    """Keep `value` (JSON) under `key` in `file`, replacing the file atomically."""
    with contextlib.suppress(OSError, ValueError, TypeError, RecursionError):
        path = cache_dir() / file
        try:
            found = json.loads(path.read_text())
            found = found if isinstance(found, dict) else {}
        except (OSError, ValueError, RecursionError):
            found = {}
        found[_text(key)] = {"time": time.time(), "value": value}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic(path, lambda p: p.write_text(json.dumps(found)))


def _text(key: Any) -> str:
    return json.dumps([boot(), key])
