"""A held-out catalogue for issue 53's security fixes (items 1, 2, 3, 6, 10, 12): the same
causes as test_hostile_cache_folder.py, test_private.py and tests/gpu/test_hostile_cache.py
and test_hostile_browser.py, tried with fixtures those do not use, as an attacker and as a
careless user would.

The other user acts as `nobody` (conftest.as_another_user: a forked child that takes that
uid), in a folder every user may write (`shared`, mode 1777 under /tmp); where this process
cannot take another uid, those cases skip and say why. What must hold: one line and exit 2
for bad input, nothing finished lost, no traceback, nothing loaded, believed or written on
another user's behalf.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shlex
import shutil
import socket
import stat
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import (
    ROOT,
    as_another_user,
    browser_answer,
    in_process,
    kept_entry,
    notes,
    payload_pickle,
    private_folders,
    probe_answer,
    within,
)

from gpuoverhead.browser import launcher, seen, server
from gpuoverhead.browser.adapter import GPU_FLAGS_VAR, describe
from gpuoverhead.browser.cdp import BrowserError, Connection
from gpuoverhead.drivers import pytorch
from gpuoverhead.gpu import cache_folder, kept, kept_header, private
from gpuoverhead.gpu.layers import native
from gpuoverhead.run import cpus, startups

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")


# -- stale browser profiles: names that anyone may give a folder in /tmp ------------------

#: Folder names another user plants beside the tool's profiles (`gpuoverhead-chromium-<pid>-`
#: and mkdtemp's part): a process id past any pid_t, digits that are not ASCII (int() takes
#: Arabic-Indic ones and refuses a superscript), no id, no dash.
PLANTED_PROFILE_NAMES = {
    "twenty digits": "99999999999999999999-x",
    "past a pid_t": "2147483648-x",
    "a superscript digit": "2\u00b2-x",
    "Arabic-Indic digits": "\u0661\u0662\u0663-x",
    "no id": "-x",
    "no dash": "12345",
    "a sign": "+5-x",
}


@pytest.mark.parametrize("name", PLANTED_PROFILE_NAMES)
def test_hostile_stale_profile_sweep_with_names_of_another_users(name, tmp_path):
    """A folder named `gpuoverhead-chromium-99999999999999999999-x` (anyone may make one in
    /tmp) had ended every browser start, `gpuoverhead adapters` and each worker's, in
    os.kill's OverflowError traceback; `gpuoverhead-chromium-2²-x` in int()'s ValueError.
    The sweep passes over both, ours or not, and still removes this user's stale profile."""
    planted = tmp_path / f"{launcher.PROFILE}{PLANTED_PROFILE_NAMES[name]}"
    planted.mkdir(mode=0o700)
    dead = _a_dead_process()
    stale = tmp_path / f"{launcher.PROFILE}{dead}-stale"
    stale.mkdir(mode=0o700)
    assert launcher.sweep_profiles(str(tmp_path)) == [str(stale)]
    assert planted.is_dir()


def _a_dead_process() -> int:
    """The id of a process that has ended."""
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- the browser's flags from the environment --------------------------------------------

@pytest.mark.parametrize(("variable", "value"), [
    (launcher.EXTRA_FLAGS, "-remote-debugging-port=0"),
    (launcher.EXTRA_FLAGS, "--headless=new -remote-debugging-address=0.0.0.0"),
    (GPU_FLAGS_VAR, "--use-angle=vulkan -remote-debugging-port=9222"),
])
def test_hostile_chromium_flags_that_open_devtools_with_one_dash(monkeypatch, tmp_path,
                                                                 variable, value):
    """Chromium takes a switch after `-` as after `--` on POSIX: `-remote-debugging-port=0`
    opened DevTools on 127.0.0.1 to every local user beside the pipe (seen with Chromium
    156), past the check of `--remote-debugging-port`. One line, exit 2, nothing written."""
    monkeypatch.setenv(variable, value)
    result = in_process("run", "--suite", "ci", "--implementation", "chromium",
                        "--browser", sys.executable, "--out", str(tmp_path / "o"))
    line = result.stderr.strip()
    assert result.returncode == 2 and "\n" not in line, result.stderr
    assert variable in line and "every local user" in line, line
    assert not (tmp_path / "o").exists()


# -- the runtime folder Mesa gets (cli.main) ---------------------------------------------

#: cli.main with the command replaced by a report of the runtime folder it set.
RUNTIME_PROBE = """
import json, os
from gpuoverhead import cli

cli.app = lambda: print(json.dumps(os.environ.get("XDG_RUNTIME_DIR")))
cli.main()
"""


