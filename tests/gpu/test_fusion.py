"""Fusion on lavapipe: fused and unfused forms compute the same thing as numpy, the checks
can fail, and a run yields speedups with CIs, the matmul crossover and a decode step's
tokens per second and overhead share."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    BACKEND,
    CONFIGS,
    in_process,
    only_run_folder,
    process_centre,
    read_run,
    slow_but,
    write_suite,
)

from gpuoverhead.cases import PIPELINED, READBACK_EVERY, TIMESTAMPS, TOKEN_LOOPS
from gpuoverhead.drivers import webgpu
from gpuoverhead.errors import IntegrityError
from gpuoverhead.gpu import adapters
from gpuoverhead.gpu.wait import waiter
from gpuoverhead.methods import fusion as fusion_method
from gpuoverhead.suite.expand import load_suite
from gpuoverhead.suite.shaders import f16_kernel
from gpuoverhead.workloads import decode as engine_module
from gpuoverhead.workloads import decode_model as decode
from gpuoverhead.workloads import loop, population
from gpuoverhead.workloads import registry as fusion
from gpuoverhead.workloads.decode import Engine
from gpuoverhead.workloads.decode_model import MODELS, Shape
from gpuoverhead.workloads.work import Context, check, verify_outputs

SUITE = """
defaults:
  n_sweep: [1, 2]
  gpu_timestamps: false
benchmarks:
  - {name: chain, fusion: chain, k_sweep: [1, 5, 7], elements: 5000}
  - {name: loop, fusion: loop, k_sweep: [1, 6, 33], elements: 48}
  - {name: population, fusion: population, k_sweep: [1, 7], elements: 70000, workgroup_size: 64}
  - {name: rmsnorm, fusion: rmsnorm, elements: 2688, workgroup_size: 64}
  - {name: mlp, fusion: mlp, elements: 52, workgroup_size: 256}
  - {name: matmul, fusion: matmul, k_sweep: [16, 48]}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """Every pattern's Work on one lavapipe device. `fusion.build` has already run one unit
    of every case and compared it with numpy on fresh random inputs (it raises if not)."""
    suite = load_suite(write_suite(tmp_path_factory.mktemp("fusion"), SUITE))
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND, None)[0]
    device = found.adapter.request_device_sync()
    wait = waiter(device)
    rng = np.random.default_rng(3)
    return device, wait, {g.benchmark: (g, fusion.build(device, g, rng, wait))
                          for g in suite.groups}


def _run(device, wait, works, units: dict) -> dict:
    """`units[case]` timed-op calls' worth of units per case; returns the counts."""
    for case, work in works.items():
        fusion_method.operation(work, device, wait, False)(units.get(case, 3))
    return {case: units.get(case, 3) for case in works}


@pytest.mark.parametrize("pattern", ["chain", "loop", "population", "rmsnorm", "mlp",
                                     "matmul"])
def test_fused_and_unfused_outputs_equal_numpy_after_timed_units(built, pattern):
    device, wait, groups = built
    group, works = groups[pattern]
    counts = _run(device, wait, works, {})
    verify_outputs(works, counts)  # numpy reference and fused == unfused; raises otherwise
    for work in works.values():  # the kernels did something to random (nonzero) inputs
        start = np.asarray(work.reference(0))
        assert start.any() and not np.array_equal(work.read()[: start.size], start) \
            or pattern in ("rmsnorm", "mlp", "matmul")  # these write outputs, not inputs


def test_dependent_loop_matches_a_cpu_reference_for_small_l(built):
    device, wait, groups = built
    _, works = groups["loop"]
    for case, work in works.items():
        work.reset()
        work.units_done[0] = 0
        fusion_method.operation(work, device, wait, False)(2)
        start = np.asarray(work.reference(0))
        want = loop.reference(start, 2 * case.k)
        assert np.array_equal(work.read(), want), case.id
        work.reset()
        work.units_done[0] = 0


def test_a_missing_unit_fails_the_check(built):
    """One unit fewer in the fused form of K=5 must be caught, by numpy and by the pair."""
    device, wait, groups = built
    _, works = groups["chain"]
    for work in works.values():
        work.reset()
        work.units_done[0] = 0
    fused = next(c for c in works if c.variant == "fused" and c.k == 5)
    counts = _run(device, wait, works, {fused: 2})
    counts[fused] = 3  # claims 3 units; only 2 ran
    with pytest.raises(IntegrityError, match="output check failed"):
        verify_outputs(works, counts)


def test_population_steps_every_cell_as_numpy_does(built):
    """All 70,000 cells, not only the 256 the check replays, hold numpy's values after two
    units of each form (the same steps: 2 L)."""
    device, wait, groups = built
    _, works = groups["population"]
    for case, work in works.items():
        work.reset()
        work.units_done[0] = 0
        start = work.read()
        fusion_method.operation(work, device, wait, False)(2)
        assert np.array_equal(work.read(), population.reference(start, 2 * case.k)), case.id
        work.reset()
        work.units_done[0] = 0


def test_a_fused_population_one_step_short_fails_its_check(built, monkeypatch):
    device, wait, groups = built
    group, _ = groups["population"]
    make = Context.pipeline

    def short(self, entry, **constants):
        constants["STEPS"] -= constants["STEPS"] > 1
        return make(self, entry, **constants)

    monkeypatch.setattr(Context, "pipeline", short)
    with pytest.raises(IntegrityError, match="fused: output check failed"):
        fusion.build(device, group, np.random.default_rng(3), wait)


