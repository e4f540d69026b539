"""Shared helpers: run the real CLI in a child process, against the machine's real adapter.

The GPU tests drive the backend named by `GPUOVERHEAD_TEST_BACKEND` (default `vulkan`): on a
machine without a GPU that is Mesa's lavapipe (`apt-get install mesa-vulkan-drivers`), which
`.ci/run` installs; `d3d12` (WARP) or `metal` on the other runner systems.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import getpass
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:  # pandas imported where a run is read: a test's spawned process
    import pandas as pd  # (test_devices.py) imports this module, not pandas (~0.3 CPU-s)

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
#: The backend the GPU tests measure.
BACKEND = os.environ.get("GPUOVERHEAD_TEST_BACKEND", "vulkan")
#: The shared CI run's time limit in seconds. Its suite (`ci_run_suite`) takes about 40 s on
#: the quiet 2-core machine; with --processes the budgets stay the suite's (the limit only
#: cuts them), so the margin for a busy or slower machine costs nothing on this one, and a
#: limit that held no second pass would leave the tests without intervals over two processes.
CI_RUN_LIMIT_S = 150
#: What the shared CI run changes of configs/ci.yaml (`ci_run_suite`): the decode step
#: (about 40 ms a token on lavapipe, 2 s a round at 2 tokens, 4-6 s at 8) in loops of 2
#: tokens and 3 rounds after one warm-up round, which its least budget leaves it (at 4 s a
#: process, rounds under 1.33 s made a fourth), the other fusion patterns (whose processes are
#: mostly start-up) on an eighth of the budget per case (8-9 rounds a process, the suite's
#: min_rounds) after at most 2 warm-up rounds (a process's first round took 1.1-1.3x its
#: measured rounds' median on lavapipe, the next ones within their noise), matmul at K 16 and
#: 32 (the one figure read of it, its crossover, needs two sizes; K 64's 8 ms a unit took
#: three quarters of its rounds), the kernels and the cadence on a quarter of their budgets
#: (empty's 54 rounds a process become 15-20; the layer split's checks, test_layers.py, allow
#: for how far the processes differ) but the kernel with a bind group per dispatch on half
#: (about 20 rounds a process: each process's own interval of the bind group's cost must
#: exclude zero, test_bind_group.py, and at 8-10 rounds both reached it beside a busy core),
#: and the loop on its earlier 0.2 s a case (each process's own interval of its K = 16
#: speedup must lie above 1.5, test_fusion.py: at 0.05 s one reached zero beside a busy core).
#: Every other benchmark and case runs.
CI_RUN_FUSION = {"budget_s": 0.05, "warmup_max_rounds": 2}
CI_RUN_MATMUL = {"k_sweep": [16, 32]}
CI_RUN_LOOP = {"budget_s": 0.2}
CI_RUN_DECODE = {"loop_tokens": 2, "min_rounds": 3, "warmup_max_rounds": 1, "budget_s": 0.1}
CI_RUN_KERNEL = {"budget_s": 0.1}
CI_RUN_BIND_GROUP = {"budget_s": 0.2}
CI_RUN_CADENCE = {"budget_s": 0.15}


@functools.cache
def measured_adapter() -> tuple[str, str]:
    """Device name and vendor of the adapter the GPU tests run on (lavapipe here)."""
    from gpuoverhead.drivers import webgpu
    from gpuoverhead.gpu import adapters

    found = adapters.discover([webgpu.binding("wgpu-native")])[0]
    info = adapters.select(found, BACKEND, None)[0].info
    return info.device, info.vendor


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The readers of a long run (SLOW_FIXTURES) slow like the others marked so. In one
    process the fast tests first, the slow after them (a stable sort: the first failure
    comes soon); spread over pytest-xdist's workers the slow first, so that no worker is
    left with a long test while the others idle. And for xdist (`--dist loadgroup`) the
    tests that share a fixture of this suite's that outlives one test (`ci_run`, a
    module's device or run) in one group, which one worker runs: each worker would
    otherwise make that fixture again."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    spread = hasattr(config, "workerinput")  # this process is one of xdist's workers
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None) == spread)
    for item, group in shared_groups(items).items():
        item.add_marker(pytest.mark.xdist_group(group))


#: Fixtures that make a long run: the tests that read it are `slow` with it (ci_run: about
#: 60 s on the quiet 2-core machine).
SLOW_FIXTURES = {"ci_run"}


def slow_but(cases: Iterable[Any], *quick: int) -> list[Any]:
    """A parametrized test's cases, each but those at the places `quick` marked slow (a tuple
    is one case's arguments): the quick loop (`-m "not slow"`) checks those of a family of
    like cases, the whole suite every one."""
    return [case if i in quick else pytest.param(
        *(case if isinstance(case, tuple) else (case,)), marks=pytest.mark.slow)
        for i, case in enumerate(cases)]
#: This suite's fixtures that every test uses: they group nothing.
AUTOUSE = ("own_temporary_folder",)


def shared_groups(items: list[pytest.Item]) -> dict[pytest.Item, str]:
    """A group name for each test that uses a session or module fixture defined in tests/,
    or imports torch in the test process (marked `torch_here`: about 2.8 CPU-s of import
    that each worker paid where two ran such tests); tests linked by any of those (one uses
    `ci_run` and a module's run, another only that module's run) share one group."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    keys: dict[pytest.Item, list[str]] = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        mine = [f"{Path(str(item.path)).stem}.{name}" if defs[-1].scope == "module" else name
                for name, defs in (info.name2fixturedefs.items() if info else ())
                if defs and defs[-1].scope in ("session", "module") and name not in AUTOUSE
                and Path(defs[-1].func.__code__.co_filename).is_relative_to(ROOT / "tests")]
        mine += ["torch_here"] if item.get_closest_marker("torch_here") else []
        for key in mine:
            parent[root(key)] = root(mine[0])
        if mine:
            keys[item] = mine
    return {item: root(mine[0]) for item, mine in keys.items()}


