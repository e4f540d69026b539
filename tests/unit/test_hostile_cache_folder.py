"""The cache folder and what it keeps, and the runtime folder, against another local user and
against damage (issue 53, items 2, 3 and 6: gpu/cache_folder.py, gpu/private.py and their
readers: kept.py, kept_header.py, browser/seen.py, run/startups.py, run/cpus.py, drivers/
pytorch.py, cli.main's runtime folder).

The other user's part runs as that user: in a child process of this one whose uid is
`nobody`'s (os.setuid), as an attacker on a shared GPU server would act, in a folder every
user may write (a sticky one under /tmp, as a shared XDG_CACHE_HOME or TMPDIR would be).
Where this process cannot take another uid (not root), those cases skip and say why. What
the tool must do: load, run and believe nothing from a folder or file another user could
have made or changed, nor write into one; fall back to something safe; say so in a line.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ROOT,
    as_another_user,
    browser_answer,
    kept_entry,
    notes,
    payload_pickle,
    private_folders,
    probe_answer,
    within,
)

from gpuoverhead.browser import seen
from gpuoverhead.drivers import pytorch
from gpuoverhead.gpu import cache_folder, kept_header
from gpuoverhead.run import cpus, startups

#: The CPUs a kept probe is of in these tests.
CPUS = [0, 1]


@pytest.fixture(autouse=True)
def own_folders(monkeypatch, tmp_path) -> Path:
    """This test's cache folder and temporary folder (the fallback's), each made afresh, and
    the notes said so far forgotten (each is said once a process)."""
    return private_folders(monkeypatch, tmp_path)


def _own_cache() -> Path:
    """This test's own cache folder, made."""
    folder = cache_folder.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _fallback(tmp_path: Path) -> Path:
    return tmp_path / "tmp" / f"gpuoverhead-cache-{os.geteuid()}"


def _header_name(header: str) -> str:
    return kept_header._file(header).name


def _browser_key() -> Any:
    return seen._key(sys.executable, ())


#: What another user plants, per kept file: its name (given the header), its text, and
#: whether the tool took it (given the test's marker).
PLANTED = {
    "header": (_header_name, payload_pickle,
               lambda header, marker: marker.exists()
               or kept_header._load(kept_header._file(header)) is not None),
    "browsers": (lambda header: seen.FILE,
                 lambda marker: kept_entry(_browser_key(), browser_answer()).encode(),
                 lambda header, marker: seen.get(sys.executable) is not None),
    "startups": (lambda header: startups.FILE,
                 lambda marker: json.dumps({"host|dev|g job": [123.0]}).encode(),
                 lambda header, marker: startups.load() != {}),
    "cpus": (lambda header: cpus.FILE,
             lambda marker: kept_entry(CPUS, probe_answer(CPUS)).encode(),
             lambda header, marker: cpus._kept(CPUS) is not None),
}


def test_the_planted_pickle_runs_code_as_it_loads(tmp_path):
    """The control of every case below that finds no marker: a plain pickle.loads of what
    another user plants as a kept header does make it."""
    marker = tmp_path / "ran"
    pickle.loads(payload_pickle(marker))  # the point: code runs as it loads
    assert marker.exists()


def _plant_in(folder: Path, header: str, marker: Path, open_to_all: bool = False
              ) -> Callable[[], None]:
    """The other user's act: `folder` made (theirs) with each kept file in it, of their
    making (the texts made here: a browser's key holds this user's flags)."""
    texts = {PLANTED[f][0](header): PLANTED[f][1](marker) for f in PLANTED}

    def act() -> None:
        folder.mkdir()
        folder.chmod(0o777 if open_to_all else 0o755)
        for name, text in texts.items():
            (folder / name).write_bytes(text)
            (folder / name).chmod(0o666 if open_to_all else 0o644)
    return act


