"""A full run of the CI suite (configs/ci.yaml on smaller budgets: conftest.ci_run_suite) on the
real Vulkan adapter, checked against the result schema."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import (
    BACKEND,
    CI_RUN_LIMIT_S,
    CONFIGS,
    gpuoverhead,
    in_process,
    only_run_folder,
    read_run,
    write_suite,
)

from gpuoverhead.run.rounds import MIN_ROUNDS
from gpuoverhead.suite.expand import load_suite

SAMPLE_COLUMNS = {"run_id", "benchmark", "case", "methodology", "encoding", "layer", "call",
                  "implementation", "backend", "adapter", "vendor", "adapter_type", "kernel",
                  "elements", "n_dispatches", "repetition", "wall_ns", "gpu_ns"}
SUMMARY_COLUMNS = {"metric", "estimator", "value", "ci_low", "ci_high", "n_samples", "rel_ci"}


def test_run_writes_five_files_with_the_schema(ci_run):
    _, folder = ci_run
    names = {p.name for p in folder.iterdir()}
    assert {"samples.parquet", "samples.csv", "summary.parquet", "summary.csv",
            "run.json"} <= names
    samples, summary, info = read_run(folder)
    assert set(samples.columns) >= SAMPLE_COLUMNS
    assert set(summary.columns) >= SUMMARY_COLUMNS
    # CSV and Parquet hold the same rows.
    assert len(pd.read_csv(folder / "samples.csv", low_memory=False)) == len(samples)
    assert len(pd.read_csv(folder / "summary.csv", low_memory=False)) == len(summary)
    assert set(samples["backend"]) == {BACKEND}
    assert set(samples["implementation"]) == {"wgpu-native"}
    assert samples["wall_ns"].gt(0).all()
    stamped = samples["sync"] == "timestamps"
    assert samples.loc[stamped, "gpu_ns"].gt(0).all()
    assert samples.loc[~stamped, "gpu_ns"].isna().all()
    assert info["schema_version"] == 5 and info["status"] == "complete"
    assert info["suite"]["name"] == "ci" and len(info["suite"]["sha256"]) == 64
    assert info["adapters"][0]["backend"] == BACKEND
    assert info["adapters"][0]["limits"]["max-compute-workgroup-size-x"] > 0
    assert info["native"]["wgpu-native"]["version"]
    assert all(b["status"] == "ok" for b in info["benchmarks"])


def test_a_time_limit_is_shared_by_the_worker_processes(ci_run):
    """run.json says what each process was given and took; no process got more than its
    share of the suite's budget, and together they got no more than the limit."""
    _, folder = ci_run
    info = json.loads((folder / "run.json").read_text())
    assert info["time_limit_s"] == CI_RUN_LIMIT_S
    sampling = {b["id"]: b["sampling"]["budget_per_case_s"] for b in info["benchmarks"]}
    processes = [(b["id"], p) for b in info["benchmarks"] for p in b["processes"]]
    # A process that stopped on its budget took it whole; one that converged may not have,
    # nor one stopped short at the run's deadline (a busy machine's, said: _stopped_short).
    _stopped_short(info)
    assert all(0 < p["budget_s"] <= p["seconds"] or p["stop"] in ("converged", "short")
               for _, p in processes), [p for _, p in processes if p["budget_s"] > p["seconds"]]
    assert sum(p["budget_s"] for _, p in processes) < CI_RUN_LIMIT_S
    groups = load_suite(Path(info["suite"]["path"])).groups  # the suite the run measured
    largest = max(len(g.cases) for g in groups)
    assert all(p["budget_s"] <= sampling[i] * largest / 2 for i, p in processes)  # the cap
    cases = {c.id: c for g in groups for c in g.cases}
    for _, p in processes:  # a cut keeps the sweep's first N, at least two
        for i, n in p["n_cut"].items():  # (a reference loop's case is its native case's)
            case = cases[i.removesuffix("/reference")]
            assert len(n) >= 2 and tuple(n) == case.n_values[:len(n)], (i, n)