@pytest.fixture(scope="session", autouse=True)
def own_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Temporary files of this session and of every process it starts in a folder of its
    own: a browser's profile folder then tells this session's browsers from those of
    another session (or xdist worker) on the same machine (test_chromium.py)."""
    folder = tmp_path_factory.getbasetemp() / "tmp"
    folder.mkdir(exist_ok=True)
    # torch.compile's cache stays where it was (under the usual temporary folder), as warm or
    # as cold as it would be without this folder: Inductor keeps its precompiled header
    # (about 10 CPU-s of g++ to build) under the temporary folder whatever its cache folder,
    # so that name in this folder is the usual one.
    with contextlib.suppress(KeyError, OSError):  # a user without a name: torch's fallback
        name = f"torchinductor_{getpass.getuser()}"
        usual = Path(os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                                           os.path.join(tempfile.gettempdir(), name)))
        usual.mkdir(exist_ok=True)
        (folder / name).symlink_to(usual, target_is_directory=True)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def pytest_configure(config: pytest.Config) -> None:
    keep_bytecode()
    # Cycles looked for a seventh as often, as in a command's own process (cli.main): each
    # pytest process keeps pandas', pyarrow's, wgpu's and rich's objects, and Python's
    # default thresholds made a full pass over them every 70,000 allocations (3.5 CPU-s of
    # each xdist worker in the quick loop, most of it outside the commands the tests call).
    gc.set_threshold(10_000, 10, 10)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's garbage looked for once, then every object left frozen: pytest's own
    end looks for cycles five times more (their finalizers' errors are then reported) and the
    interpreter's exit once again, over a heap of pandas, wgpu and rich that each xdist
    worker kept (2.4 CPU-s of a one-process quick loop's end); what this collection finds
    is reported all the same."""
    gc.collect()
    gc.freeze()