#: Wrong MLP kernels, as edits of the shipped one, and the case whose check must fail first:
#: a mega-kernel whose layer 2 reads a hidden vector it never computed (the part the
#: barrier orders), and a hidden layer without its relu.
WRONG_MLP = {"fused skips layer 1": ("hidden_rows(first, lid);", "", "fused"),
             "no relu": ("max(red[lid] + bias[row], 0.0)", "red[lid] + bias[row]", "unfused")}


@pytest.mark.parametrize("wrong", WRONG_MLP)
def test_a_wrong_mlp_kernel_fails_its_check(built, wrong):
    """D = 52 at 8 rows a workgroup: a last workgroup with rows past the end, lanes past
    a row's 13 vec4s in layer 1 and two blocks a lane in layer 2."""
    device, wait, groups = built
    group, _ = groups["mlp"]
    old, new, first = WRONG_MLP[wrong]
    assert group.kernel.source.count(old) == 1
    kernel = replace(group.kernel, source=group.kernel.source.replace(old, new))
    with pytest.raises(IntegrityError, match=f"/{first}: output check failed"):
        fusion.build(device, replace(group, kernel=kernel), np.random.default_rng(3), wait)


@pytest.mark.torch_here
def test_torch_mlp_matches_numpy_and_its_check_sees_the_relu(built, torch_cpu, monkeypatch):
    """PyTorch's eager MLP (addmv, relu, addmv; on the CPU, compiling off) passes the check
    before and after timed units, and fails it against a reference without the relu."""
    from gpuoverhead.workloads import mlp

    group, _ = built[2]["mlp"]
    group = replace(group, torch_compile_max_n=0)
    group = replace(group, cases=fusion.torch_cases(group, "cpu"))
    assert {c.implementation for c in group.cases} == {"torch-eager"}
    kept, ops, verify, _ = fusion.torch_operations(group, np.random.default_rng(0), {}, "cpu")
    assert kept.cases == group.cases
    for op in ops.values():
        op(3)
    assert verify(dict.fromkeys(ops, 3)) == []

    def linear(x, w1, b1, w2, b2):
        return w2.astype(np.float64) @ (w1.astype(np.float64) @ x + b1) + b2

    monkeypatch.setattr(mlp, "reference", linear)
    with pytest.raises(IntegrityError, match="output check failed"):
        fusion.torch_operations(group, np.random.default_rng(0), {}, "cpu")


def test_population_reference_is_the_rastrigin_like_step():
    """One step by hand: the point (a, b) = (0x5678, 0x1234) evaluated as a^2 + b^2 plus
    10 (wave(a) + wave(b)), the triangle wave standing for 1 - cos, then the move."""
    x, a, b = 0x12345678, 0x5678, 0x1234

    def wave(v):
        return min(v & 255, 255 - (v & 255))

    f = (a * a + b * b + 10 * (wave(a) + wave(b))) & 0xFFFFFFFF
    want = ((x ^ (((f << 13) | (f >> 19)) & 0xFFFFFFFF)) * 0x9E3779B1 + 1) & 0xFFFFFFFF
    cells = np.array([x], dtype=np.uint32)
    assert population.reference(cells, 1)[0] == want
    assert np.array_equal(population.reference(cells, 0), cells)


def test_loop_reference_is_the_stencil():
    x = np.array([1, 2, 3], dtype=np.uint32)
    right = np.array([2, 3, 1], dtype=np.uint32)
    left = np.array([3, 1, 2], dtype=np.uint32)
    want = (left ^ ((right << np.uint32(5)) | (right >> np.uint32(27)))) \
        * np.uint32(0x9E3779B1) + x
    assert np.array_equal(loop.reference(x, 1), want)
    assert np.array_equal(loop.reference(x, 0), x)


def test_run_reports_speedups_with_ci_and_the_crossover(ci_run):
    _, folder = ci_run
    _, summary, info = read_run(folder)
    assert info["status"] == "complete" and not info["errors"]
    combined = summary[summary["process"].isna()]
    speed = combined[combined.metric == "fusion_speedup"]
    for bench, ks in (("chain", {1, 5}), ("loop", {1, 16}), ("rmsnorm", {5})):
        mine = speed[speed.benchmark == bench]
        assert set(mine.k) == ks, bench
    # Each process's speedup is its unfused form's time per unit over its fused form's (of
    # the same K and encoding), whatever the load made both (an interval's lower end only
    # said it was positive, which the log scale makes it); the median over processes lies
    # in its interval.
    own = summary[summary.process.notna() & (summary.sync == "wait")]
    per_unit = own[own.metric == "per_unit_ns"].set_index(
        ["process", "benchmark", "k", "encoding", "variant"])["value"]
    ratios = own[own.metric == "fusion_speedup"]
    assert set(ratios.benchmark) == {"chain", "loop", "rmsnorm", "decode"}
    for r in ratios.itertuples():
        key = (r.process, r.benchmark, r.k, r.encoding)
        assert r.value == pytest.approx(per_unit[(*key, "unfused")] / per_unit[(*key, "fused")],
                                        rel=0.02), key
    # Over processes the speedup is the centre of the processes' own ratios, not the ratio
    # of the combined times or any one process's.
    over = speed[speed.ci_kind.str.startswith("between processes")]
    assert len(over)
    for r in over.itertuples():
        mine = ratios[(ratios.case == r.case) & (ratios.implementation == r.implementation)]
        assert len(mine) == r.processes, r.case
        assert r.value == pytest.approx(process_centre(mine.value), rel=1e-9), r.case
    # K = 1: the fused form is the same one dispatch, so no speedup either way: near 1, or
    # where load left the run too few rounds to tell (a loop's per-unit slope at K = 1 is
    # tens of µs against lavapipe's wait jitter: 0.18 [9e-9, 3.5e6] beside a torch.compile),
    # an interval that holds 1. A form that did other work than its twin, in a run precise
    # enough to see it, fails either way.
    same = speed[speed.k == 1]
    holds_one = (same.ci_low <= 1) & (same.ci_high >= 1)
    assert len(same) == 2 and (same.value.between(0.5, 2) | holds_one).all(), same
    # Fusing 16 dependent steps into one dispatch must pay even on a CPU driver: in each
    # process, by its own interval (over two processes, t with one degree of freedom gives
    # an interval too wide to say it: 1.4-52x around 8.5x in one run).
    loop16 = summary[(summary.metric == "fusion_speedup") & (summary.benchmark == "loop")
                     & (summary.k == 16)]
    assert (loop16[loop16.process.notna()].ci_low > 1.5).all() and loop16.value.min() > 1.5
    gpu = combined[(combined.metric == "fusion_gpu_speedup")]
    assert not gpu.empty
    cross = combined[combined.metric == "crossover_size"]
    assert len(cross) == 1
    assert math.isfinite(cross.value.iat[0]) or cross.estimator.iat[0].startswith("not reached")


