"""WebGPU in headless Chromium (SwiftShader here): the ci suite passes its output checks and
writes rows beside wgpu-native's, a missing or broken browser ends in one clear line, and no
browser or server process outlives a run, interrupted ones included."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import yaml
from conftest import (
    ROOT,
    browser_found,
    ci_run_suite,
    in_process,
    only_run_folder,
    read_run,
)

from gpuoverhead.browser.cdp import BrowserError
from gpuoverhead.cases import BIND_PER_DISPATCH
from gpuoverhead.drivers import chromium as page

BROWSER, needs_browser = browser_found()
pytestmark = [needs_browser,
              pytest.mark.skipif(sys.platform == "win32", reason="process groups")]
#: The marker of this tool's browsers: their profile folder (launcher.Browser).
PROFILE = "gpuoverhead-chromium-"
#: The ci suite's benchmarks that the shared Chromium run leaves out (`chromium_run`).
PAGE_ELSEWHERE = ("empty", "chain", "loop")
#: The shared Chromium run's add_one: the least sampling that gives its every row.
ROWS_ONLY = {"min_rounds": 3, "warmup_max_rounds": 1, "n_sweep": [1, 32]}


def browsers_left(wait_s: float = 0.0) -> list[str]:
    """Command lines of this session's browser processes still running after `wait_s`: those
    whose profile lies in this session's temporary folder (conftest.py gives each session
    and xdist worker its own), not another's running beside it."""
    end, mine = time.monotonic() + wait_s, os.path.join(tempfile.gettempdir(), PROFILE)
    while True:
        left = [line for line in command_lines() if mine in line]
        if not left or time.monotonic() >= end:
            return left
        time.sleep(0.1)


def command_lines() -> list[str]:
    """The command line of every process that still runs (zombies left out): from /proc
    where there is one, else from ps (a ps costs about 20 ms of CPU, and a test polls)."""
    if not os.path.isdir("/proc/self"):
        found = subprocess.run(["ps", "-ww", "-eo", "stat=,args="], capture_output=True,
                               text=True).stdout.splitlines()
        return [line for line in found if not line.lstrip().startswith("Z")]
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):  # ended since the listing
            with open(f"/proc/{pid}/stat", "rb") as stat:
                if stat.read().rpartition(b")")[2].split()[0] == b"Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                lines.append(cmdline.read().replace(b"\0", b" ").decode(errors="replace"))
    return lines


def browser_started(child: subprocess.Popen, wait_s: float) -> bool:
    """Whether a browser of this session started within `wait_s` while `child` runs: a
    profile folder (launcher.PROFILE, in this session's temporary folder) holds the lock
    Chromium makes as it starts. One folder listed a poll, not every process's command line."""
    end, folder = time.monotonic() + wait_s, tempfile.gettempdir()
    while time.monotonic() < end and child.poll() is None:
        with os.scandir(folder) as entries:
            if any(entry.name.startswith(PROFILE) and os.path.lexists(
                    os.path.join(entry.path, "SingletonLock")) for entry in entries):
                return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def chromium_run(tmp_path_factory):
    """The ci suite in the page (conftest.ci_run_suite at 0.2 s a case), one process a job
    under a time limit. What is checked of it here is which rows it gives, so add_one takes
    the least sampling: the schema's 3 rounds after one of warm-up (ci.yaml's 8 after up to
    5 ran short of time on a busy machine anyway) and two N, (1, 32), which the page scales
    to (16, 512) (ci.yaml's (1, 4, 16, 32): 848 dispatches a case a round against 528):
    11 -> 7 CPU-s. The limit only cuts (a process gets the suite's budget, never more):
    90 s held configs/ci.yaml in about 36 s on the quiet 2-core machine but left a job out,
    `partial`, on a busy one; 180 s does not lengthen it. Less the empty kernel, the chain
    and the loop (a browser each, 15 of the run's 28 s): nothing here reads their rows,
    add_one runs the kernel path in the page, and the chain and loop run there with their
    outputs checked in the browser fusion tests (tests/gpu/test_browser_fusion.py);
    the patterns the page leaves out stay in."""
    out = tmp_path_factory.mktemp("chromium-run")
    suite = ci_run_suite(out, budget_s=0.2)
    text = yaml.safe_load(suite.read_text())
    text["benchmarks"] = [b for b in text["benchmarks"] if b["name"] not in PAGE_ELSEWHERE]
    for bench in text["benchmarks"]:
        if bench["name"] == "add_one":
            bench.update(ROWS_ONLY)
    suite.write_text(yaml.safe_dump(text, sort_keys=False))
    proc = in_process("run", "--suite", str(suite),
                      "--implementation", "chromium", "--out", str(out / "runs"), "--seed",
                      "3", "--processes", "1", "--time-limit", "180")
    assert proc.returncode == 0, proc.stderr
    return proc, only_run_folder(out / "runs")