def keep_bytecode() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (as on the 2-core development machine), every
    Python process the tests start (a run, each of its workers, a `show`: several hundred)
    would compile the package's modules from source again, 1-1.5 s of CPU a run with one
    worker, and each pytest process the test modules (pytest's assertion rewriting: about
    2.3 CPU-s a process, before its first test). The processes keep their bytecode instead, as
    they would without that variable, under the usual temporary folder (PYTHONPYCACHEPREFIX,
    which pytest's rewritten modules follow) rather than beside the sources, so that the
    checkout stays as it was; the first processes fill it once (set as pytest starts,
    before pytest-xdist starts its workers, which inherit it). Nothing of what a test checks
    depends on where bytecode lives. The folder is used only where it is this user's own and
    private (gpu/private.py): bytecode another user planted there would run."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    from gpuoverhead.gpu import private

    with contextlib.suppress(KeyError, OSError):  # no user name, or not private: none kept
        folder = private.folder(
            Path(tempfile.gettempdir()) / f"gpuoverhead-tests-bytecode_{getpass.getuser()}")
        os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = str(folder)
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        sys.dont_write_bytecode = False


def without_bytecode_writes() -> dict[str, str]:
    """The environment of a process a test starts under a file-size limit (RLIMIT_FSIZE):
    one that writes no bytecode (`keep_bytecode`), since importlib keeps a .pyc that the
    limit cut short, and every later process importing that module would fail to read it."""
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


#: The nice value of the runs the tests start (and so of their workers): above the other
#: tests running beside them (pytest-xdist) and whatever else keeps the machine busy, so that
#: what a test checks of a run's estimates describes the tool rather than the load.
RUN_NICE = -15


def measuring_first() -> None:
    """`preexec_fn` of a run a test starts: RUN_NICE where this user may raise a priority
    (root, as CI runs); elsewhere the run keeps the priority it had."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, RUN_NICE)


def gpuoverhead(*args: str, timeout: float = 300, env: dict[str, str] | None = None,
                ) -> subprocess.CompletedProcess[str]:
    """Run `python -m gpuoverhead ARGS` (first in line for the CPU) and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "gpuoverhead", *args], capture_output=True, text=True,
        timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})},
        preexec_fn=measuring_first,
    )


#: The line a run starts with where its probe found a CPU much slower than the others, as a
#: busy machine makes one (run/cpus.py).
CPU_NOTE = re.compile(r"CPUs? [\d,-]+ ran [\d.]+x slower than the other CPUs \(.+\): the run "
                      r"uses CPUs [\d,-]+; --affinity [\d,-]+ includes it"
                      r"( \(probed \d+ min ago, kept for [\d.]+ h this boot\))?|CPUs differ: .+")


#: What a child of `cli_commands` writes on stdout and stderr after each command it ran.
_ENDED = "--- ended: "
_COMMANDS = f"""import json, sys
from gpuoverhead.cli import main
for args in sys.argv[1:]:
    sys.argv = ["gpuoverhead", *json.loads(args)]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    for stream in (sys.stdout, sys.stderr):
        stream.write(f"\\n{_ENDED}{{code}}\\n")
        stream.flush()
"""


def cli_commands(*commands: list[str], **how: Any) -> list[subprocess.CompletedProcess[str]]:
    """Each of `commands` (a command line after `gpuoverhead`) run in turn in one child
    process as the console script runs it (`how`: subprocess.run's keywords, env and a
    preexec_fn among them), each with its exit code and its part of stdout and stderr: one
    start-up and one import of the libraries, not one each (about 1 CPU-s a command), for
    what only a process of its own shows (an environment read as it starts, a limit)."""
    proc = subprocess.run([sys.executable, "-c", _COMMANDS, *map(json.dumps, commands)],
                          capture_output=True, text=True, cwd=ROOT, **{"timeout": 300, **how})
    outs, errs = _each_command(proc.stdout), _each_command(proc.stderr)
    assert proc.returncode == 0 and len(outs) == len(errs) == len(commands), proc.stderr
    return [subprocess.CompletedProcess(c, int(code), out, err)
            for c, (out, _), (err, code) in zip(commands, outs, errs, strict=True)]