#: The fusion patterns' PyTorch forms as this module checks them on the CPU: chain, rmsnorm
#: and matmul eager only (torch_compile_max_n 0); the dependent loop and the population also
#: through torch.compile, and the loop again with a `compile_limit_s` far below what a
#: compile takes.
TORCH_SUITE = """
defaults: {n_sweep: [1, 2], budget_s: 0.1, min_rounds: 3, warmup_max_rounds: 1,
           gpu_timestamps: false, torch_compile_max_n: 0}
benchmarks:
  - {name: chain, fusion: chain, k_sweep: [3], elements: 1000}
  - {name: loop, fusion: loop, k_sweep: [4], elements: 32, torch_compile_max_n: 8}
  - {name: limited, fusion: loop, k_sweep: [4], elements: 32, torch_compile_max_n: 8,
     compile_limit_s: 0.01}
  - {name: rmsnorm, fusion: rmsnorm, elements: 896}
  - {name: matmul, fusion: matmul, k_sweep: [16, 32]}
  - {name: population, fusion: population, k_sweep: [3], elements: 64,
     torch_compile_max_n: 8}
"""
#: The benchmark of TORCH_SUITE that a run measures (torch_run): what a run adds to a
#: build is its rows, a failed build's error row and warning among them, and the run
#: ending well. The others' builds, checks and ops are the same code in this process
#: (test_torch_forms_build_and_match_numpy_in_process): each job of a run is a worker that
#: imports torch (about 3 CPU-s) and brings up Inductor for its first compile (about 5);
#: this process does both once.
IN_A_RUN = ("limited",)


@pytest.fixture(scope="module")
def torch_cpu():
    """torch, for this module's PyTorch checks in the test process: the tests that take it
    share one worker (conftest.shared_groups), which imports torch and brings up Inductor
    for a first compile once."""
    return pytest.importorskip("torch")


def _torch_group(tmp_path: Path, name: str, **changes):
    """TORCH_SUITE's benchmark `name` (with `changes`) in its PyTorch forms on the CPU."""
    group = next(g for g in load_suite(write_suite(tmp_path, TORCH_SUITE)).groups
                 if g.benchmark == name)
    group = replace(group, **changes)
    return replace(group, cases=fusion.torch_cases(group, "cpu"))


@pytest.mark.torch_here
@pytest.mark.parametrize("pattern", slow_but(["chain", "rmsnorm", "matmul", "loop",
                                              "population"], 0, 1, 2))
def test_torch_forms_build_and_match_numpy_in_process(torch_cpu, tmp_path, pattern):
    """Each pattern's PyTorch build as a run's worker makes it (torch_operations on the
    CPU): every case built (the dependent loop's L steps through torch.compile too, and the
    population's, which shares the loop's PyTorch forms and once ran them as a CUDA graph
    under torch.compile's name), its build timed, its output checked against numpy before
    timed units (a mismatch raises) and after them; with compile off, eager is the only
    form (no CUDA graph on the CPU)."""
    group = _torch_group(tmp_path, pattern)
    forms = {c.implementation for c in group.cases}
    assert forms == ({"torch-eager", "torch-compile"} if pattern in ("loop", "population")
                     else {"torch-eager"})
    notes: dict = {}
    kept, ops, verify, events = fusion.torch_operations(group, np.random.default_rng(0),
                                                        notes, "cpu")
    assert kept.cases == group.cases and not events
    builds = notes["torch_fusion_build_s"]
    assert set(builds) == {c.id for c in group.cases}
    assert all(isinstance(s, float) and s > 0 for s in builds.values()), builds
    for op in ops.values():
        op(3)
    assert verify(dict.fromkeys(ops, 3)) == []


