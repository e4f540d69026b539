"""What the cache folder holds that is loaded and run, against another local user and against
damage, through the real build and the real CLI (issue 53, items 2, 3 and 6): the compiled
C loop (gpu/layers/native.py) and, in a command that imports wgpu-native's binding, the
kept C header and the runtime folder together. The other user acts as `nobody`
(conftest.as_another_user); tests/unit/test_hostile_cache_folder.py has the checks case by
case."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, as_another_user, notes, payload_pickle, private_folders, write_suite

from gpuoverhead.gpu import cache_folder, kept_header
from gpuoverhead.gpu.layers import native

#: A library that, loaded, makes the file $HOSTILE_MARKER names: code run by the loader.
PAYLOAD_C = """
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
    const char *marker = getenv("HOSTILE_MARKER");
    FILE *f = marker ? fopen(marker, "w") : NULL;
    if (f) fclose(f);
}
int not_a_module(void) { return 1; }
"""
GOOD = "benchmarks:\n  - {name: a, kernel: empty}\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The C loop, built once in a cache folder of this module's (its name is the one a
    load looks for; its bytes a real module's)."""
    folder = tmp_path_factory.mktemp("native")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        loop = native.load()
    if isinstance(loop, str):
        pytest.skip(loop)
    return loop.path


@pytest.fixture(scope="module")
def payload(tmp_path_factory, built) -> Path:
    """A shared library with a constructor (PAYLOAD_C), readable by every user."""
    folder = tmp_path_factory.mktemp("payload")
    (folder / "payload.c").write_text(PAYLOAD_C)
    cc = native.compiler().split(":")[0].split()[0]  # built: there is one
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "payload.so"),
                    str(folder / "payload.c")], check=True, capture_output=True, timeout=120)
    return folder / "payload.so"


@pytest.fixture
def own(monkeypatch, tmp_path) -> Path:
    """This test's cache folder and temporary folder, the notes said so far forgotten, and
    the marker a payload would make."""
    private_folders(monkeypatch, tmp_path)
    monkeypatch.setenv("HOSTILE_MARKER", str(tmp_path / "ran"))
    return tmp_path


def _cache() -> Path:
    folder = cache_folder.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _not_a_module(built: Path, payload: Path) -> bytes:
    return payload.read_bytes()