def _taken(header: str, marker: Path) -> list[str]:
    """The kept files whose planted content the tool took (or ran)."""
    return [f for f, (_, _, took) in PLANTED.items() if took(header, marker)]


# -- the cache folder planted ------------------------------------------------------------


def _their_folder(shared: Path, header: str, marker: Path, tmp_path: Path) -> Path:
    as_another_user(_plant_in(shared / "gpuoverhead", header, marker))
    return shared


def _their_open_folder(shared: Path, header: str, marker: Path, tmp_path: Path) -> Path:
    as_another_user(_plant_in(shared / "gpuoverhead", header, marker, open_to_all=True))
    return shared


def _their_link_to_their_folder(shared: Path, header: str, marker: Path, tmp_path: Path
                                ) -> Path:
    plant = _plant_in(shared / "theirs", header, marker)

    def act() -> None:
        plant()
        (shared / "gpuoverhead").symlink_to(shared / "theirs")
    as_another_user(act)
    return shared


def _their_link_to_our_folder(shared: Path, header: str, marker: Path, tmp_path: Path
                              ) -> Path:
    """A link of theirs to a private folder of ours: nothing to load, but the tool would
    write where they chose."""
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)
    as_another_user(lambda: (shared / "gpuoverhead").symlink_to(ours))
    return shared


def _their_parent(shared: Path, header: str, marker: Path, tmp_path: Path) -> Path:
    """Our own folder in a folder of theirs: they may move it away and put theirs there."""
    as_another_user(lambda: (shared / "theirs").mkdir(mode=0o755))
    (shared / "theirs" / "gpuoverhead").mkdir(mode=0o700)
    return shared / "theirs"


def _their_link_as_the_cache_home(shared: Path, header: str, marker: Path, tmp_path: Path
                                  ) -> Path:
    plant = _plant_in(shared / "theirs" / "gpuoverhead", header, marker)

    def act() -> None:
        (shared / "theirs").mkdir(mode=0o755)
        plant()
        (shared / "home").symlink_to(shared / "theirs")
    as_another_user(act)
    return shared / "home"


def _a_folder_anyone_may_write(shared: Path, header: str, marker: Path, tmp_path: Path
                               ) -> Path:
    """Our own folder under one that anyone may write, with no sticky bit: anyone may move
    ours away and put theirs there, so ours is not private either."""
    as_another_user(lambda: (shared / "open").mkdir(mode=0o777))
    (shared / "open").chmod(0o777)
    (shared / "open" / "gpuoverhead").mkdir(mode=0o700)
    return shared / "open"


CACHE_FORMS = {f.__name__.lstrip("_"): f for f in (
    _their_folder, _their_open_folder, _their_link_to_their_folder, _their_link_to_our_folder,
    _their_parent, _their_link_as_the_cache_home, _a_folder_anyone_may_write)}