@pytest.mark.torch_here
@pytest.mark.slow
def test_a_torch_compile_that_fails_is_its_case_s_error_not_a_crash(torch_cpu, tmp_path,
                                                                     monkeypatch):
    """torch.compile with no working C++ compiler (Inductor's CPU code needs one: here the
    compiler it is configured with does not exist) fails as a compile does: the build
    keeps the failure and its message for the fused case, and the eager case beside it is
    built, measured and checked. A build's failure becomes an error row and a warning,
    and the run ends well, by the same path from the worker's notes as the compile past
    its limit in torch_run (test_a_torch_compile_past_its_limit_is_a_row_...)."""
    from torch._inductor import config

    monkeypatch.setattr(config.cpp, "cxx", (None, str(tmp_path / "no-such-c++")))
    torch_cpu._dynamo.reset()  # no compiled graph of an earlier test reused
    group = _torch_group(tmp_path, "chain", torch_compile_max_n=4)
    assert {c.implementation for c in group.cases} == {"torch-eager", "torch-compile"}
    notes: dict = {}
    kept, ops, verify, _ = fusion.torch_operations(group, np.random.default_rng(0), notes,
                                                   "cpu")
    assert {c.implementation for c in kept.cases} == {"torch-eager"}
    failed = {c.implementation: notes["torch_fusion_build_s"][c.id] for c in group.cases
              if c not in kept.cases}
    assert set(failed) == {"torch-compile"}
    error = failed["torch-compile"]["error"]
    assert error.startswith("InductorError") and "C++ compiler" in error, error
    for op in ops.values():
        op(3)
    assert verify(dict.fromkeys(ops, 3)) == []


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory):
    """One run of TORCH_SUITE's IN_A_RUN on the CPU in PyTorch, one process: the loop's
    eager form, and its compile past `compile_limit_s`. One run for both tests that read
    it."""
    pytest.importorskip("torch")
    import yaml

    folder = tmp_path_factory.mktemp("torch-fusion")
    suite = yaml.safe_load(TORCH_SUITE)
    suite["benchmarks"] = [b for b in suite["benchmarks"] if b["name"] in IN_A_RUN]
    proc = in_process("run", "--suite", str(write_suite(folder, yaml.safe_dump(suite))),
                      "--implementation", "torch", "--processes", "1",
                      "--out", str(folder / "out"))
    assert proc.returncode == 0, proc.stderr
    return proc, read_run(only_run_folder(folder / "out"))


@pytest.mark.torch_here
@pytest.mark.slow
def test_torch_fusion_baseline_checks_its_outputs(torch_run):
    """The eager form measured, its outputs checked against numpy in the run (a mismatch
    is an error)."""
    _, (_, summary, info) = torch_run
    assert not info["errors"]
    rows = summary[summary.process.isna()]
    units = rows[rows.metric == "per_unit_ns"]
    assert set(units.benchmark) == set(IN_A_RUN)
    assert set(units[units.implementation == "torch-eager"].benchmark) == set(IN_A_RUN)
    # Each case's build (here: one eager unit run) is a figure of its own; a failed one none.
    builds = rows[rows.metric == "build_ns"]
    assert set(builds.case) == set(rows.loc[rows.metric != "error", "case"])
    assert (builds.value > 0).all()


@pytest.mark.torch_here
@pytest.mark.slow
def test_a_torch_compile_past_its_limit_is_a_row_and_the_run_ends_well(torch_run):
    """With `compile_limit_s` far below what a compile takes, the loop's compiled case is an
    error row naming the limit and a warning, the eager steps beside it are measured and
    the run ends well; the console lists the build with its failure. (A compile that builds
    is checked in this process: test_torch_forms_build_and_match_numpy_in_process.)"""
    proc, (_, summary, info) = torch_run
    assert "left out, its build failed: CompileTimeout" in proc.stderr
    assert "torch.compile: seconds to compile" in proc.stdout
    assert not info["errors"]  # the outputs matched numpy before and after sampling
    rows = summary[summary.process.isna()]
    units = rows[(rows.metric == "per_unit_ns")]
    assert set(zip(units.benchmark, units.implementation, strict=True)) == {
        ("limited", "torch-eager")}
    assert rows[(rows.metric == "build_ns") & (rows.implementation == "torch-compile")].empty
    failed = rows[rows.metric == "error"]
    assert list(zip(failed.benchmark, failed.implementation, strict=True)) == [
        ("limited", "torch-compile")]
    assert "did not finish within 0.01 s (compile_limit_s)" in failed.estimator.iat[0]


def test_decode_step_reports_tokens_cpu_gpu_and_the_overhead_share(ci_run):
    _, folder = ci_run
    samples, summary, _ = read_run(folder)
    rows = summary[summary.process.isna() & (summary.benchmark == "decode")]
    for variant in ("unfused", "fused"):
        timed = rows[(rows.variant == variant) & (rows.sync == TIMESTAMPS)]
        assert "gpu_ns" in set(timed.metric), variant
        for encoding in ("submit", "pass", "dispatch"):
            mine = rows[(rows.variant == variant) & (rows.encoding == encoding)
                        & (rows.sync == "wait")].set_index("metric")
            for metric in ("per_unit_ns", "tokens_per_s", "cpu_per_unit_ns",
                           "overhead_share"):
                assert metric in mine.index, (variant, encoding, metric)
            # Tokens per second from the raw samples: one step's time is what one more
            # step adds to a round (wall at N = 2 less N = 1), its median per process, their
            # centre as a run takes it (the geometric mean of two: their median, the mean,
            # is 6% off it where load set the processes apart); a second is 1e9 ns.
            step = samples[(samples.benchmark == "decode") & (samples.variant == variant)
                           & (samples.encoding == encoding) & (samples.sync == "wait")
                           & (samples.phase == "measure")].pivot_table(
                index=["process", "repetition"], columns="n_dispatches", values="wall_ns")
            added = process_centre((step[2] - step[1]).dropna().groupby("process").median())
            tokens = mine.loc["tokens_per_s", "value"]
            assert tokens == pytest.approx(1e9 / added, rel=0.02), (variant, encoding)
    speedups = rows[rows.metric == "fusion_speedup"]
    assert sorted(speedups.encoding) == ["dispatch", "pass", "submit"]


