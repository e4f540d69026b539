"""Start-ups recorded by earlier runs (run/startups.py): kept per host, adapter and job, the
newest few, ignored when damaged, and what the schedule expects of a job when they exist."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Job, Offer, Prepared, without_timestamps
from gpuoverhead.errors import UserError
from gpuoverhead.records import AdapterInfo
from gpuoverhead.resources import CONFIGS_DIR
from gpuoverhead.run import runner, startups
from gpuoverhead.run.budget import FINISH_PRIOR_S, FINISH_S, HANDBACK_S
from gpuoverhead.run.plan import RunOptions, prepare

#: What the fake driver says a worker takes to start before any ran (the H100's seconds).
HINT_S = 4.0


def _driver() -> SimpleNamespace:
    """A driver module's shape with no GPU behind it, one CPU adapter, every group."""
    def jobs(group, offer, notes):
        return [Job(without_timestamps(replace(group)), offer, "fake")]

    return SimpleNamespace(
        FAMILY="fake", IMPLEMENTATIONS=("fake",), COMPARED=True, SAMPLE_SHARE=None, TAX_OVER=(),
        offers=lambda request, notes: [Offer(AdapterInfo("fake", "fake", "CPU", "none", 0,
                                                         "dev", "", False))],
        jobs=jobs, setup_hint_s=lambda job: HINT_S,
        prepare=lambda job, rng: nullcontext(Prepared(job.group, {}, lambda c: None)),
        listing=lambda b, n: [], libraries=lambda: {}, compile_kernels=lambda s: None)


@pytest.fixture
def plan(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(registry, "in_order", lambda: iter((_driver(),)))
    return prepare(RunOptions(suite=Path(CONFIGS_DIR) / "ci.yaml", out_root=tmp_path / "out",
                              implementations=registry.parse("all"), time_limit_s=20))


def test_start_ups_round_trip_keeping_the_newest(plan):
    job = plan.benchmarks[0][0]
    assert startups.load() == {} and startups.expected({}, job) is None
    for seconds in ([1.0, 9.0], [2.0, 3.0, 4.0, 5.0]):
        startups.save(startups.load(), {startups.key(job): seconds})
    recorded = startups.load()
    assert recorded[startups.key(job)] == [9.0, 2.0, 3.0, 4.0, 5.0]  # KEEP = 5, the newest
    assert startups.expected(recorded, job) == 4.0
    other = plan.benchmarks[1][0]
    assert startups.key(other) != startups.key(job) and startups.expected(recorded, other) is None


def test_a_damaged_file_is_ignored_and_replaced(plan):
    path = startups._path()
    path.parent.mkdir(parents=True, exist_ok=True)
    for text in ("{not json", '["a list"]', '{"k": "not a list"}'):
        path.write_text(text)
        assert startups.expected(startups.load(), plan.benchmarks[0][0]) is None
    startups.save(startups.load(), {"k": [1.5]})
    assert startups.load() == {"k": [1.5]}


def test_the_schedule_expects_what_earlier_runs_took_and_leaves_out_what_it_cannot_hold(plan):
    jobs = [j for b in plan.benchmarks for j in b]
    # The drivers' hints: len(jobs) x 4 s do not fit a limit that holds, past the finish
    # and each job's share of it, 2.5 of them: the first processes of two jobs do, those of
    # the first and last benchmark (breadth first: the suite's ends); the others are left
    # out, said at the start (and run if time is left after them).
    plan.time_limit_s = FINISH_S + HANDBACK_S + FINISH_PRIOR_S * len(jobs) + 2.5 * HINT_S
    schedule = runner._schedule(plan, time.monotonic(), {})
    last = len(plan.benchmarks) - 1
    assert sorted(schedule.left_out) == [(b, 0) for b in range(1, last)]
    lines = runner._what_runs(plan, Path("out"), schedule, {})
    assert f"holds the first process of 2 of {len(jobs)} jobs" in lines[-1]
    assert "from the drivers' hints: no run here yet" in lines[-1]
    # The same run after one that measured 0.5 s a worker here holds every job.
    recorded = {startups.key(j): [0.5] for j in jobs}
    schedule = runner._schedule(plan, time.monotonic(), recorded)
    assert [hint for b in schedule.jobs for _, _, hint in b] == [0.5] * len(jobs)
    assert not schedule.left_out and len(runner._what_runs(plan, Path("o"), schedule, {})) == 2
    # A limit that holds no job's first process is refused at once.
    plan.time_limit_s = 5
    with pytest.raises(UserError, match="from the drivers' hints: no run here yet"):
        runner._schedule(plan, time.monotonic(), {})
    # One job unknown: its hint counts, and the refusal says how much was known.
    del recorded[startups.key(jobs[0])]
    plan.time_limit_s = 0.5 * len(jobs)
    with pytest.raises(UserError, match=f"{len(jobs) - 1} of {len(jobs)} jobs' start-ups"):
        runner._schedule(plan, time.monotonic(), recorded)
