"""The recurrent step (issue 28's workload): both WebGPU forms and PyTorch's eager form on
this machine leave numpy's state after timed units, and the checks see a step done wrong."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import numpy as np
import pytest
from conftest import (
    BACKEND,
    CONFIGS,
    in_process,
    only_run_folder,
    read_run,
    write_suite,
)

from gpuoverhead.cases import HYBRID, NEVER, READBACK_EVERY
from gpuoverhead.drivers import webgpu
from gpuoverhead.drivers.registry import CPU_REFERENCE
from gpuoverhead.errors import IntegrityError
from gpuoverhead.gpu import adapters
from gpuoverhead.gpu.wait import waiter
from gpuoverhead.methods import fusion as fusion_method
from gpuoverhead.suite.expand import load_suite
from gpuoverhead.workloads import recurrent
from gpuoverhead.workloads import registry as workloads
from gpuoverhead.workloads.work import verify_outputs

SUITE = """
defaults: {n_sweep: [1, 2], gpu_timestamps: false, torch_compile_max_n: 0}
benchmarks:
  - {name: rec, fusion: recurrent, k_sweep: [1, 3], elements: [HIDDEN], batch: BATCH}
"""


@pytest.fixture(scope="module", params=[(96, 1), (96, 3), (102, 2)])
def group(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The step on one state, and on three side by side (a batch): W read as vec4, 8 lanes
    a row, 3 loads each; at H = 102 on two states W is read as f32 (102 is not a multiple
    of 4), 32 lanes a row, 4 loads each, the last past the row for 26 of them."""
    hidden, batch = request.param
    text = SUITE.replace("HIDDEN", str(hidden)).replace("BATCH", str(batch))
    (found,) = load_suite(write_suite(tmp_path_factory.mktemp("rec"), text)).groups
    assert (found.elements, found.batch) == request.param
    return found


def test_the_product_spreads_a_row_over_lanes():
    """The lane rule: lanes double until each makes at most LANE_LOADS loads of its row (vec4
    where H is a multiple of 4), from MIN_LANES to MAX_LANES."""
    assert recurrent.product_constants(96) == {"WG": 64, "LANES": 8, "LOADS": 3, "VEC4": 1}
    assert recurrent.product_constants(102) == {"WG": 64, "LANES": 32, "LOADS": 4,
                                                "VEC4": 0}
    assert recurrent.product_constants(16)["LANES"] == recurrent.MIN_LANES
    assert recurrent.product_constants(4096) == {"WG": 256, "LANES": 256, "LOADS": 4,
                                                 "VEC4": 1}


@pytest.fixture(scope="module")
def device():
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND,
                            None)[0]
    return found.adapter.request_device_sync()


def test_both_forms_leave_numpys_state_after_timed_units(group, device):
    """`build` checks one unit of each case against numpy; after 5 more units through the
    timed operation each case is checked again, and fused against unfused."""
    wait = waiter(device)
    works = workloads.build(device, group, np.random.default_rng(1), wait)
    assert {(c.variant, c.k) for c in works} == {(v, k) for v in ("unfused", "fused")
                                                 for k in (1, 3)}
    for work in works.values():
        fusion_method.operation(work, device, wait, False)(5)
    assert verify_outputs(works, dict.fromkeys(works, 5)) == []
    unfused = next(w for c, w in works.items() if c.variant == "unfused" and c.k == 3)
    assert len(unfused.sequences[0]) == 3 * 6  # six dispatches a step


def test_a_step_done_wrong_fails_the_check(group, device, monkeypatch):
    """Without its `negate` dispatch the unfused step computes sigmoid(-(Wh + b)): numpy's
    state differs after one unit and the build refuses to time it."""
    monkeypatch.setattr(recurrent, "POINTWISE", ("add_bias", "exponent", "add_one",
                                                 "reciprocal"))
    with pytest.raises(IntegrityError, match="output check failed"):
        workloads.build(device, group, np.random.default_rng(1), waiter(device))


