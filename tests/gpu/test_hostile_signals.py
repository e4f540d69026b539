"""Signals at awkward moments (issue 42, items 8-10): a self-test interrupted, a worker
interrupted while it still imports, a hang-up. Each ends as an interrupt does: what finished
kept, run.json `interrupted`, no traceback, exit 130 (129 for a hang-up)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    BACKEND,
    ROOT,
    aa_suite,
    measuring_first,
    only_run_folder,
    read_run,
    write_suite,
)
from test_interrupt import (
    SUITE,
    _start,
    _wait_for_a_worker_started,
    _wait_for_finished_benchmarks,
    _workers,
)

#: Each test here starts a real run and waits for a moment in it (5-8 s on 2 cores): slow.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, process "
                                 "groups and terminals")]

#: What no interrupted command may print.
NOISE = ("Traceback", "KeyboardInterrupt", "Exception ignored")


def _wait_for_worker(child: subprocess.Popen, count: int, every: float = 0.01) -> None:
    """Until the `count`th worker of `child` has just appeared (it still imports: that takes
    it a few tenths of a second, and this looks `every` so many seconds)."""
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while len(seen) < count and time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        seen |= set(_workers(child))
        time.sleep(every)
    assert len(seen) >= count, seen


def _no_noise(stderr: str) -> None:
    assert not [n for n in NOISE if n in stderr], stderr


@pytest.mark.parametrize("worker", [1, 2], ids=["first-worker", "second-worker"])
def test_hostile_ctrl_c_while_a_worker_imports_stops_quietly(tmp_path, worker):
    """Ctrl-C (the whole process group) as a worker starts: it used to print the traceback
    of the import it was in (run/worker.py → the drivers' registry → ...), and the run
    called the benchmark failed ("worker process 0 died (exit code -2)"). The first worker
    is the one whose start also starts multiprocessing's resource tracker."""
    child, out = _start(tmp_path)
    try:
        _wait_for_worker(child, worker)
        os.killpg(child.pid, signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130, stderr
    _no_noise(stderr)
    assert "died" not in stderr and "interrupted in " in stderr, stderr
    info = json.loads((only_run_folder(out) / "run.json").read_text())
    assert info["status"] == "interrupted" and not info["errors"], info["errors"]
    assert all(b["status"] == "ok" for b in info["benchmarks"])


#: The A/A tests' suite (conftest.aa_suite) of one methodology on a quarter of its budget:
#: these tests stop it in its first processes, and whatever those measure, a stopped
#: self-test gives no verdict (its two cases, not four, cost each test about 1.5 CPU-s less
#: in processes and the halves' finish).
INTERRUPTED_AA = aa_suite("aa", 40).replace("methodologies: [naive, sequential]",
                                            "methodologies: [naive]").replace(
    "budget_s: 0.2", "budget_s: 0.05")


def _start_selftest(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """An A/A self-test of four processes a half in a session of its own: about 10 s on
    lavapipe; returns it and its --out folder."""
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-m", "gpuoverhead", "selftest", "--suite",
         str(write_suite(tmp_path, INTERRUPTED_AA)), "--backend", BACKEND, "--implementation",
         "wgpu-native", "--processes", "4", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=measuring_first)
    return child, out


@pytest.mark.parametrize(("signum", "group", "workers"),
                         [(signal.SIGINT, True, 1), (signal.SIGINT, True, 3),
                          (signal.SIGTERM, False, 1)],
                         ids=["ctrl-c-first-process", "ctrl-c-later", "sigterm-first-process"])
def test_hostile_selftest_interrupted_keeps_both_halves_and_gives_no_verdict(
        tmp_path, signum, group, workers):
    """Interrupted, the self-test used to go on to compare its partial halves ("0.0% of 5
    estimates are 'same'"), exit 1 and never say it was interrupted. Ctrl-C in the first
    process and in a later one (the third, when each half has finished one); SIGTERM to the
    parent alone, which takes Ctrl-C's handler and leaves the worker to be asked, in the
    first (in the third it cost two more processes, 3.5 CPU-s, and checked nothing else)."""
    child, out = _start_selftest(tmp_path)
    try:
        _wait_for_worker(child, workers, every=0.05)  # a second later is what counts
        time.sleep(1.0)  # into the worker's start-up or its rounds
        os.killpg(child.pid, signum) if group else child.send_signal(signum)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130, stderr
    _no_noise(stderr)
    assert "interrupted in " in stderr and "no A/A verdict" in stderr, stderr
    assert "A/A" not in stdout and "same" not in stdout, stdout
    halves = sorted(out.iterdir())
    assert [h.name[-2:] for h in halves] == ["-a", "-b"]
    assert [json.loads((h / "run.json").read_text())["status"] for h in halves] == \
        ["interrupted"] * 2


def test_hostile_hangup_stops_the_run_as_sigterm_does_and_exits_129(tmp_path):
    """SIGHUP to the process group, twice (the kernel's and then the shell's, which
    forwards it to its jobs): the run used to die at once, run.json `running` for good."""
    child, out = _start(tmp_path)
    try:
        finished = _wait_for_finished_benchmarks(out, child)
        _wait_for_a_worker_started(child)
        os.killpg(child.pid, signal.SIGHUP)
        time.sleep(0.05)
        os.killpg(child.pid, signal.SIGHUP)
        _, stderr = child.communicate(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 129, stderr
    _no_noise(stderr)
    assert "interrupted in " in stderr and "exiting at once" not in stderr, stderr
    _kept(out, finished)


def _kept(out: Path, finished: list[str]) -> None:
    """The run in `out` says it was interrupted and has the rows of what had finished."""
    samples, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "interrupted" and info["finished"]
    done = list(dict.fromkeys(b["benchmark"] for b in info["benchmarks"] if b["status"] == "ok"))
    assert done[: len(finished)] == finished
    assert list(summary.benchmark.unique()) == done
    assert list(samples.benchmark.unique()) == done


def test_hostile_closed_terminal_stops_the_run_cleanly_and_exits_129(tmp_path):
    """The run's controlling terminal closes (its pseudo-terminal's master end): the kernel
    sends SIGHUP, and from then on every write to the terminal fails (EIO). The run still
    stops cleanly: exit 129, what finished kept, run.json `interrupted`."""
    import fcntl
    import termios

    def take_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    master, slave = os.openpty()
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-m", "gpuoverhead", "run", "--suite",
         str(write_suite(tmp_path, SUITE)), "--backend", BACKEND, "--implementation",
         "wgpu-native", "--processes", "1", "--out", str(out)],
        cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        preexec_fn=take_terminal)
    os.close(slave)
    try:
        finished = _wait_reading(master, out, child)
        os.close(master)  # the terminal window closed
        child.wait(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 129
    _kept(out, finished)


def _wait_reading(master: int, out: Path, child: subprocess.Popen) -> list[str]:
    """The benchmarks finished once one has, reading what the run shows on its terminal
    meanwhile (a full one would block it)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert child.poll() is None
        if select.select([master], [], [], 0.05)[0]:
            os.read(master, 65536)
        runs = list(out.glob("*/run.json")) if out.exists() else []
        if runs and (benchmarks := json.loads(runs[0].read_text())["benchmarks"]):
            return list(dict.fromkeys(b["benchmark"] for b in benchmarks))
    raise AssertionError("no benchmark finished in time")
