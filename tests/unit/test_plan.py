"""The plan and the driver registry, on fake drivers: which families a `--implementation`
asks for, which jobs a group gets and in what order, and what a driver that cannot run
does to the plan (an error where it was named, a note where it came with `all`)."""

from __future__ import annotations

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
from gpuoverhead.run.plan import RunOptions, prepare


def test_parse_takes_all_names_families_and_lists():
    assert registry.parse("all") is None
    assert registry.parse("wgpu-native") == {"webgpu": ("wgpu-native",)}
    assert registry.parse("wgpu-native,dawn") == {"webgpu": ("wgpu-native", "dawn")}
    assert registry.parse("webgpu") == {"webgpu": None}
    assert registry.parse("dawn, webgpu") == {"webgpu": None}
    assert registry.parse("torch,chromium") == {"torch": None, "chromium": None}


def test_parse_refuses_an_unknown_name_and_lists_the_known_ones():
    with pytest.raises(UserError) as caught:
        registry.parse("wgpu-native,vulkan")
    message = str(caught.value)
    assert "'vulkan'" in message and all(n in message for n in registry.names())


def _fake(family: str, devices: list[str], cases_of=lambda g: g.cases, fails: str = "",
          compared: bool = True) -> SimpleNamespace:
    """A driver module's shape with no GPU behind it: it offers `devices` (or fails)."""
    def offers(request, notes):
        if fails:
            if request.named:
                raise UserError(fails)
            notes.append(fails)
            return []
        return [Offer(AdapterInfo(family, "fake", "CPU", "none", 0, d, "", False))
                for d in devices]

    def jobs(group, offer, notes):
        mine = tuple(cases_of(group))
        return [Job(without_timestamps(replace(group, cases=mine)), offer, family)] \
            if mine else []

    return SimpleNamespace(FAMILY=family, IMPLEMENTATIONS=(family,), COMPARED=compared,
                           SAMPLE_SHARE=None, TAX_OVER=(), offers=offers, jobs=jobs,
                           prepare=lambda job, rng: nullcontext(Prepared(job.group, {},
                                                                         lambda c: None)),
                           listing=lambda b, n: [], libraries=lambda: {},
                           compile_kernels=lambda s: None)


def _plan(monkeypatch, drivers, implementation: str = "all", suite: str = "ci.yaml",
          **options):
    monkeypatch.setattr(registry, "in_order", lambda: iter(drivers))
    return prepare(RunOptions(suite=Path(CONFIGS_DIR) / suite, out_root=Path("/nonexistent"),
                              implementations=registry.parse(implementation), **options))


def test_jobs_of_a_group_follow_the_registry_order_and_each_offer(monkeypatch):
    plan = _plan(monkeypatch, [_fake("a", ["a0", "a1"]), _fake("b", ["b0"])])
    assert plan.benchmarks
    for jobs in plan.benchmarks:
        assert [j.adapter.device for j in jobs] == ["a0", "a1", "b0"]
        assert all(j.driver == j.adapter.implementation for j in jobs)
    assert [a["device"] for a in plan.adapters] == ["a0", "a1", "b0"]


def test_only_the_families_asked_for_run(monkeypatch):
    plan = _plan(monkeypatch, [_fake("a", ["a0"]), _fake("b", ["b0"])], "b")
    assert {j.driver for jobs in plan.benchmarks for j in jobs} == {"b"}


def test_a_named_driver_that_cannot_run_is_an_error_and_with_all_a_note(monkeypatch):
    broken = _fake("b", [], fails="b is not installed here")
    with pytest.raises(UserError, match="b is not installed"):
        _plan(monkeypatch, [_fake("a", ["a0"]), broken], "a,b")
    plan = _plan(monkeypatch, [_fake("a", ["a0"]), broken])
    assert "b is not installed here" in plan.notes


