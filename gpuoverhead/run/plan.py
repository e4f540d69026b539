"""What a run will measure, settled before anything is measured.

Everything that can fail because of the user's input fails here, in seconds: the suite, the
adapters, the native layer's build, device limits, every kernel compiled once. The plan is
the list of jobs: each suite group as measured by each implementation.
"""

from __future__ import annotations

import math
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuoverhead.cases import DEFAULT_PROCESSES, MOST_PROCESSES, Suite
from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Driver, Job, Offer, Request
from gpuoverhead.errors import UserError
from gpuoverhead.gpu import adapters
from gpuoverhead.records import LeftOut
from gpuoverhead.run import startups
from gpuoverhead.run.budget import (
    FINISH_PRIOR_S,
    FINISH_S,
    WARMUP_SHARE,
    process_cap_s,
)
from gpuoverhead.run.environment import parse_cpus
from gpuoverhead.run.quick_types import quick_types
from gpuoverhead.run.rounds import OVERRUN
from gpuoverhead.suite.expand import load_suite, quick

#: Worker processes per job in each half of an A/A run (`selftest`) at the least: from six a
#: half `compare` takes the Hodges-Lehmann shift, which one odd process does not move.
AA_PROCESSES = 6
#: The largest --time-limit (a day).
MAX_TIME_LIMIT_S = 86400


@dataclass
class RunOptions:
    suite: Path
    out_root: Path
    backend: str | None = None
    adapter: str | None = None
    #: Per family asked for, the implementations asked of it (None: all; see registry.parse).
    implementations: dict[str, tuple[str, ...] | None] | None = None
    quick: bool = False
    #: Worker processes per job; None: the suite's `processes`, more under a --time-limit
    #: longer than the suite's (`_counts`).
    processes: int | None = None
    #: Seconds the whole run may take, instead of the suite's `time_limit_s` (0: none).
    time_limit_s: float | None = None
    seed: int | None = None
    run_id: str | None = None
    force: bool = False
    outside_shaders: bool = False
    #: Seconds a worker may go without finishing a round before it is stopped (a hung wait).
    stall_timeout_s: float = 300.0
    #: The browser of the `chromium` implementation (None: look for one).
    browser: str | None = None
    argv: list[str] = field(default_factory=lambda: list(sys.argv))
    #: When the command started (monotonic): a time limit counts from here.
    started: float = field(default_factory=time.monotonic)
    #: An A/A run (selftest): `processes` per job in each of two halves whose processes
    #: share the run's time (in reversed blocks, a b b a: run/passes.py `half_of`; half a
    #: written as `<run_id>-a`, b as `<run_id>-b`), so
    #: that drift of the machine between two runs made one after the other cannot pass for
    #: a difference between them. Each process gets what one of a plain run gets (the
    #: suite's `processes` share its budget), the time limit scaled alike: more processes a
    #: half buy precision, not shorter processes.
    halves: bool = False
    #: The CPUs the run may use (--affinity); None: all but those the probe finds slow
    #: (run/cpus.py).
    affinity: str | None = None


@dataclass
class Plan:
    """The suite as it will run, the adapters measured, and per benchmark (suite group) its
    jobs, whose worker processes alternate in time (process 0 of each, then 1, ...)."""

    suite: Suite
    adapters: list[dict[str, Any]]
    benchmarks: list[list[Job]]
    processes: int
    #: What run.json says of the layers (`native`: the C loop's library and compiler).
    layers: dict[str, Any]
    notes: list[str]
    #: Seconds the whole run may take (the suite's, or --time-limit's), if any.
    time_limit_s: float | None = None
    #: How many runs the processes are dealt to in turn (2: an A/A run, RunOptions.halves):
    #: each gets the suite's budget as a run of its own would.
    halves: int = 1
    #: How many processes of a job share the suite's budget (`budget_s` a case).
    sharing: int = DEFAULT_PROCESSES
    #: Every implementation the run asked for (`--implementation`; `all`: each driver's).
    asked: tuple[str, ...] = ()


