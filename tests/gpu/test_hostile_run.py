"""Hostile input around a run (issue 42): the start-up cache, --affinity, --browser, no home
folder, and user strings on the terminal. Each ends in one clear line and exit code 2, or
is taken in stride; never a traceback. Those that end before a worker starts run in this
process (conftest.in_process: 1.7 CPU-s of a child's start-up less each): a traceback that a
child would print is an exception raised here, which fails the test as the child's did."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    BACKEND,
    ROOT,
    gpuoverhead,
    in_process,
    measuring_first,
    only_run_folder,
    read_run,
    without_cpu_note,
    write_suite,
)

from gpuoverhead.drivers import registry
from gpuoverhead.errors import UserError
from gpuoverhead.gpu.layers import native
from gpuoverhead.run import environment, startups
from gpuoverhead.run.plan import RunOptions, prepare

GOOD = "benchmarks:\n  - {name: a, kernel: add_one, elements: 64}\n"
#: The largest --time-limit (run/plan.py).
MOST_LIMIT_S = 86400


def _assert_one_clear_line(proc, expected: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert expected in lines[0], lines[0]


def _cache_of(tmp_path: Path, suite: Path, seconds: object, monkeypatch) -> None:
    """A cache folder whose startups.json holds `seconds` (as written, JSON) for each job of
    `suite` on wgpu-native, where this process's runs (`in_process`: each of these ends at
    its plan, before a worker starts) look for it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    plan = prepare(RunOptions(suite=suite, out_root=tmp_path / "out", backend=BACKEND,
                              implementations=registry.parse("wgpu-native")))
    keys = [startups.key(job) for jobs in plan.benchmarks for job in jobs]
    (cache / "gpuoverhead").mkdir(parents=True, exist_ok=True)  # the plan may have made it
    (cache / "gpuoverhead" / startups.FILE).write_text(
        "{" + ", ".join(f"{json.dumps(k)}: [{seconds}, {seconds}]" for k in keys) + "}")


@pytest.mark.parametrize("seconds", ["Infinity", "1e308", "NaN", "-5", "1" + "0" * 400],
                         ids=["Infinity", "1e308", "NaN", "below zero", "400 digits"])
def test_hostile_start_up_cache_with_values_no_start_up_takes(tmp_path, monkeypatch, seconds):
    """`Infinity` in startups.json ended every time-limited run in an OverflowError, 1e308
    asked for a --time-limit of 309 digits: such values are dropped, the drivers' hints
    stand in, and the limit asked for is one the option takes."""
    suite = write_suite(tmp_path, GOOD)
    _cache_of(tmp_path, suite, seconds, monkeypatch)
    proc = in_process("run", "--suite", str(suite), "--backend", BACKEND, "--implementation",
                      "wgpu-native", "--time-limit", "1", "--out", str(tmp_path / "o"))
    _assert_one_clear_line(proc, "from the drivers' hints: no run here yet")
    asked = re.search(r"ask for --time-limit (\d+) or more", proc.stderr)
    assert asked and int(asked[1]) <= MOST_LIMIT_S, proc.stderr
    assert not (tmp_path / "o").exists()


def test_hostile_start_ups_that_no_time_limit_can_hold(tmp_path, monkeypatch):
    """20 jobs whose workers took an hour each to start: no message asks for a --time-limit
    above the option's maximum; it says that none can hold the suite."""
    suite = write_suite(tmp_path, "benchmarks:\n" + "".join(
        f"  - {{name: a{i}, kernel: add_one, elements: 64}}\n" for i in range(20)))
    _cache_of(tmp_path, suite, str(startups.MAX_STARTUP_S), monkeypatch)
    proc = in_process("run", "--suite", str(suite), "--backend", BACKEND, "--implementation",
                      "wgpu-native", "--time-limit", "600", "--out", str(tmp_path / "o"))
    _assert_one_clear_line(proc, "all 20 jobs' start-ups as earlier runs here took")
    assert f"not even the largest --time-limit ({MOST_LIMIT_S}) can: ask for 0" in proc.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("spec", "expected"), [
    ("²", "--affinity takes CPU numbers and ranges such as 2-5,8, not '²'"),
    ("٣", "--affinity takes CPU numbers and ranges such as 2-5,8, not '٣'"),
    ("0-200000000", "--affinity 0-200000000: CPU "),
    ("0-" + "9" * 5000, "--affinity takes CPU numbers and ranges"),
    ("", "--affinity takes CPU numbers and ranges such as 2-5,8, not ''")],
    ids=["superscript", "arabic digit", "200 million CPUs", "5000 digits", "empty"])
