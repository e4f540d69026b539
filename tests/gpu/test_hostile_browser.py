"""The browser against another local user and against faults (issue 53, items 1, 10, 12).

Another user (`nobody`, in a child process that drops root) tries what one did on a shared
GPU server: drive the root-run browser's DevTools (it had opened file:///etc/shadow through
the port on 127.0.0.1) and fetch from the page server. A browser killed while a page call
waits ends in one line; a profile left by a killed worker is swept by the next browser of
the same user, never another user's; flags from the environment that do not parse, or that
would open DevTools again, are one line and exit 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import browser_found, in_process

from gpuoverhead.browser import launcher, server
from gpuoverhead.browser.adapter import GPU_FLAGS_VAR
from gpuoverhead.browser.cdp import BrowserError, Page
from gpuoverhead.drivers import chromium as page

BROWSER, needs_browser = browser_found()
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="/proc and another uid: Linux")


def _other_user() -> pwd.struct_passwd | None:
    with contextlib.suppress(KeyError):
        return pwd.getpwnam("nobody")
    return None


OTHER = _other_user()
as_another_user = pytest.mark.skipif(
    os.geteuid() != 0 or OTHER is None or OTHER.pw_uid == os.geteuid(),
    reason="becoming another local user (nobody) needs root and a `nobody` account")


def as_nobody(probe, *args):
    """`probe(*args)`'s JSON answer, run in a forked child that has become `nobody` (no
    groups, no way back): what another local user gets."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only what was imported before the fork
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(OTHER.pw_gid)
            os.setuid(OTHER.pw_uid)
            os.write(write, json.dumps(probe(*args)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        text = answer.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child as nobody failed"
    return json.loads(text)


def http_get(address: list, path: str) -> str:
    """The status line (or the error) of GET `path` from a TCP server at `address`."""
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(2.0)
            sock.connect(tuple(address))
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                         "\r\n".encode())
            reply = b""
            with contextlib.suppress(TimeoutError):  # a server that keeps it open
                while chunk := sock.recv(65536):
                    reply += chunk
    except OSError as exc:
        return f"error: {exc.__class__.__name__}"
    head, _, body = reply.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode() + (" devtools" if b"webSocketDebugger" in body
                                              else "")


def probe_listeners(tcp: list, unix: list, page_server: list) -> dict:
    """As another user: DevTools' /json/version at each TCP listener, a connection to each
    listening Unix socket, and the page server's root (whose 404 shows the probe works)."""
    found = {"tcp": {f"{a}:{p}": http_get([a, p], "/json/version") for a, p in tcp},
             "unix": {}, "page_server": http_get(page_server, "/index.html")}
    for path in unix:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(path)
            found["unix"][path] = "connected"
        except OSError as exc:
            found["unix"][path] = exc.__class__.__name__
    return found


def group_listeners(group: int) -> tuple[list, list]:
    """The TCP (address, port) and Unix (path) sockets that processes of process group
    `group` listen on, from /proc (as root: every process's fds)."""
    inodes = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError):
            if int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[2]) \
                    != group:
                continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    tcp = []
    for name, host in (("tcp", "127.0.0.1"), ("tcp6", "::1")):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                tcp.append((host, int(fields[1].rsplit(":", 1)[1], 16)))
    unix = [fields[7] for fields in (line.split() for line in
                                     Path("/proc/net/unix").read_text().splitlines()[1:])
            if len(fields) > 7 and fields[6] in inodes and int(fields[3], 16) & 0x10000
            and not fields[7].startswith("@")]  # listening, with a path
    return tcp, unix