@pytest.mark.parametrize("form", CACHE_FORMS)
def test_hostile_cache_folder_of_another_user_runs_nothing_of_theirs(
        form, shared, header, tmp_path, monkeypatch, capsys):
    """With a shared XDG_CACHE_HOME, a pickle another user swapped in ran code as root
    during `gpuoverhead adapters` (kept_header's pickle.loads). No such folder is used: the
    parsed header is kept in a private folder under the temporary one, said in a line."""
    marker = tmp_path / "ran"
    home = CACHE_FORMS[form](shared, header, marker, tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert kept_header._load(kept_header._file(header)) is None
    assert not marker.exists(), "the other user's pickle ran as this user"
    assert cache_folder.cache_dir() == _fallback(tmp_path)
    said = notes(capsys)
    assert len(said) == 1 and "not private" in said[0] and str(_fallback(tmp_path)) in said[0], \
        said
    assert not any((tmp_path / "ours").glob("*"))  # nothing written where a link pointed


@pytest.mark.parametrize("form", CACHE_FORMS)
def test_hostile_cache_folder_of_another_user_is_not_believed(
        form, shared, header, tmp_path, monkeypatch, capsys):
    """Nor are the answers kept there believed (an adapter of theirs, start-ups, a CPU
    probe): each is asked again and kept in the private fallback."""
    marker = tmp_path / "ran"
    home = CACHE_FORMS[form](shared, header, marker, tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert _taken(header, marker) == []
    seen.put(sys.executable, browser_answer("ours"))
    assert seen.get(sys.executable)["info"]["device"] == "ours"
    assert (_fallback(tmp_path) / seen.FILE).is_file()
    assert len(notes(capsys)) == 1


# -- a kept file that is not this user's own and private ---------------------------------


def _move_in(made: Path, path: Path) -> None:
    """`made` moved to `path`, its owner kept (a folder that was open once, or restored)."""
    try:
        os.rename(made, path)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        info = os.lstat(made)
        shutil.copyfile(made, path)
        os.chown(path, info.st_uid, info.st_gid)
        made.unlink()


def _their_file(path: Path, text: bytes, shared: Path) -> None:
    made = shared / "made"
    as_another_user(lambda: made.write_bytes(text))
    _move_in(made, path)


def _others_may_write(path: Path, text: bytes, shared: Path) -> None:
    path.write_bytes(text)
    path.chmod(0o666)


def _group_may_write(path: Path, text: bytes, shared: Path) -> None:
    path.write_bytes(text)
    path.chmod(0o620)


def _a_link_to_their_file(path: Path, text: bytes, shared: Path) -> None:
    theirs = shared / "theirs"
    as_another_user(lambda: theirs.write_bytes(text))
    path.symlink_to(theirs)


def _a_fifo(path: Path, text: bytes, shared: Path) -> None:
    """A FIFO that nobody writes: opening it to read waits for ever."""
    os.mkfifo(path, 0o600)


FILE_FORMS = {f.__name__.lstrip("_"): f for f in (
    _their_file, _others_may_write, _group_may_write, _a_link_to_their_file, _a_fifo)}


@pytest.mark.parametrize("form", FILE_FORMS)
@pytest.mark.parametrize("kind", PLANTED)
def test_hostile_kept_file_that_is_not_private(kind, form, shared, header, tmp_path, capsys):
    """A file in the cache folder that another user made or may change (theirs, writable by
    others, a link, a FIFO) is neither loaded nor believed, said once, and replaced by a
    private one where the tool keeps that file again."""
    name, text, took = PLANTED[kind]
    marker = tmp_path / "ran"
    path = _own_cache() / name(header)
    FILE_FORMS[form](path, text(marker), shared)
    with within(10):
        assert not took(header, marker) and not marker.exists()
    said = notes(capsys)
    assert len(said) == 1 and str(path) in said[0], said


@pytest.mark.parametrize("form", FILE_FORMS)
def test_hostile_kept_answers_file_that_is_not_private_is_replaced(form, shared):
    """... and the file is replaced by one of this user's own that only it may read and
    write, with nothing written where a link pointed."""
    path = _own_cache() / seen.FILE
    FILE_FORMS[form](path, kept_entry(_browser_key(), browser_answer()).encode(), shared)
    theirs = {p: p.read_bytes() for p in shared.iterdir() if p.is_file()}
    with within(10):
        seen.put(sys.executable, browser_answer("ours"))
        assert seen.get(sys.executable)["info"]["device"] == "ours"
    info = os.lstat(path)
    assert stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert {p: p.read_bytes() for p in theirs} == theirs


# -- kept answers that do not read as their writer's (item 6) ----------------------------


def _info(**changed: Any) -> dict[str, Any]:
    answer = browser_answer()
    answer["info"].update(changed)
    return answer


BROWSER_DAMAGE = {
    "no adapter, error null": {"info": {"crossOriginIsolated": True, "userAgent": "x",
                                        "timerResolutionUs": 5.0, "error": None},
                               "version": "1", "status": {}},
    "info a list": {**browser_answer(), "info": ["vulkan"]},
    "no features": {**browser_answer(), "info": {k: v for k, v in browser_answer()["info"].items()
                                          if k != "features"}},
    "features a string": _info(features="timestamp-query"),
    "features of numbers": _info(features=[1, 2]),
    "timer a string": _info(timerResolutionUs="5"),
    "timer infinite": _info(timerResolutionUs=float("inf")),
    "fallback a string": _info(isFallbackAdapter="no"),
    "type null": _info(type=None),
    "a key of another page": _info(extra="x"),
    "version a number": {**browser_answer(), "version": 156},
    "status a list": {**browser_answer(), "status": ["enabled"]},
    "status of numbers": {**browser_answer(), "status": {"webgpu": 1}},
    "no status": {k: v for k, v in browser_answer().items() if k != "status"},
    "a string": "chromium",
}


@pytest.mark.parametrize("damage", BROWSER_DAMAGE)
def test_hostile_damaged_browser_answer_is_asked_again(damage, capsys):
    """A kept browser answer of the wrong types or shape had ended in tracebacks, and one
    with `error: null` made every run say `error: .../chromium: None` for a day."""
    path = _own_cache() / seen.FILE
    path.write_text(kept_entry(_browser_key(), BROWSER_DAMAGE[damage]))
    assert seen.get(sys.executable) is None
    said = notes(capsys)
    assert len(said) == 1 and str(path) in said[0] and "asked again" in said[0], said


ENTRY_DAMAGE = {
    "time a string": ("now", browser_answer()),
    "time not a number": (float("nan"), browser_answer()),
    "time a boolean": (True, browser_answer()),
}


@pytest.mark.parametrize("damage", ENTRY_DAMAGE)
def test_hostile_damaged_kept_entry_is_asked_again(damage, capsys):
    when, value = ENTRY_DAMAGE[damage]
    path = _own_cache() / seen.FILE
    path.write_text(kept_entry(_browser_key(), value, when))
    assert seen.get(sys.executable) is None
    assert len(notes(capsys)) == 1


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "null", "[" * 100_000],
                         ids=["not JSON", "a list", "null", "nested too deep"])