NATIVE_DAMAGE: dict[str, Callable[[Path, Path], bytes]] = {
    "empty": lambda built, payload: b"",
    "text": lambda built, payload: b"not a library\n",
    "cut short": lambda built, payload: built.read_bytes()[:4096],
    "a library that is not a module": _not_a_module,
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", NATIVE_DAMAGE)
def test_hostile_damaged_native_loop_is_built_again(damage, built, payload, own, capsys):
    """A damaged cached C loop ended every run that asked for the native layer in an
    ImportError traceback, and was never built again; one cut short crashed the process
    (SIGBUS) as it loaded. Its bytes are checked against the digest kept beside it first,
    so none of these is loaded (the library's constructor does not run), and it is built
    again."""
    path = _cache() / built.name
    path.write_bytes(NATIVE_DAMAGE[damage](built, payload))
    path.chmod(0o700)
    digest = built.with_name(f"{built.name}.sha256")
    if digest.exists():  # the digest of the loop as built (gpu/layers/native.py)
        shutil.copyfile(digest, f"{path}.sha256")
    loop = native.load()
    assert not isinstance(loop, str), loop
    assert loop.path == path and loop.lib.gpuoverhead_issue
    assert not (own / "ran").exists()
    said = notes(capsys)
    assert len(said) == 1 and "built again" in said[0], said


def _their_folder(shared: Path, name: str, payload: Path, tmp_path: Path, monkeypatch) -> Path:
    """The cache folder theirs (a shared XDG_CACHE_HOME), the loop in it their library."""
    readable = shared / "payload.so"
    shutil.copyfile(payload, readable)
    readable.chmod(0o644)

    def act() -> None:
        (shared / "gpuoverhead").mkdir(mode=0o755)
        shutil.copyfile(readable, shared / "gpuoverhead" / name)
    as_another_user(act)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    return tmp_path / "tmp" / f"gpuoverhead-cache-{os.geteuid()}" / name


def _their_file(shared: Path, name: str, payload: Path, tmp_path: Path, monkeypatch) -> Path:
    """Their library in our folder (one that was open once)."""
    readable = shared / "payload.so"
    shutil.copyfile(payload, readable)
    readable.chmod(0o644)
    as_another_user(lambda: shutil.copyfile(readable, shared / "theirs.so"))
    path = _cache() / name
    shutil.copyfile(shared / "theirs.so", path)
    theirs = os.stat(shared / "theirs.so")
    os.chown(path, theirs.st_uid, theirs.st_gid)
    return path


def _a_link_to_their_file(shared: Path, name: str, payload: Path, tmp_path: Path,
                          monkeypatch) -> Path:
    readable = shared / "payload.so"
    shutil.copyfile(payload, readable)
    readable.chmod(0o644)
    as_another_user(lambda: shutil.copyfile(readable, shared / "theirs.so"))
    path = _cache() / name
    path.symlink_to(shared / "theirs.so")
    return path


NATIVE_PLANTED = {f.__name__.lstrip("_"): f for f in (
    _their_folder, _their_file, _a_link_to_their_file)}


@pytest.mark.slow
@pytest.mark.parametrize("form", NATIVE_PLANTED)
def test_hostile_native_loop_of_another_user_is_not_loaded(form, built, payload, own, shared,
                                                           monkeypatch, capsys):
    """The compiled C loop in a shared cache folder was loaded whoever put it there: their
    library's code ran as this user. It is loaded only where it is this user's own and
    private; else the loop is built again (here, or in the private fallback)."""
    expected = NATIVE_PLANTED[form](shared, built.name, payload, own, monkeypatch)
    loop = native.load()
    assert not (own / "ran").exists(), "the other user's library ran as this user"
    assert not isinstance(loop, str), loop
    assert loop.path == expected and loop.lib.gpuoverhead_issue
    info = os.lstat(expected)
    assert stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()
    assert not info.st_mode & 0o022
    said = notes(capsys)
    assert len(said) == 1 and ("not private" in said[0] or "not loaded" in said[0]), said


def _plant_cache_and_runtime(shared: Path, theirs: Path, names: dict[str, Any],
                             marker: Path, link: bool) -> Callable[[], None]:
    blob = payload_pickle(marker)

    def act() -> None:
        folder = shared / ("their-cache" if link else "gpuoverhead")
        folder.mkdir(mode=0o755)
        (folder / names["header"]).write_bytes(blob)
        if link:
            (shared / "gpuoverhead").symlink_to(folder)
        theirs.mkdir(mode=0o777)
        theirs.chmod(0o777)
        (shared / names["runtime"]).symlink_to(theirs)
    return act


@pytest.mark.slow
@pytest.mark.parametrize("link", [False, True], ids=["their folders", "their links"])
def test_hostile_command_with_a_shared_cache_and_temporary_folder(link, shared, tmp_path):
    """The issue's case: with XDG_CACHE_HOME and TMPDIR shared with another user, a pickle
    they swapped in ran code as root, and the runtime folder they planted was written
    into. The command runs its course, their pickle not loaded and their folder untouched,
    with a line for each folder passed over."""
    header = pytest.importorskip("wgpu.backends.wgpu_native._ffi").get_wgpu_header()
    marker = tmp_path / "ran"
    names = {"header": Path(kept_header._file(header)).name,
             "runtime": f"gpuoverhead-runtime-{os.geteuid()}"}
    theirs = shared / "their-runtime"
    as_another_user(_plant_cache_and_runtime(shared, theirs, names, marker, link))
    suite = write_suite(tmp_path, GOOD)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "validate", str(suite)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**env, "XDG_CACHE_HOME": str(shared), "TMPDIR": str(shared)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "ok" in proc.stdout
    assert not marker.exists(), "the other user's pickle ran as this user"
    assert list(theirs.iterdir()) == []
    said = [line for line in proc.stderr.splitlines() if line.startswith("note: ")]
    assert len(said) == 3 and all("not private" in line for line in said), proc.stderr
    assert "Mesa's shader cache" in said[-1]  # a shared XDG_CACHE_HOME: Mesa's moves too
    private = shared / f"gpuoverhead-cache-{os.geteuid()}"
    assert kept_header._load(private / names["header"]) is not None  # kept there instead