@needs_browser
@as_another_user
@pytest.mark.slow
def test_hostile_another_user_cannot_reach_the_browsers_devtools():
    """The browser holds no TCP listener (its DevTools is a pipe); another user reaches no
    DevTools at any socket it listens on (Chromium's singleton socket lies in a folder of
    its own user's); the same user's probe of the page server does answer (404)."""
    with page.page(BROWSER) as (browser, tab):
        assert tab.evaluate("1 + 1") == 2  # the pipe carries the page's calls
        tcp, unix = group_listeners(browser.process.pid)
        url = tab.evaluate("location.href")
        port = int(url.split(":")[2].split("/")[0])
        found = as_nobody(probe_listeners, tcp, unix, ["127.0.0.1", port])
    assert tcp == [], f"the browser listens on TCP {tcp}: {found['tcp']}"
    assert not any("devtools" in v for v in found["tcp"].values()), found
    assert all(v != "connected" for v in found["unix"].values()), found
    assert found["page_server"].endswith(" 404 Not Found"), found


FOREIGN = ["/", "/index.html", "/runner.js", "/kernel.wgsl", "/json/version",
           "/{wrong}/index.html", "/{token}", "/{token}/", "/{token}/../index.html",
           "/{token}/nothing.js", "/{token}x/index.html", "/{half}/index.html",
           "/{token}/index.html/", "/{token}/x/index.html"]