def _each_command(text: str) -> list[tuple[str, str]]:
    """A `cli_commands` child's stdout or stderr cut into each command's part and exit code."""
    parts = text.split(f"\n{_ENDED}")
    return [(part if i == 0 else part.partition("\n")[2], after.partition("\n")[0])
            for i, (part, after) in enumerate(zip(parts, parts[1:], strict=False))]


def without_cpu_note(stderr: str) -> str:
    """A run's stderr less the CPU line that a busy machine puts first, that line checked
    for its form: what the run says after it is the same on a quiet machine."""
    first, _, rest = stderr.partition("\n")
    if first.startswith("CPU"):
        assert CPU_NOTE.fullmatch(first), first
        return rest
    return stderr


@functools.cache
def _command() -> Any:
    """The click command that `app()` builds on every call (typer.main.get_command: about
    10 ms of CPU), built once: click commands take any number of calls."""
    import typer

    from gpuoverhead import cli

    return typer.main.get_command(cli.app)


def in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI called in this process (for commands whose test checks nothing of a process's
    own): the same answers as `gpuoverhead()` without an interpreter's start-up per call
    (about 1 CPU-s). As in its child: `app` as the console script calls it (click's own
    width of help, not CliRunner's; its click command built once), stdout and stderr text
    in UTF-8 with errors replaced (cli.main), first in line for the CPU (`measuring_first`),
    started now (a run's time limit counts from its command's start), no note said yet (each
    is said once a process) and no stop asked for; in the test's folder (a relative path is
    the test's). What a command changes of this process (its folder, environment, priority,
    signal handlers, CPUs, warnings filters, notes said, a stop) is put back after it
    (tests/unit/test_cli.py).
    Not as in a child: what the drivers' C code or a worker writes to file descriptor 2
    itself is not in stderr, and the process is not fresh (its imports warm, its drivers
    loaded): a test that reads the one or needs the other runs `gpuoverhead()`."""
    import io
    import warnings

    from gpuoverhead import cli, interrupts
    from gpuoverhead.gpu import cache_folder

    handlers = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    priority = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else None
    said, stop = cache_folder._said, (interrupts.requested, interrupts.hung_up)
    cli.STARTED = time.monotonic()
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    folder, environment, streams = os.getcwd(), dict(os.environ), (sys.stdout, sys.stderr)
    captured = [io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace",
                                 write_through=True) for _ in streams]
    sys.stdout, sys.stderr = captured
    code: int | str | None = 0
    try:
        cache_folder._said, interrupts.requested, interrupts.hung_up = set(), False, False
        if priority is not None:  # POSIX's: Windows has no nice value
            measuring_first()
        with warnings.catch_warnings():
            _command()(list(args), prog_name="gpuoverhead")
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.stdout, sys.stderr = streams
        if priority is not None:
            os.setpriority(os.PRIO_PROCESS, 0, priority)
        cache_folder._said = said
        os.chdir(folder)
        for name in os.environ.keys() - environment.keys():
            del os.environ[name]
        os.environ.update(environment)
        interrupts.requested, interrupts.hung_up = stop
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        if cpus is not None:  # a run pins the process that calls it (and its workers)
            os.sched_setaffinity(0, cpus)
    out, err = (c.detach().getvalue().decode() for c in captured)
    if not isinstance(code, int) and code is not None:  # sys.exit("message"), as Python ends
        err, code = err + f"{code}\n", 1
    return subprocess.CompletedProcess(list(args), code or 0, out, err)


def process_centre(values) -> float:
    """What a run shows over its processes' values: their median from six on, under six
    their geometric mean (the centre of the t interval on logs, analysis/stats.py), or their
    mean where one is not above zero (the interval is then linear: a decode step's slope
    over 3 rounds came out below zero in one process beside a busy core)."""
    import numpy as np

    found = np.asarray(values, dtype=float)
    if found.size >= 6 or found.size == 1:
        return float(np.median(found))
    if not (found > 0).all():
        return float(found.mean())
    return float(np.exp(np.log(found).mean()))


def only_run_folder(out: Path) -> Path:
    folders = [p for p in out.iterdir() if p.is_dir()]
    assert len(folders) == 1, folders
    return folders[0]


def read_run(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    import pandas as pd

    samples = pd.read_parquet(folder / "samples.parquet")
    summary = pd.read_parquet(folder / "summary.parquet")
    info = json.loads((folder / "run.json").read_text())
    return samples, summary, info


def write_suite(folder: Path, text: str, name: str = "suite.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def ci_run_suite(folder: Path, benchmarks: int | None = None,
                 budget_s: float | None = None) -> Path:
    """configs/ci.yaml as the shared CI run measures it (CI_RUN_*: its budgets, fusion's warm-up
    and matmul's K; its benchmarks, cases, sizes, other sweeps, methodologies and layers as they
    are), written into `folder`; with `benchmarks`, only its first so many; with
    `budget_s`, that budget per case for all of them."""
    suite = yaml.safe_load((CONFIGS / "ci.yaml").read_text())
    for bench in suite["benchmarks"]:
        if "fusion" in bench:
            bench.update(CI_RUN_DECODE if bench["fusion"] == "decode" else CI_RUN_FUSION)
            bench.update({"matmul": CI_RUN_MATMUL, "loop": CI_RUN_LOOP}.get(bench["fusion"], {}))
        else:
            bench.update(CI_RUN_CADENCE if "cadence" in bench.get("methodologies", ())
                         else CI_RUN_KERNEL)
            bench.update(CI_RUN_BIND_GROUP if "bind_group" in bench else {})
        if budget_s is not None:
            bench.pop("budget_s", None)
    if budget_s is not None:
        suite["defaults"]["budget_s"] = budget_s
    suite["benchmarks"] = suite["benchmarks"][:benchmarks]
    return write_suite(folder, yaml.safe_dump(suite, sort_keys=False), "ci.yaml")


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """One run of the CI suite (`ci_run_suite`) on the Vulkan adapter in two worker
    processes, shared by every test that only reads results; under a time limit. On every
    CPU the tests may use (`--affinity`): lavapipe runs the GPU's work on CPU threads, and
    a run held to one CPU (the probe leaves out a CPU that another process keeps busy) runs
    that work inside the issue time, which the readers' checks of issue against wait
    time would take for a fault of the method (test_run.py)."""
    out = tmp_path_factory.mktemp("ci-run")
    every = (["--affinity", ",".join(map(str, sorted(os.sched_getaffinity(0))))]
             if hasattr(os, "sched_getaffinity") else [])
    proc = gpuoverhead("run", "--suite", str(ci_run_suite(out)), "--backend", BACKEND,
                       "--out", str(out / "runs"), "--seed", "7", "--processes", "2",
                       "--implementation", "wgpu-native", "--time-limit", str(CI_RUN_LIMIT_S),
                       *every)
    assert proc.returncode == 0, proc.stderr
    return proc, only_run_folder(out / "runs")


def browser_found(named: str | None = None) -> tuple[str | None, pytest.MarkDecorator]:
    """The browser the browser tests drive (launcher.find: `named`, else this machine's
    Chromium) and a mark that skips a test, saying why, where there is none."""
    from gpuoverhead.browser import launcher
    from gpuoverhead.errors import UserError

    try:
        return launcher.find(named), pytest.mark.skipif(False, reason="")
    except UserError as exc:
        return None, pytest.mark.skipif(True, reason=str(exc))


def aa_suite(name: str, time_limit_s: int) -> str:
    """The A/A tests' suite (test_selftest*.py): the empty kernel, naive and sequential at
    N = 1 and 8, at least 6 rounds a process, in `time_limit_s`."""
    return (f"name: {name}\ntime_limit_s: {time_limit_s}\ndefaults:\n  n_sweep: [1, 8]\n"
            "  budget_s: 0.2\n  min_rounds: 6\n  methodologies: [naive, sequential]\n"
            "  encodings: [dispatch]\n  layers: [wrapper]\n"
            "benchmarks:\n  - {name: empty, kernel: empty, elements: 1}\n")


def as_another_user(act: Callable[[], None]) -> None:
    """`act`, done by another local user (`nobody`), as an attacker on a shared machine
    would: in a child process that takes that user's uid and gid before it acts; the test
    skips, saying why, where this process cannot (not root, as CI may not be)."""
    if not hasattr(os, "fork") or os.geteuid() != 0:
        pytest.skip("acting as a second local user needs root (os.setuid)")
    import pwd  # POSIX only

    try:
        other = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("acting as a second local user needs a user nobody")
    pid = os.fork()
    if pid == 0:  # the other user: nothing of pytest's runs here
        code = 1
        try:
            os.setgroups([])
            os.setgid(other.pw_gid)
            os.setuid(other.pw_uid)
            act()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the other user's part failed"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every local user may write and nobody may move others' entries in (mode
    1777, as /tmp): a shared XDG_CACHE_HOME or TMPDIR, for `as_another_user`."""
    base = next((b for b in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(b)
                 and os.stat(b).st_mode & 0o1777 == 0o1777), None)
    if base is None:
        pytest.skip("no sticky folder that every user may write (/tmp) on this machine")
    folder = Path(tempfile.mkdtemp(prefix="gpuoverhead-hostile-", dir=base))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# -- what the hostile tests of the cache folder share (test_hostile_cache*.py, _heldout.py) --

