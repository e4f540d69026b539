"""Find a Chromium, start it headless with WebGPU on, and make sure it ends with us.

Each worker process gets a browser of its own (a fresh process, as every implementation
gets), in a new process group with a fresh profile: closing kills the whole group and
removes the profile; on Linux the browser is also told to die with its parent, so a worker
killed outright leaves no browser behind, and the next browser started removes the
profiles of this user that such a worker left (`sweep_profiles`). The browser is driven over
its DevTools pipe (browser/cdp.py), never a port: nobody else can reach it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gpuoverhead.browser import surface
from gpuoverhead.browser.cdp import BrowserError, Connection, Page
from gpuoverhead.errors import UserError
from gpuoverhead.gpu import private

#: Where a Chromium is looked for when --browser does not say (Debian's binary first: the
#: /usr/bin/chromium wrapper prints a shell error in headless use).
CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome",
              "google-chrome-stable", "chrome",
              "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
              r"C:\Program Files\Google\Chrome\Application\chrome.exe")
#: Headless with WebGPU; developer features give adapter info and unquantized timestamps
#: (Dawn's own toggle off too, as wgpudawn's device has it); DevTools over the pipe of fds
#: 3 and 4 (browser/cdp.py).
FLAGS = ("--headless=new", "--enable-unsafe-webgpu", "--enable-webgpu-developer-features",
         "--disable-dawn-features=timestamp_quantization", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--remote-debugging-pipe")
#: More flags from the environment, after a flag set's own (browser/adapter.py); Chromium
#: takes the last of a repeated switch, so an `--enable-features` here replaces the set's.
EXTRA_FLAGS = "GPUOVERHEAD_CHROMIUM_FLAGS"
#: Switches that would open DevTools beside the pipe, to every local user: refused, after
#: either prefix Chromium takes on POSIX (`-remote-debugging-port=0` opens one as `--` does).
OPENERS = ("remote-debugging-port", "remote-debugging-address")
#: The name of a profile folder in the temporary folder: PROFILE, the creating process's
#: id, `-`, mkdtemp's random part.
PROFILE = "gpuoverhead-chromium-"
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
    extra = environment_flags(EXTRA_FLAGS)
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return [*FLAGS, *(["--no-sandbox"] if root else []), *chosen, *extra]


def environment_flags(variable: str) -> list[str]:
    """The flags environment variable `variable` holds, split as shell words; a UserError
    (one line) where its quotes do not close, or where a flag would open DevTools to every
    local user (OPENERS)."""
    value = os.environ.get(variable, "")
    try:
        words = shlex.split(value)
    except ValueError as exc:
        shown = value if len(value) <= 80 else value[:80] + "..."
        raise UserError(f"{variable}={shown!r}: {str(exc).lower()} (it is split as a "
                        "shell splits words: close the quote or escape it)") from None
    opener = next((w for w in words if w.partition("=")[0].lstrip("-") in OPENERS), None)
    if opener is not None:
        raise UserError(f"{variable}: {opener[:80]} would let every local user drive the "
                        "browser; the tool talks to it over a pipe of its own")
    return words


def sweep_profiles(folder: str | None = None) -> list[str]:
    """Remove the profile folders of this user's browsers whose creating process is gone (a
    worker killed outright never closed its browser: 2-3 MB each), and return their paths.
    Another user's folder, a link, a folder others may write and one whose process still
    runs are left as they are."""
    found: list[str] = []
    try:
        entries = list(os.scandir(folder or tempfile.gettempdir()))
    except OSError:
        return found
    for entry in entries:
        creator = _creator(entry.name)
        if creator is not None and _private(entry.path) and not _alive(creator):
            _remove_profile(entry.path)
            found.append(entry.path)
    return found


def _private(path: str) -> bool:
    """A folder (not a link) of this user's that nobody else may write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _remove_profile(profile: str) -> None:
    """A profile folder and the folder of the socket that keeps one browser a profile
    (Chromium's `org.chromium.Chromium.*` in the temporary folder, linked from the profile's
    SingletonSocket), which a killed browser leaves behind."""
    with contextlib.suppress(OSError):
        socket_folder = os.path.dirname(os.readlink(os.path.join(profile, "SingletonSocket")))
        if os.path.basename(socket_folder).startswith("org.chromium.") and \
                _private(socket_folder):
            shutil.rmtree(socket_folder, ignore_errors=True)
    shutil.rmtree(profile, ignore_errors=True)


def _creator(name: str) -> int | None:
    """The process id in a profile folder's name (PROFILE), else None: ASCII digits that fit
    a pid_t (anyone may name a folder in /tmp so: `2²` or 20 digits had ended every browser
    start in int()'s ValueError or os.kill's OverflowError)."""
    pid, dash, _ = name.removeprefix(PROFILE).partition("-")
    return int(pid) if name.startswith(PROFILE) and dash and pid.isascii() and pid.isdigit() \
        and len(pid) <= 9 else None


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, as another user's
        return True
    return True