def test_a_reduction_that_drops_lanes_fails_the_check(group, device):
    """A product that adds up only half of each row's lanes is wrong in both forms (vec4 and
    f32 reads): the build refuses to time it."""
    source = group.kernel.source
    broken = source.replace("s = LANES / 2u", "s = LANES / 4u", 1)
    assert broken != source
    mine = replace(group, kernel=replace(group.kernel, source=broken))
    for variant in ("unfused", "fused"):
        one = replace(mine, cases=tuple(c for c in mine.cases if c.variant == variant))
        with pytest.raises(IntegrityError, match="output check failed"):
            workloads.build(device, one, np.random.default_rng(1), waiter(device))


@pytest.mark.torch_here
def test_torch_eager_step_is_the_same_step():
    """PyTorch's six eager ops a step (on this machine's device) give numpy's state, also
    for an odd L, whose last step lands in the second buffer and is copied back."""
    torch = pytest.importorskip("torch")
    from gpuoverhead.cases import Case, Group, Kernel, Sampling
    from gpuoverhead.torch_forms import EAGER

    cases = tuple(Case("rec", "fusion_recurrent", 64, 64, "fusion", "dispatch", "wait", (1,),
                       variant="unfused", k=k, implementation=EAGER) for k in (1, 3))
    grp = Group("rec", Kernel("fusion_recurrent", None, "", "all"), 64, 64,  # type: ignore
                Sampling(1, 0.1, 3, 10, 1), cases, 0, "recurrent")
    units, outputs = recurrent.torch_units(grp, np.random.default_rng(2), torch.device("cpu"),
                                           torch)
    for case in cases:
        unit = units[case]()
        for _ in range(4):
            unit()
        want = outputs[case].reference(4)
        np.testing.assert_allclose(outputs[case].read(), want, rtol=1e-4, atol=1e-5)
        assert not np.allclose(outputs[case].read(), outputs[case].reference(3), rtol=1e-6)


def test_validate_parses_a_workloads_shader(device):
    """`validate` compiled only kernel benchmarks' shaders: a workload's WGSL error (this
    shader once named a variable `from`, a reserved word) showed first in `run`'s worker."""
    from dataclasses import replace

    from gpuoverhead.errors import UserError
    from gpuoverhead.gpu.targets import parse_shader
    from gpuoverhead.suite.shaders import fusion_kernel

    kernel = fusion_kernel("recurrent")
    parse_shader(device, kernel)
    broken = replace(kernel, source=kernel.source.replace("let src =", "let from =", 1))
    with pytest.raises(UserError, match=r"fusion_recurrent\.wgsl:\d+:\d+: shader rejected"):
        parse_shader(device, broken)