def _stopped_short(info: dict) -> set[str]:
    """The benchmarks with a process that stopped `short` (its rounds took longer than the
    time limit left it: a busy machine's), each with MIN_ROUNDS or more, and the run's one
    warning that counts them all; no warning where none did."""
    short = [(b["benchmark"], p) for b in info["benchmarks"] for p in b["processes"]
             if p["stop"] == "short"]
    assert all(p["rounds"] >= MIN_ROUNDS for _, p in short), short
    said = [w for w in info["warnings"] if "stopped short of the suite's min_rounds" in w]
    assert said == ([f"{len(short)} processes stopped short{said[0].split('short', 1)[1]}"]
                    if short else []), (said, short)
    return {name for name, _ in short}


def test_every_process_measured_its_minimum_and_no_positive_figure_reaches_below_zero(ci_run):
    """Under the time limit no process is a stub: each ran at least the suite's min_rounds
    (at every N its probe kept), or, where the load made its rounds longer than the limit
    left it, stopped `short` at the floor of MIN_ROUNDS and the run said so; and a cost,
    time, ratio, rate or share has no estimate or bound below zero, those measured as a
    difference (Python's share, a bind group's) included: only the checks of the layer
    split may (before, one such run wrote 41 other rows below zero: python_ns [-67, 157] us,
    overhead_share [-89, 0.99])."""
    _, folder = ci_run
    _, summary, info = read_run(folder)
    least = {b["id"]: b["sampling"]["min_rounds"] for b in info["benchmarks"]}
    _stopped_short(info)
    assert all(p["rounds"] >= least[b["id"]] for b in info["benchmarks"]
               for p in b["processes"] if p["stop"] != "short")
    checks = summary.metric.isin(["ffi_check_ns", "closure_ns"])  # either sign by nature
    positive = summary[~checks & (summary.hint != "error")]
    assert {"python_ns", "bind_group_ns", "overhead_share", "tokens_per_s", "reference_ratio",
            "latency_ns"} <= set(positive.metric)
    below = positive[(positive.ci_low < 0) | (positive.value < 0)]
    assert len(positive) > 100 and below.empty, below[["case", "metric", "value", "ci_low"]]


def test_summary_says_what_each_interval_is(ci_run):
    _, folder = ci_run
    _, summary, info = read_run(folder)
    for bench in ("empty", "add_one"):
        rows = summary[(summary.benchmark == bench) & summary.process.isna()]
        naive = rows[(rows.metric == "latency_ns") & (rows.methodology == "naive")
                     & (rows.sync == "wait")]
        assert len(naive) == 1
        per_dispatch = rows[(rows.metric == "per_dispatch_ns") & (rows.layer == "wrapper")]
        assert set(per_dispatch.encoding) == {"submit", "pass", "dispatch"}
    # Two processes: combined intervals are over processes, each process's own within it.
    combined, own = summary[summary.process.isna()], summary[summary.process.notna()]
    slopes = combined[combined.metric == "per_dispatch_ns"]
    assert slopes.ci_kind.str.startswith("between processes").all()
    assert (slopes.ci_level == 0.95).all()
    assert own[own.metric == "per_dispatch_ns"].ci_kind.str.startswith("within one").all()
    # One first-round value per process: never labelled 95%.
    first = combined[combined.metric == "first_round_ns"]
    assert len(first) and (first.ci_level < 0.95).all() | first.ci_kind.str.startswith(
        "between processes").all()
    # How each estimate's sampling stopped; `short` only where a process of its benchmark
    # stopped so, and said so (_stopped_short).
    short = _stopped_short(info)
    stops = summary.stop.str.split(",").map(set)
    assert (stops.map(lambda s: s <= {"converged", "budget", "max_rounds", "short"})
            & (summary.benchmark.isin(short) | ~stops.map(lambda s: "short" in s))).all(), \
        summary[["case", "metric", "stop"]].drop_duplicates("stop")