@as_another_user
@pytest.mark.parametrize("path", FOREIGN)
def test_hostile_the_page_server_serves_nothing_outside_its_token(path):
    """Another user who finds the server's port (any local user can connect to 127.0.0.1)
    gets nothing without the path token the browser was told over its pipe; the token's
    own paths serve the page (to this process here)."""
    with server.serve("@compute @workgroup_size(1) fn main() {}") as url:
        port, token = int(url.split(":")[2].split("/")[0]), url.rstrip("/").rsplit("/", 1)[1]
        foreign = path.format(token=token, wrong="A" * len(token), half=token[:len(token) // 2])
        found = as_nobody(http_get, ["127.0.0.1", port], foreign)
        assert found.endswith(" 404 Not Found"), (foreign, found)
        ours = [http_get(["127.0.0.1", port], f"/{token}/{name}")
                for name in ("index.html", "runner.js", "kernel.wgsl")]
    assert all(status.endswith(" 200 OK") for status in ours), ours


@needs_browser
@pytest.mark.slow
def test_hostile_a_browser_killed_while_the_page_works_is_one_line():
    """kill -9 of the page's renderer, then (a new page opened) of the browser, each while a
    page call waits, as mid-sampling: a BrowserError of one line that says so, not the
    transport's traceback (websockets' ConnectionClosedError was the job's 40-line error).
    One browser for both (a start is about 1.4 CPU-s): the renderer's end leaves it running.
    Its start sweeps a stale profile of this user's, and its own profile goes with it, killed
    as it is (the sweep's test, a browser start less)."""
    dead = subprocess.Popen(["true"])
    dead.wait()  # its id names a process that is gone
    stale = Path(tempfile.gettempdir()) / f"{launcher.PROFILE}{dead.pid}-left"
    stale.mkdir(mode=0o700)
    with page.page(BROWSER) as (browser, tab):
        assert not stale.exists()  # the sweep runs as a browser starts (each worker's)
        assert Path(browser.profile).name.startswith(f"{launcher.PROFILE}{os.getpid()}-")
        url = tab.evaluate("location.href")
        renderers = [int(line.split()[0]) for line in subprocess.run(
            ["ps", "-o", "pid=,args=", "-g", str(browser.process.pid)], capture_output=True,
            text=True).stdout.splitlines() if "--type=renderer" in line]
        said = killed_while_waiting(tab, renderers)
        assert "page ended" in said, said
        reaped(renderers)  # else the next page may get the spare renderer killed with them
        said = killed_while_waiting(browser.open(url), [browser.process.pid])
        assert "killed by SIGKILL" in said, said
    assert not Path(browser.profile).exists()


def reaped(pids: list[int], wait_s: float = 10.0) -> None:
    """Wait until processes `pids` (killed) are gone, reaped by their parent: until then
    the browser may not know that they ended."""
    end = time.monotonic() + wait_s
    while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < end:
        time.sleep(0.02)


def killed_while_waiting(tab: Page, victims: list[int]) -> str:
    """What the BrowserError says (one line, of Runtime.evaluate) when `victims` get SIGKILL
    while `tab` waits on a page call."""
    assert victims
    timer = threading.Timer(0.5, lambda: [os.kill(v, signal.SIGKILL) for v in victims])
    timer.start()
    try:
        with pytest.raises(BrowserError) as raised:
            tab.evaluate("new Promise(r => setTimeout(r, 20000))")
    finally:
        timer.cancel()
    said = str(raised.value)
    assert "\n" not in said and "during Runtime.evaluate" in said, said
    return said


def test_hostile_a_killed_workers_profile_is_swept_but_not_another_users(tmp_path):
    """A worker killed outright (its parent kill -9'd) leaves its browser's profile in the
    temporary folder: the next browser of this user removes it where its creating process
    is gone; a live process's, another user's, a link and a folder others may write stay."""
    dead = subprocess.Popen(["true"])
    dead.wait()  # its id names a process that is gone
    stale = tmp_path / f"{launcher.PROFILE}{dead.pid}-stale"
    live = tmp_path / f"{launcher.PROFILE}{os.getpid()}-live"
    shared = tmp_path / f"{launcher.PROFILE}{dead.pid}-shared"
    link = tmp_path / f"{launcher.PROFILE}{dead.pid}-link"
    old = tmp_path / f"{launcher.PROFILE}abc123xy"  # an older name: no process id
    socket_folder = tmp_path / "org.chromium.Chromium.abcdef"
    for folder in (stale, live, shared, old, socket_folder):
        folder.mkdir(mode=0o700)
        (folder / "Local State").write_text("{}")
    (stale / "SingletonSocket").symlink_to(socket_folder / "SingletonSocket")
    shared.chmod(0o777)
    link.symlink_to(live, target_is_directory=True)
    others = []
    if os.geteuid() == 0 and OTHER is not None:
        theirs = tmp_path / f"{launcher.PROFILE}{dead.pid}-theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, OTHER.pw_uid, OTHER.pw_gid)
        others.append(theirs)
    assert launcher.sweep_profiles(str(tmp_path)) == [str(stale)]
    assert not stale.exists() and not socket_folder.exists()
    assert all(p.exists() for p in (live, shared, link, old, *others))
    assert (live / "Local State").exists()


@pytest.mark.parametrize(("variable", "value", "said"), [
    (launcher.EXTRA_FLAGS, '--user-agent="unclosed', "no closing quotation"),
    (launcher.EXTRA_FLAGS, "--foo='", "no closing quotation"),
    (launcher.EXTRA_FLAGS, "--x=\\", "no escaped character"),
    (GPU_FLAGS_VAR, '--use-angle="vulkan', "no closing quotation"),
    (launcher.EXTRA_FLAGS, "--remote-debugging-port=9222", "every local user"),
    (launcher.EXTRA_FLAGS, "--remote-debugging-address=0.0.0.0", "every local user"),
    (GPU_FLAGS_VAR, "--enable-features=Vulkan --remote-debugging-port=0", "every local user"),
])
def test_hostile_chromium_flags_that_do_not_parse_are_one_line(monkeypatch, tmp_path,
                                                               variable, value, said):
    """An unbalanced quote ended in shlex's "No closing quotation" traceback; a flag that
    opens DevTools on a port would undo the pipe. One line naming the variable, exit 2."""
    monkeypatch.setenv(variable, value)
    result = in_process("run", "--suite", "ci", "--implementation", "chromium",
                        "--browser", sys.executable, "--out", str(tmp_path / "o"))
    line = result.stderr.strip()
    assert result.returncode == 2 and "\n" not in line, result.stderr
    assert variable in line and said in line and "Traceback" not in line, line
    assert not (tmp_path / "o").exists()
