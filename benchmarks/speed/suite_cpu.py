"""Where the test suite's CPU goes: each test's CPU-seconds, its own and its children's.

The suite is CPU-bound on the 2-core machine (docs/methodology.md, "How fast it answers"), so
its wall time follows the CPU its tests spend, most of it in the runs they start (a parent
and its worker processes), which pytest's --durations does not show: a test waiting on a
run's four workers for 10 s costs four times what one computing for 10 s costs. This runs
pytest with a plugin that reads, around each test's setup, call and teardown, the CPU of
each pytest process and of every process it started: where this user may make a cgroup
(version 2, root on most machines), each pytest process's own, which the processes it starts
stay in, orphans included (a browser's renderer and GPU processes, which the init process
collects once the browser is killed); elsewhere getrusage, which counts only the children
waited for (a run's workers are, by the run), not a browser's orphans. It prints the tests
that spent most, with the whole machine's CPU over the session (/proc/stat) beside their
sum: the difference is what no test started (the xdist controller, other work).

    python benchmarks/speed/suite_cpu.py [--top 40] [PYTEST ARGS...]

PYTEST ARGS default to the README's test command (`pytest -q`, a worker per CPU).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Where each pytest process writes its tests' figures (set by the script for its pytest).
OUT_ENV = "SUITE_CPU_OUT"


def cgroup_root() -> Path | None:
    """The cgroup version 2 hierarchy's mount point, where this user may make a cgroup."""
    for line in Path("/proc/mounts").read_text().splitlines():
        _, where, kind, *_ = line.split()
        if kind == "cgroup2" and os.access(where, os.W_OK):
            return Path(where)
    return None


_cgroup: Path | None = None


def pytest_configure(config: pytest.Config) -> None:
    """This pytest process into a cgroup of its own (where it may): the processes it starts
    are born into it and stay there, whoever their parent becomes."""
    global _cgroup
    root = cgroup_root() if os.environ.get(OUT_ENV) else None
    if root is None:
        return
    mine = root / f"suite-cpu-{os.getpid()}"
    mine.mkdir()
    (mine / "cgroup.procs").write_text(str(os.getpid()))
    _cgroup = mine


def cpu_s() -> float:
    """CPU-seconds of this process and of every process it started (its cgroup's), else of
    this process and the children it has waited for, user and system."""
    if _cgroup is not None:
        stat = (_cgroup / "cpu.stat").read_text().split()
        return int(stat[stat.index("usage_usec") + 1]) / 1e6
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_figures: list[dict[str, object]] = []


def _timed(item: pytest.Item, phase: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), cpu_s()
    yield
    _figures.append({"test": item.nodeid, "phase": phase, "cpu_s": cpu_s() - cpu,
                     "wall_s": time.perf_counter() - wall})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from _timed(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _timed(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield from _timed(item, "teardown")


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = os.environ.get(OUT_ENV)
    if folder:
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder, f"{name}.json").write_text(json.dumps(
            {"figures": _figures, "process_cpu_s": cpu_s(), "cgroup": _cgroup is not None}))
    if _cgroup is not None:  # back to where it was; the cgroup goes once nothing is in it
        (_cgroup.parent / "cgroup.procs").write_text(str(os.getpid()))
        with contextlib.suppress(OSError):
            _cgroup.rmdir()


def machine_cpu_s() -> tuple[float, float]:
    """The whole machine's busy and idle CPU-seconds since boot (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / tick, idle / tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=40)
    args, pytest_args = parser.parse_known_args()
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, OUT_ENV: folder,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(here),
                                                           os.environ.get("PYTHONPATH")]))}
        busy, idle = machine_cpu_s()
        wall = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", "pytest", "-p", "suite_cpu", "-q",
                                *pytest_args], env=env)
        wall = time.perf_counter() - wall
        busy, idle = (b - a for a, b in zip((busy, idle), machine_cpu_s(), strict=True))
        found = {p.stem: json.loads(p.read_text()) for p in Path(folder).glob("*.json")}
    figures = [row for each in found.values() for row in each["figures"]]
    # Each cgroup holds what its process started; without, the controller ("main") has
    # waited for xdist's workers and so counts theirs.
    processes = (sum(each["process_cpu_s"] for each in found.values())
                 if all(each["cgroup"] for each in found.values())
                 else found["main"]["process_cpu_s"])
    per_test: dict[str, list[float]] = {}
    for row in figures:
        cpu_wall = per_test.setdefault(f"{row['phase']:8} {row['test']}", [0.0, 0.0])
        cpu_wall[0] += row["cpu_s"]
        cpu_wall[1] += row["wall_s"]
    total = sum(cpu for cpu, _ in per_test.values())
    print(f"\n{'CPU-s':>7} {'wall-s':>7}  phase    test (the {args.top} that spent most CPU)")
    for name, (cpu, took) in sorted(per_test.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"{cpu:7.1f} {took:7.1f}  {name}")
    per_file: dict[str, list[float]] = {}
    for row in figures:
        cpu_tests = per_file.setdefault(str(row["test"]).split("::")[0], [0.0, 0.0])
        cpu_tests[0] += row["cpu_s"]
        cpu_tests[1] += row["phase"] == "call"
    print(f"\n{'CPU-s':>7} {'tests':>7}  file (the {args.top} that spent most CPU)")
    for name, (cpu, tests) in sorted(per_file.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"{cpu:7.1f} {tests:7.0f}  {name}")
    print(f"\nwall {wall:.1f} s; the tests {total:.0f} CPU-s (pytest's processes with what "
          f"they started: {processes:.0f}); the whole machine {busy:.0f} CPU-s busy, "
          f"{idle:.0f} idle; pytest exit {code}")
    sys.exit(code)


if __name__ == "__main__":
    main()