@pytest.mark.slow
def test_ci_suite_in_chromium_checks_outputs_and_writes_rows(chromium_run):
    proc, folder = chromium_run
    assert browsers_left() == []
    _, summary, info = read_run(folder)
    assert info["status"] == "complete" and not info["errors"]
    assert set(summary.implementation.dropna()) == {"chromium"}
    rows = summary[summary.process.isna() & (summary.benchmark == "add_one")]
    assert "latency_ns" in set(rows[rows.methodology == "naive"].metric)
    for encoding in ("submit", "pass", "dispatch"):
        mine = rows[(rows.methodology == "sequential") & (rows.encoding == encoding)
                    & (rows.layer == "wrapper")]
        assert {"per_dispatch_ns", "cpu_per_dispatch_ns"} <= set(mine.metric), encoding
        # ci.yaml's add_one creates a bind group per dispatch too: the page runs that twin.
        fresh = mine[mine.variant == BIND_PER_DISPATCH]
        assert {"cpu_per_dispatch_ns", "bind_group_ns"} <= set(fresh.metric), encoding
    browser = next(a for a in info["adapters"] if a["implementation"] == "chromium")
    assert browser["browser_version"].startswith("Chrome/")
    assert browser["cross_origin_isolated"] is True and browser["timer_resolution_us"] <= 20
    assert "--enable-unsafe-webgpu" in browser["browser_flags"]
    # Of the fusion patterns only the chain and the loop run in the page (their checks, and
    # the chain's tax: tests/gpu/test_browser_fusion.py): the suite's others
    # (rmsnorm, matmul, decode) give no rows, and no job.
    assert summary[summary.methodology == "fusion"].empty
    assert {b["benchmark"] for b in info["benchmarks"]} == {"add_one"}


@pytest.mark.slow
def test_report_has_a_chromium_row(chromium_run):
    _, folder = chromium_run
    result = in_process("report", str(folder))
    assert result.returncode == 0, result.stderr
    assert "chromium" in result.stdout and "SwiftShader" in result.stdout


def test_a_missing_browser_is_one_line_and_exit_2():
    result = in_process("run", "--suite", "ci", "--implementation", "chromium",
                        "--browser", "/no/such/chrome")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "/no/such/chrome" in result.stderr


@pytest.mark.slow
def test_a_browser_without_webgpu_and_a_page_that_throws_are_browser_errors():
    with page.page(BROWSER) as (browser, tab):
        with pytest.raises(BrowserError, match="the page threw: Error: broken"):
            tab.evaluate("Promise.reject(new Error('broken'))")
        gone = tab.evaluate("Object.defineProperty(Navigator.prototype, 'gpu', "
                            "{get: () => undefined}); gpuo.info()")
        with pytest.raises(BrowserError, match="navigator.gpu is missing"):
            page.describe(gone, browser.version(), BROWSER)
    assert browsers_left(5) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_an_interrupted_run_leaves_no_browser(tmp_path, signum):
    child = subprocess.Popen(
        [sys.executable, "-m", "gpuoverhead", "run", "--suite", "ci", "--implementation",
         "chromium", "--out", str(tmp_path), "--time-limit", "0"], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:  # at once: a page opened or sampling done after the start only costs CPU here
        assert browser_started(child, 60), child.communicate() if child.poll() is not None \
            else "no browser started"
        assert browsers_left(), "no browser process"
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130 and "Traceback" not in stderr, stderr
    assert browsers_left(5) == []