def test_decode_gpu_time_is_measured_against_the_read_stream_of_its_worker(ci_run):
    """Lavapipe has no data-sheet bandwidth, so the floor multiple is the measured one: the
    stream kernel's bandwidth in run.json is a memory's, not a cache's (a grid that read 64
    KB instead of the stream gave 1,096 GB/s here), and in GB/s (a slip to MB/s or bytes a
    µs is 1000x off, below 0.01 or above 200); each form's GPU time per token over the floor
    at that bandwidth is `floor_multiple_read`, above 1 (a step cannot read its bytes
    faster than a stream reads memory: what catches a stream figure too low for the
    memory); run.json's `kernels` are the suite's as its device ran them, through subgroup
    shuffles where the adapter offers subgroups. No tighter lower end: lavapipe's stream
    runs on the CPU and read 0.3-0.6 GB/s beside busy cores on a 2-core machine, so a bound
    near that fails under load."""
    _, folder = ci_run
    _, summary, info = read_run(folder)
    processes = [p for entry in info["benchmarks"] if entry["benchmark"] == "decode"
                 for p in entry["processes"]]
    # The suite's kernels as they ran: through subgroup shuffles where the adapter offers
    # subgroups (lavapipe's Vulkan does, its OpenGL not), the worker having asked for them.
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND, None)[0]
    offered = engine_module.has_subgroups(found.adapter)
    assert processes and all(p["kernels"] == engine_module.kernels_note(offered)
                             for p in processes)
    measured = [p["read_gb_s"] for p in processes]
    assert all(0.01 < gb_s < 200 for gb_s in measured), measured
    rows = summary[(summary.benchmark == "decode") & (summary.metric == "floor_multiple_read")]
    assert set(rows.variant) == {"fused", "unfused"}
    # Over the run's processes above 1; one process's own median may fall to the floor or
    # under it where lavapipe's noise reaches a step's GPU time (beside a busy core, one
    # process's median slope was 0: below, its rounds show it).
    combined = rows[rows.process.isna()]
    assert len(combined) == 2 and (combined.value > 1).all(), combined[["variant", "value"]]
    assert (rows.value >= 0).all(), rows[["variant", "process", "value"]]
    # Each process's own interval (over two, a t interval of one degree of freedom is the
    # processes' spread, not the floor's): the order statistics of its rounds, each round's
    # multiple its GPU-time slope (N = 2 less N = 1) over the floor. One process of each
    # form excludes the floor, unless a round of every process of that form fell to it or
    # below: lavapipe's noise does that to one round in eight now and then (1 run in 3 here,
    # more on a busy machine), and a lower end so held is honest. A lower end at or under
    # the floor with no round there is not.
    own = rows[rows.process.notna()]
    assert (own.ci_low >= 0).all(), own[["variant", "process", "value", "ci_low"]]
    read = {p["process"]: p["read_gb_s"] for entry in info["benchmarks"]
            if entry["benchmark"] == "decode" for p in entry["processes"]}
    samples, _, _ = read_run(folder)
    stamped = samples[(samples.benchmark == "decode") & (samples.sync == TIMESTAMPS)
                      & (samples.phase == "measure")]
    for variant, mine in own.groupby("variant"):
        crossed = []
        for r in mine.itertuples():
            needed = decode.bytes_per_token(MODELS[int(r.elements)], int(r.k))
            rounds = stamped[(stamped.variant == variant) & (stamped.process == r.process)
                             ].pivot_table(index="repetition", columns="n_dispatches",
                                           values="gpu_ns").astype(float)
            multiple = (rounds[2] - rounds[1]).dropna() * read[r.process] / needed
            crossed.append(bool(len(multiple)) and bool((multiple <= 1).any()))
            assert r.ci_low > 1 or crossed[-1], (variant, r.process, r.ci_low, multiple)
        assert (mine.ci_low > 1).any() or all(crossed), (variant, mine.ci_low)
    assert summary[summary.metric == "floor_multiple"].empty  # no data sheet: no guess