def prepare(options: RunOptions) -> Plan:
    """The plan of a run, or a UserError saying what in the input is wrong. Each driver
    asked for offers its adapters (checking the suite on them) and gives each group its
    jobs, in the registry's order."""
    check_options(options)
    suite = load_suite(options.suite, options.outside_shaders)
    if options.quick:
        suite = quick(suite)
    base = Request(suite, options.backend, options.adapter, options.browser)
    notes: list[str] = []
    offered: list[tuple[Driver, Offer]] = []
    asked = [(d, r) for d in registry.drivers()
             if (r := registry.request(options.implementations, d, base)) is not None]
    # Each family's offers at once: a browser started waits on its process, torch's import
    # on the disk (2.9 s and 1.7 s of the ci suite's planning on the 2-core machine).
    with quick_types(), ThreadPoolExecutor(max(1, len(asked))) as pool:
        found = [pool.submit(_offers, driver, request) for driver, request in asked]
        for (driver, _), future in zip(asked, found, strict=True):
            offers, said = future.result()  # in the registry's order; a UserError raises
            notes += said
            offered += [(driver, o) for o in offers]
    benchmarks = [jobs for group in suite.groups
                  if (jobs := [j for d, o in offered for j in d.jobs(group, o, notes)])]
    if not benchmarks:
        raise UserError("nothing to measure: no adapter and no PyTorch baseline here")
    limit = suite.time_limit_s if options.time_limit_s is None else options.time_limit_s
    if options.quick and limit is None:
        limit = quick_limit_s(benchmarks, options.started)
    layers = {k: v for _, o in offered for k, v in o.settings.get("layers", {}).items()}
    described = [{**o.info.__dict__, **o.details} for _, o in offered]
    processes, sharing, limit = _counts(options, limit, suite.time_limit_s, suite.processes)
    return Plan(suite, described, benchmarks, processes, layers or {"native": None}, notes,
                limit or None, halves=2 if options.halves else 1, sharing=sharing,
                asked=tuple(n for d, r in asked for n in r.names or d.IMPLEMENTATIONS))


#: Why an implementation asked for and offered measures nothing (its driver gave no reason).
NOTHING_FOR_IT = "nothing in this suite runs on "


def implementations_line(plan: Plan) -> str:
    """The run's line on what it measures and why each other implementation asked for is
    left out (not installed, no adapter, no browser, nothing in the suite for it), one reason
    once: installing an extra (dawn, torch) changes what a plain run measures."""
    measured = list(dict.fromkeys(j.adapter.implementation for jobs in plan.benchmarks
                                  for j in jobs))
    said = {n.implementation: n.reason for n in plan.notes if isinstance(n, LeftOut)}
    why: dict[str, list[str]] = {}
    for name in dict.fromkeys(plan.asked):
        if name not in measured:
            why.setdefault(said.get(name, NOTHING_FOR_IT), []).append(name)
    return "; ".join([f"measures {_and(measured)}", *(
        f"{_and(names)} left out: {reason}"
        + (("it" if len(names) == 1 else "them") if reason == NOTHING_FOR_IT else "")
        for reason, names in why.items())])


