"""A newcomer's first hour (issue 42), on fake drivers and the CLI's own checks: a run says
what it measures and why not the rest, `--quick` keeps the time it states, each output
option says whether it takes a file or a folder and refuses the other kind in one line, and
the warnings at a run's end are in plain words, one line per kind."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import in_process

from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Job, Offer, Prepared, adapter_notes, without_timestamps
from gpuoverhead.errors import UserError
from gpuoverhead.present.console import run_warnings
from gpuoverhead.records import AdapterInfo, LeftOut
from gpuoverhead.resources import CONFIGS_DIR
from gpuoverhead.run import checks, runner
from gpuoverhead.run.budget import WARMUP_SHARE
from gpuoverhead.run.plan import RunOptions, check_options, implementations_line, prepare
from gpuoverhead.run.rounds import OVERRUN

HINT_S = 2.0


def _driver(family: str, devices: list[str], left_out: str = "", runs: bool = True
            ) -> SimpleNamespace:
    """A driver module's shape with no GPU behind it: it offers `devices`, or where
    `left_out` is given none, saying why as the real drivers do."""
    def offers(request, notes):
        if left_out:
            notes.append(LeftOut(family, left_out, f"{family} skipped: {left_out}"))
            return []
        return [Offer(AdapterInfo(family, "fake", "CPU", "none", 0, d, "", False))
                for d in devices]

    def jobs(group, offer, notes):
        return [Job(without_timestamps(replace(group)), offer, family)] if runs else []

    return SimpleNamespace(
        FAMILY=family, IMPLEMENTATIONS=(family,), COMPARED=True, SAMPLE_SHARE=None, TAX_OVER=(),
        offers=offers, jobs=jobs, setup_hint_s=lambda job: HINT_S,
        prepare=lambda job, rng: nullcontext(Prepared(job.group, {}, lambda c: None)),
        listing=lambda b, n: [], libraries=lambda: {}, compile_kernels=lambda s: None)


def _plan(monkeypatch, tmp_path, drivers, suite: str = "ci.yaml", **options):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no start-ups recorded here
    monkeypatch.setattr(registry, "in_order", lambda: iter(drivers))
    return prepare(RunOptions(suite=Path(CONFIGS_DIR) / suite, out_root=tmp_path / "out",
                              implementations=registry.parse("all"), **options))


def test_hostile_a_plain_run_says_what_it_measures_and_why_not_the_rest(monkeypatch, tmp_path):
    """`pip install ".[test]"` brought websockets, and the next plain run measured Chromium
    too, saying nothing: the run's first lines now name what it measures and, once each, why
    every other implementation is left out (the driver's reason, or a suite with nothing
    for it)."""
    plan = _plan(monkeypatch, tmp_path, [
        _driver("a", ["a0"]), _driver("b", [], left_out="needs the websockets package "
                                                      "(pip install 'gpuoverhead[browser]')"),
        _driver("c", ["c0"], runs=False), _driver("d", ["d0"], runs=False)])
    assert implementations_line(plan) == (
        "measures a; b left out: needs the websockets package (pip install "
        "'gpuoverhead[browser]'); c and d left out: nothing in this suite runs on them")
    assert "b skipped: needs the websockets package (pip install 'gpuoverhead[browser]')" \
        in plan.notes  # run.json keeps the driver's note


def test_hostile_the_run_end_says_no_reason_twice_and_groups_warnings_of_a_kind():
    """Dawn's reason for rejecting lavapipe came raw before the tool's first line; the run's
    first lines say it now, so its last lines do not; two software adapters are one line;
    a repeated line is said once; every Note in its plain words."""
    software = [adapter_notes(AdapterInfo(i, "vulkan", "CPU", "mesa", 0, d, "", True))[0]
                for i, d in (("wgpu-native", "llvmpipe"), ("chromium", "SwiftShader"))]
    dawn = LeftOut("dawn", "it offers no adapter on this machine (it said: Vulkan "
                           "shaderUniform*ArrayDynamicIndexing required.)")
    lines = run_warnings([dawn, *software, "busy", "busy"])
    assert lines == ["llvmpipe and SwiftShader are CPU (software) adapters: their figures "
                     "describe drivers running on the CPU, not GPUs", "busy"]
    assert run_warnings(software[:1]) == [str(software[0])]


def test_hostile_sampling_warnings_in_plain_words_with_their_plurals():
    """A 38 s run ended with 8 warnings ("trends over time" per job, "rel_spread_between",
    "1 processes"): the terminal now says each kind once, without column names, in the
    right number, with what to do; run.json keeps the detail."""
    group = SimpleNamespace(id="empty/elements=1")
    drift = checks.drift_notes(group, "wgpu-native", [
        {"case": "c1", "metric": "per_dispatch_ns", "change": 0.2},
        {"case": "c2", "metric": "per_dispatch_ns", "change": -1.03}])
    notes = checks.said_once(
        [(checks.SHORT, "g process 2: 15 rounds in 5 s for a budget of 3.6 s"),
         (checks.IMPRECISE, "g latency_ns ±21%"), (checks.IMPRECISE, "h latency_ns ±9%"),
         *drift, (checks.MODES, "x: 480 µs (57%) or 3349 µs (43%)")])
    said = run_warnings(notes)
    assert len(said) == 4
    assert said[0].startswith("1 process ran fewer rounds than the suite's min_rounds: ")
    assert said[1].startswith("2 headline figures are less precise than their suite's target")
    assert said[2].startswith("2 figures drifted while the run measured") and "c2" in said[2]
    assert said[3].startswith("1 headline figure has two typical values: the samples gather "
                              "around two values (modes)")
    assert not any(w in line for line in said for w in ("rel_spread_between", "rel_ci_within",
                                                        "processes stopped", "1 processes"))
    assert "rel_spread_between" in notes[1]  # run.json's text keeps the columns to read


def test_hostile_quick_states_a_time_it_keeps(monkeypatch, tmp_path):
    """`run --suite full --quick` said "about 47 s" (budgets and start-up hints) and took
    80.5 s. A --quick run of a suite with no time limit now gets one: each process's
    start-up and OVERRUN times its budget with warm-up, the finishes and the planning; the
    run says "at most" that and its deadline keeps it. A suite's own limit, or an explicit
    --time-limit 0, stays as asked."""
    plan = _plan(monkeypatch, tmp_path, [_driver("a", ["a0"])], "full.yaml", quick=True)
    jobs = [j for b in plan.benchmarks for j in b]
    sampling = sum(j.group.sampling.budget_per_case_s * len(j.group.cases) for j in jobs)
    assert plan.time_limit_s is not None
    assert plan.time_limit_s >= HINT_S * len(jobs) + sampling * OVERRUN * (1 + WARMUP_SHARE)
    assert plan.time_limit_s < 3 * (HINT_S * len(jobs) + sampling * OVERRUN) + 60
    assert _plan(monkeypatch, tmp_path, [_driver("a", ["a0"])], "full.yaml", quick=True,
                 time_limit_s=0).time_limit_s is None
    assert _plan(monkeypatch, tmp_path, [_driver("a", ["a0"])], "default.yaml",
                 quick=True).time_limit_s == 160
    assert _plan(monkeypatch, tmp_path, [_driver("a", ["a0"])], "full.yaml").time_limit_s \
        is None


def test_hostile_a_smoke_run_says_how_long_its_one_process_a_job_samples(monkeypatch,
                                                                         tmp_path):
    """Issue 56: `--quick` began "up to 1 process per job, ...: at most 80 s (its time limit;
    fewer processes where start-up leaves no time for all)" for a run of 10 s: one process
    a job has no fewer to run. It says how long its processes sample, and the limit."""
    plan = _plan(monkeypatch, tmp_path, [_driver("a", ["a0"])], "default.yaml", quick=True)
    schedule = runner._schedule(plan, time.monotonic(), {})
    first = runner._what_runs(plan, tmp_path, schedule, {})[0]
    sampling = sum(j.group.sampling.budget_per_case_s * len(j.group.cases)
                   for b in plan.benchmarks for j in b)
    assert f"1 process per job, 1 job: about {sampling:.0f} s of sampling in all, start-up " \
           "aside, and at most 160 s (its time limit)" in first, first
    assert "fewer processes" not in first and "up to 1 process" not in first


def test_hostile_out_that_is_a_file_is_refused_at_once(tmp_path):
    """`run --out FILE` planned the whole run and then said "cannot write results to
    FILE/<run_id>: Not a directory"."""
    (tmp_path / "afile").write_text("")
    for out, said in ((tmp_path / "afile", "is a file"),
                      (tmp_path / "afile" / "sub", f"is inside {tmp_path / 'afile'}, a file")):
        with pytest.raises(UserError, match="--out takes a folder") as caught:
            check_options(RunOptions(suite=Path(CONFIGS_DIR) / "ci.yaml", out_root=out))
        assert str(caught.value).startswith(f"--out {out} {said}:")


def test_hostile_each_output_option_says_file_or_folder_and_refuses_the_other(tmp_path):
    """`-o` was a folder for `run` and a file for `report` and `history`, and the help did not
    say which: `run --out FOLDER`, `report -o FILE --plots FOLDER`, `history -o FILE`, each in
    its help, and a wrong kind is one line, exit 2, before anything is read."""
    assert "--out FOLDER" in in_process("run", "-h").stdout
    assert "-o," not in in_process("run", "-h").stdout  # -o is a file wherever it is taken
    assert "--out FOLDER" in in_process("selftest", "-h").stdout
    report, history = in_process("report", "-h").stdout, in_process("history", "-h").stdout
    assert "-o, --output FILE" in report and "--plots FOLDER" in report
    assert "-o, --output FILE" in history
    folder, file = tmp_path / "adir.md", tmp_path / "afile"
    folder.mkdir()
    file.write_text("")
    for args, said in ((("report", "x", "-o", str(folder)), f"-o {folder} is a folder: "),
                       (("history", "x", "-o", str(folder)), f"-o {folder} is a folder: "),
                       (("report", "x", "--plots", str(file)), f"--plots {file} is a file: ")):
        proc = in_process(*args)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"error: {said}") and proc.stderr.count("\n") == 1
