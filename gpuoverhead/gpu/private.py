"""Folders and files that nobody but this user (and root) can have made or changed, checked
as ssh checks a key before it trusts one.

What gpuoverhead keeps in its cache folder is loaded and run as the user (the compiled C
loop, cffi's parsed header) or believed (the answers kept a while), and Mesa's drivers write
into its runtime folder: another local user who could plant or swap either would make the
tool act for them. So a folder is trusted only where every folder on its way belongs to root
or this user and nobody else may write it (or it has the sticky bit, as /tmp: others cannot
move this user's entries there), each symbolic link on the way belongs to root or this user
(and its target is checked the same way, link by link, never followed blind), and the
folder itself is this user's and writable by nobody else; a file in it only where it is a
regular file of this user's that nobody else may write (opened with O_NOFOLLOW and checked
on what was opened). What was checked stays so: nobody else can change it afterwards.
POSIX only: Windows' per-user folders are private by their access lists, not read here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

#: Symbolic links followed on one path before it is refused (Linux's own limit).
MAX_LINKS = 40
#: Mode bits that let others write.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
#: A file is opened with these: no link followed, not inherited, no wait on a FIFO.
_EVERY_OPEN = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _EVERY_OPEN
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _EVERY_OPEN


class NotPrivate(PermissionError):
    """A folder or file that another user could have made or changed; `reason` says how."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(errno.EACCES, reason, path)
        self.reason = f"{path} {reason}"


def checked() -> bool:
    """Whether this OS has the owners and modes these checks read."""
    return hasattr(os, "geteuid")


def folder(path: Path) -> Path:
    """`path`, made where missing (mode 0700, its missing parents too) and checked to be
    private: NotPrivate where it or a folder or link on its way is not, another OSError
    where it cannot be made."""
    if not checked():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path
    here, last = _walk(path)
    if last.st_uid != os.geteuid():
        raise NotPrivate(here, f"belongs to uid {last.st_uid}, not to this user")
    if last.st_mode & _OTHERS_WRITE:
        raise NotPrivate(here, f"may be written by other users (mode {_mode(last)})")
    return path


def check_parent(path: Path) -> None:
    """Raise as `folder` would where `path` (made where missing) cannot hold a private
    folder: it, or a folder or link on its way, is another user's, or others may write it
    and it has no sticky bit (as /tmp has). For a name that is not fixed (mkdtemp's), made
    only after this: nothing is made in a folder of another user's, even for a moment."""
    if checked():
        _check_on_the_way(*_walk(path), os.geteuid())


def _walk(path: Path) -> tuple[str, os.stat_result]:
    """`path` walked from the root, each missing folder made (0700) and each folder and link
    on the way checked: its last folder's path (no link in it) and lstat."""
    me, here, last = os.geteuid(), "/", os.lstat("/")
    _check_on_the_way("/", last, me)
    full = os.path.join(os.getcwd(), os.fspath(path))
    pending = _parts(full)
    links = 0
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":  # `here` holds no link: its parent is the one above it in text
            here = os.path.dirname(here)
            last = os.lstat(here)
            continue
        there = os.path.join(here, name)
        info = _made(there)
        if stat.S_ISLNK(info.st_mode):
            if info.st_uid not in (0, me):
                raise NotPrivate(there, f"is a symbolic link of uid {info.st_uid}'s")
            links += 1
            if links > MAX_LINKS:
                raise NotPrivate(path.as_posix(), "goes through too many symbolic links")
            target = os.readlink(there)
            if target.startswith("/"):
                here, last = "/", os.lstat("/")
            pending.extend(_parts(target))
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", there)
        if pending:
            _check_on_the_way(there, info, me)
        here, last = there, info
    return here, last


def read(path: Path, limit: int) -> bytes:
    """Up to `limit` + 1 bytes of `path`, a file in a folder that `folder` checked: the
    caller tells a longer file by its length. FileNotFoundError where there is none,
    NotPrivate where it is not a regular file of this user's that only this user may
    write (a symbolic link among them)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW's answer to a link
            raise NotPrivate(str(path), "is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as f:
        _check_file(str(path), os.fstat(fd))
        return f.read(limit + 1)


def check_file(path: Path) -> None:
    """Raise as `read` would, for a file that is loaded by name (a library): `path` itself
    (lstat) must be a regular file of this user's that only this user may write."""
    _check_file(str(path), os.lstat(path))


def write(path: Path, data: bytes) -> None:
    """Write `data` to `path`, a new file (mode 0600: it must not be there yet) in a checked
    folder; for whole_files.atomic, which moves it over its final name."""
    fd = os.open(path, _WRITE_FLAGS, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _made(there: str) -> os.stat_result:
    """`there`'s lstat, made a folder (0700) first where there is nothing: one that another
    user made first in a shared parent is found and refused by the caller's checks."""
    with contextlib.suppress(FileNotFoundError):
        return os.lstat(there)
    with contextlib.suppress(FileExistsError):
        os.mkdir(there, 0o700)
    return os.lstat(there)


def _check_on_the_way(there: str, info: os.stat_result, me: int) -> None:
    if info.st_uid not in (0, me):
        raise NotPrivate(there, f"belongs to uid {info.st_uid}, not to this user or root")
    if info.st_mode & _OTHERS_WRITE and not info.st_mode & stat.S_ISVTX:
        raise NotPrivate(there, f"may be written by other users (mode {_mode(info)}, "
                                "no sticky bit)")


def _check_file(path: str, info: os.stat_result) -> None:
    if not checked():
        return
    if stat.S_ISLNK(info.st_mode):
        raise NotPrivate(path, "is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise NotPrivate(path, "is not a regular file")
    if info.st_uid != os.geteuid():
        raise NotPrivate(path, f"belongs to uid {info.st_uid}, not to this user")
    if info.st_mode & _OTHERS_WRITE:
        raise NotPrivate(path, f"may be written by other users (mode {_mode(info)})")


def _parts(path: str) -> list[str]:
    """`path`'s names as a stack, the first on top."""
    return [p for p in reversed(path.split("/")) if p]


def _mode(info: os.stat_result) -> str:
    return f"{stat.S_IMODE(info.st_mode):04o}"