def test_sequential_slope_lies_below_naive_latency(ci_run):
    _, folder = ci_run
    _, summary, _ = read_run(folder)
    summary = summary[summary.process.isna()]
    inflation = summary[summary.metric == "inflation"].set_index(["benchmark", "encoding"])
    assert set(summary[summary.metric == "inflation"].layer) == {"wrapper"}
    assert len(inflation) == 2 * 3
    # A wait after each submit costs little beside the submit on lavapipe: beside a busy core
    # on the slow machine state, empty's came out 0.96 [0.18-5.01] once; never clearly below 1.
    submit = inflation.xs("submit", level="encoding")
    assert (submit["ci_high"] > 1).all() and (submit["value"] > 0.5).all(), submit
    # Recording all dispatches in one pass is the cheapest encoding, so it inflates most:
    # never clearly less than submit's, and more in one benchmark at least (dispatch's own
    # interval is wide on the quartered budgets: 4.8 [1.4-16.4] against submit's 2.0 in a
    # quiet run). Labels swapped, submit's interval would lie under dispatch's value.
    dispatch, submit = (inflation.xs(e, level="encoding") for e in ("dispatch", "submit"))
    assert (dispatch["ci_high"] > submit["value"]).all(), (dispatch, submit)
    assert (dispatch["value"] > submit["value"]).any(), (dispatch, submit)


def test_samples_are_interleaved_and_warmup_is_kept_apart(ci_run):
    _, folder = ci_run
    samples, summary, info = read_run(folder)
    group = next(g for g in load_suite(Path(info["suite"]["path"])).groups
                 if g.benchmark == "add_one")
    first = samples[(samples.benchmark == "add_one") & (samples.repetition == 0)
                    & (samples.phase == "measure") & (samples.call == "")
                    & (samples.process == 0) & (samples.variant != "reference")]
    # One round holds every (case, N) once (the N the probe kept; the bind-group twins'
    # too), and not in the order the suite lists them.
    cut = next(b for b in info["benchmarks"] if b["benchmark"] == "add_one"
               and b["implementation"] == "wgpu-native")["processes"][0]["n_cut"]
    assert len(first) == sum(len(cut.get(c.id, c.n_values)) for c in group.cases)
    assert first.duplicated(["case", "n_dispatches"]).sum() == 0
    listed = [c.id for c in group.cases for _ in cut.get(c.id, c.n_values)]
    assert first.sort_values("elapsed_ns")["case"].tolist() != listed
    assert (samples.phase == "warmup").any()
    main = summary[summary.process.isna() & (summary.variant != "reference")
                   & ~summary.metric.isin(["paired_ratio", "reference_ratio"])
                   & (summary.methodology != "cadence")]  # a gap a group: test_cadence_run.py
    rounds = main.groupby("benchmark")["rounds"].first()
    kept = samples[(samples.phase == "measure") & (samples.variant != "reference")
                   & (samples.methodology != "cadence")]
    last = kept.groupby(["benchmark", "process"])["repetition"].max()
    measured = (last + 1).groupby("benchmark").sum()
    assert (rounds == measured).all()


def test_outliers_are_flagged_within_each_case_call_and_n_and_never_in_warm_up(ci_run):
    """Flagged, not dropped (results/tables.py): each process's measured rounds of one case,
    call and N judged together, as stats.outlier_flags judges them; warm-up never."""
    from gpuoverhead.analysis.stats import outlier_flags

    samples = read_run(ci_run[1])[0]
    assert not samples.outlier[samples.phase == "warmup"].any()
    measured = samples[samples.phase == "measure"]
    assert measured.outlier.any()
    for _, rows in measured.groupby(["benchmark", "implementation", "process", "case", "call",
                                     "n_dispatches"]):
        assert (rows.outlier.to_numpy() == outlier_flags(rows.wall_ns.to_numpy())).all()