def test_decode_gpu_time_is_taken_apart_into_floor_dispatches_and_excess(ci_run):
    """Each form's GPU time a token in three parts: the read floor (bytes over the worker's
    read stream), its dispatches (40 unfused and 13 fused for the tiny model, counted from
    the step as built) times the GPU's own time per dispatch in one pass, both measured in
    each worker (run.json), and the kernels' excess. Every part at or above zero, each
    interval too; the parts add up to the GPU time, within its interval: within a process
    (a slope less two constants) and over processes by construction (the floor and the
    dispatches the centres of the processes' own, the excess the GPU time's centre less
    theirs: the three centres each taken on its own did not add up, two processes whose
    read streams gave 1.08 and 0.51 GB/s splitting GPU times 0.02% apart unlike, their
    geometric means 0.7% under an interval of ±0.15%), unless the excess was held at zero
    (the floor and the dispatches take the whole slope: lavapipe's GPU-time slope over N =
    1 and 2 falls to zero now and then beside a busy core), which its ci_kind says."""
    _, folder = ci_run
    _, summary, info = read_run(folder)
    workers = {p["process"]: p for entry in info["benchmarks"]
               if entry["benchmark"] == "decode" for p in entry["processes"]}
    assert all(w["gpu_per_dispatch_ns"] > 0 for w in workers.values()), workers
    rows = summary[(summary.benchmark == "decode") & (summary.sync == TIMESTAMPS)]
    parts = ("read_floor_ns", "dispatch_gpu_ns", "kernel_excess_ns")
    for (variant, process), mine in rows.groupby(["variant", rows.process.fillna(-1)]):
        got = {r.metric: r for r in mine.itertuples()}
        assert set(parts) <= set(got), (variant, process, sorted(got))
        assert all(got[m].value >= 0 and not got[m].ci_low < 0 for m in parts), mine
        total, gpu = sum(got[m].value for m in parts), got["gpu_ns"]
        if process >= 0:  # one worker's own floors, as run.json has them
            worker, case = workers[int(process)], got["gpu_ns"].case
            assert worker["dispatches_per_unit"][case] == {"unfused": 40, "fused": 13}[variant]
            needed = decode.bytes_per_token(MODELS[int(gpu.elements)], int(gpu.k))
            assert got["read_floor_ns"].value == pytest.approx(needed / worker["read_gb_s"])
            assert got["dispatch_gpu_ns"].value == pytest.approx(
                worker["dispatches_per_unit"][case] * worker["gpu_per_dispatch_ns"])
        excess = got["kernel_excess_ns"]
        if excess.value == 0:
            assert "not resolved" in excess.ci_kind, excess
            continue
        assert total == pytest.approx(gpu.value, rel=1e-9), (variant, process)
        if process >= 0:
            continue
        own = rows[(rows.variant == variant) & rows.process.notna()]
        for m in parts[:2]:  # a process's part held at zero is combined on the linear scale
            values = own[own.metric == m].value
            if (values > 0).all():
                assert got[m].value == pytest.approx(process_centre(values), rel=1e-9), \
                    (variant, m, got[m].value, list(values))


def test_decode_token_loop_reports_tokens_per_second_from_runs_of_real_steps(ci_run):
    """Each form and encoding's token loop, synced and pipelined: wall and CPU per token,
    tokens per second and the overhead share. A token's wall is a run's wall over its
    tokens (the suite's loop_tokens: 8 in configs/ci.yaml, 2 in the CI run's), its median
    per process, the centre of those; tokens per second is 1e9 over it; the CPU's share of
    a token is under its wall."""
    _, folder = ci_run
    samples, summary, info = read_run(folder)
    group = next(g for g in load_suite(Path(info["suite"]["path"])).groups
                 if g.fusion == "decode")
    (tokens,) = {n for c in group.cases if c.sync in TOKEN_LOOPS for n in c.n_values}
    rows = summary[summary.process.isna() & (summary.benchmark == "decode")]
    for variant in ("unfused", "fused"):
        for encoding in ("submit", "pass", "dispatch"):
            for sync in TOKEN_LOOPS:
                mine = rows[(rows.variant == variant) & (rows.encoding == encoding)
                            & (rows.sync == sync)].set_index("metric")
                assert {"token_ns", "cpu_per_token_ns", "tokens_per_s",
                        "overhead_share"} <= set(mine.index), (variant, encoding, sync)
                runs = samples[(samples.benchmark == "decode") & (samples.variant == variant)
                               & (samples.encoding == encoding) & (samples.sync == sync)
                               & (samples.phase == "measure")]
                assert set(runs.n_dispatches) == {tokens}
                token = process_centre((runs.wall_ns / tokens).groupby(runs.process).median())
                assert mine.loc["token_ns", "value"] == pytest.approx(token, rel=1e-6)
                assert mine.loc["tokens_per_s", "value"] == pytest.approx(1e9 / token)
                assert mine.loc["cpu_per_token_ns", "value"] < token


#: A model for the test only: grouped-query attention (4 query heads read 2 KV heads, as
#: Qwen2.5-0.5B's 14 read 2) over 3 layers. The shipped tiny model has one KV head, where
#: every mapping of query heads to KV heads reads the same one, and a wrong one would pass.
GQA = Shape("test-gqa", 3, 128, 4, 2, 256, 1024)


def _swap_kv_heads(layer: dict[str, np.ndarray], shape: Shape) -> None:
    """The layer's two KV heads exchanged (their K and V projections, biases and caches):
    the values a kernel that maps each query head to the other KV head would read."""
    q, kv, d = shape.q_size, shape.kv_size, shape.head_dim
    for start in (q, q + kv):  # K rows, then V rows
        for name in ("wqkv", "bqkv"):
            block = layer[name][start:start + kv].copy()
            layer[name][start:start + kv] = np.concatenate(np.split(block, 2)[::-1])
    for name in ("kcache", "vcache"):
        cache = layer[name].reshape(-1, shape.kv_heads, d)
        layer[name] = cache[:, ::-1].reshape(-1).copy()