def _runtime_folder(temp: Path) -> tuple[str | None, str]:
    """The runtime folder a command gets with TMPDIR `temp`, and what it said on stderr."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    proc = subprocess.run([sys.executable, "-c", RUNTIME_PROBE], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, env={**env, "TMPDIR": str(temp)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def _their_folder(shared: Path, name: str = "theirs", mode: int = 0o755) -> Path:
    """A folder the other user made in `shared`, of `mode`."""
    folder = shared / name
    as_another_user(lambda: (folder.mkdir(), folder.chmod(mode)))
    return folder


@contextlib.contextmanager
def _folders_made_in(folder: Path) -> Iterator[list[str]]:
    """The names of the folders made in `folder` meanwhile, even those removed again
    (Linux's inotify; Python's tempfile makes and removes a file in TMPDIR to try it, which
    is no folder)."""
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK)
    if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(folder), 0x100) < 0:  # IN_CREATE
        pytest.skip("no inotify here to see a folder made and removed again")
    made: list[str] = []
    try:
        yield made
        with contextlib.suppress(BlockingIOError):
            events = os.read(fd, 1 << 16)
            while events:
                _, mask, _, size = struct.unpack_from("iIII", events)
                if mask & 0x40000000:  # IN_ISDIR
                    made.append(events[16:16 + size].rstrip(b"\0").decode())
                events = events[16 + size:]
    finally:
        os.close(fd)


def _through_their_link(shared: Path, theirs: Path) -> Path:
    as_another_user(lambda: (shared / "their-link").symlink_to(theirs))
    return shared / "their-link"


def _through_our_link(shared: Path, theirs: Path) -> Path:
    (shared / "ours").mkdir(mode=0o700)
    (shared / "ours" / "link").symlink_to(theirs)
    return shared / "ours" / "link"


TEMPORARY_FORMS = {"their folder": lambda shared, theirs: theirs,
                   "their link to it": _through_their_link,
                   "our link to it": _through_our_link}


@pytest.mark.parametrize("form", TEMPORARY_FORMS)
def test_hostile_runtime_folder_with_a_temporary_folder_of_another_users(form, shared):
    """TMPDIR that reaches another user's folder (theirs, through their link, through a
    link of ours): the runtime folder cannot be private there, and none is set; the
    fallback had still made (and removed) a mkdtemp folder in theirs, as root."""
    theirs = _their_folder(shared, mode=0o777)
    temp = TEMPORARY_FORMS[form](shared, theirs)
    with _folders_made_in(theirs) as made:
        found, _ = _runtime_folder(temp)
    assert found is None
    assert made == [] and list(theirs.iterdir()) == []


def _a_socket(path: Path) -> None:
    """A Unix socket at `path` (bound from its folder: a socket's path is short)."""
    with socket.socket(socket.AF_UNIX) as sock, contextlib.chdir(path.parent):
        sock.bind(path.name)


NAMED_FORMS: dict[str, Callable[[Path], None]] = {
    "their FIFO": lambda named: os.mkfifo(named, 0o600),
    "their socket": _a_socket,
    "their folder, sticky and open to all": lambda named: (named.mkdir(), named.chmod(0o1777)),
}


@pytest.mark.parametrize("form", NAMED_FORMS)
def test_hostile_runtime_folder_name_planted_as_another_kind(form, shared):
    """The predictable name taken first by another user's FIFO, socket or sticky folder:
    a fresh private folder is made beside it (removed at exit), said in a line."""
    named = shared / f"gpuoverhead-runtime-{os.geteuid()}"
    as_another_user(lambda: NAMED_FORMS[form](named))
    found, stderr = _runtime_folder(shared)
    assert found is not None and Path(found).parent == shared and Path(found) != named
    assert not Path(found).exists()  # removed at exit
    assert stderr.count("note: ") == 1 and "not private" in stderr, stderr


# -- the browser's profile folder --------------------------------------------------------

#: A "browser" that writes a line to its stderr and exits: the tool's start of it fails in
#: one line, after writing its profile's stderr.log.
FAKE_BROWSER = "#!/bin/sh\necho 'the browser wrote this' >&2\nexit 1\n"


@pytest.fixture
def fake_browser(tmp_path) -> Path:
    path = tmp_path / "fake-browser"
    path.write_text(FAKE_BROWSER)
    path.chmod(0o755)
    return path


def _swap_profile(profile: str, victim: Path) -> Callable[[], None]:
    """The other user's act: the profile folder moved away (its parent lets anyone move
    entries) and one of theirs put in its place, its stderr.log a link to `victim`."""
    def act() -> None:
        os.rename(profile, f"{profile}.moved")
        os.mkdir(profile, 0o777)
        os.symlink(victim, os.path.join(profile, "stderr.log"))
    return act


@pytest.mark.parametrize("mode", [0o777, 0o773], ids=["open to all", "others write"])
def test_hostile_browser_profile_in_a_folder_anyone_may_move_it_from(
        mode, shared, fake_browser, tmp_path, monkeypatch):
    """TMPDIR a folder others may write with no sticky bit (a careless `chmod 777` scratch
    folder): another user could swap the root-run browser's profile for theirs while it
    runs, and its stderr.log, a link of theirs, was written through (a file of root's
    overwritten with the browser's stderr). No profile is made there: one line, which
    says what to do."""
    temp = shared / "scratch"
    temp.mkdir()
    temp.chmod(mode)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    victim = tmp_path / "precious"
    victim.write_text("precious")
    try:
        browser = launcher.Browser(str(fake_browser))
    except BrowserError as exc:
        refused = str(exc)
    else:
        as_another_user(_swap_profile(browser.profile, victim))
        with contextlib.suppress(BrowserError), browser:
            pass
        refused = ""
    assert victim.read_text() == "precious", "the browser wrote through their link"
    assert "\n" not in refused and "TMPDIR" in refused and str(temp) in refused, refused
    assert list(temp.iterdir()) == []


def test_a_browser_profile_in_a_sticky_folder_is_private_and_removed(shared, fake_browser,
                                                                     monkeypatch):
    """The control: in a folder every user may write with the sticky bit (as /tmp), the
    profile is made 0700 and a browser that fails says so in one line, profile removed."""
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    browser = launcher.Browser(str(fake_browser))
    info = os.lstat(browser.profile)
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700
    with pytest.raises(BrowserError) as raised, browser:
        pass
    said = str(raised.value)
    assert "\n" not in said and "exited with code 1 (the browser wrote this)" in said, said
    assert not os.path.exists(browser.profile)


# -- Mesa's shader cache (machine code that llvmpipe and lavapipe run) -------------------

@pytest.fixture
def own_cache(monkeypatch, tmp_path) -> Path:
    """This test's cache and temporary folders (private), the notes said so far forgotten;
    Mesa's variables unset."""
    for variable in ("MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR", "MESA_SHADER_CACHE_DISABLE"):
        monkeypatch.delenv(variable, raising=False)
    private_folders(monkeypatch, tmp_path)
    return tmp_path


MESA_FORMS: dict[str, Callable[[Path, pytest.MonkeyPatch], None]] = {
    "a shared XDG_CACHE_HOME": lambda shared, patch: patch.setenv("XDG_CACHE_HOME",
                                                                  str(shared)),
    "XDG_CACHE_HOME another user's": lambda shared, patch: patch.setenv(
        "XDG_CACHE_HOME", str(_their_folder(shared))),
    "MESA_SHADER_CACHE_DIR another user's": lambda shared, patch: patch.setenv(
        "MESA_SHADER_CACHE_DIR", str(_their_folder(shared, mode=0o777))),
    "MESA_GLSL_CACHE_DIR open to all": lambda shared, patch: patch.setenv(
        "MESA_GLSL_CACHE_DIR", str(shared)),
}


@pytest.mark.parametrize("form", MESA_FORMS)
def test_hostile_mesa_shader_cache_of_another_user_is_not_mesas(form, own_cache, shared,
                                                                monkeypatch, capsys):
    """Mesa keeps llvmpipe's and lavapipe's compiled shaders (ELF objects, checked by a
    CRC only) in $XDG_CACHE_HOME/mesa_shader_cache, whoever made that folder, and runs
    them: with a shared XDG_CACHE_HOME the tool passed over its own folder there but its
    driver still loaded another user's machine code. Mesa gets a private folder in the
    tool's cache folder instead, said in a line."""
    MESA_FORMS[form](shared, monkeypatch)
    env = cache_folder.mesa_cache_env()
    assert set(env) == {"MESA_SHADER_CACHE_DIR"}, env
    folder = Path(env["MESA_SHADER_CACHE_DIR"])
    assert private.folder(folder) and not folder.is_relative_to(shared / "theirs")
    said = notes(capsys)  # the tool's own cache folder may be said too, where it moved
    assert [n for n in said if "Mesa" in n] == [said[-1]], said
    assert "Mesa's shader cache is not private" in said[-1] and str(folder) in said[-1]


def test_mesa_shader_cache_in_a_private_folder_is_left_to_mesa(own_cache, capsys):
    """The control: where the folder Mesa keeps it under is private, nothing changes."""
    assert cache_folder.mesa_cache_env() == {}
    assert notes(capsys) == []


def test_hostile_mesa_shader_cache_with_no_private_folder_anywhere_is_off(
        own_cache, shared, monkeypatch, capsys):
    """A shared XDG_CACHE_HOME and a temporary folder anyone may write (no sticky bit):
    no folder can be private, and Mesa's cache is turned off rather than used."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(_their_folder(shared)))
    monkeypatch.setattr(tempfile, "tempdir", str(_their_folder(shared, "tmp", 0o777)))
    assert cache_folder.mesa_cache_env() == {"MESA_SHADER_CACHE_DISABLE": "true"}
    assert any("turned off" in line for line in notes(capsys))


# -- $CC, the C loop's compiler ----------------------------------------------------------

def _no_shebang(tmp_path: Path) -> str:
    script = tmp_path / "cc"
    script.write_text("echo 'a compiler'\n")  # executable, but exec() refuses it
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("cc", [
    lambda tmp, marker: _no_shebang(tmp),
    lambda tmp, marker: f"gcc; touch {marker}",
    lambda tmp, marker: f"gcc $(touch {marker})",
    lambda tmp, marker: f"gcc `touch {marker}`",
    lambda tmp, marker: f"gcc | touch {marker} && touch {marker}",
    lambda tmp, marker: str(tmp),
], ids=["a script with no #!", "a semicolon", "a command substitution", "backquotes",
        "a pipe and &&", "a folder"])
def test_hostile_cc_that_is_no_compiler(cc, tmp_path, monkeypatch):
    """$CC is split as shell words and run with no shell: its metacharacters run nothing.
    One that cannot be run at all (a script with no #!: exec's ENOEXEC) had ended every
    run with the native layer in an OSError traceback; it is no compiler now, and the
    layer is skipped with a note."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc on PATH")
    marker = tmp_path / "ran"
    monkeypatch.setenv("CC", cc(tmp_path, marker))
    described = native.compiler()
    assert not marker.exists()
    assert described is None or described.startswith("gcc "), described
    if described is None:
        assert native.load() == "native layer skipped: no C compiler ($CC, cc, gcc or clang) " \
                                "on PATH"


# -- the DevTools pipe: what a program that is not Chromium writes -----------------------

NOT_DEVTOOLS = {
    "not JSON": b"not json",
    "not UTF-8": b"\xff\xfe{}",
    "a list": b"[1]",
    "nested too deep": b"[" * 20_000,  # under a pipe's 64 KiB: written before it is read
    "an error that is a string": b'{"id": 1, "error": "x"}',
    "a result that is a list": b'{"id": 1, "result": []}',
}


@pytest.mark.parametrize("message", NOT_DEVTOOLS)
def test_hostile_devtools_pipe_carrying_other_than_devtools_messages(message):
    """`--browser` a program that writes other than DevTools' JSON objects on its fd 4:
    json's JSONDecodeError or an AttributeError had been the traceback; one line now."""
    commands_in, commands_out = os.pipe()
    messages_in, messages_out = os.pipe()
    os.write(messages_out, NOT_DEVTOOLS[message] + b"\0")
    connection = Connection(commands_out, messages_in, 5.0, lambda: "ended")
    try:
        with pytest.raises(BrowserError) as raised:
            connection.call("Browser.getVersion")
    finally:
        connection.close()
        for fd in (commands_in, messages_out):
            os.close(fd)
    said = str(raised.value)
    assert "\n" not in said and said.startswith(("the browser answered Browser.getVersion "
                                                 "with other than", "Browser.getVersion: ")), said


def test_hostile_a_program_that_is_no_browser_ends_its_start_in_one_line(tmp_path):
    """... and through a start of it (the answer garbage, then the program ends)."""
    fake = tmp_path / "not-chromium"
    fake.write_text("#!/bin/sh\nprintf 'x\\000' >&4\nexit 0\n")
    fake.chmod(0o755)
    with pytest.raises(BrowserError) as raised, launcher.Browser(str(fake)):
        pass
    said = str(raised.value)
    assert "\n" not in said and said.startswith(f"{fake} did not start: "), said


# -- private's verdict against what another user can really do ---------------------------

#: POSIX ACL tags and "no id" (the xattr system.posix_acl_access, version 2).
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER, _NO_ID = 1, 2, 4, 8, 0x10, 0x20, 2**32 - 1
NOBODY = 65534


def _acl(path: Path, named: list[tuple[int, int, int]], mask: int, owner: int = 7,
         default: bool = False) -> None:
    """An access (or default) ACL on `path`: the owner's `owner` bits, `named` entries (tag,
    id, bits), the group's and others' nothing, and `mask`."""
    import struct

    entries = [(_USER_OBJ, owner, _NO_ID), *[(t, b, i) for t, i, b in named],
               (_GROUP_OBJ, 0, _NO_ID), (_MASK, mask, _NO_ID), (_OTHER, 0, _NO_ID)]
    blob = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in sorted(entries))
    try:
        os.setxattr(path, f"system.posix_acl_{'default' if default else 'access'}", blob)
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs here: {exc.strerror}")


