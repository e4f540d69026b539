"""Where gpuoverhead keeps what outlives a run on this machine: the compiled C loop, the
answers kept a while (gpu/kept.py), start-up times (run/startups.py) and parsed C headers
(gpu/kept_header.py); and the runtime folder and shader cache Mesa's drivers get. Each is a
folder only this user can have made or changed (gpu/private.py): one that another user
could have planted is passed over, said once in a line."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from gpuoverhead.gpu import private

_said: set[str] = set()


def cache_dir() -> Path:
    """The private folder to keep things in, made: the OS's per-user cache folder for
    gpuoverhead, else (one not private, which is said, or one that cannot be made) the
    temporary one's; NotPrivate or another OSError where neither can be had (said too,
    where the reason is another user's)."""
    try:
        usual = _usual_cache_dir()
    except RuntimeError:  # "Could not determine home directory."
        return temporary_cache_dir()
    try:
        return private.folder(usual)
    except private.NotPrivate as exc:
        refused = exc
    except OSError as exc:  # a read-only home, an unwritable $XDG_CACHE_HOME: the temporary one
        try:
            return temporary_cache_dir()
        except OSError as second:  # say both folders tried, each with why
            raise OSError(second.errno, f"{usual}: {exc.strerror or exc}; {_temporary()}: "
                          f"{second.strerror or second}") from second
    try:
        fallback = temporary_cache_dir()
    except OSError as exc:
        note(f"no cache folder is private ({refused.reason}; {_why(exc)}): nothing is kept "
             "or loaded from one")
        raise
    note(f"the cache folder is not private ({refused.reason}): using {fallback} instead")
    return fallback


def _usual_cache_dir() -> Path:
    """The OS's per-user cache folder for gpuoverhead; RuntimeError where this user has no
    home folder (no $HOME and no passwd entry: a container's bare uid)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "gpuoverhead" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "gpuoverhead"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuoverhead"


def temporary_cache_dir() -> Path:
    """The fallback cache folder, this user's under the temporary one, made and checked
    private (a library loaded from a shared /tmp must not be one that another user put
    there): NotPrivate where another user made that name first."""
    return private.folder(_temporary())


def _temporary() -> Path:
    user = f"-{os.geteuid()}" if private.checked() else ""  # Windows: TEMP is per user
    return Path(tempfile.gettempdir()) / f"gpuoverhead-cache{user}"


def runtime_dir() -> Path | None:
    """A private runtime folder for Mesa's drivers: `gpuoverhead-runtime-<uid>` under the
    temporary folder, made 0700 and checked; where something else has that name (another
    user's folder, a link, a file), a fresh one (mkdtemp, removed at exit), said; None
    where the temporary folder itself cannot hold a private one (nothing is made there)."""
    temp = Path(tempfile.gettempdir())
    named = temp / f"gpuoverhead-runtime-{os.geteuid()}"
    try:
        return private.folder(named)
    except OSError as exc:  # another user's, a link, a file: or the temporary folder's fault
        refused = exc
    try:
        private.check_parent(temp)  # mkdtemp's folder there would be theirs to swap
    except OSError:
        return None
    fresh = Path(tempfile.mkdtemp(prefix=f"{named.name}-", dir=temp))
    try:
        private.folder(fresh)
    except OSError:  # the temporary folder's fault: no runtime folder (Mesa says so)
        shutil.rmtree(fresh, ignore_errors=True)
        return None
    atexit.register(shutil.rmtree, fresh, ignore_errors=True)
    note(f"the runtime folder is not private ({_why(refused)}): using {fresh} instead")
    return fresh


def mesa_cache_env() -> dict[str, str]:
    """What the environment needs for Mesa's shader cache to be private: nothing where the
    folder Mesa keeps it under ($MESA_SHADER_CACHE_DIR, else $XDG_CACHE_HOME, else
    ~/.cache) is, else MESA_SHADER_CACHE_DIR in the cache folder, else the cache turned off
    (each said). llvmpipe and lavapipe keep each shader's compiled machine code there (an
    ELF object, checked by a CRC only) and run what they find, and Mesa takes a folder by
    that name whoever made it: in a shared XDG_CACHE_HOME another user's code would run."""
    base = next((os.environ[v] for v in ("MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR",
                                         "XDG_CACHE_HOME") if os.environ.get(v)), None)
    try:
        private.folder(Path(base) if base else Path.home() / ".cache")
        return {}
    except private.NotPrivate as exc:
        refused = exc
    except (RuntimeError, OSError):  # no home folder, or one that cannot be written: Mesa
        return {}                    # keeps nothing there either
    try:
        folder = private.folder(cache_dir() / "mesa")
    except OSError:
        note(f"Mesa's shader cache is not private ({_why(refused)}): it is turned off")
        return {"MESA_SHADER_CACHE_DISABLE": "true"}
    note(f"Mesa's shader cache is not private ({_why(refused)}): using {folder} instead")
    return {"MESA_SHADER_CACHE_DIR": str(folder)}


def _why(exc: OSError) -> str:
    return getattr(exc, "reason", f"{exc.filename}: {exc.strerror}")


def note(text: str) -> None:
    """Say `text` on stderr in one line (control characters spelled out), once a process,
    and only in the main one: a run's workers find the same and stay quiet."""
    import multiprocessing

    if text in _said or multiprocessing.parent_process() is not None:
        return
    _said.add(text)
    line = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    with contextlib.suppress(OSError, ValueError):
        print(f"note: {line}", file=sys.stderr, flush=True)