class Browser:
    """A running headless browser and its DevTools connection; use as a context manager."""

    def __init__(self, executable: str, chosen: Sequence[str] = (), call_s: float = CALL_S,
                 keep_log: Path | None = None) -> None:
        if sys.platform == "win32":
            raise BrowserError("the tool drives Chromium over its DevTools pipe (file "
                               "descriptors 3 and 4), which Windows does not hand down")
        self.executable, self.flags, self.call_s = executable, flags(chosen), call_s
        self.keep_log = keep_log  # where its stderr is copied on close (the flag probe's)
        temp = tempfile.gettempdir()
        try:  # where others may move entries, theirs could take the profile's place
            private.check_parent(Path(temp))
        except OSError as exc:
            raise BrowserError(f"no private browser profile can be made in {temp} "
                               f"({getattr(exc, 'reason', exc)}): set TMPDIR to a folder "
                               "of this user's") from None
        sweep_profiles()
        self.profile = tempfile.mkdtemp(prefix=f"{PROFILE}{os.getpid()}-")
        self.process: subprocess.Popen | None = None
        self.connection: Connection | None = None
        self.product = ""

    def __enter__(self) -> Browser:
        self.log = Path(self.profile) / "stderr.log"  # a file: a full pipe would block it
        try:
            self.connection = self._start()
            self.product = self.connection.call("Browser.getVersion", timeout_s=START_S
                                                ).get("product", "")
        except OSError as exc:  # it cannot be executed after all (a script with no #!)
            self.close()
            raise BrowserError(f"cannot start {self.executable}: {exc.strerror or exc}") \
                from None
        except BrowserError as exc:  # while it runs, what its pipe did: not always silence
            assert self.process is not None
            why = self._how_it_ended() if self.process.poll() is not None else str(exc)
            self.close()
            raise BrowserError(f"{self.executable} did not start: {why}") from None
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _start(self) -> Connection:
        """The browser started, with the browser's ends of two pipes as its fds 3 (commands
        in) and 4 (messages out), and the surface layer where its flags put ANGLE on Vulkan
        (browser/surface.py); our ends as its DevTools connection."""
        commands_in, commands_out = os.pipe()
        messages_in, messages_out = os.pipe()
        theirs = (_above_stdio(commands_in), _above_stdio(messages_out))
        try:
            with open(self.log, "wb") as log, _fds_3_and_4_taken():
                self.process = subprocess.Popen(
                    [self.executable, *self.flags, f"--user-data-dir={self.profile}",
                     "about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=log, start_new_session=True, pass_fds=(3, 4),
                    env={**os.environ, **surface.environment(self.flags)},
                    preexec_fn=lambda: _in_child(*theirs))
        except BaseException:
            os.close(commands_out)
            os.close(messages_in)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        return Connection(commands_out, messages_in, self.call_s,
                          lambda: f"{self.executable} {self._how_it_ended()}")

    def _how_it_ended(self) -> str:
        """How the browser ended, in a few words, once its end of the pipe closed."""
        assert self.process is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1.0)
        code = self.process.returncode
        if code is None:
            return "closed its DevTools pipe"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by {signal.Signals(-code).name}"
            return f"was killed by signal {-code}"
        last = self.log_tail(1).strip()[:200]
        return f"exited with code {code}" + (f" ({last})" if last else "")

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the browser wrote to stderr (its GPU process's errors among them)."""
        with contextlib.suppress(OSError, AttributeError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def version(self) -> str:
        return self.product

    def open(self, url: str) -> Page:
        assert self.connection is not None
        return Page(self.connection, url)

    def close(self) -> None:
        """End the browser and every process it started, and remove its profile."""
        if self.connection is not None:
            # A browser already gone fails this: the kill below finishes the job.
            with contextlib.suppress(Exception):
                self.connection.call("Browser.close", timeout_s=2.0)
            self.connection.close()
            self.connection = None
        if self.process is not None:
            _kill_group(self.process)
            self.process = None
        if self.keep_log is not None:
            with contextlib.suppress(OSError):
                shutil.copyfile(Path(self.profile) / "stderr.log", self.keep_log)
        _remove_profile(self.profile)


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(2.0)
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


def _above_stdio(fd: int) -> int:
    """`fd` moved to a number of 10 or more (closed on exec): the child's dup2 onto 3 and 4
    must not overwrite the other one of the pair."""
    import fcntl  # POSIX only (Browser refuses Windows first)

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


@contextlib.contextmanager
def _fds_3_and_4_taken() -> Iterator[None]:
    """Fds 3 and 4 open in this process while the browser is forked: subprocess keeps
    (`pass_fds`) and marks inheritable only open fds, and its own error pipe, which says
    why an exec failed, must not land on 3 or 4, where the child puts the DevTools pipe."""
    held = []
    try:
        while (fd := os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)) <= 4:
            held.append(fd)
        os.close(fd)
        yield
    finally:
        for fd in held:
            os.close(fd)


def _in_child(commands: int, messages: int) -> None:
    """In the browser's process before exec: the DevTools pipe as fds 3 and 4 and, on
    Linux, a SIGKILL when its parent (the worker) dies."""
    os.dup2(commands, 3)
    os.dup2(messages, 4)
    if sys.platform == "linux":  # ctypes imported beforehand: no import lock after a fork
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