@pytest.mark.torch_here
@pytest.mark.slow
def test_the_cpu_references_are_the_same_step(group):
    """The host driver's cases (unfused only: the CPU has nothing to fuse) in numpy and in
    PyTorch on the CPU leave numpy's f64 state after timed units, through the same build and
    check as every other implementation; a count of units that is off fails that check."""
    from gpuoverhead.drivers import host

    for name in host.IMPLEMENTATIONS:
        cases = workloads.host_cases(group, name)
        assert {(c.variant, c.k, c.implementation) for c in cases} == {
            ("unfused", k, name) for k in (1, 3)}
        mine = replace(group, cases=cases)
        if name == host.NUMPY:
            built, ops, verify = workloads.numpy_operations(mine, np.random.default_rng(3), {})
        else:
            pytest.importorskip("torch")
            built, ops, verify, _ = workloads.torch_operations(mine, np.random.default_rng(3),
                                                               {}, "cpu")
        assert built.cases == cases
        for op in ops.values():
            op(4)
        assert verify(dict.fromkeys(cases, 4)) == []
        with pytest.raises(IntegrityError, match="output check failed"):
            verify(dict.fromkeys(cases, 5))


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="torch is not installed (pip install 'gpuoverhead[torch]')")
@pytest.mark.slow
def test_the_crossover_ci_suite_puts_the_cpu_beside_the_gpu(tmp_path):
    """configs/crossover-ci.yaml on lavapipe with the CPU references, in seconds: per-step
    times of every implementation at its H (each checked against numpy in the run: a failed
    check is an error, and the run would not be complete), their ratios to torch-cpu with
    intervals that hold their estimate and never go below zero (none only where a process
    got no slope, which the run says), a crossover row per GPU
    form, and its sentence on the console; and the host-read loops' step times, their
    slowdowns over the unread loop (the hybrid's over the unfused one) with intervals that
    hold their estimate and never go below zero, and their table. Without the suite's time
    limit: the ratios' intervals need both process pairs, which a limit drops where
    start-ups run long (as the browser fusion test's run did on a CI machine).

    At one H (256) of the suite's three: each H is a job of its own for every
    implementation, three worker processes a process pair (one of them importing PyTorch),
    and the run is mostly their start-ups; every check here is of one H, a row or an
    interval's order (a run finishes each H apart: run/finish.py's ratios pair the jobs of
    one H). What needs several H is checked where it is read: the crossover from a sweep's
    ratios and its sentence in tests/unit/test_crossover.py, a benchmark's rows per size in
    a run in test_readback.py. A crossover row per form is there whether or not one H
    decides it. The suite's sweep stays: with N 1 and 2 and runs of 8 steps, the unread
    loop's step at H 16 came out zero now and then, and the slowdowns over it infinite. Its
    runs are of READBACK_EVERY + 1 steps, not the suite's 32: the least in which the
    pipelined loop reads mid-run (a read after step 16 and after the last, as at 32; at 16
    or fewer it would be the unread loop); a step at H 256 takes ms on lavapipe, far from
    zero."""
    import yaml

    from gpuoverhead.drivers import host

    suite = yaml.safe_load((CONFIGS / "crossover-ci.yaml").read_text())
    (bench,) = suite["benchmarks"]
    sizes = bench["elements"] = [256]
    bench["loop_tokens"] = READBACK_EVERY + 1
    proc = in_process("run", "--suite", str(write_suite(tmp_path, yaml.safe_dump(suite))),
                      "--backend", BACKEND, "--implementation", "wgpu-native,cpu-ref",
                      "--processes", "2", "--seed", "3", "--out", str(tmp_path / "out"),
                      "--time-limit", "0")
    assert proc.returncode == 0, proc.stderr
    _, summary, info = read_run(only_run_folder(tmp_path / "out"))
    assert info["status"] == "complete" and not info["errors"]
    combined = summary[summary.process.isna()]
    times = combined[combined.metric == "per_unit_ns"]
    assert set(zip(times.implementation, times.variant, times.elements, strict=True)) == {
        *((i, v, h) for i in ("wgpu-native",) for v in ("unfused", "fused")
          for h in sizes),
        *((i, "unfused", h) for i in host.IMPLEMENTATIONS for h in sizes)}
    ratios = combined[combined.metric == "cpu_ratio"]
    assert len(ratios) == 3 * len(sizes) and CPU_REFERENCE not in set(ratios.implementation)
    # A ratio without an interval only where a process of its form got no slope, as the run
    # says (on a busy machine lavapipe's completion floor rises over the sweep's small N).
    sloped = summary[summary.process.notna() & (summary.metric == "per_unit_ns")].groupby(
        ["implementation", "variant"]).size()
    bare = ratios[ratios.ci_low.isna() | ratios.ci_high.isna()]
    assert all(sloped.get((i, v), 0) < 2 for i, v in zip(bare.implementation, bare.variant,
                                                          strict=True)), bare
    assert bare.empty or any("got no slope" in w for w in info["warnings"])
    held = ratios.drop(bare.index)
    assert ((held.ci_low >= 0) & (held.ci_low <= held.value)
            & (held.value <= held.ci_high)).all()
    per_op = combined[combined.metric == "per_op_ns"]
    assert len(per_op) == len(times)  # one op a step fused: per op is per step there
    assert (per_op.value.to_numpy() <= times.value.to_numpy()).all()
    crossed = combined[combined.metric == "crossover_hidden"]
    assert sorted(zip(crossed.implementation, crossed.variant, strict=True)) == [
        (host.NUMPY, "unfused"), ("wgpu-native", "fused"), ("wgpu-native", "unfused")]
    assert proc.stdout.count(f"beat {CPU_REFERENCE}") + \
        proc.stdout.count(f"beats {CPU_REFERENCE}") == 3
    steps = combined[combined.metric == "step_ns"]
    assert sorted(zip(steps.variant, steps.sync, steps.elements, strict=True)) == sorted(
        (v, s, h) for v, s in recurrent.LOOPS for h in sizes)
    slow = combined[combined.metric.isin(("sync_slowdown", "hybrid_slowdown"))]
    assert sorted(zip(slow.metric, slow.variant, slow.sync, slow.elements, strict=True)) == \
        sorted((m, v, s, h) for v, s in recurrent.LOOPS if s != NEVER for h in sizes
               for m in ["hybrid_slowdown" if v == HYBRID else "sync_slowdown"])
    assert ((slow.ci_low >= 0) & (slow.ci_low <= slow.value)
            & (slow.value <= slow.ci_high)).all()
    assert "Host reads in a loop" in proc.stdout


