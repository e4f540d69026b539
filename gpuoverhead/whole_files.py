"""Files written whole or not at all: results, reports and what the cache folder keeps;
and stdout written whole or said to be cut short.

A file is written beside its final name and moved over it with os.replace, which is atomic
on POSIX and Windows, so a reader never sees a half-written one. On Windows the replace
fails while another process holds the file open (a reader, an editor, a virus scan): it is
tried again for a few seconds before the error is given up to.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from gpuoverhead.errors import OutputClosed

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


class _WholeWrites(io.RawIOBase):
    """A file descriptor that each write writes whole, or raises OutputClosed: a pipe takes
    part of a large write, and where its reader has gone the rest fails, which CPython's
    text layer drops without a word (gh-85393: `compare --json | head -c 100` exited 0)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream  # kept open: its file descriptor is the one written
        self._fd = stream.fileno()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: bytes) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        while view:
            try:
                view = view[os.write(self._fd, view):]
            except BrokenPipeError:
                raise OutputClosed from None
        return memoryview(data).nbytes


@contextmanager
def whole_stdout() -> Iterator[None]:
    """stdout, where it is no terminal, written whole or OutputClosed while the command runs,
    and flushed before it ends (where the flush can still say so)."""
    stream = sys.stdout
    if not stream.isatty():
        stream.flush()
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_WholeWrites(stream)),
                                      encoding=stream.encoding, errors=stream.errors,
                                      line_buffering=stream.line_buffering)
    try:
        yield
    finally:
        sys.stdout.flush()
