"""Files written whole or not at all: results, reports and what the cache folder keeps.

A file is written beside its final name and moved over it with os.replace, which is atomic
on POSIX and Windows, so a reader never sees a half-written one. On Windows the replace
fails while another process holds the file open (a reader, an editor, a virus scan): it is
tried again for a few seconds before the error is given up to.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

#: Waits between tries of a replace that another process's open handle refuses.
REPLACE_WAITS_S = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


def atomic(path: Path, write: Callable[[Path], None]) -> None:
    """`write` a temporary file beside `path`, then move it over `path`; the temporary file
    is removed whatever happens (a full disk, `ulimit -f`), so no partial file is left. Its
    name is this process's: processes that keep the same cache file at once (a run's
    workers) each move a whole file of their own."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        write(tmp)
        _replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _replace(tmp: Path, path: Path) -> None:
    for wait in REPLACE_WAITS_S:
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            time.sleep(wait)
    os.replace(tmp, path)