def test_a_group_no_driver_runs_is_left_out_and_nothing_at_all_is_an_error(monkeypatch):
    only_fusion = _fake("a", ["a0"], cases_of=lambda g: g.cases if g.fusion else ())
    plan = _plan(monkeypatch, [only_fusion])
    assert plan.benchmarks and all(j.group.fusion for jobs in plan.benchmarks for j in jobs)
    with pytest.raises(UserError, match="nothing to measure"):
        _plan(monkeypatch, [_fake("a", ["a0"], cases_of=lambda g: ())])


def test_a_longer_time_limit_buys_processes_each_as_long_as_one_of_three():
    from pathlib import Path

    from gpuoverhead.run.plan import DEFAULT_PROCESSES, RunOptions, _counts

    def counts(**options):
        return _counts(RunOptions(suite=Path("s"), out_root=Path("o"), **options),
                       options.get("time_limit_s") or 80.0, 80.0, DEFAULT_PROCESSES)

    assert counts() == (DEFAULT_PROCESSES, DEFAULT_PROCESSES, 80.0)  # the suite's own limit
    assert counts(time_limit_s=300.0) == (11, DEFAULT_PROCESSES, 300.0)  # 3 per 80 s
    assert counts(time_limit_s=86400.0)[0] == 20  # MOST_PROCESSES
    assert counts(time_limit_s=40.0) == (3, 3, 40.0)  # a shorter one: fewer will fit
    assert counts(time_limit_s=300.0, processes=4) == (4, 4, 300.0)  # asked: as asked
    assert _counts(RunOptions(suite=Path("s"), out_root=Path("o"), time_limit_s=300.0),
                   300.0, None, DEFAULT_PROCESSES) == (3, 3, 300.0)  # no limit of its own


def _counted(plan) -> tuple[int, int, float | None]:
    return plan.processes, plan.sharing, plan.time_limit_s


def test_a_plain_run_takes_the_suites_processes_and_a_longer_limit_buys_them_as_many(
        monkeypatch):
    """Issue 54: three processes a job gave ±13-26% median on the H200 VMs, their spread
    times t(2)/sqrt(3) = 2.48; the default suite asks for six (`processes`), its budget_s
    doubled so that each is as long as one of three was. A plain run takes the suite's
    count, each sharing its budget; a --time-limit longer than the suite's buys the suite's
    count per suite limit's worth, each as long; --processes overrides it (sharing the
    budget as before); a suite that names none keeps three."""
    fake = [_fake("a", ["a0"])]
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml")) == (6, 6, 160.0)
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml", time_limit_s=320.0)) \
        == (12, 6, 320.0)
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml", time_limit_s=480.0)) \
        == (18, 6, 480.0)
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml", time_limit_s=300.0)) \
        == (11, 6, 300.0)  # 6 x 300 / 160 = 11.25
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml", processes=4)) \
        == (4, 4, 160.0)
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml", processes=4,
                          time_limit_s=320.0)) == (4, 4, 320.0)
    assert _counted(_plan(monkeypatch, fake)) == (3, 3, None)  # ci.yaml names none
    default = _plan(monkeypatch, fake, suite="default.yaml")
    budget = default.suite.groups[0].sampling.budget_per_case_s
    assert budget / default.sharing == pytest.approx(1.0 / 3)  # as long as one of three


def test_selftest_halves_are_as_many_as_a_plain_runs_at_least_six_each_as_long(monkeypatch):
    """The alternating A/A's halves: each as many processes as a plain run of the suite has
    (at least six, where the Hodges-Lehmann shift takes over), each process as long as a
    plain run's, the suite's limit scaled alike: the default suite's six a half in 2 x 160
    = 320 s, as its three-process plan took (2 x 80 x 6 / 3); ci.yaml's (three, no limit)
    still six a half. --processes sets a half's count, each process as long still."""
    fake = [_fake("a", ["a0"])]
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml", halves=True)) \
        == (12, 6, 320.0)
    assert _counted(_plan(monkeypatch, fake, suite="default.yaml", halves=True,
                          processes=9)) == (18, 6, 480.0)
    assert _counted(_plan(monkeypatch, fake, halves=True)) == (12, 3, None)