def _answer_as_another_user(shared: Path, probe: Callable[[], str]) -> str:
    """What `probe` answers when the other user (`nobody`) asks, or the OSError's name it
    meets; it comes back through a file in `shared`."""
    answer = shared / f"answer-{os.urandom(4).hex()}"

    def attempt() -> None:
        try:
            said = probe()
        except OSError as exc:
            said = f"error: {type(exc).__name__}"
        answer.write_text(said)
    as_another_user(attempt)
    return answer.read_text()


def _done_as_another_user(shared: Path, act: Callable[[], object]) -> bool:
    """Whether `act` succeeds when the other user does it (an OSError: it does not)."""
    return _answer_as_another_user(shared, lambda: (act(), "yes")[1]) == "yes"


def _mode(mode: int, group: int | None = None) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        if group is not None:
            os.chown(path, -1, group)
        path.chmod(mode)
    return make


#: A folder of ours (or theirs), set up so; and whether the other user can write it.
FOLDER_ACCESS: dict[str, tuple[Callable[[Path], None], bool]] = {
    "others may write (0703)": (_mode(0o703), True),
    "its group nobody's, which may write (0730)": (_mode(0o730, NOBODY), True),
    "its group nobody's, which may read (0750)": (_mode(0o750, NOBODY), False),
    "setgid, its group nobody's (2770)": (_mode(0o2770, NOBODY), True),
    "sticky, open to all (1777)": (_mode(0o1777), True),
    "others may enter (0711)": (_mode(0o711), False),
    "an ACL lets nobody write": (lambda p: _acl(p, [(_USER, NOBODY, 7)], 7), True),
    "an ACL for nobody, its mask r-x": (lambda p: _acl(p, [(_USER, NOBODY, 7)], 5), False),
    "an ACL lets nobody's group write": (lambda p: _acl(p, [(_GROUP, NOBODY, 7)], 7), True),
    "a default ACL only": (lambda p: _acl(p, [(_USER, NOBODY, 7)], 7, default=True), False),
    "theirs (0700)": (lambda p: os.chown(p, NOBODY, NOBODY), True),
}


@pytest.mark.parametrize("form", FOLDER_ACCESS)
def test_hostile_private_folder_verdict_is_what_another_user_can_do(form, shared):
    """private.folder reads modes, which with POSIX ACLs show the mask as the group's bits:
    it refuses a folder exactly where the other user can make an entry in it (tried as
    that user), whether by mode, group, ACL or ownership; those it refuses, nothing of the
    tool's would be kept or loaded from."""
    setup, writable = FOLDER_ACCESS[form]
    folder = shared / "cache"
    folder.mkdir(mode=0o700)
    setup(folder)
    try:
        private.folder(folder)
        refused = False
    except private.NotPrivate:
        refused = True
    can = _done_as_another_user(shared, lambda: (folder / "theirs").mkdir())
    assert can == writable, "the other user's try did not go as this case expects"
    assert refused == can


#: A file of ours (or theirs) in a folder the other user may enter but not write.
FILE_ACCESS: dict[str, tuple[Callable[[Path, Path], None], bool]] = {
    "others may write (0602)": (lambda p, shared: _mode(0o602)(p), True),
    "others may read (0604)": (lambda p, shared: _mode(0o604)(p), False),
    "its group nobody's, which may write (0620)": (
        lambda p, shared: _mode(0o620, NOBODY)(p), True),
    "an ACL lets nobody write": (lambda p, shared: _acl(p, [(_USER, NOBODY, 6)], 6, 6), True),
    "an ACL for nobody, its mask r--": (
        lambda p, shared: _acl(p, [(_USER, NOBODY, 6)], 4, 6), False),
    "a hard link to a file of theirs": (lambda p, shared: _hard_link_to_theirs(p, shared),
                                        True),
}


