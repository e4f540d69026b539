"""Answers this machine gave before, kept in the cache folder for a while.

Asking again is what made a run's planning slow: a browser started to list its adapters
(2.9 s of the ci suite's 3.3 s on the 2-core machine), torch imported to find its device
(0.9 s there, more where CUDA starts), the CPU probe (0.85 s). An entry is keyed by what
would change its answer and by this boot (a reboot may bring other CPUs and drivers), and
trusted for the caller's `keep_s`, and only as far as it reads as what its writer writes:
the file is read only where it is this user's own and private (gpu/private.py), each entry
is checked for its shape and its value by the caller's `read`; a file or an entry that does
not pass is ignored, said once in a line, and its answer asked again and kept anew. A file
that cannot be written is let be.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from gpuoverhead.gpu import private
from gpuoverhead.gpu.cache_folder import cache_dir, note
from gpuoverhead.whole_files import atomic

T = TypeVar("T")
#: A larger file is not one this module wrote (a few kB an answer): it is not read.
MAX_BYTES = 4 << 20


def boot() -> str:
    """This boot's id where the OS gives one (Linux), else ''."""
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return ""


def get(file: str, key: Any, keep_s: float, read: Callable[[Any], T | None]) -> T | None:
    """What `read` makes of the value kept under `key` (JSON) in `file` within the last
    `keep_s`: None where there is none, and where `read` gives None (it does not read as
    the writer's), which is said."""
    found = _entries(file)
    if found is None:
        return None
    path, entries = found
    entry = entries.get(_text(key))
    if entry is None:
        return None
    if not _is_entry(entry):
        note(f"{path}: a kept answer is damaged (not a time and a value): asked again")
        return None
    if not 0 <= time.time() - entry["time"] < keep_s:
        return None
    value = read(entry["value"])
    if value is None:
        note(f"{path}: a kept answer is not one this tool keeps: asked again")
    return value


def put(file: str, key: Any, value: Any) -> None:
    """Keep `value` (JSON) under `key` in `file`, replacing the file atomically, with the
    other entries that read as entries."""
    found = _entries(file)
    if found is None:
        return
    path, entries = found
    kept = {k: e for k, e in entries.items() if _is_entry(e)}
    kept[_text(key)] = {"time": time.time(), "value": value}
    with contextlib.suppress(OSError, ValueError, TypeError, RecursionError):
        blob = json.dumps(kept).encode()
        atomic(path, lambda p: private.write(p, blob))


def _entries(file: str) -> tuple[Path, dict[str, Any]] | None:
    """`file`'s path and its entries (none where it is missing, damaged or not private,
    which is said); None where there is no private cache folder."""
    try:
        path = cache_dir() / file
    except OSError:  # cache_folder said why, where another user is the reason
        return None
    try:
        text = private.read(path, MAX_BYTES)
    except FileNotFoundError:
        return path, {}
    except private.NotPrivate as exc:
        note(f"{exc.reason}: its answers are not read, but asked again")
        return path, {}
    except OSError:
        return path, {}
    try:
        if len(text) > MAX_BYTES:
            raise ValueError(f"over {MAX_BYTES >> 20} MiB")
        found = json.loads(text)
        if not isinstance(found, dict):
            raise ValueError(f"a JSON {type(found).__name__}, not an object")
    except (ValueError, RecursionError) as exc:
        why = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
        note(f"{path} is damaged ({why}): its answers are asked again")
        return path, {}
    return path, found


def _is_entry(entry: Any) -> bool:
    """Whether `entry` is what `put` writes: a time (a finite number) and a value."""
    return isinstance(entry, dict) and set(entry) == {"time", "value"} \
        and isinstance(entry["time"], int | float) and not isinstance(entry["time"], bool) \
        and math.isfinite(entry["time"])


def _text(key: Any) -> str:
    return json.dumps([boot(), key])