def test_hostile_affinity_that_names_no_cpus_here(tmp_path, spec, expected):
    """'²' passed str.isdigit and ended in int()'s ValueError; '0-200000000' built its set
    for 15 s and then ran out of memory. Both are refused at once."""
    proc = in_process("run", "--affinity", spec, "--out", str(tmp_path / "o"))
    _assert_one_clear_line(proc, expected)
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux's")
def test_hostile_affinity_range_is_checked_before_it_is_built():
    """parse_cpus (which others call too) refuses a range past this machine's CPUs without
    building it, and gives the CPUs of one it takes."""
    allowed = os.sched_getaffinity(0)
    started = time.monotonic()
    with pytest.raises(UserError, match=f"CPU {max(allowed) + 1} is not one"):
        environment.parse_cpus(f"{min(allowed)}-{10 ** 17}")
    with pytest.raises(UserError, match=f"CPU {max(allowed) + 1} is not one"):
        environment.parse_cpus(f"0-{10 ** 8}")
    assert time.monotonic() - started < 1
    assert environment.parse_cpus(f" {min(allowed)} ") == {min(allowed)}
    assert environment.parse_cpus(",".join(map(str, sorted(allowed)))) == allowed


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize(("given", "expected"), [
    ("/etc/passwd", "--browser '/etc/passwd': not executable (chmod +x it"),
    ("folder", "': a folder, not a program; pass the path of a Chromium or Chrome"),
    ("missing", "': no such file, nor a program of that name on PATH"),
    ("no-such-browser-here", "--browser 'no-such-browser-here': no such file, nor a program"),
    ("script", "script: Exec format error")])
def test_hostile_browser_that_cannot_be_started(tmp_path, given, expected):
    """--browser /etc/passwd ended in a PermissionError traceback from Popen."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "script").write_text("not a program\n")
    (tmp_path / "script").chmod(0o755)  # executable, but no #! and no binary: ENOEXEC
    path = given if given.startswith("/") or given.startswith("no-") else str(tmp_path / given)
    proc = in_process("run", "--implementation", "chromium", "--browser", path, "--out",
                      str(tmp_path / "o"))
    _assert_one_clear_line(proc, expected)
    assert not (tmp_path / "o").exists()


#: A suite name that would drive the terminal: rich markup, escape sequences, a NUL byte, a
#: right-to-left override and a newline that starts a line of its own.
HOSTILE_NAME = "[bold]x[/bold] \x1b[31mred\x1b[0m \x00 \u202eevil\nerror: fake"


@pytest.fixture(scope="module")
def homeless_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """One run for two hostile cases (a run's start-up less): a process with no $HOME and a
    uid with no passwd entry (a container's bare uid; each process here is made so by a
    sitecustomize that hides this uid from pwd), measuring a suite named HOSTILE_NAME on the
    native layer (its loop library is cached) under a time limit (its start-ups are
    cached). Returns the run, its temporary folder and its --out folder."""
    tmp_path = tmp_path_factory.mktemp("homeless")
    hide = tmp_path / "site"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import pwd\n\n\ndef _nobody(uid):\n    raise KeyError(f'getpwuid(): uid not found: "
        "{uid}')\n\n\npwd.getpwuid = _nobody\n")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOME", "XDG_CACHE_HOME", "USER", "LOGNAME")}
    env.update(TMPDIR=str(temp), PYTHONPATH=os.pathsep.join(
        [str(hide), *filter(None, [os.environ.get("PYTHONPATH")])]))
    suite = write_suite(tmp_path, f"name: {json.dumps(HOSTILE_NAME)}\n"
                        "defaults: {n_sweep: [1, 2], budget_s: 0.02, min_rounds: 3,"
                        " warmup_max_rounds: 1, methodologies: [sequential], layers:"
                        " [native], encodings: [dispatch], gpu_timestamps: false}\n" + GOOD)
    proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "run", "--suite", str(suite),
                           "--backend", BACKEND, "--processes", "1", "--implementation",
                           "wgpu-native", "--time-limit", "120", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env,
                          preexec_fn=measuring_first)
    return proc, temp, tmp_path / "o"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is Linux's")
@pytest.mark.slow
def test_hostile_no_home_folder(homeless_run):
    """No $HOME and no passwd entry: Path.home()'s RuntimeError ended every run. The cache
    (the native loop, start-ups) goes to the temporary folder."""
    proc, temp, out = homeless_run
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    cache = temp / f"gpuoverhead-cache-{os.getuid()}"
    assert (cache / startups.FILE).is_file(), list(temp.rglob("*"))
    _, _, info = read_run(only_run_folder(out))
    if native.compiler() is not None:
        assert info["layers"]["native"]["library"].startswith(str(cache)), info["layers"]


@pytest.mark.slow
def test_hostile_suite_name_that_would_drive_the_terminal(homeless_run):
    """A suite's name reached the terminal raw: its escape sequences and NUL bytes as they
    were, its rich markup consumed ('[bold]x[/bold]' showed as 'x'), its newline starting a
    line of its own ('error: fake'). It is printed as written, control characters spelled
    out, in the run's first line and in the list of runs."""
    proc, _, out = homeless_run
    assert proc.returncode == 0, proc.stderr
    shown = r"[bold]x[/bold] \x1b[31mred\x1b[0m \x00 \u202eevil\nerror: fake"
    assert without_cpu_note(proc.stderr).startswith(f"measuring 1 benchmark of {shown} on "), \
        proc.stderr
    listed = in_process("show", str(out))  # it prints as a child's would
    assert listed.returncode == 0 and shown in listed.stdout, listed.stdout
    for said in (proc.stdout + proc.stderr, listed.stdout + listed.stderr):
        assert not {"\x1b", "\x00", "\u202e"} & set(said)
        assert not any(line.startswith("error") for line in said.splitlines()), said


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("wgpudawn") is None,
                    reason="Dawn (pip install wgpudawn) is not installed")
