"""Whether the user asked the run to stop (Ctrl-C, SIGTERM), kept where every floor sees it.

The signal handler raises KeyboardInterrupt where Python happens to be; when that is inside a
finalizer (`__del__` of a wgpu object collected in the parent) Python prints "Exception
ignored" and the run would go on. So the handler also sets `requested`, and the runner and
the worker supervisor `check` it at the points where stopping is safe.
"""

from __future__ import annotations

requested = False


def request() -> None:
    global requested
    requested = True


def check() -> None:
    """Raise KeyboardInterrupt where a stop was asked for and not yet acted on."""
    if requested:
        raise KeyboardInterrupt