def _hard_link_to_theirs(path: Path, shared: Path, text: bytes | None = None) -> None:
    """`path` (replaced where it is) a hard link, made as root, to a file the other user
    made with `text` (else `path`'s bytes) in `shared`."""
    theirs = shared / f"their-{path.name}"
    blob = path.read_bytes() if text is None else text
    as_another_user(lambda: (theirs.write_bytes(blob), theirs.chmod(0o644)))
    path.unlink(missing_ok=True)
    os.link(theirs, path)


@pytest.mark.parametrize("form", FILE_ACCESS)
def test_hostile_private_file_verdict_is_what_another_user_can_do(form, shared):
    setup, writable = FILE_ACCESS[form]
    folder = shared / "cache"
    folder.mkdir(mode=0o711)
    path = folder / "kept.json"
    path.write_text("{}")
    path.chmod(0o600)
    setup(path, shared)
    try:
        private.read(path, 100)
        refused = False
    except private.NotPrivate:
        refused = True
    can = _done_as_another_user(shared, lambda: os.close(os.open(path, os.O_WRONLY)))
    assert can == writable, "the other user's try did not go as this case expects"
    assert refused == can


# -- the cache folder reached by other shapes of path --------------------------------------

def _plant_cache(folder: Path, header: str, marker: Path) -> Callable[[], None]:
    """The other user's act: `folder` made, holding a kept C header that runs code as it
    loads and a browser answer of theirs."""
    pickled = payload_pickle(marker)
    name = f"cffi-{kept_header._file(header).name.split('-', 1)[1]}"
    answer = kept_entry(seen._key(sys.executable, ()), browser_answer("Evil GPU")).encode()

    def act() -> None:
        folder.mkdir(mode=0o755, parents=True)
        (folder / "gpuoverhead").mkdir(mode=0o755)
        (folder / "gpuoverhead" / name).write_bytes(pickled)
        (folder / "gpuoverhead" / seen.FILE).write_bytes(answer)
    return act


def _in_their_folder(shared: Path, header: str, marker: Path, patch: pytest.MonkeyPatch
                     ) -> Path:
    theirs = shared / "theirs"
    as_another_user(_plant_cache(theirs, header, marker))
    return theirs


def _our_link_in_a_parent(shared, header, marker, patch) -> str:
    theirs = _in_their_folder(shared, header, marker, patch)
    (shared / "ours").mkdir(mode=0o700)
    (shared / "ours" / "link").symlink_to(theirs)
    return str(shared / "ours" / "link")


def _a_chain_through_their_link(shared, header, marker, patch) -> str:
    """Our link to their link to a private folder of ours: nothing of theirs to load yet,
    but they may point their link elsewhere at any time."""
    (shared / "ours").mkdir(mode=0o700)
    as_another_user(lambda: (shared / "their-link").symlink_to(shared / "ours"))
    (shared / "our-link").symlink_to(shared / "their-link")
    return str(shared / "our-link")


def _proc_self_cwd(shared, header, marker, patch) -> str:
    patch.chdir(_in_their_folder(shared, header, marker, patch))
    return "/proc/self/cwd"


#: Folders a form holds open (/proc/self/fd/N), closed by the test.
_OPEN: list[int] = []


def _proc_self_fd(shared, header, marker, patch) -> str:
    _OPEN.append(os.open(_in_their_folder(shared, header, marker, patch), os.O_RDONLY))
    return f"/proc/self/fd/{_OPEN[-1]}"


def _relative_from_their_folder(shared, header, marker, patch) -> str:
    patch.chdir(_in_their_folder(shared, header, marker, patch))
    return "."


def _dot_dot_from_ours_into_theirs(shared, header, marker, patch) -> str:
    _in_their_folder(shared, header, marker, patch)
    (shared / "ours").mkdir(mode=0o700)
    return str(shared / "ours" / ".." / "theirs")


def _a_name_with_a_newline_and_an_escape(shared, header, marker, patch) -> str:
    theirs = shared / "the\nir\x1b[2J"
    as_another_user(_plant_cache(theirs, header, marker))
    return str(theirs)


def _tree(folder: Path) -> dict[Path, bytes | None]:
    """Each entry under `folder` (links not followed) and a file's bytes."""
    return {p: p.read_bytes() if p.is_file() and not p.is_symlink() else None
            for p in folder.rglob("*")}


CACHE_HOMES = {f.__name__.lstrip("_"): f for f in (
    _our_link_in_a_parent, _a_chain_through_their_link, _proc_self_cwd, _proc_self_fd,
    _relative_from_their_folder, _dot_dot_from_ours_into_theirs,
    _a_name_with_a_newline_and_an_escape)}


@pytest.mark.parametrize("form", CACHE_HOMES)
def test_hostile_cache_home_reached_another_way_loads_nothing_of_theirs(
        form, shared, header, own_cache, monkeypatch, capsys):
    """XDG_CACHE_HOME that reaches another user's folder by a path the first catalogue does
    not try: a link of ours in a parent, a chain through a link of theirs, /proc/self's cwd
    and fd links, a relative path, `..`, a name with a newline and an escape sequence. Their
    pickle does not run, their answer is not believed, nothing is written where the path
    led, and one line says where the cache went instead."""
    marker = own_cache / "ran"
    monkeypatch.setenv("XDG_CACHE_HOME", CACHE_HOMES[form](shared, header, marker,
                                                             monkeypatch))
    before = _tree(shared)
    try:
        assert kept_header._load(kept_header._file(header)) is None
        assert seen.get(sys.executable) is None
        seen.put(sys.executable, browser_answer("ours"))
        fallback = own_cache / "tmp" / f"gpuoverhead-cache-{os.geteuid()}"
        assert cache_folder.cache_dir() == fallback
    finally:
        while _OPEN:
            os.close(_OPEN.pop())
    assert not marker.exists(), "the other user's pickle ran as this user"
    assert (fallback / seen.FILE).is_file()
    assert _tree(shared) == before  # nothing written where the path led
    said = notes(capsys)
    assert len(said) == 1 and "not private" in said[0] and "\x1b" not in said[0], said


#: In a mount namespace of its own: the cache folder, whether the kept browser answer was
#: believed and whether the kept header at argv[1] was loaded.
MOUNTED_PROBE = """
import json, sys
from pathlib import Path
from gpuoverhead.browser import seen
from gpuoverhead.gpu import cache_folder, kept_header

print(json.dumps([str(cache_folder.cache_dir()), seen.get(sys.executable) is not None,
                  kept_header._load(Path(sys.argv[1])) is not None]))
"""