def test_two_processes_give_process_ids_and_one_merged_summary(ci_run):
    """Each job ran two processes, or (where the time limit held no second one for it) one
    and a warning says so; in a job of two each estimate has a row per process that gave
    its series (a process whose slope was not found gives none), and its combined row
    counts those processes."""
    _, folder = ci_run
    samples, summary, info = read_run(folder)
    assert set(samples.process) == {0, 1} and info["processes"] == 2
    ran = {(b["id"], b["implementation"]): len(b["processes"]) for b in info["benchmarks"]}
    assert set(ran.values()) <= {1, 2} and 2 in ran.values()
    if 1 in ran.values():
        assert any("left out" in w for w in info["warnings"]), info["warnings"]
    combined = summary[summary.process.isna()]
    assert not combined.duplicated(["case", "metric", "call"]).any()
    # closures, crossovers, transforms and ratios between jobs: from the combined only
    derived = combined.metric.isin(["closure_ns", "crossover_size", "crossover_size_synced",
                                    "paired_ratio", "reference_ratio", "overhead_share",
                                    "tokens_per_s"])
    two = combined[~derived & (combined.processes == 2)]
    per_process = summary[summary.process.notna()]
    assert set(per_process.process) == {0, 1}
    key = ["implementation", "case", "metric", "call"]
    rows = per_process.groupby(key, dropna=False).size()
    estimated = combined[~derived]
    own = estimated.apply(lambda r: rows.get(tuple(r[key]), 0), axis=1)
    # a job of one process has no per-process rows; in a job of two, as many as it counts
    assert ((own == estimated.processes) | ((own == 0) & (estimated.processes == 1))).all()
    assert len(per_process) == own.sum() and len(two) and (own[two.index] == 2).all()
    assert set(combined.processes) <= {1, 2}
    spread = two[two.metric == "per_dispatch_ns"]["rel_spread_between"]
    assert len(spread) and spread.notna().all() and (spread >= 0).all()
    first = combined[combined.metric == "first_round_ns"]
    assert len(first) == 4 and (first.value > 0).all()  # naive wait + readback, 2 benchmarks


def test_summary_table_is_printed(ci_run):
    proc, _ = ci_run
    assert "Dispatch overhead" in proc.stdout and "dispatch wall" in proc.stdout
    assert "complete in " in proc.stderr
    assert "CPU (software) adapter" in proc.stderr


@pytest.mark.slow
def test_a_kernel_that_does_not_write_fails_its_benchmark_loudly(tmp_path):
    (tmp_path / "lazy.wgsl").write_text(
        "override WG: u32 = 64;\n"
        "@group(0) @binding(0) var<storage, read_write> data: array<u32>;\n"
        "@compute @workgroup_size(WG)\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
        "    if (gid.x == 100000u) { data[0] = 0u; }\n"
        "}\n")
    suite = write_suite(tmp_path, (
        "defaults: {n_sweep: [1, 2], budget_s: 0.05, min_rounds: 3, warmup_max_rounds: 1}\n"
        "benchmarks:\n"
        "  - {name: lazy, kernel: lazy.wgsl, elements: 64}\n"
        "  - {name: honest, kernel: add_one, elements: 64}\n"))
    out = tmp_path / "out"
    proc = in_process("run", "--suite", str(suite), "--backend", BACKEND, "--out", str(out),
                      "--processes", "1", "--implementation", "wgpu-native")
    assert proc.returncode == 1, proc.stderr
    assert "output check failed" in proc.stderr and "lazy/elements=64" in proc.stderr
    _, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "failed"
    assert [b["status"] for b in info["benchmarks"]] == ["failed", "ok"]
    # nothing estimated from unverified samples: the lazy benchmark has only its error row
    assert set(summary[summary.metric != "error"].benchmark) == {"honest"}
    error = summary[summary.metric == "error"]
    assert list(error.benchmark) == ["lazy"] and error.value.isna().all()
    assert "output check failed" in error.estimator.iat[0]


