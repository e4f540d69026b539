"""Exceptions that the CLI turns into one clear line and an exit code, never a traceback,
and how much a line may echo of what a user or a file gave (a 900 KB suite name was echoed
whole; one warning listed 2,000 folders in 56,067 characters)."""

from __future__ import annotations

from collections.abc import Iterable

#: Items a line lists before it says how many more there are.
FEW = 5
#: Characters of a string from a user or a file that a line echoes.
ECHOED = 60


class UserError(Exception):
    """Something the user can fix: a bad suite, an unknown backend, an unwritable folder.

    The CLI prints the message as one line and exits with code 2.
    """


class OutputClosed(Exception):
    """stdout's reader closed it before everything was written (a pipe into `head`): the
    CLI says so in one line and exits 1, rather than end with part of the output and 0.
    Not an OSError, which click would end in silence."""

    def __str__(self) -> str:
        return "its reader closed it (a broken pipe); what came before is all there is"


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is running out of memory (a memory limit such as `ulimit -v`, or the
    machine's): a MemoryError; an ImportError of a library the loader could not map under
    the limit; a SystemError ('error return without exception set', as importing pandas
    under 300 MiB gave at times) where an address-space limit is set (Windows has none)."""
    if isinstance(exc, ImportError):
        return "failed to map segment" in str(exc)
    if isinstance(exc, SystemError):
        try:
            import resource
        except ImportError:
            return False
        return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
    return isinstance(exc, MemoryError)


class IntegrityError(Exception):
    """A kernel's output did not hold what the dispatches issued should have produced.

    A benchmark whose dispatches did not run would look fast, so its samples are discarded
    and the run exits non-zero.
    """


def listed(items: Iterable[object], few: int = FEW) -> str:
    """'a, b, c, d, e and 1,995 more': the first `few` items, and how many more there are."""
    found = [str(i) for i in items]
    if len(found) <= few:
        return ", ".join(found)
    return f"{', '.join(found[:few])} and {len(found) - few:,} more"


def shortened(text: str, most: int = ECHOED) -> str:
    """`text`, or its start and its length where it is longer than `most` characters."""
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


def at_most(lines: list[str], what: str, few: int = FEW) -> list[str]:
    """The first `few` lines, and one that says how many more `what` there are."""
    return lines if len(lines) <= few else \
        lines[:few] + [f"and {len(lines) - few:,} more {what}"]
