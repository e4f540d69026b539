"""Whether the user asked the run to stop (Ctrl-C, SIGTERM, a hang-up), kept where every
floor sees it.

The signal handler (`install`) raises KeyboardInterrupt where Python happens to be; when
that is inside a finalizer (`__del__` of a wgpu object collected in the parent) Python prints
"Exception ignored" and the run would go on. So the handler also sets `requested`, and the
runner and the worker supervisor `check` it at the points where stopping is safe.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal

#: The exit status of a command stopped by Ctrl-C or SIGTERM: the shell's for SIGINT (128 +
#: 2), which scripts and CI runners read as "interrupted", whichever of the two it was.
INTERRUPTED = 130
#: The exit status of a command stopped by a hang-up (its terminal closed): 128 + SIGHUP.
HUNG_UP = 129
#: The signal of a closed terminal (None on Windows, which has none).
SIGHUP: int | None = getattr(signal, "SIGHUP", None)
#: The signals that stop a command. Windows never delivers SIGTERM; a cancelled job or
#: console sends Ctrl-Break (SIGBREAK).
SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, SIGHUP,
                            getattr(signal, "SIGBREAK", None)) if s is not None)

requested = False
#: Whether the stop was a hang-up (the terminal closed): its exit status differs.
hung_up = False


def request(signum: int) -> None:
    """Note a stop asked for by signal `signum`; a hang-up also sends what the terminal it
    closed would have shown to /dev/null, since writing there fails (EIO) and would turn a
    clean stop into a failed one."""
    global requested, hung_up
    requested = True
    if signum == SIGHUP:
        hung_up = True
        _leave_dead_terminal()


def install(deferred: bool = False) -> None:
    """The first SIGINT, SIGTERM or SIGHUP stops the command cleanly; a second exits at once
    (not a hang-up's second: the kernel's and the shell's come together). During a run
    (`deferred`) the first only asks the runner to stop, at its next safe point (within
    0.2 s while a worker runs): raised at once, a KeyboardInterrupt can land in a wgpu
    object's finalizer, where Python swallows it. Result files are replaced atomically, so
    exiting mid-write leaves the previous complete file."""
    def second(signum: int, frame: object) -> None:
        request(signum)
        if signum != SIGHUP:
            os.write(2, b"\ninterrupted again: exiting at once\n")
            os._exit(exit_code())

    def first(signum: int, frame: object) -> None:
        for s in SIGNALS:
            signal.signal(s, second)
        request(signum)
        if not deferred:
            raise KeyboardInterrupt

    for s in SIGNALS:
        signal.signal(s, first)


def check() -> None:
    """Raise KeyboardInterrupt where a stop was asked for and not yet acted on."""
    if requested:
        raise KeyboardInterrupt


def exit_code() -> int:
    """The exit status of a command that stopped as asked."""
    return HUNG_UP if hung_up else INTERRUPTED


def _leave_dead_terminal() -> None:
    """Point stdout and stderr at /dev/null where they are a terminal that hung up (pipes,
    files and a terminal still open, as after `kill -HUP`, keep what they are given)."""
    for fd in (1, 2):
        if _hung_up(fd):
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, fd)
                os.close(null)


def _hung_up(fd: int) -> bool:
    """Whether `fd` is a terminal that hung up: the kernel then fails its calls with EIO."""
    import termios  # POSIX only, as SIGHUP is

    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return exc.args[0] == errno.EIO
    return False