def test_decode_logits_match_numpy_and_the_check_would_see_one_wrong_weight(monkeypatch):
    """Both engines' logits agree with the numpy step (fusion.build checks that, or raises)
    on a model with several KV heads and layers; the tolerance is tight enough that a query
    head reading the other KV head in the first layer, or a 1% change of a projection in a
    middle layer, would fail it."""
    monkeypatch.setitem(MODELS, 128, GQA)  # the ci suite's decode group: hidden 128
    suite = load_suite(CONFIGS / "ci.yaml")
    group = next(g for g in suite.groups if g.fusion == "decode")
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND, None)[0]
    device = found.adapter.request_device_sync()
    works = fusion.build(device, group, np.random.default_rng(11), waiter(device))
    steps = {(c.variant, c.sync in TOKEN_LOOPS): len(w.sequences[0]) for c, w in works.items()}
    # copy, the layers, (the final norm,) the head in one chunk here, the counter; the token
    # loop: an embedding dispatch per head chunk (one here) and the argmax's two more
    assert steps == {("unfused", False): 1 + 18 * 3 + 1 + 1 + 1,
                     ("fused", False): 1 + 5 * 3 + 1 + 1,
                     ("unfused", True): 1 + 18 * 3 + 1 + 1 + 2 + 1,
                     ("fused", True): 1 + 5 * 3 + 1 + 2 + 1}
    works = {c: w for c, w in works.items() if c.sync == "wait"}
    for work in works.values():  # the `pass` encoding's segments: a pass per layer, the head
        segments = work.segmented[0]
        assert len(segments) == 3 + 1 and sum(segments, ()) == work.sequences[0]
    weights = decode.Weights.of(GQA, group.cases[0].k)
    assert len(weights.layers) == 3 and weights.layers[0]["kcache"].size == \
        (group.cases[0].k + 1) * 2 * GQA.head_dim

    def agrees(logits: np.ndarray, want: np.ndarray) -> bool:
        return np.allclose(logits, want, rtol=decode.TOLERANCE,
                           atol=decode.TOLERANCE / 10 * np.abs(want).max())

    for case, work in works.items():
        assert agrees(work.read(), decode.reference(weights)), case.id
    logits = next(w for c, w in works.items() if c.variant == "fused").read()
    swapped = decode.Weights.of(GQA, group.cases[0].k)
    _swap_kv_heads(swapped.layers[0], GQA)
    assert not agrees(logits, decode.reference(swapped))
    scaled = decode.Weights.of(GQA, group.cases[0].k)
    scaled.layers[1]["wo"] *= np.float32(1.01)
    assert not agrees(logits, decode.reference(scaled))


def test_f16_decode_reads_half_the_weight_bytes_and_matches_numpy_on_its_weights():
    """`precision: f16`: the matrices are stored as f16 (half the bytes) and the logits agree
    with the numpy step on the f16-representable weights, in both engines."""
    suite = load_suite(CONFIGS / "ci.yaml")
    group = next(g for g in suite.groups if g.fusion == "decode")
    group = replace(group, precision="f16", kernel=f16_kernel(group.kernel),
                    cases=tuple(replace(c, kernel=f"{c.kernel}_f16") for c in group.cases
                                if c.encoding == "dispatch" and c.sync == "wait"))
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND, None)[0]
    if "shader-f16" not in found.adapter.features:
        pytest.skip(f"{found.info.label} has no shader-f16")
    device = found.adapter.request_device_sync(required_features=["shader-f16"])
    works = fusion.build(device, group, np.random.default_rng(11), waiter(device))  # checks
    weights = decode.Weights.of(MODELS[group.elements], group.cases[0].k, "f16")
    assert np.array_equal(weights.head, weights.head.astype(np.float16).astype(np.float32))
    assert weights.head.tobytes() != decode.Weights.of(MODELS[group.elements],
                                                       group.cases[0].k).head.tobytes()
    for work in works.values():
        logits = work.read()
        assert np.allclose(logits, decode.reference(weights), rtol=decode.TOLERANCE,
                           atol=decode.TOLERANCE / 10 * np.abs(logits).max())
    rows = weights.shape.vocab * weights.shape.hidden
    sizes = {p: sum(b.size for b in Engine(Context(device, group), weights,
                                                  p).head) for p in ("f32", "f16")}
    assert sizes == {"f32": 4 * rows, "f16": 2 * rows}


#: Heads of 128 dimensions (as Qwen2.5-1.5B's), more query dimensions than hidden ones, and
#: a cache of three attention blocks of 256 (19 of 32 where blocks shrink to give about 128
#: workgroups): the fused attention's combine step has work to do.
WIDE = Shape("test-wide", 2, 128, 4, 2, 256, 1024, head_dim=128)


@pytest.mark.parametrize("workgroups", [decode.ATTENTION_WORKGROUPS, 0])
@pytest.mark.parametrize("cache", [600, 255])
def test_decode_over_several_attention_blocks_and_wide_heads_matches_numpy(monkeypatch, cache,
                                                                          workgroups):
    """Both engines agree with numpy where the cache spans several attention blocks (the
    partial softmaxes must be combined) or exactly one block of 256 (cache + 1 = 256
    positions; 16 of 16 where blocks shrink), with heads of 128 dimensions."""
    monkeypatch.setitem(MODELS, 128, WIDE)
    kernels = replace(engine_module.default(WIDE), attention_workgroups=workgroups)
    monkeypatch.setattr(engine_module, "default", lambda _: kernels)
    suite = load_suite(CONFIGS / "ci.yaml")
    group = next(g for g in suite.groups if g.fusion == "decode")
    group = replace(group, cases=tuple(replace(c, k=cache) for c in group.cases
                                       if c.encoding == "dispatch" and c.sync == "wait"))
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND, None)[0]
    device = found.adapter.request_device_sync()
    works = fusion.build(device, group, np.random.default_rng(11), waiter(device))  # checks
    assert {c.variant for c in works} == {"unfused", "fused"}
    want = decode.reference(decode.Weights.of(WIDE, cache))
    for work in works.values():
        assert np.allclose(work.read(), want, rtol=decode.TOLERANCE,
                           atol=decode.TOLERANCE / 10 * np.abs(want).max())