def test_hostile_damaged_kept_file_is_said_and_replaced(text, capsys):
    path = _own_cache() / seen.FILE
    path.write_text(text)
    assert seen.get(sys.executable) is None
    seen.put(sys.executable, browser_answer("ours"))
    assert seen.get(sys.executable)["info"]["device"] == "ours"
    said = notes(capsys)
    assert len(said) == 1 and "damaged" in said[0], said


CPU_DAMAGE = {
    "time not a number": probe_answer(CPUS, when="nan"),
    "took infinite": probe_answer(CPUS, took_s=1e400),
    "took 400 digits": probe_answer(CPUS, took_s=10 ** 400),
    "other CPUs": {**probe_answer(CPUS), "seconds": {"submit": {"7": 2e-5}}},
    "negative seconds": {**probe_answer(CPUS),
                         "seconds": {"submit": {str(c): -1.0 for c in CPUS}}},
}


@pytest.mark.parametrize("damage", CPU_DAMAGE)
def test_hostile_damaged_cpu_probe_is_probed_again(damage, capsys):
    """A kept CPU probe whose time was NaN ended the run in round()'s ValueError; one with
    a 400-digit time in float()'s OverflowError."""
    path = _own_cache() / cpus.FILE
    path.write_text(kept_entry(CPUS, CPU_DAMAGE[damage]).replace('"nan"', "NaN"))
    assert cpus._kept(CPUS) is None
    assert len(notes(capsys)) == 1


def _device(**changed: Any) -> dict[str, Any]:
    return {"implementation": "torch-eager", "backend": "cpu", "adapter_type": "CPU",
            "vendor": "intel", "vendor_id": 0, "device": "cpu", "driver": "",
            "timestamps": False, **changed}