@pytest.fixture(scope="module")
def header() -> str:
    """wgpu-native's C header, whose parse the cache folder keeps (gpu/kept_header.py)."""
    return pytest.importorskip("wgpu.backends.wgpu_native._ffi").get_wgpu_header()


def private_folders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This test's cache folder (`tmp_path`/cache) and temporary folder (`tmp_path`/tmp,
    the cache's fallback), made afresh and private, and the notes said so far forgotten
    (each is said once a process); the temporary folder."""
    from gpuoverhead.gpu import cache_folder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    temp = tmp_path / "tmp"
    temp.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(cache_folder, "_said", set(), raising=False)
    return temp


def notes(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines the tool said on stderr of what it did not take (`note: ...`)."""
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")]


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail rather than wait for ever (a read of a FIFO or a device that never ends)."""
    def late(*_: object) -> None:
        raise TimeoutError(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Payload:
    """Pickled, opens (creates) `marker` as it loads: code run by whoever loads it."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, ...]:
        return (open, (self.marker, "w"))


def payload_pickle(marker: Path) -> bytes:
    """A pickle that creates `marker` as it loads (what another user plants as a kept
    C header)."""
    return pickle.dumps(_Payload(marker))


def kept_entry(key: object, value: object, when: object = None) -> str:
    """A kept file's text with one entry, as gpu/kept.py writes it (`when`: its time)."""
    from gpuoverhead.gpu import kept

    return json.dumps({json.dumps([kept.boot(), key]): {
        "time": time.time() if when is None else when, "value": value}})


def browser_answer(device: str = "Evil GPU") -> dict[str, object]:
    """A browser's answer as browser/adapter.py keeps it, of an adapter with a GPU."""
    return {"info": {"crossOriginIsolated": True, "userAgent": "HeadlessChrome/1",
                     "timerResolutionUs": 5.0, "vendor": "evil", "architecture": "",
                     "device": device, "description": device, "driver": "1", "backend":
                     "vulkan", "type": "discrete GPU", "isFallbackAdapter": False,
                     "features": ["timestamp-query"]},
            "version": "HeadlessChrome/1", "status": {"webgpu": "enabled"}}


def probe_answer(cpus: list[int], took_s: object = 0.8, when: object = None) -> dict[str, object]:
    """A CPU probe's answer as run/cpus.py keeps it: every CPU of `cpus` alike."""
    return {"seconds": {"submit": {str(c): 2e-5 for c in cpus}}, "took_s": took_s,
            "time": time.time() if when is None else when}