@pytest.mark.slow
def test_a_run_on_opengl_completes_with_every_layer_and_gpu_times(tmp_path):
    """Issue 56: `run --backend opengl` (llvmpipe's OpenGL here) died in 3 of 3 runs, a
    worker aborting in wgpu-py's poll thread (EGL's BadAccess: test_devices.py has why). The
    default suite's benchmark, every methodology and layer, at two N on a small budget:
    measured on OpenGL, the C loop and the GPU's timestamps included."""
    suite = write_suite(tmp_path, (CONFIGS / "default.yaml").read_text().replace(
        "n_sweep: [1, 16, 256]", "n_sweep: [1, 16]").replace("budget_s: 2.0", "budget_s: 0.1"))
    out = tmp_path / "out"
    proc = gpuoverhead("run", "--suite", str(suite), "--backend", "opengl", "--processes", "1",
                       "--implementation", "wgpu-native", "--out", str(out))
    if "no adapter with backend opengl" in proc.stderr:
        pytest.skip("no OpenGL adapter here")
    assert proc.returncode == 0, proc.stderr
    samples, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "complete"
    assert [b["status"] for b in info["benchmarks"]] == ["ok", "ok"]  # and its reference loop
    assert set(samples.backend) == {"opengl"}
    assert {"per_dispatch_ns", "gpu_ns", "reference_ratio"} <= set(summary.metric)
    assert {"wrapper", "raw", "native"} <= set(samples.layer)