def test_hostile_cache_folder_with_their_folder_mounted_over_it(shared, header, own_cache):
    """Our private cache folder with another user's folder bind-mounted over it (in a mount
    namespace of the probe's own, `unshare -m`): what the walk sees is the mount's root,
    theirs, and the cache goes to the private fallback; nothing of theirs is loaded."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare and mount (util-linux)")
    marker = own_cache / "ran"
    as_another_user(_plant_cache(shared / "theirs", header, marker))
    home = own_cache / "home"
    (home / "gpuoverhead").mkdir(mode=0o700, parents=True)
    name = f"cffi-{kept_header._file(header).name.split('-', 1)[1]}"
    mounted = home / "gpuoverhead"
    script = (f"mount --bind {shlex.quote(str(shared / 'theirs' / 'gpuoverhead'))} "
              f"{shlex.quote(str(mounted))} && exec {shlex.quote(sys.executable)} -c "
              f"{shlex.quote(MOUNTED_PROBE)} {shlex.quote(str(mounted / name))}")
    env = {**os.environ, "XDG_CACHE_HOME": str(home), "TMPDIR": str(own_cache / "tmp")}
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    if proc.returncode != 0 and ("Operation not permitted" in proc.stderr
                                 or "permission denied" in proc.stderr.lower()):
        pytest.skip(f"no mount namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    folder, believed, loaded = json.loads(proc.stdout)
    assert folder == str(own_cache / "tmp" / f"gpuoverhead-cache-{os.geteuid()}")
    assert not believed and not loaded and not marker.exists()
    said = proc.stderr.splitlines()  # the folder said, then the header file asked for
    assert said[0].startswith("note: the cache folder is not private") and \
        "belongs to uid 65534" in said[0], said
    assert list(mounted.iterdir()) == []  # the mount was the probe's alone


# -- kept files: other kinds of file, a swap around the open -------------------------------

CPUS = [0, 1]


def _torch_device() -> dict[str, object]:
    return {"implementation": "torch-eager", "backend": "cpu", "adapter_type": "CPU",
            "vendor": "intel", "vendor_id": 0, "device": "cpu", "driver": "",
            "timestamps": False}


def _parsed_header(header: str) -> bytes:
    """A kept C header as kept_header writes it, of wgpu-native's own parse."""
    from wgpu.backends.wgpu_native import _ffi

    path = Path(tempfile.mkdtemp()) / "header.pickle"
    kept_header._store(path, _ffi.ffi._parser)
    blob = path.read_bytes()
    shutil.rmtree(path.parent)
    return blob


#: Per kept file: its name, a content of the kind its writer writes, and whether the tool
#: took what is there.
KEPT: dict[str, tuple[Callable[[str], str], Callable[[str], bytes], Callable[[str], bool]]] = {
    "browsers": (lambda header: seen.FILE,
                 lambda header: kept_entry(seen._key(sys.executable, ()),
                                           browser_answer("Evil GPU")).encode(),
                 lambda header: seen.get(sys.executable) is not None),
    "startups": (lambda header: startups.FILE,
                 lambda header: json.dumps({"host|dev|g job": [123.0]}).encode(),
                 lambda header: startups.load() != {}),
    "cpus": (lambda header: cpus.FILE, lambda header: kept_entry(CPUS, probe_answer(CPUS)).encode(),
             lambda header: cpus._kept(CPUS) is not None),
    "torch": (lambda header: pytorch.FILE,
              lambda header: kept_entry(["torch"], _torch_device()).encode(),
              lambda header: pytorch._kept(["torch"]) is not None),
    "header": (lambda header: kept_header._file(header).name, _parsed_header,
               lambda header: kept_header._load(kept_header._file(header)) is not None),
}