def test_asking_for_the_cpu_on_a_suite_it_cannot_run_is_one_line(tmp_path):
    """The CPU references run only workloads with a numpy build: asked for by name on the
    kernel suite they say so (exit 2) instead of measuring nothing."""
    proc = in_process("run", "--suite", "ci", "--implementation", "numpy-cpu", "--out",
                      str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "numpy build" in proc.stderr


def test_time_per_op_issued_divides_a_unit_by_the_ops_its_form_issues(group):
    """Sequential throughput: six dispatches a step unfused, one fused, eager calls with the
    odd L's copy back, one graph replay; the interval is divided with the estimate."""
    from gpuoverhead.analysis.combine import Row
    from gpuoverhead.analysis.series import Key
    from gpuoverhead.analysis.stats import Estimate
    from gpuoverhead.torch_forms import CPU, GRAPH

    base = next(c for c in group.cases if c.variant == "unfused" and c.k == 3)
    forms = {base: 18, replace(base, variant="fused"): 3,
             replace(base, implementation=CPU): 19,
             replace(base, variant="fused", implementation=GRAPH): 1}
    rows = [Row(Key(c, m, "ns", "fit"), Estimate(1800.0, 900.0, 3600.0, 10, 0.5, "t"))
            for c in forms for m in ("per_unit_ns", "latency_ns")]
    found = {r.key.case: r.estimate for r in workloads.per_op_rows(group, rows)}
    assert set(found) == set(forms)
    for case, ops in forms.items():
        e = found[case]
        assert (e.value, e.ci_low, e.ci_high) == pytest.approx((1800 / ops, 900 / ops,
                                                                 3600 / ops))
    assert workloads.per_op_rows(replace(group, fusion="chain"), rows) == []


def test_a_batch_is_the_recurrent_steps_alone(tmp_path):
    """`batch` on another workload or on a kernel benchmark is a problem of the suite."""
    suite = write_suite(tmp_path, """
defaults: {batch: 4}
benchmarks:
  - {name: chain, fusion: chain, k_sweep: [1, 2], elements: [64]}
  - {name: one, kernel: add_one, elements: 64}
""")
    proc = in_process("validate", str(suite), "--no-compile")
    assert proc.returncode == 2
    assert proc.stdout.count("a batch exists for the `recurrent` workload only") + \
        proc.stderr.count("a batch exists for the `recurrent` workload only") == 2