def test_hostile_dawn_driver_warning_in_the_tools_words():
    """Dawn printed why it rejects a driver ('Warning: Vulkan shaderUniform*ArrayDynamicIndexing
    required. - While initializing adapter ...', on lavapipe) straight to stderr before the
    tool's first line. Now the tool's lines alone reach the terminal, the reason inside its
    note where Dawn offers no adapter."""
    proc = gpuoverhead("adapters", timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert all(line.startswith(("warning: ", "error: ")) for line in lines if line), lines
    dawn = [line for line in lines if line.startswith("warning: dawn offers no adapter")]
    assert len(dawn) <= 1 and ("dawn" in proc.stdout) != bool(dawn), (proc.stdout, lines)


@pytest.mark.skipif(importlib.util.find_spec("wgpudawn") is None,
                    reason="Dawn (pip install wgpudawn) is not installed")
def test_hostile_dawn_rejecting_the_driver_is_said_once_at_the_start(capfd, tmp_path):
    """Where Dawn rejects the driver (lavapipe), the run's first lines say so in the tool's
    words, nothing of the native library's reaches the terminal, and the warnings at the
    run's end do not say it again (run.json keeps the note)."""
    from gpuoverhead.drivers import webgpu
    from gpuoverhead.gpu import adapters
    from gpuoverhead.present.console import run_warnings
    from gpuoverhead.run.plan import implementations_line

    capfd.readouterr()
    plan = prepare(RunOptions(suite=ROOT / "configs" / "default.yaml", out_root=tmp_path,
                              backend=BACKEND, implementations=registry.parse("webgpu")))
    line = implementations_line(plan)
    if adapters.discover([webgpu.binding("dawn")])[0]:  # a machine whose driver Dawn takes
        assert "dawn" in line.split(";")[0], line
        return
    assert "dawn left out: it offers no adapter on this machine" in line, line
    assert "Warning" not in capfd.readouterr().err
    assert any(n.startswith("dawn offers no adapter") for n in plan.notes)
    assert not any("dawn" in w for w in run_warnings(plan.notes))

