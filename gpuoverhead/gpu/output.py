"""What a native library writes to the process's stdout and stderr, kept off the terminal.

C code writes to file descriptors 1 and 2 directly, past sys.stdout and sys.stderr: a
compiler's commands, Dawn's reasons for rejecting a driver. Printed raw, they came before
the tool's first line; captured, the tool says what they mean in its own words.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO


@contextlib.contextmanager
def captured(sink: BinaryIO) -> Iterator[None]:
    """File descriptors 1 and 2, and Python's own streams (setuptools prints each command),
    into `sink` while the block runs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(sink.fileno(), 1)
    os.dup2(sink.fileno(), 2)
    try:
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
