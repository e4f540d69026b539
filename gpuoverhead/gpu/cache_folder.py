"""Where gpuoverhead keeps what outlives a run on this machine: the compiled C loop, the
answers kept a while (gpu/kept.py), start-up times (run/startups.py) and parsed C headers
(gpu/kept_header.py)."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """The OS's per-user cache folder for gpuoverhead; where this user has no home folder
    (no $HOME and no passwd entry: a container's bare uid), the temporary one's, where
    Path.home()'s RuntimeError had ended every run."""
    try:
        if sys.platform == "win32":
            base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
            return base / "gpuoverhead" / "Cache"
        if sys.platform == "darwin":
            return Path.home() / "Library" / "Caches" / "gpuoverhead"
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuoverhead"
    except RuntimeError:  # "Could not determine home directory."
        return temporary_cache_dir()


def temporary_cache_dir() -> Path:
    """The fallback where the OS's cache folder cannot be written: a folder of this user's
    under the temporary one, made private and checked to be (a library loaded from a shared
    /tmp must not be one that another user put there)."""
    user = f"-{os.getuid()}" if hasattr(os, "getuid") else ""  # Windows: TEMP is per user
    folder = Path(tempfile.gettempdir()) / f"gpuoverhead-cache{user}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if user and (stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid()
                 or info.st_mode & 0o022):
        raise PermissionError(errno.EACCES, "not a private folder of this user", str(folder))
    return folder