TORCH_DAMAGE = {"device a number": _device(device=1),
                "no driver": {k: v for k, v in _device().items() if k != "driver"},
                "a field of another version": _device(extra=True)}


@pytest.mark.parametrize("damage", TORCH_DAMAGE)
def test_hostile_damaged_torch_device_is_asked_again(damage, capsys):
    path = _own_cache() / pytorch.FILE
    path.write_text(kept_entry(["torch"], TORCH_DAMAGE[damage]))
    assert pytorch._kept(["torch"]) is None
    assert len(notes(capsys)) == 1


def test_a_torch_device_as_kept_is_taken():
    """The control of the damaged ones: what pytorch.py keeps is taken as it was kept."""
    path = _own_cache() / pytorch.FILE
    path.write_text(kept_entry(["torch"], _device()))
    assert pytorch._kept(["torch"]).device == "cpu"


# -- the kept C header, damaged or not a parse -------------------------------------------


def _parse_state(header: str) -> dict[str, Any]:
    from wgpu.backends.wgpu_native import _ffi

    return {k: v for k, v in vars(_ffi.ffi._parser).items() if k not in kept_header._TRANSIENT}


class _OrderedPayload:
    def __reduce__(self) -> tuple[Any, ...]:
        import collections

        return (collections.OrderedDict, ())


HEADER_DAMAGE: dict[str, Callable[[str, Path], bytes]] = {
    "not a pickle": lambda header, marker: b"not a pickle",
    "empty": lambda header, marker: b"",
    "cut short": lambda header, marker: pickle.dumps(_parse_state(header))[:50_000],
    "a list": lambda header, marker: pickle.dumps([1, 2]),
    "no declarations": lambda header, marker: pickle.dumps({"_declarations": {}}),
    "declarations of strings": lambda header, marker: pickle.dumps(
        {**_parse_state(header), "_declarations": {"typedef x": ("int", 0)}}),
    "a parser attribute of another type": lambda header, marker: pickle.dumps(
        {**_parse_state(header), "_int_constants": []}),
    "code that runs as it loads": lambda header, marker: payload_pickle(marker),
    "a class that is not cffi's": lambda header, marker: pickle.dumps(_OrderedPayload()),
}


@pytest.mark.parametrize("damage", HEADER_DAMAGE)
def test_hostile_damaged_kept_header_is_parsed_again(damage, header, tmp_path, capsys):
    """Even in this user's own private folder, the kept parse is unpickled into cffi's
    types only and checked for its shape: a foreign pickle ({'_declarations': {}}) had made
    every run say "wgpu is not usable"; one that calls a function had run it."""
    marker = tmp_path / "ran"
    path = _own_cache() / _header_name(header)
    path.write_bytes(HEADER_DAMAGE[damage](header, marker))
    path.chmod(0o600)
    assert kept_header._load(path) is None
    assert not marker.exists()
    said = notes(capsys)
    assert len(said) == 1 and str(path) in said[0] and "parsed again" in said[0], said


def test_hostile_kept_header_the_import_fails_with_is_removed(header, capsys):
    """A kept parse of the right shape but another header's (its declarations lack this
    one's types): the import that took it fails once, and the next one parses again."""
    from cffi import FFI

    other = FFI()
    other.cdef("typedef struct { int a; } Other;" + " " * kept_header.MIN_CHARS)
    path = kept_header._file(header)
    kept_header._store(path, other._parser)
    assert kept_header._load(path) is not None
    with pytest.raises(Exception), kept_header.kept_header():  # noqa: B017, PT011
        ffi = FFI()
        ffi.cdef(header)
        ffi.sizeof("WGPUBufferDescriptor")  # as the binding's import would use it
    assert not path.exists()
    assert any("removed" in n for n in notes(capsys))


# -- the runtime folder (cli.main) -------------------------------------------------------