def plural(count: int, noun: str) -> str:
    """`1 job`, `2 jobs`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _and(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


#: Seconds a --quick limit keeps beyond its processes and finishes: the CPU probe (about
#: 1 s on 2 CPUs, 3 on 16) and a finish slower than expected.
QUICK_SLACK_S = 10.0


def quick_limit_s(benchmarks: list[list[Job]], started: float) -> float:
    """The time limit of a --quick run whose suite has none: what its one process a job may
    take at most, each its start-up (as earlier runs here took, else its driver's hint) and
    OVERRUN times its budget with warm-up, which a process whose rounds are slow may spend
    to reach min_rounds, with the finishes and the planning so far. Without it `--suite full
    --quick` said "about 47 s" (budgets and hints only) and took 80.5 s; under a limit the
    run keeps what it says, a process still running at the deadline being stopped."""
    recorded = startups.load()
    jobs = [j for b in benchmarks for j in b]
    setup = sum(registry.get(j.driver).setup_hint_s(j) if (seen := startups.expected(
        recorded, j)) is None else seen for j in jobs)
    sampling = sum(process_cap_s(j.group.sampling.budget_per_case_s, len(j.group.cases), 1)
                   for j in jobs) * OVERRUN * (1 + WARMUP_SHARE)
    finishes = FINISH_S + FINISH_PRIOR_S * len(benchmarks) + QUICK_SLACK_S
    return float(math.ceil(time.monotonic() - started + setup + sampling + finishes))


def _offers(driver: Driver, request: Request) -> tuple[list[Offer], list[str]]:
    """A family's offers and the notes it made."""
    notes: list[str] = []
    return driver.offers(request, notes), notes


def _counts(options: RunOptions, limit: float | None, suites: float | None, own: int
            ) -> tuple[int, int, float | None]:
    """Processes per job in all, how many of them share the suite's budget, and the time
    limit, for a suite whose plain run has `own` processes (its `processes`). A --time-limit
    longer than the suite's own buys processes, not longer ones: `own` per suite limit's
    worth (up to MOST_PROCESSES), each as long as one of a plain run (on the H200 VM
    processes of 0.8 s differed by 29%, of 3.5 s by 9%, each within ±3.5%: the processes'
    spread decides, once they are that long). An A/A run's halves are each `processes`
    (asked, else as many as a plain run's and at least AA_PROCESSES) whose every process
    gets what one of a plain run gets, the limit scaled alike."""
    if options.quick:
        return (2, 1, 2 * limit if limit else limit) if options.halves else (1, 1, limit)
    if not options.halves:
        if options.processes is None and limit and suites and limit > suites:
            return min(MOST_PROCESSES, int(own * limit / suites)), own, limit
        processes = options.processes or own
        return processes, processes, limit
    half = options.processes or max(AA_PROCESSES, own)
    return 2 * half, own, limit * 2 * half / own if limit else limit


#: A run id is one plain path component: it names a folder under --out, nothing else.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_options(options: RunOptions) -> None:
    """The command-line values that no suite can make right, refused before anything runs."""
    if options.processes is not None and options.processes < 1:
        raise UserError(f"--processes must be at least 1, not {options.processes}")
    if options.seed is not None and not 0 <= options.seed < 2 ** 32:
        raise UserError(f"--seed must be between 0 and 2**32 - 1, not {options.seed}")
    if not (math.isfinite(options.stall_timeout_s) and options.stall_timeout_s > 0):
        raise UserError(f"--stall-timeout must be a positive number of seconds, not "
                        f"{options.stall_timeout_s}")
    limit = options.time_limit_s
    if limit is not None and not (math.isfinite(limit) and 0 <= limit <= MAX_TIME_LIMIT_S):
        raise UserError(f"--time-limit must be between 0 (none) and {MAX_TIME_LIMIT_S} seconds, "
                        f"not {limit}")
    adapters.check_backend(options.backend)
    _check_out(options.out_root)
    if options.affinity is not None:
        parse_cpus(options.affinity)
    if options.run_id is not None and not RUN_ID.fullmatch(options.run_id):
        raise UserError(f"--run-id {options.run_id[:40]!r} is not a plain folder name: up to "
                        "100 letters, digits, '.', '_' or '-', starting with a letter or digit")


def _check_out(out: Path) -> None:
    """A UserError where --out, or the first of its parents that exists, is no folder:
    found only after planning, it read "cannot write results to FILE/<run_id>: Not a
    directory"."""
    found = next((p for p in (out, *out.parents) if p.exists()), None)
    if found is not None and not found.is_dir():
        what = "is a file" if found == out else f"is inside {found}, a file"
        raise UserError(f"--out {out} {what}: --out takes a folder, which receives each run "
                        "as FOLDER/<run_id>/ (-o FILE is report's and history's)")