def _greedy_tokens(weights: decode.Weights, steps: int) -> list[int]:
    """Greedy decoding in numpy, step by step: the token after 0 .. steps steps."""
    tokens = [decode.TOKEN]
    for _ in range(steps):
        tokens.append(int(np.argmax(decode.reference(weights, tokens[-1]))))
    return tokens


def test_decode_with_the_head_in_small_chunks_matches_numpy_in_logits_and_tokens():
    """A device whose bindings hold less of the LM head gets more chunks of it: both
    engines' logits still agree with numpy, and so do the token loop's tokens, whose
    embeddings lie in several chunks."""
    suite = load_suite(CONFIGS / "ci.yaml")
    group = next(g for g in suite.groups if g.fusion == "decode")
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND, None)[0]
    ctx = Context(found.adapter.request_device_sync(), group)
    weights = decode.Weights.of(MODELS[group.elements], group.cases[0].k)
    rows = 192
    engine = Engine(ctx, weights, head_binding=rows * weights.shape.hidden * 4)
    assert len(engine.chunks) == -(-weights.shape.vocab // rows)
    want, tokens = decode.reference(weights), _greedy_tokens(weights, 4)
    assert len({t // rows for t in tokens}) > 1, tokens
    for form in ("unfused", "fused"):
        count = ctx.buffer(np.zeros(1, np.uint32))
        segments, logits = engine.steps(form, count)
        ctx.submit(sum(segments, ()))
        assert np.allclose(ctx.reader(logits, np.float32)(), want, rtol=decode.TOLERANCE,
                           atol=decode.TOLERANCE / 10 * np.abs(want).max()), form
        token = ctx.buffer(np.array([decode.TOKEN], np.uint32))
        loop = sum(engine.steps(form, count, token)[0], ())
        got = []
        for _ in range(4):
            ctx.submit(loop)
            got.append(int(ctx.reader(token, np.uint32)()[0]))
        assert got == tokens[1:], form


@pytest.mark.slow
def test_decode_token_loop_feeds_each_token_to_the_next_step_as_numpy_greedy_does():
    """The token loop's step reads the embedding of the token its previous step chose on the
    GPU: in both engines, synced and pipelined, through the timed op, the token after each
    step is numpy's greedy token after as many steps. Its first tokens all differ (the
    start's and three steps'), so a step that read a fixed row (or the wrong one) fails;
    after a run of more steps than the pipelined loop reads back at once (READBACK_EVERY +
    1: the least that reads mid-run; the synced loop reads back each step: a few more), the
    post-sampling check (tokens and the GPU's step count) agrees too."""
    suite = load_suite(CONFIGS / "ci.yaml")
    group = next(g for g in suite.groups if g.fusion == "decode")
    group = replace(group, cases=tuple(c for c in group.cases if c.sync in TOKEN_LOOPS
                                       and c.encoding in ("dispatch", "submit")))
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND, None)[0]
    device = found.adapter.request_device_sync()
    wait = waiter(device)
    works = fusion.build(device, group, np.random.default_rng(11), wait)  # checks one step
    assert len(works) == 8
    weights = decode.Weights.of(MODELS[group.elements], group.cases[0].k)
    want = _greedy_tokens(weights, 3)
    assert len(set(want)) == 4, want
    for case, work in works.items():
        work.reset()
        work.units_done[0] = 0
        op = fusion_method.operation(work, device, wait, False, case.encoding)
        got = [int(work.read()[0])]
        for _ in range(3):
            op(1)
            got.append(int(work.read()[0]))
        assert got == want, case.id
        more = READBACK_EVERY + 1 if case.sync == PIPELINED else 3
        op(more)
        assert check(case, work, 3 + more, "after the loop")


def test_greedy_reference_extrapolates_its_tokens_from_their_cycle():
    """numpy's loop knows the token after any number of steps from the steps up to the
    first repeat, and says None past its limit of numpy steps."""
    weights = decode.Weights.of(MODELS[128], 16)
    want = _greedy_tokens(weights, 40)
    greedy = decode.Greedy(weights)
    assert [greedy.after(i) for i in range(41)] == want
    assert decode.Greedy(decode.Weights.of(MODELS[128], 16), most=1).after(40) is None


@pytest.mark.torch_here
def test_torch_token_loop_feeds_each_token_to_the_next_step(torch_cpu):
    """PyTorch's token loop (eager here: CPU) reads the row of the token its previous step
    chose: after 3 steps its token is numpy's greedy third (all of the first differ, so a
    step that read a fixed row fails the check), and the op reads the token back."""
    from gpuoverhead.workloads.registry import torch_cases, torch_operations

    suite = load_suite(CONFIGS / "ci.yaml")
    group = next(g for g in suite.groups if g.fusion == "decode")
    group = replace(group, cases=tuple(c for c in torch_cases(group, "cpu")
                                       if c.sync in TOKEN_LOOPS))
    assert {c.sync for c in group.cases} == set(TOKEN_LOOPS)
    kept, ops, verify, _ = torch_operations(group, np.random.default_rng(0), {})
    assert kept.cases == group.cases  # each checked one step against numpy's first token
    for op in ops.values():
        op(3)
    assert verify(dict.fromkeys(ops, 3)) == []
    weights = decode.Weights.of(MODELS[group.elements], group.cases[0].k)
    assert len(set(_greedy_tokens(weights, 3))) == 4