#: A process that runs cli.main with the command replaced by a report of the runtime
#: folder it was given (its owner, mode and kind, while it exists).
PROBE = """
import json, os, stat
from gpuoverhead import cli

def report():
    path = os.environ.get("XDG_RUNTIME_DIR")
    info = os.lstat(path) if path else None
    print(json.dumps({"path": path, "uid": info and info.st_uid,
                      "mode": info and stat.S_IMODE(info.st_mode),
                      "folder": bool(info and stat.S_ISDIR(info.st_mode))}))

cli.app = report
cli.main()
"""


def _runtime(temp: Path) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**env, "TMPDIR": str(temp)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def _named(temp: Path) -> Path:
    return temp / f"gpuoverhead-runtime-{os.geteuid()}"


def _plant_runtime(make: Callable[[Path, Path, Path], Any]) -> Callable[[Path, Path], None]:
    """The other user's act `make(named, temp, ours)`, given this user's folder name (the
    other user's uid would name another one)."""
    def plant(temp: Path, ours: Path) -> None:
        named = _named(temp)
        as_another_user(lambda: make(named, temp, ours))
    return plant


def _their_link_to_their_folder(named: Path, temp: Path, ours: Path) -> None:
    (temp / "theirs").mkdir()
    named.symlink_to(temp / "theirs")


RUNTIME_FORMS: dict[str, Callable[[Path, Path], None]] = {
    "their folder": _plant_runtime(lambda named, temp, ours: named.mkdir(mode=0o700)),
    "their folder open to all": _plant_runtime(
        lambda named, temp, ours: (named.mkdir(), named.chmod(0o777))),
    "their link to their folder": _plant_runtime(_their_link_to_their_folder),
    "their link to a folder of ours": _plant_runtime(
        lambda named, temp, ours: named.symlink_to(ours)),
    "their file": _plant_runtime(lambda named, temp, ours: named.write_text("")),
    "our folder open to all": lambda temp, ours: (_named(temp).mkdir(),
                                                  _named(temp).chmod(0o777)),
}


@pytest.mark.parametrize("form", RUNTIME_FORMS)
def test_hostile_runtime_folder_planted(form, shared, tmp_path):
    """The runtime folder Mesa gets ($TMPDIR/gpuoverhead-runtime-<uid>) was taken as found:
    a link another user planted was used, and root wrote into their folder. A planted one
    is refused and a fresh private one made (removed at exit), said in a line."""
    (tmp_path / "ours").mkdir(mode=0o700)
    RUNTIME_FORMS[form](shared, tmp_path / "ours")
    before = sorted(p.name for p in shared.rglob("*"))
    found, stderr = _runtime(shared)
    assert found["path"] and Path(found["path"]) != _named(shared), found
    assert found["folder"] and found["uid"] == os.geteuid() and found["mode"] == 0o700, found
    assert Path(found["path"]).parent == shared
    assert not Path(found["path"]).exists()  # removed at exit
    assert sorted(p.name for p in shared.rglob("*")) == before  # nothing written in theirs
    assert not any((tmp_path / "ours").iterdir())
    assert stderr.count("note: ") == 1 and "not private" in stderr, stderr


def test_runtime_folder_made_afresh_and_found_again(tmp_path):
    """The control: in a private temporary folder the named folder is made (0700) and used
    by each process, with nothing said."""
    temp = tmp_path / "own-tmp"
    temp.mkdir(mode=0o700)
    for _ in range(2):
        found, stderr = _runtime(temp)
        assert found["path"] == str(_named(temp)) and found["mode"] == 0o700, found
        assert "note" not in stderr


def test_hostile_runtime_folder_under_a_folder_anyone_may_write(shared):
    """A temporary folder that anyone may write and that has no sticky bit holds no private
    folder (anyone may move it away): no runtime folder is set, rather than one there."""
    open_to_all = shared / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    found, _ = _runtime(open_to_all)
    assert found["path"] is None, found
    assert list(open_to_all.iterdir()) == []
