"""Find a Chromium, start it headless with WebGPU on, and make sure it ends with us.

Each worker process gets a browser of its own (a fresh process, as every implementation
gets), in a new process group with a fresh profile: closing kills the whole group and
removes the profile; on Linux the browser is also told to die with its parent, so a worker
killed outright leaves no browser behind.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuoverhead.browser.cdp import BrowserError, Connection, Page, require

#: Where a Chromium is looked for when --browser does not say (Debian's binary first: the
#: /usr/bin/chromium wrapper prints a shell error in headless use).
CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome",
              "google-chrome-stable", "chrome",
              "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
              r"C:\Program Files\Google\Chrome\Application\chrome.exe")
#: Headless with WebGPU; developer features give adapter info and unquantized timestamps.
FLAGS = ("--headless=new", "--enable-unsafe-webgpu", "--enable-webgpu-developer-features",
         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
         "--remote-debugging-port=0")
#: More flags from the environment, after a flag set's own (browser/adapter.py); Chromium
#: takes the last of a repeated switch, so an `--enable-features` here replaces the set's.
EXTRA_FLAGS = "GPUOVERHEAD_CHROMIUM_FLAGS"
START_S = 30.0
CALL_S = 120.0


def find(path: str | None) -> str:
    """The browser to start: `path` if given, else the first candidate found."""
    if path:
        return _given(path)
    for candidate in CANDIDATES:
        found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        if found:
            return found
    raise BrowserError("no Chromium found (looked for " + ", ".join(CANDIDATES[:5]) +
                       "); install one (apt-get install chromium) or pass --browser PATH")


def _given(path: str) -> str:
    """--browser's program (a path, or a name on PATH), else a BrowserError that says what
    is there instead: a file that is not executable had ended in a PermissionError."""
    found = shutil.which(path)
    if found:
        return found
    given = Path(path)
    what = ("a folder, not a program" if given.is_dir() else
            "not executable (chmod +x it, or name the browser's program)" if given.exists()
            else "no such file, nor a program of that name on PATH")
    raise BrowserError(f"--browser {path!r}: {what}; pass the path of a Chromium or Chrome")


def flags(chosen: Sequence[str] = ()) -> list[str]:
    """The command line's flags: the tool's, a flag set's (`chosen`), the environment's."""
    extra = shlex.split(os.environ.get(EXTRA_FLAGS, ""))
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return [*FLAGS, *(["--no-sandbox"] if root else []), *chosen, *extra]


class Browser:
    """A running headless browser and its DevTools connection; use as a context manager."""

    def __init__(self, executable: str, chosen: Sequence[str] = (), call_s: float = CALL_S,
                 keep_log: Path | None = None) -> None:
        require()
        self.executable, self.flags, self.call_s = executable, flags(chosen), call_s
        self.keep_log = keep_log  # where its stderr is copied on close (the flag probe's)
        self.profile = tempfile.mkdtemp(prefix="gpuoverhead-chromium-")
        self.process: subprocess.Popen | None = None
        self.connection: Connection | None = None

    def __enter__(self) -> Browser:
        self.log = Path(self.profile) / "stderr.log"  # a file: a full pipe would block it
        try:
            with open(self.log, "wb") as log:
                self.process = subprocess.Popen(
                    [self.executable, *self.flags, f"--user-data-dir={self.profile}",
                     "about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=log, start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None)
            self.connection = Connection(self._endpoint(), self.call_s)
        except OSError as exc:  # it cannot be executed after all (a script with no #!)
            self.close()
            raise BrowserError(f"cannot start {self.executable}: {exc.strerror or exc}") \
                from None
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _endpoint(self) -> str:
        """The browser's WebSocket URL, from the DevToolsActivePort file it writes."""
        port_file, end = Path(self.profile) / "DevToolsActivePort", time.monotonic() + START_S
        assert self.process is not None
        while time.monotonic() < end:
            if self.process.poll() is not None:
                err = self.log.read_text(errors="replace").strip()
                last = err.splitlines()[-1] if err else "no message"
                raise BrowserError(f"{self.executable} exited at start (code "
                                   f"{self.process.returncode}): {last[:200]}")
            lines = port_file.read_text().split() if port_file.exists() else []
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.05)
        raise BrowserError(f"{self.executable} did not open its DevTools port in {START_S:g} s")

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the browser wrote to stderr (its GPU process's errors among them)."""
        with contextlib.suppress(OSError, AttributeError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def version(self) -> str:
        assert self.connection is not None
        return self.connection.call("Browser.getVersion").get("product", "")

    def open(self, url: str) -> Page:
        assert self.connection is not None
        return Page(self.connection, url)

    def close(self) -> None:
        """End the browser and every process it started, and remove its profile."""
        if self.connection is not None:
            # A browser already gone fails this: the kill below finishes the job.
            with contextlib.suppress(Exception):
                self.connection.call("Browser.close")
            self.connection.close()
            self.connection = None
        if self.process is not None:
            _kill_group(self.process)
            self.process = None
        if self.keep_log is not None:
            with contextlib.suppress(OSError):
                shutil.copyfile(Path(self.profile) / "stderr.log", self.keep_log)
        shutil.rmtree(self.profile, ignore_errors=True)


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(2.0)
    if sys.platform == "win32":
        process.kill()
        process.wait()
        return
    end = time.monotonic() + 5.0
    while time.monotonic() < end:  # until the renderer and GPU processes (its group) are gone
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            break
        process.poll()
        if process.returncode is not None and not _running_in_group(process.pid):
            break
        time.sleep(0.02)
    process.wait()


def _running_in_group(group: int) -> bool:
    """Whether a process of this group is still more than a zombie (Linux's /proc; True
    where it cannot tell). The browser's children, once killed, wait as zombies for the
    init process to collect them: a container's (a sandbox's process_api) did so every 2 s,
    which held each browser process of a run 1-2 s longer for processes that no longer run."""
    if not os.path.isdir("/proc/self/task"):
        return True
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:  # ended since the listing
            continue
        if fields[0] != b"Z" and int(fields[2]) == group:
            return True
    return False


def _die_with_parent() -> None:
    """In the browser's process before exec: a SIGKILL when its parent (the worker) dies."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