def _a_device(path: Path, text: bytes, shared: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # as /dev/zero: never ends
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")


def _a_socket_file(path: Path, text: bytes, shared: Path) -> None:
    _a_socket(path)
    path.chmod(0o600)


def _others_may_write(path: Path, text: bytes, shared: Path) -> None:
    path.write_bytes(text)
    path.chmod(0o602)


def _others_may_read(path: Path, text: bytes, shared: Path) -> None:
    """The control: a file nobody else may change is taken."""
    path.write_bytes(text)
    path.chmod(0o604)


KEPT_FORMS = {"a_hard_link_to_theirs": lambda path, text, shared: _hard_link_to_theirs(
                  path, shared, text),
              **{f.__name__.lstrip("_"): f for f in (
                  _a_device, _a_socket_file, _others_may_write, _others_may_read)}}


@pytest.mark.parametrize("form", KEPT_FORMS)
@pytest.mark.parametrize("kind", KEPT)
def test_hostile_kept_file_of_another_kind(kind, form, shared, header, own_cache, capsys):
    """A kept file that is a hard link to another user's file (theirs to change), a device
    (as /dev/zero: a read that never ends), a socket, or one others may write (0602): not
    taken, no hang, at most one line; one others may only read (0604) is taken."""
    name, text, took = KEPT[kind]
    folder = cache_folder.cache_dir()
    KEPT_FORMS[form](folder / name(header), text(header), shared)
    with within(10):
        taken = took(header)
    assert taken == (form == "others_may_read")
    said = notes(capsys)
    assert len(said) <= 1 and all("\n" not in n for n in said), said


@pytest.mark.parametrize("when", ["before the open", "after the open"])
def test_hostile_kept_file_swapped_around_its_open(when, shared, own_cache, monkeypatch):
    """A race: the kept file replaced by another user's between a check and its use. The
    tool opens first and checks what it opened (fstat): theirs swapped in before the open is
    refused; after it, the open file is still this user's, and that is what is read."""
    path = cache_folder.cache_dir() / seen.FILE
    ours = kept_entry(seen._key(sys.executable, ()), browser_answer("ours")).encode()
    theirs = kept_entry(seen._key(sys.executable, ()), browser_answer("Evil GPU")).encode()
    path.write_bytes(ours)
    path.chmod(0o600)
    made = shared / "theirs"
    as_another_user(lambda: (made.write_bytes(theirs), made.chmod(0o644)))
    real_open = os.open

    def racing_open(file, flags, *args, **kwargs):
        if os.fspath(file) != str(path):
            return real_open(file, flags, *args, **kwargs)
        if when == "before the open":
            shutil.move(made, path)
            return real_open(file, flags, *args, **kwargs)
        fd = real_open(file, flags, *args, **kwargs)
        shutil.move(made, path)
        return fd

    monkeypatch.setattr(os, "open", racing_open)
    found = seen.get(sys.executable)
    monkeypatch.undo()
    assert os.lstat(path).st_uid == NOBODY  # the swap happened
    assert (found is None) if when == "before the open" else \
        (found["info"]["device"] == "ours")


# -- kept files damaged in other ways ---------------------------------------------------

#: The most each kept file's reader reads.
KEPT_LIMITS = {"browsers": kept.MAX_BYTES, "startups": startups.MAX_BYTES,
               "cpus": kept.MAX_BYTES, "torch": kept.MAX_BYTES, "header": kept_header.MAX_BYTES}

DAMAGE: dict[str, Callable[[bytes, int], bytes]] = {
    "random bytes": lambda valid, limit: random.Random(53).randbytes(4096),
    "a NUL inside": lambda valid, limit: valid[:len(valid) // 2] + b"\0" + valid[len(valid) // 2:],
    "its last bytes lost": lambda valid, limit: valid[:-3],
    "a number of 5,000 digits": lambda valid, limit: valid.replace(
        b"{", b'{"x": ' + b"9" * 5000 + b", ", 1) if valid.startswith(b"{") else
        b"\x80\x05\x8a\xff" + valid,
    "one byte over the limit": lambda valid, limit: valid + b" " * (limit + 1 - len(valid)),
}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("kind", KEPT)
def test_hostile_kept_file_damaged_another_way(kind, damage, header, own_cache, capsys):
    """Damage the first catalogue does not try, for every kept file: random bytes, a NUL
    inside, its last bytes lost, a number past int()'s 4,300 digits, a file one byte over
    what its reader reads (a valid one, padded). Not taken, said in one line, no
    traceback."""
    name, text, took = KEPT[kind]
    path = cache_folder.cache_dir() / name(header)
    path.write_bytes(DAMAGE[damage](text(header), KEPT_LIMITS[kind]))
    path.chmod(0o600)
    assert not took(header)
    said = notes(capsys)
    assert len(said) == 1 and str(path) in said[0] and "\n" not in said[0], said


#: JSON values a mutant puts in place of one of a kept answer's.
POOL = [None, True, False, 0, -1, 1, 2**70, 10**400, 1e308, -0.0, float("nan"), float("inf"),
        "", "nan", "1e999", "x" * 1000, "\ud800", [], {}, [1, "a"], {"a": 1}, {"": None}]


def _mutate(value: object, rng: random.Random) -> object:
    """`value` with one node somewhere in it replaced, deleted or added."""
    if isinstance(value, dict) and value and rng.random() < 0.75:
        key = rng.choice(sorted(value))
        roll = rng.random()
        if roll < 0.15:
            del value[key]
        elif roll < 0.25:
            value[rng.choice(["extra", f"{key}x", ""])] = rng.choice(POOL)
        else:
            value[key] = _mutate(value[key], rng)
        return value
    if isinstance(value, list) and value and rng.random() < 0.75:
        at = rng.randrange(len(value))
        value[at] = _mutate(value[at], rng)
        return value
    return json.loads(json.dumps(rng.choice(POOL)))


def _mutants(valid: object, seed: int, count: int = 200) -> Iterator[object]:
    """`count` seeded mutants of `valid` (one to three changes each), as read from JSON."""
    rng = random.Random(seed)
    for _ in range(count):
        value = json.loads(json.dumps(valid))
        for _ in range(rng.randint(1, 3)):
            value = _mutate(value, rng)
        yield json.loads(json.dumps(value))


def _browser_used(value: object) -> object:
    answer = seen._as_answer(value)
    if answer is not None:
        with contextlib.suppress(BrowserError):  # an answer without an adapter says so
            describe(answer["info"], answer["version"], sys.executable)
    return answer


def _probe_used(value: object) -> object:
    found = cpus._as_probe(value, CPUS)
    if found is not None:
        cpus.decide(found[0], CPUS)
    return found


def _device_used(value: object) -> object:
    info = pytorch._as_info(value)
    if info is not None:
        assert isinstance(info.label, str)
    return info


def _startups_used(value: object) -> object:
    path = cache_folder.cache_dir() / startups.FILE
    path.write_text(json.dumps(value))
    found = startups.load()
    for seconds in found.values():
        statistics.median(seconds or [0.0])
    return found or None


#: Each kept answer's reader with what uses what it takes, and an answer as written.
READERS = {"a browser's answer": (_browser_used, lambda: browser_answer("GPU")),
           "a browser without an adapter": (_browser_used, lambda: {
               "info": {"crossOriginIsolated": True, "userAgent": "x", "timerResolutionUs": 5.0,
                        "error": "no adapter"}, "version": "1", "status": {}}),
           "a CPU probe": (_probe_used, lambda: probe_answer(CPUS)),
           "a torch device": (_device_used, _torch_device),
           "start-ups": (_startups_used, lambda: {"host|dev|g job": [1.5, 2.0]})}


@pytest.mark.parametrize("reader", READERS)
def test_hostile_kept_answers_mutated_at_random_never_end_in_a_traceback(reader, own_cache,
                                                                         capsys):
    """Each kept answer's reader against 200 seeded mutants of an answer as it is written
    (a node replaced by another JSON value, deleted, or a key added: wrong types, NaN,
    10**400, a lone surrogate, ...): it takes a mutant or not, never raises, and what it
    takes, what uses it takes too. The answer as written is taken (the control), and
    most mutants are not."""
    use, valid = READERS[reader]
    assert use(json.loads(json.dumps(valid()))) is not None
    taken = sum(use(value) is not None for value in _mutants(valid(), seed=53))
    assert taken < 150, f"{taken} of 200 mutants taken"


# -- the kept C header: pickles that name cffi's classes and carry something else --------

def _short(text: str) -> bytes:
    """A protocol-4 SHORT_BINUNICODE of `text`."""
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


def _stack_global(module: str, name: str) -> bytes:
    return _short(module) + _short(name) + b"\x93"  # STACK_GLOBAL


HEADER_PAYLOADS: dict[str, Callable[[Path], bytes]] = {
    "a cffi class, then os.system": lambda marker: (
        b"ccffi.model\nPrimitiveType\n(S'int'\ntR"
        + f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()),
    "a cffi class called with eval's result": lambda marker: (
        b"ccffi.model\nPrimitiveType\n(cbuiltins\neval\n"
        + f"(S'open({str(marker)!r}, \"w\")'\ntRtR.".encode()),
    "a module of cffi.model's": lambda marker: b"ccffi.model\nweakref\n.",
    "a function of cffi.model's": lambda marker: b"ccffi.model\nallocate_lock\n)R.",
    "a dotted name through a cffi class": lambda marker: (
        b"\x80\x04" + _stack_global("cffi.model", "PrimitiveType.__init__.__globals__")
        + b"."),
    "cffi.model's builtins": lambda marker: (
        b"\x80\x04" + _stack_global("cffi.model", "__builtins__") + b"."),
    "copyreg's reconstructor around a cffi class": lambda marker: (
        b"ccopyreg\n_reconstructor\n(ccffi.model\nPrimitiveType\nc__builtin__\nobject\nNtR."),
    "an extension code": lambda marker: b"\x80\x02\x82\x01.",
    "a persistent id": lambda marker: b"\x80\x02X\x04\x00\x00\x00evilQ.",
}


@pytest.mark.parametrize("payload", HEADER_PAYLOADS)
def test_hostile_kept_header_naming_cffi_but_carrying_a_payload(payload, header, own_cache,
                                                                capsys):
    """A kept header in this user's own private folder (copied from elsewhere) that names
    cffi's classes to pass as a parse but carries a payload: a call after them, a call as
    their argument, cffi.model's modules, functions and builtins, a dotted name through a
    class, copyreg's reconstructor, an extension code, a persistent id. Nothing runs, none
    loads, each is parsed again, said in a line."""
    marker = own_cache / "ran"
    path = kept_header._file(header)
    path.write_bytes(HEADER_PAYLOADS[payload](marker))
    path.chmod(0o600)
    assert kept_header._load(path) is None
    assert not marker.exists(), "the pickle ran code"
    said = notes(capsys)
    assert len(said) == 1 and "parsed again" in said[0] and "\n" not in said[0], said


# -- the kept C loop and its digest ------------------------------------------------------

#: What a kept loop module's bytes are here: not a library (nothing is loaded), only read.
LOOP = b"\x7fELF" + random.Random(7).randbytes(4096)


def _loop_and_digest(folder: Path, blob: bytes = LOOP) -> tuple[Path, Path]:
    path = folder / "_gpuoverhead_native_0.so"
    path.write_bytes(blob)
    path.chmod(0o700)
    digest = folder / f"{path.name}.sha256"
    digest.write_text(hashlib.sha256(blob).hexdigest())
    digest.chmod(0o600)
    return path, digest


def _their(path: Path, shared: Path, mode: int = 0o755) -> None:
    """`path` replaced by a copy the other user made (its bytes the same)."""
    made = shared / f"their-{path.name}"
    blob = path.read_bytes()
    as_another_user(lambda: (made.write_bytes(blob), made.chmod(mode)))
    path.unlink()
    shutil.move(made, path)


def _linked_to_theirs(path: Path, shared: Path) -> None:
    made = shared / f"their-{path.name}"
    blob = path.read_bytes()
    as_another_user(lambda: (made.write_bytes(blob), made.chmod(0o644)))
    path.unlink()
    path.symlink_to(made)


def _fifo_instead(path: Path, shared: Path) -> None:
    path.unlink()
    os.mkfifo(path, 0o600)


def _zero_device_instead(path: Path, shared: Path) -> None:
    path.unlink()
    _a_device(path, b"", shared)


LOOP_FORMS: dict[str, Callable[[Path, Path, Path], None]] = {
    "the module theirs": lambda so, digest, shared: _their(so, shared),
    "the module a hard link to theirs": lambda so, digest, shared: _hard_link_to_theirs(
        so, shared),
    "the module others may write (0702)": lambda so, digest, shared: so.chmod(0o702),
    "the module a FIFO": lambda so, digest, shared: _fifo_instead(so, shared),
    "the digest theirs": lambda so, digest, shared: _their(digest, shared, 0o644),
    "the digest a link to theirs": lambda so, digest, shared: _linked_to_theirs(digest, shared),
    "the digest a FIFO": lambda so, digest, shared: _fifo_instead(digest, shared),
    "the digest as /dev/zero": lambda so, digest, shared: _zero_device_instead(digest, shared),
    "the digest of other bytes": lambda so, digest, shared: digest.write_text(
        hashlib.sha256(b"other").hexdigest()),
    "the digest's first line only": lambda so, digest, shared: digest.write_text(
        f"{hashlib.sha256(LOOP).hexdigest()}\nmore"),
}


@pytest.mark.parametrize("form", LOOP_FORMS)
def test_hostile_kept_c_loop_or_its_digest_not_this_users_own(form, shared, tmp_path,
                                                              capsys):
    """The kept C loop is loaded only where it and the digest beside it are this user's own
    regular files that nobody else may write, and the digest is its bytes': a module or
    digest of theirs (moved in, hard-linked, linked), one others may write, a FIFO or a
    device in its place, a digest of other bytes. None is loaded, no wait, one line."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    so, digest = _loop_and_digest(folder)
    assert native._kept(so)  # the control: as built, it would be loaded
    capsys.readouterr()
    LOOP_FORMS[form](so, digest, shared)
    with within(10):
        assert not native._kept(so)
    said = notes(capsys)
    assert len(said) == 1 and "built again" in said[0] and "\n" not in said[0], said


def test_hostile_kept_c_loop_longer_than_what_is_read(tmp_path, capsys):
    """A module longer than the most that is read (64 MiB), with a digest of what is read:
    its tail would be loaded unchecked. It is not a loop module (37 kB with gcc): built
    again, said."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    so, digest = _loop_and_digest(folder)
    with open(so, "r+b") as f:
        f.truncate(native.MAX_BYTES + 4096)  # sparse: no disk for the zeros
        f.seek(native.MAX_BYTES + 2048)
        f.write(b"a tail no digest covers")
    with open(so, "rb") as f:
        digest.write_text(hashlib.sha256(f.read(native.MAX_BYTES + 1)).hexdigest())
    assert not native._kept(so)
    said = notes(capsys)
    assert len(said) == 1 and "built again" in said[0], said


# -- the page server: its port and its token, to another local user ---------------------

@pytest.fixture(scope="module")
def page_server() -> Iterator[tuple[str, int, str]]:
    """One page server for these tests: its URL, port and token."""
    with server.serve("@compute @workgroup_size(1) fn main() {}") as url:
        yield url, int(url.split(":")[2].split("/")[0]), url.rstrip("/").rsplit("/", 1)[1]


def _bind(address: tuple[str, int], option: int | None) -> str:
    """Bind (and listen on) `address` with socket option `option` set, as a server would."""
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        if option is not None:
            sock.setsockopt(socket.SOL_SOCKET, option, 1)
        sock.bind(address)
        sock.listen()
    return "bound"


@pytest.mark.parametrize(("host", "option"), [
    ("127.0.0.1", None), ("127.0.0.1", socket.SO_REUSEADDR),
    ("127.0.0.1", getattr(socket, "SO_REUSEPORT", None)), ("0.0.0.0", None),
    ("0.0.0.0", getattr(socket, "SO_REUSEPORT", None))],
    ids=["plain", "SO_REUSEADDR", "SO_REUSEPORT", "every address", "every address, REUSEPORT"])
def test_hostile_another_user_cannot_take_the_page_servers_port(host, option, shared,
                                                                page_server):
    """Another user's process binding the port the page server listens on, to answer the
    browser's requests in its place (SO_REUSEPORT shares a port between sockets of one uid
    only; a listening port refuses the rest). The URL names 127.0.0.1, not `localhost`,
    which may resolve to ::1, where another user could listen on the same port."""
    url, port, _ = page_server
    assert url.startswith("http://127.0.0.1:")
    said = _answer_as_another_user(shared, lambda: _bind((host, port), option))
    assert said == "error: OSError", said


def _get(port: int, path: str) -> str:
    """The status line of GET `path` from 127.0.0.1:`port`."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                     .encode())
        return sock.recv(200).split(b"\r\n")[0].decode()


#: Paths another user tries, given the token: near it, and with it.
FOREIGN_PATHS = {
    "the token in capitals": lambda t: f"/{t.upper()}/index.html",
    "the token percent-encoded": lambda t: "/" + "".join(f"%{b:02X}" for b in t.encode())
                                          + "/index.html",
    "a dot after the name": lambda t: f"/{t}/index.html.",
    "dot-dot encoded": lambda t: f"/{t}/%2e%2e/{t}/index.html",
    "the token in the query": lambda t: f"/index.html?/{t}/index.html",
    "the absolute form": lambda t: f"http://127.0.0.1/{t}/index.html",
    "the token and a NUL": lambda t: f"/{t}%00/index.html",
}


@pytest.mark.parametrize("path", FOREIGN_PATHS)
def test_hostile_page_server_near_its_token_serves_nothing(path, shared, page_server):
    """Without the token (near misses of it), another user gets 404; the token is the
    secret, and with it the page is served (to them too: the token is told to the browser
    over its pipe alone, and tests/gpu/test_hostile_heldout_drivers.py checks that nothing
    else shows it)."""
    _, port, token = page_server
    foreign = FOREIGN_PATHS[path](token)
    said = _answer_as_another_user(shared, lambda: _get(port, foreign))
    with_token = _answer_as_another_user(shared, lambda: _get(port, f"/{token}/index.html"))
    assert said.endswith(" 404 Not Found"), (foreign, said)
    assert with_token.endswith(" 200 OK"), with_token


#: Requests another user sends the page server as raw bytes.
RAW_REQUESTS = {
    "a TLS hello": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\0" * 64,
    "bytes that are not UTF-8": b"GET /\xff\xfe/index.html HTTP/1.1\r\n\r\n",
    "a line of 80 kB": b"GET /" + b"a" * 80_000 + b" HTTP/1.1\r\n\r\n",
    "200 headers": b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n",
    "a POST with a body": b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
    "HTTP/9.9": b"GET / HTTP/9.9\r\n\r\n",
    "a header of 70 kB": b"GET / HTTP/1.1\r\nHost: " + b"x" * 70_000 + b"\r\n\r\n",
    "a reset mid-answer": b"GET /{token}/runner.js HTTP/1.1\r\n\r\n",
}


def _send_raw(port: int, data: bytes, reset: bool) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
        if reset:  # close with RST at once, the answer unread
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.sendall(data)
        if reset:
            return "reset"
        with contextlib.suppress(TimeoutError):
            return sock.recv(100).split(b"\r\n")[0].decode(errors="replace") or "closed"
    return "no answer"


@pytest.mark.parametrize("request_", RAW_REQUESTS)
def test_hostile_raw_requests_to_the_page_server_print_no_traceback(request_, shared, capfd,
                                                                    page_server):
    """Whatever another user sends the page server (a TLS hello, bytes that are not UTF-8,
    lines and headers past the limits, a POST, a connection reset mid-answer), nothing is
    printed on the run's stderr (socketserver prints a traceback for an error in a
    handler) and the page is still served."""
    _, port, token = page_server
    data = RAW_REQUESTS[request_].replace(b"{token}", token.encode())
    threads = threading.active_count()
    _answer_as_another_user(shared, lambda: _send_raw(port, data, "reset" in request_))
    end = time.monotonic() + 5
    while threading.active_count() > threads and time.monotonic() < end:
        time.sleep(0.01)  # the request's handler ends (a TLS hello's: on its connection's end)
    assert _get(port, f"/{token}/index.html").endswith(" 200 OK")
    assert capfd.readouterr().err == ""


# -- flags from the environment with shell metacharacters and other oddities -------------

#: A "browser" that writes its arguments, a NUL after each, to the file $ARGV_FILE, and
#: exits: what the tool started it with.
ARGV_BROWSER = "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$ARGV_FILE\"\n"


def test_hostile_chromium_flags_with_shell_metacharacters_run_nothing(tmp_path, monkeypatch):
    """GPUOVERHEAD_CHROMIUM_FLAGS is split as shell words but never given to a shell: a
    command substitution, backquotes, `;`, `|`, `&&`, a redirection and `$VAR` reach the
    browser as the literal words they are, and run nothing; a `--user-data-dir` there
    comes before the tool's own, which Chromium takes (the last of a repeated switch)."""
    browser = tmp_path / "argv-browser"
    browser.write_text(ARGV_BROWSER)
    browser.chmod(0o755)
    marker = tmp_path / "ran"
    words = [f"--a=$(touch {marker})", f"--b=`touch {marker}`", ";", "touch", str(marker),
             "|", "sh", "&&", f">{marker}", "--c=$HOME", f"--user-data-dir={tmp_path}"]
    monkeypatch.setenv(launcher.EXTRA_FLAGS, shlex.join(words))
    monkeypatch.setenv("ARGV_FILE", str(tmp_path / "argv"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    started = launcher.Browser(str(browser))
    with pytest.raises(BrowserError) as raised, started:
        pass
    assert "\n" not in str(raised.value)
    argv = (tmp_path / "argv").read_bytes().split(b"\0")[:-1]
    assert [a.decode() for a in argv][-len(words) - 2:-2] == words
    assert argv[-2] == f"--user-data-dir={started.profile}".encode()
    assert not marker.exists()


@pytest.mark.parametrize("value", [
    '--x="unclosed \x1b[2J\x07',
    "--y='\n--z",
    "--w=" + "a" * 200_000 + "'",
], ids=["an escape sequence", "a newline", "200 kB"])
def test_hostile_chromium_flags_that_do_not_parse_with_odd_characters(value, monkeypatch,
                                                                      tmp_path):
    """An unbalanced quote in a value that also holds an escape sequence, a newline or
    200 kB: one line, the terminal's control characters spelled out, the value cut."""
    monkeypatch.setenv(launcher.EXTRA_FLAGS, value)
    result = in_process("run", "--suite", "ci", "--implementation", "chromium",
                        "--browser", sys.executable, "--out", str(tmp_path / "o"))
    line = result.stderr.strip()
    assert result.returncode == 2 and "\n" not in line and len(line) < 400, result.stderr
    assert "\x1b" not in line and "\x07" not in line and launcher.EXTRA_FLAGS in line


def test_hostile_chromium_flag_too_long_to_start_is_one_line(tmp_path, monkeypatch,
                                                             fake_browser):
    """A flag of 200 kB that parses: past Linux's 128 kB for one argument, the start fails
    (E2BIG) in one line, its profile removed."""
    monkeypatch.setenv(launcher.EXTRA_FLAGS, "--x=" + "a" * 200_000)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    browser = launcher.Browser(str(fake_browser))
    with pytest.raises(BrowserError) as raised, browser:
        pass
    said = str(raised.value)
    assert "\n" not in said and said.startswith(f"cannot start {fake_browser}: "), said
    assert not os.path.exists(browser.profile)


def test_hostile_browser_profiles_planted_ahead_under_the_tools_names(shared, fake_browser,
                                                                     monkeypatch):
    """Another user plants folders named as this process's profiles would be
    (`gpuoverhead-chromium-<pid>-...`, theirs, one a link to a folder of theirs): the
    browser's profile is a fresh one of its own (mkdtemp), theirs are left as they are."""
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    prefix = f"{launcher.PROFILE}{os.getpid()}-"
    names = [f"{prefix}{suffix}" for suffix in ("a", "zzzzzzzz", "0" * 8)]

    def plant() -> None:
        for name in names:
            (shared / name).mkdir(mode=0o777)
            (shared / name / "Local State").write_text("{}")
        (shared / f"{prefix}link").symlink_to(shared / names[0])
    as_another_user(plant)
    before = _tree(shared)
    browser = launcher.Browser(str(fake_browser))
    with pytest.raises(BrowserError), browser:
        pass
    assert Path(browser.profile).name.startswith(prefix) and browser.profile not in names
    assert _tree(shared) == before


#: "Browsers" that die or go quiet as they start, and what the one line says.
DYING = {
    "killed by a signal": ("#!/bin/sh\nkill -SEGV $$\n", "was killed by SIGSEGV"),
    "its pipe closed, still running": ("#!/bin/sh\nexec 4>&-\nsleep 5\n",
                                       "closed its DevTools pipe"),
    "half a message, then killed": ("#!/bin/sh\nhead -c 2000000 /dev/urandom | tr -d '\\000' "
                                    ">&4\nkill -KILL $$\n", "was killed by SIGKILL"),
    "exits with a long last line": ("#!/bin/sh\nhead -c 100000 /dev/zero | tr '\\000' x >&2\n"
                                    "exit 3\n", "exited with code 3"),
}


@pytest.mark.parametrize("how", [
    pytest.param(h, marks=pytest.mark.slow) if "still running" in h else h for h in DYING])
def test_hostile_a_browser_that_dies_as_it_starts(how, tmp_path, monkeypatch):
    """A browser killed by a signal, one that closes its end of the pipe and lives on (4 s:
    the close's waits for a browser that would end by itself), one killed after half a
    message, one that exits after a 100 kB line on stderr: one line each, which says how
    (its last line cut), nothing left behind."""
    script, says = DYING[how]
    fake = tmp_path / "dying-browser"
    fake.write_text(script)
    fake.chmod(0o755)
    temp = tmp_path / "tmp"
    temp.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with pytest.raises(BrowserError) as raised, launcher.Browser(str(fake)):
        pass
    said = str(raised.value)
    assert "\n" not in said and says in said and len(said) < 500, said
    assert list(temp.iterdir()) == []