def test_adapters_lists_the_measured_adapter_as_json():
    import json

    proc = in_process("adapters", "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    tested = [a for a in found if a["backend"] == BACKEND]
    assert tested and {"device", "vendor", "adapter_type", "driver", "timestamps"} <= set(tested[0])


def test_ci_suite_validates():
    for name in ("ci.yaml", "default.yaml", "full.yaml"):
        proc = in_process("validate", str(CONFIGS / name))
        assert proc.returncode == 0 and ": ok:" in proc.stdout, proc.stderr


def test_show_prints_a_finished_run(ci_run):
    _, folder = ci_run
    proc = in_process("show", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert "submit wall" in proc.stdout and "naive/dispatch" in proc.stdout


def test_show_refuses_a_folder_without_results(tmp_path):
    proc = in_process("show", str(tmp_path))
    assert proc.returncode == 2 and "not a run folder (no run.json)" in proc.stderr


@pytest.mark.slow
def test_a_heavier_kernel_raises_wall_time_per_dispatch_but_not_cpu_time(tmp_path):
    """Wall time per dispatch holds the GPU's work once the GPU is the slower side; the
    issue time (the clock read before the wait) does not: that is what CPU cost means.

    Compared pair by pair: under a time limit the processes run in passes, so each pass
    measures the light and the heavy kernel back to back, under the same load; the median of
    the three passes decides. (Measured one after the other, the two came out 0.66-0.99x
    here, 1.69x inside .ci/run and 2.5036x once with other work on the 2 cores, where
    lavapipe also runs the kernels.) A clock read after the wait would still fail it: 65536
    elements take 20-25 times the light kernel's wall time, and leave each pass a sweep of
    several N (a million did not: 11 ms a dispatch, 12 samples and an interval of ±120 µs).
    Half a second a process (budget_s 1.5 over three) gives the heavy kernel 60 rounds and
    more: its ratios (20-25x) stay far from the bounds of 3 and 5 (3 s, 13 CPU-s, gave the
    same)."""
    suite = write_suite(tmp_path, (
        "defaults: {n_sweep: [1, 16, 64], budget_s: 1.5, min_rounds: 10, warmup_max_rounds: 2,"
        " methodologies: [sequential], encodings: [dispatch], gpu_timestamps: false}\n"
        "benchmarks:\n"
        "  - {name: light, kernel: empty, elements: 1}\n"
        "  - {name: heavy, kernel: add_one, elements: 65536, workgroup_size: 256}\n"))
    proc = in_process("run", "--suite", str(suite), "--backend", BACKEND, "--out",
                      str(tmp_path / "o"), "--processes", "3", "--time-limit", "120",
                      "--implementation", "wgpu-native")
    assert proc.returncode == 0, proc.stderr
    _, summary, _ = read_run(only_run_folder(tmp_path / "o"))
    rows = summary[(summary.variant == "") & summary.process.notna()
                   & summary.metric.isin(["per_dispatch_ns", "cpu_per_dispatch_ns"])]
    passes = rows.pivot(index="process", columns=["benchmark", "metric"], values="value")
    heavy, light = passes["heavy"], passes["light"]
    assert len(passes) >= 1 and passes.notna().all().all(), rows
    wall = (heavy["per_dispatch_ns"] / light["per_dispatch_ns"]).median()
    cpu = (heavy["cpu_per_dispatch_ns"] / light["cpu_per_dispatch_ns"]).median()
    assert wall > 3, (wall, passes)
    # A clock read after the wait would give cpu as large as wall (20-25x); 2.50 was seen
    # with other work on the 2 cores.
    assert cpu < 5, (cpu, passes)
    assert (heavy["cpu_per_dispatch_ns"] / heavy["per_dispatch_ns"]).median() < 0.1, passes


def test_every_sequential_sample_has_its_issue_time_and_every_layer_its_cpu_cost(ci_run):
    """The issue time is the clock read after the last submit, before the wait
    (methods/sequential.py): it holds the issue of every op, and not the GPU's work
    that the wait holds. From N = 1 to a case's largest N, per (benchmark, encoding,
    layer): with `submit` each op is submitted as it is issued and lavapipe runs it there,
    so the issue time grows with the wall time; with `pass` and `dispatch` the one submit
    hands the GPU all N ops at the end, so the wait (wall - issue) grows with it where the
    ops give the GPU work (add_one). The empty kernel gives it next to none: from N = 1 to
    32 its issue grew by 0.7 us a dispatch of recording and its wait by less than the
    median's noise on a busy machine (-0.8 of 22.8 us), so there every N's wait is held to
    be a wait, over a microsecond. (A clock read after the wait leaves a wait of ~0 and fails
    the second and third; one read before the issue leaves an issue time of ~0 and fails
    the first.)"""
    _, folder = ci_run
    samples, summary, _ = read_run(folder)
    sequential = samples[(samples.methodology == "sequential") & (samples.sync == "wait")]
    assert len(sequential) and sequential.issue_ns.notna().all()
    measured = sequential[sequential.phase == "measure"]
    medians = measured.assign(wait_ns=measured.wall_ns - measured.issue_ns).groupby(
        ["benchmark", "encoding", "layer", "n_dispatches"])[
        ["wall_ns", "issue_ns", "wait_ns"]].median()
    for (bench, encoding, layer), rows in medians.groupby(level=[0, 1, 2]):
        grown = rows.iloc[-1] - rows.iloc[0]
        assert len(rows) >= 2 and grown.wall_ns > 0, (bench, encoding, layer, rows)
        if encoding == "submit" or bench != "empty":
            part = grown.issue_ns if encoding == "submit" else grown.wait_ns
            assert part > 0.3 * grown.wall_ns, (bench, encoding, layer, rows)
        else:
            assert (rows.wait_ns > 1000).all(), (bench, encoding, layer, rows)
    cpu = summary[(summary.metric == "cpu_per_dispatch_ns") & summary.process.isna()
                  & (summary.variant == "")]
    wall = summary[(summary.metric == "per_dispatch_ns") & summary.process.isna()
                   & (summary.variant == "")]
    assert set(zip(cpu.case, cpu.layer, strict=True)) == set(zip(wall.case, wall.layer,
                                                                 strict=True))
    assert {"wrapper", "raw", "native"} <= set(cpu.layer)
