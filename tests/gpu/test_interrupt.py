"""An interrupted run keeps every benchmark it finished, in readable files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    BACKEND,
    ROOT,
    in_process,
    measured_adapter,
    measuring_first,
    only_run_folder,
    read_run,
    without_bytecode_writes,
    write_suite,
)

#: Each test here starts a real run and waits for a moment in it (5-8 s on 2 cores): slow.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, process "
                                 "groups, SIGKILL and resource limits")]

#: The first benchmark's own budget per case and cases: most tests wait for it to finish
#: and then interrupt the run in a later one; at the suite's 0.3 s it took 1.3 s longer a
#: process, and its two cases of one methodology (not five of two) cost it 0.4 CPU-s less
#: in its worker and the parent's finish (a run of it alone: 2.65 CPU-s, not 3.0-3.2).
QUICK_FIRST = ", budget_s: 0.05, n_sweep: [1, 2], methodologies: [naive]"
#: Four small benchmarks of five cases (one layer: no reference loop), the first of two,
#: measured in one process each unless a test asks for more: about 3 s a benchmark on
#: lavapipe, 2 s the first.
SUITE = (
    "defaults: {n_sweep: [1, 2, 4], budget_s: 0.3, target_rel_ci: 0.0001, min_rounds: 3,"
    " warmup_max_rounds: 2, methodologies: [naive, sequential], layers: [wrapper],"
    " gpu_timestamps: false}\n"
    "benchmarks:\n"
    f"  - {{name: first, kernel: empty{QUICK_FIRST}}}\n"
    "  - {name: second, kernel: add_one, elements: 256}\n"
    "  - {name: third, kernel: add_one, elements: 512}\n"
    "  - {name: fourth, kernel: empty, elements: 64}\n"
)
#: The first benchmark alone, on a smaller budget: a run that is meant to finish.
ONE = SUITE.split("  - {name: second")[0].replace("budget_s: 0.3", "budget_s: 0.05")
#: The first benchmark as one long process (budget 30 s): a worker that is still measuring
#: whenever a test stops its run.
LONG = ONE.replace("budget_s: 0.05", "budget_s: 30")
#: The CPU (its threads, lavapipe's included) a worker of a long process has used when a
#: test interrupts it to see its rounds handed back: start-up and some rounds. A worker that
#: had used 1 s of CPU on lavapipe had done 199 rounds (the check asks 3); half a second
#: more leaves room for a slower machine's start-up.
HANDBACK_CPU_S = 1.5


def test_interrupted_run_keeps_finished_benchmarks(tmp_path):
    """Ctrl-C to the parent alone (which asks the worker) while the second benchmark's one
    long process (budget 30 s) is a few rounds in: the first is kept, the second's rounds
    come back checked, as its estimates, with `stop` said in run.json, the later two never
    start, and the run ends well within the grace it gives. SIGTERM takes the same handler
    (interrupts.py): the runs it stops are those of
    test_hostile_interrupt_around_the_end_of_a_benchmark_keeps_its_rows, which check the
    same of them. Ctrl-C to the whole group: test_the_running_worker_hands_back_its_rounds_
    when_interrupted."""
    suite = SUITE.replace("elements: 256}", "elements: 256, budget_s: 30}")
    child, out = _start(tmp_path, suite=suite)
    try:
        finished = _wait_for_finished_benchmarks(out, child)
        _wait_for_worker_cpu(child, HANDBACK_CPU_S)  # the second's, the first's gone
        began = time.monotonic()
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
        took = time.monotonic() - began
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted in " in stderr
    assert took < 10, took
    samples, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "interrupted" and info["finished"]
    assert finished == ["first"]
    done = list(dict.fromkeys(b["benchmark"] for b in info["benchmarks"] if b["status"] == "ok"))
    assert done == ["first", "second"], info["benchmarks"]
    assert list(summary.benchmark.unique()) == done
    assert list(samples.benchmark.unique()) == done
    second = info["benchmarks"][-1]["processes"][0]
    assert second["stop"] == "interrupted" and second["rounds"] >= 3, second
    assert (summary[summary.metric == "latency_ns"].value > 0).all()


def test_a_run_interrupted_in_a_later_pass_keeps_what_its_processes_measured(tmp_path):
    """Under a time limit no benchmark ends before the last pass: an interrupt in pass 1
    used to lose every one. Now each is estimated from the processes that had run (pass 0:
    one each), and the run says so."""
    suite = SUITE.replace(QUICK_FIRST, "").split("  - {name: third")[0]  # estimates > 0
    child, out = _start(tmp_path, "--processes", "3", "--time-limit", "120", suite=suite)
    try:
        _wait_for_workers(child, 3)  # pass 0 is the first two: the third is pass 1's
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130 and "Traceback" not in stderr, stderr
    _, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "interrupted"
    assert [b["benchmark"] for b in info["benchmarks"]] == ["first", "second"]
    assert {len(b["processes"]) for b in info["benchmarks"]} <= {1, 2}
    assert set(summary.benchmark) == {"first", "second"}
    # Estimated from what had run: every per-op figure a time (a slope that a busy machine's
    # noise took below zero is held at 0: one in a run with a core kept busy beside it), and
    # each benchmark's above zero.
    per_op = summary[summary.metric == "per_dispatch_ns"]
    assert (per_op.value >= 0).all() and (per_op.groupby("benchmark").value.max() > 0).all()
    assert any(w.startswith("interrupted: each benchmark") for w in info["warnings"])


def _workers(child) -> dict[int, list[bytes]]:
    """The worker processes of `child` now (multiprocessing's `spawn_main`), each with the
    fields of its /proc/PID/stat after its name. Read from /proc, as the polls here look
    every 10-100 ms for seconds: a `ps` a look cost about 13 ms of CPU (a test waiting 5 s
    at 10 ms spent 2-3 CPU-s in ps alone), a look at /proc under 3 ms."""
    found: dict[int, list[bytes]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if int(fields[1]) != child.pid:  # its parent
                continue
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                if b"spawn_main" in cmdline.read():
                    found[int(name)] = fields
        except (OSError, IndexError, ValueError):  # it ended between the reads
            continue
    return found


def _wait_for_workers(child, count: int) -> None:
    """Until `child` has spawned `count` worker processes, one at a time."""
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while len(seen) < count and time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        seen |= set(_workers(child))
        time.sleep(0.05)
    assert len(seen) >= count, seen


def _wait_for_worker_cpu(child, seconds: float) -> None:
    """Until a worker of `child` has used `seconds` of CPU (its threads, lavapipe's
    included): its own progress, where a wall-clock wait on a busy machine (a core kept
    busy beside the tests) ended before its start-up had, and no round came back."""
    tick = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any((int(f[11]) + int(f[12])) / tick >= seconds  # utime + stime
               for f in _workers(child).values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"no worker used {seconds} s of CPU")


def _wait_for_a_worker_started(child) -> None:
    """Until a worker of `child` has run for a second: killed while it spawns one, the
    parent would leave Python's own bootstrap (not ours) reading a half-sent job."""
    tick = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open("/proc/uptime") as uptime:
            now = float(uptime.read().split()[0])
        if any(now - int(f[19]) / tick >= 1 for f in _workers(child).values()):  # starttime
            return
        time.sleep(0.1)
    raise AssertionError("no worker ran for a second")


def _wait_for_finished_benchmarks(out, child) -> list[str]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        runs = list(out.glob("*/run.json")) if out.exists() else []
        if runs:
            benchmarks = json.loads(runs[0].read_text())["benchmarks"]  # replaced atomically
            if benchmarks:
                return list(dict.fromkeys(b["benchmark"] for b in benchmarks))
        time.sleep(0.05)
    raise AssertionError("no benchmark finished in time")


def _start(tmp_path, *extra: str, suite: str = SUITE) -> tuple[subprocess.Popen, Path]:
    """The run in a session of its own (one worker process per benchmark unless `extra`
    says otherwise); returns it and its --out folder."""
    out = tmp_path / "out"
    processes = () if "--processes" in extra else ("--processes", "1")
    child = subprocess.Popen(
        [sys.executable, "-m", "gpuoverhead", "run", "--suite", str(write_suite(tmp_path, suite)),
         "--backend", BACKEND, "--implementation", "wgpu-native", "--out", str(out),
         *processes, *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=measuring_first)
    return child, out


def test_hostile_fault_sigkill_leaves_finished_benchmarks_readable(tmp_path):
    """kill -9 of the run and its workers half-way: `report` reads exactly what finished;
    run.json keeps status `running`, and show, compare, history and report say it did not
    finish, with how many of the four benchmarks it holds (issue 53.7; that check had a run
    of its own in test_hostile_results_run.py)."""
    child, out = _start(tmp_path)
    try:
        _wait_for_finished_benchmarks(out, child)
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == -signal.SIGKILL
    folder = only_run_folder(out)
    info = json.loads((folder / "run.json").read_text())
    assert info["status"] == "running"  # it never got to say otherwise
    finished = [b["benchmark"] for b in info["benchmarks"] if b["status"] == "ok"]
    assert 1 <= len(finished) < 4
    proc = in_process("report", str(folder), "--benchmark", finished[0], "-o",
                      str(tmp_path / "t.md"))  # a child's start-up and imports less
    assert proc.returncode == 0, proc.stderr
    assert "NVIDIA" not in proc.stdout and measured_adapter()[0] in (tmp_path / "t.md").read_text()
    _, summary, _ = read_run(folder)
    assert list(summary.benchmark.unique()) == finished
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no half-written temp
    done = len({b["id"] for b in info["benchmarks"]})
    assert len(info["planned"]) == 4 and 0 < done < 4, info
    said = f"did not finish (status 'running': killed, or still measuring): it holds {done} " \
           "of the 4 benchmarks"
    for args in (("show", str(folder)), ("report", str(folder)), ("history", str(folder)),
                 ("compare", str(folder), str(folder))):
        proc = in_process(*args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert said in proc.stderr, (args, proc.stderr)


def test_hostile_fault_second_interrupt_exits_at_once(tmp_path):
    child, out = _start(tmp_path)
    try:
        _wait_for_finished_benchmarks(out, child)
        child.send_signal(signal.SIGINT)
        child.send_signal(signal.SIGINT)
        start = time.monotonic()
        child.wait(timeout=30)  # the parent's exit: a worker it orphans may hold the pipes
        took = time.monotonic() - start
        # Such a worker ends at its next word to the parent (after its start-up): an orphan's
        # ending is test_hostile_fault_orphaned_worker_leaves_quietly's, not waited for here.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        _, stderr = child.communicate(timeout=30)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert took < 5, took
    info = json.loads((only_run_folder(out) / "run.json").read_text())  # whole, readable
    assert info["benchmarks"]


HANG = """// gpuoverhead: writes=all
// Every invocation spins (lavapipe caps a shader's loop iterations at 65535, so the length
// comes from 4M invocations x 60000 steps): one dispatch runs for hours on a CPU driver.
override WG: u32 = 64;
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= arrayLength(&data)) {
        return;
    }
    var acc = data[i];
    let n = arrayLength(&data);
    for (var s = 0u; s < 60000u; s = s + 1u) {
        acc = acc * 1664525u + data[acc % n];  // a load per step: no closed form to fold
    }
    data[i] = data[i] + 1u + select(0u, 1u, acc == 12345u);
}
"""


@pytest.fixture(scope="module")
def stalled_run(tmp_path_factory) -> tuple[subprocess.Popen, str, Path]:
    """A benchmark whose dispatch hangs and one after it, under a stall timeout of 1 s
    (shorter than a worker's start-up), as run id `kept`: the run, its stderr and its --out
    folder. One run for the three tests that read it (the third a copy): the hang is
    stopped, the benchmark after it measured in full, and the whole is an old run to
    --force over."""
    tmp_path = tmp_path_factory.mktemp("stalled")
    (tmp_path / "hang.wgsl").write_text(HANG)
    suite = ("defaults: {n_sweep: [1, 2], budget_s: 0.05, min_rounds: 3, warmup_max_rounds: 1,"
             " methodologies: [naive, sequential]}\n"
             "benchmarks:\n"
             "  - {name: hang, kernel: hang.wgsl, elements: 4194304}\n"
             "  - {name: after, kernel: add_one, elements: 64}\n")
    child, out = _start(tmp_path, "--run-id", "kept", "--stall-timeout", "1", suite=suite)
    try:
        _, stderr = child.communicate(timeout=240)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    return child, stderr, out


def test_hostile_fault_hung_wait_is_stopped_and_the_run_goes_on(stalled_run):
    child, stderr, out = stalled_run
    assert child.returncode == 1, stderr  # a benchmark failed; the run itself finished
    assert "finished no round in 1 s" in stderr and "Traceback" not in stderr
    _, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "failed"
    assert [b["status"] for b in info["benchmarks"]] == ["failed", "ok"]
    error = summary[summary.metric == "error"]
    assert list(error.benchmark) == ["hang"]
    assert "--stall-timeout" in error.estimator.iat[0]
    assert (summary[summary.benchmark == "after"].metric == "per_dispatch_ns").any()
    assert "noise" in info and "before" in info["noise"] and "after" in info["noise"]


def test_hostile_fault_orphaned_worker_leaves_quietly(tmp_path):
    """kill -9 of the parent alone: its worker finds the pipe gone and exits without a
    traceback (it used to print BrokenPipeError about 5 s later). One long process: the
    worker is measuring when it is orphaned, and the next word it sends (ready, a round)
    finds the pipe gone."""
    child, _ = _start(tmp_path, suite=LONG)
    try:
        _wait_for_a_worker_started(child)
        os.kill(child.pid, signal.SIGKILL)  # the parent only; the worker lives on, orphaned
        _, stderr = child.communicate(timeout=60)  # returns once the worker closed stderr
    finally:
        os.killpg(child.pid, signal.SIGKILL)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_hostile_fault_force_interrupted_before_a_benchmark_keeps_the_old_run(
        tmp_path, stalled_run):
    """--force over a finished run (`stalled_run`'s), interrupted before its first
    benchmark ends: the old run is still there, whole, and nothing half-made is left
    beside it."""
    first, stderr, finished = stalled_run
    assert first.returncode == 1, stderr
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    before = (out / "kept" / "run.json").read_bytes()
    # The first benchmark on the suite's budget: the interrupt must come before it ends.
    child, _ = _start(tmp_path, "--run-id", "kept", "--force",
                      suite=SUITE.replace(QUICK_FIRST, ""))
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob(".kept.*.new/run.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130, stderr
    assert (out / "kept" / "run.json").read_bytes() == before
    assert [p.name for p in out.iterdir()] == ["kept"]


def test_hostile_fault_slow_start_is_not_a_stall(stalled_run):
    """A stall timeout shorter than a worker's start-up (device, pipelines) stops nothing:
    the clock starts when the worker has set up. The benchmark after the hung one, its
    worker started under the 1 s timeout, is measured in full; the hung one alone stalled."""
    _, stderr, out = stalled_run
    assert stderr.count("finished no round in") == 1, stderr
    info = json.loads((only_run_folder(out) / "run.json").read_text())
    (after,) = [b for b in info["benchmarks"] if b["benchmark"] == "after"]
    assert after["status"] == "ok", after
    assert after["processes"][0]["stop"] in ("converged", "budget", "short", "max_rounds")


def test_hostile_fault_disk_full_mid_run_ends_in_one_line_and_stays_readable(tmp_path):
    """Writes that start failing half-way (a file-size limit stands in for a full disk: the
    same OSError path): one line, exit 2, run.json says `failed`, `show` reads the rest.
    Each benchmark stops at its least rounds (a budget of 1 ms), so what it writes does
    not depend on the machine's speed (400 kB with 0.1 s a case was never reached beside a
    busy core): after the first benchmark the summary's Parquet file is 18.5 kB and the
    samples' 16.6 kB, and the second benchmark's summary crosses the limit."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (21_000, 21_000))

    suite = SUITE.replace("budget_s: 0.3", "budget_s: 0.001").replace(QUICK_FIRST, "")
    proc = subprocess.run(
        [sys.executable, "-m", "gpuoverhead", "run", "--suite", str(write_suite(tmp_path, suite)),
         "--backend", BACKEND, "--implementation", "wgpu-native", "--processes", "1",
         "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, preexec_fn=limit,
        env=without_bytecode_writes())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "cannot write results to" in proc.stderr
    folder = only_run_folder(tmp_path / "out")
    info = json.loads((folder / "run.json").read_text())
    assert info["status"] == "failed" and 1 <= len(info["benchmarks"]) < 4  # half-way
    shown = in_process("show", str(folder))  # not under the limit: in this process
    assert shown.returncode == 0, shown.stderr


def _wait_for_the_first_worker_to_end(child) -> None:
    """Until a worker of `child` has come and gone: the parent is then finishing the
    benchmark's rows (or has just saved them). Once found, that worker alone is looked at
    (its command line, gone or emptied once it ends): the looks every 10 ms cost a scan of
    /proc each until then."""
    deadline, seen = time.monotonic() + 120, None
    while time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        if seen is None:
            seen = next(iter(_workers(child)), None)
        elif not _still_a_worker(seen):
            return
        time.sleep(0.01)
    raise AssertionError("no worker came and went in time")


def _still_a_worker(pid: int) -> bool:
    """Whether process `pid` still runs a worker (a zombie's command line is empty)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"spawn_main" in cmdline.read()
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("delay_s", [0.0, 0.1, 0.25])
def test_hostile_interrupt_around_the_end_of_a_benchmark_keeps_its_rows(tmp_path, delay_s):
    """SIGTERM at moments just after a one-process benchmark's worker ended (while its rows
    are made and saved, on lavapipe about half a second): whatever run.json calls finished
    has its rows, and the run ends as test_interrupted_run_keeps_finished_benchmarks's
    Ctrl-C does (exit 130, run.json `interrupted`, what finished in order)."""
    child, out = _start(tmp_path)
    try:
        _wait_for_the_first_worker_to_end(child)
        time.sleep(delay_s)
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=60)
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130 and "Traceback" not in stderr, stderr
    assert "interrupted in " in stderr, stderr
    samples, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "interrupted" and info["finished"]
    done = list(dict.fromkeys(b["benchmark"] for b in info["benchmarks"] if b["status"] == "ok"))
    assert done == ["first", "second", "third", "fourth"][: len(done)] and len(done) < 4
    assert list(summary.benchmark.unique()) == done
    assert list(samples.benchmark.unique()) == done


def test_the_running_worker_hands_back_its_rounds_when_interrupted(tmp_path):
    """A benchmark of one long process (budget 30 s), interrupted after a few of its
    rounds by Ctrl-C to the whole group (the worker gets it twice): its rounds come back
    checked, as its estimates, with `stop` said in run.json; the run ends well within the
    grace it gives. SIGINT to the parent alone, which asks the worker: the second benchmark
    of test_interrupted_run_keeps_finished_benchmarks."""
    child, out = _start(tmp_path, suite=LONG)
    try:
        _wait_for_workers(child, 1)
        _wait_for_worker_cpu(child, HANDBACK_CPU_S)
        began = time.monotonic()
        os.killpg(child.pid, signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
        took = time.monotonic() - began
    finally:
        os.killpg(child.pid, signal.SIGKILL) if child.poll() is None else None
    assert child.returncode == 130 and "Traceback" not in stderr, stderr
    assert took < 10, took
    _, summary, info = read_run(only_run_folder(out))
    (bench,) = info["benchmarks"]
    assert bench["status"] == "ok" and bench["processes"][0]["stop"] == "interrupted"
    assert bench["processes"][0]["rounds"] >= 3
    assert (summary[summary.metric == "latency_ns"].value > 0).all()
