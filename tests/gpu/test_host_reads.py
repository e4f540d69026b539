"""Host syncs in a pipeline (issue 28, the recurrent step's `host_reads`): the loops read the
state numpy has after as many steps, in WebGPU and in PyTorch; the hybrid step's host stage
is the rest of the step; a loop reads as often as its sync says."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import BACKEND, in_process, write_suite

from gpuoverhead.cases import HYBRID, NEVER, PIPELINED, READ_LOOPS, SYNCED
from gpuoverhead.drivers import host, webgpu
from gpuoverhead.errors import IntegrityError
from gpuoverhead.gpu import adapters
from gpuoverhead.gpu.wait import waiter
from gpuoverhead.methods import fusion as fusion_method
from gpuoverhead.suite.expand import load_suite
from gpuoverhead.torch_forms import EAGER
from gpuoverhead.workloads import recurrent
from gpuoverhead.workloads import registry as workloads
from gpuoverhead.workloads.work import check, read_loop, reads_every

SUITE = """
defaults: {n_sweep: [1, 2], gpu_timestamps: false, torch_compile_max_n: 0}
benchmarks:
  - {name: rec, fusion: recurrent, k_sweep: [3], elements: [96], batch: 2, host_reads: true,
     loop_tokens: 20}
"""
#: Steps each loop runs in the tests: more than a pipelined loop's reads apart.
STEPS = 19


@pytest.fixture(scope="module")
def group(tmp_path_factory: pytest.TempPathFactory):
    """Two states side by side (the hybrid's host stage broadcasts b over them)."""
    (found,) = load_suite(write_suite(tmp_path_factory.mktemp("reads"), SUITE)).groups
    return found


@pytest.fixture(scope="module")
def device():
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND,
                            None)[0]
    return found.adapter.request_device_sync()


def _loops(group):
    return replace(group, cases=tuple(c for c in group.cases if c.sync in READ_LOOPS))


def test_host_reads_add_one_step_loops_beside_the_sweep(group):
    """The sweep's L stays as it was; each loop is a run of `loop_tokens` one-step units."""
    loops = {(c.variant, c.sync) for c in group.cases if c.sync in READ_LOOPS}
    assert loops == set(recurrent.LOOPS) and len(recurrent.LOOPS) == 7
    assert {c.n_values for c in group.cases if c.sync in READ_LOOPS} == {(20,)}
    assert {c.k for c in group.cases if c.sync in READ_LOOPS} == {1}
    assert {(c.variant, c.k) for c in group.cases if c.sync not in READ_LOOPS} == {
        ("unfused", 3), ("fused", 3)}
    for name in host.IMPLEMENTATIONS:  # on the CPU the state is already on the host
        assert all(c.sync not in READ_LOOPS for c in workloads.host_cases(group, name))


def test_a_loop_reads_as_often_as_its_sync_says():
    """Every step, every READBACK_EVERY, or only after the last (which every loop reads)."""
    for sync, want in ((SYNCED, 40), (PIPELINED, 3), (NEVER, 1)):
        reads: list[int] = []
        read_loop(lambda: None, (lambda reads=reads: reads.append(1), reads_every(sync)))(40)
        assert len(reads) == want, sync


def test_webgpu_loops_read_numpys_state_and_the_hybrid_finishes_the_step(group, device):
    """Through the timed op: after each of the first steps (the state still moves: a step
    that did not run would read a stale value) the 4 bytes read are numpy's first state
    value after as many steps; after a run longer than the pipelined loop's reads apart
    every loop's state, the hybrid's (its product on the GPU, the rest in numpy) too, is
    numpy's."""
    wait = waiter(device)
    works = workloads.build(device, _loops(group), np.random.default_rng(4), wait)
    assert len(works) == 7
    for case, work in works.items():
        op = fusion_method.operation(work, device, wait, False)
        for i in range(1, 4):
            op(1)
            want = work.reference(i)[0]
            assert not np.isclose(want, work.reference(i - 1)[0], rtol=1e-2)
            if case.variant != HYBRID:
                got = np.frombuffer(work.readback[0](), np.float32)
                assert got.shape == (1,) and np.isclose(got[0], want, rtol=1e-4), case.id
        op(STEPS)
        assert check(case, work, STEPS + 3, "after the loop")
        assert len(work.sequences[0]) == {"unfused": 6, "fused": 1, HYBRID: 1}[case.variant]


def test_a_hybrid_host_stage_that_skips_an_op_fails_the_check(group, device, monkeypatch):
    """Without the four ops after the bias the hybrid state is W h + b: the build (which runs
    one unit with its host stage, as the loop does) refuses to time it."""
    monkeypatch.setattr(recurrent, "_pointwise_rest", lambda z: None)
    hybrid = replace(group, cases=tuple(c for c in group.cases if c.variant == HYBRID))
    with pytest.raises(IntegrityError, match="output check failed"):
        workloads.build(device, hybrid, np.random.default_rng(4), waiter(device))


@pytest.mark.torch_here
def test_torch_loops_read_numpys_state_with_item(group):
    """PyTorch on the CPU (eager: the unfused and the hybrid step; no CUDA graph there, and
    no torch.compile at this suite's torch_compile_max_n): `.item()` after each step is
    numpy's first state value, the hybrid's host stage leaves numpy's state, and the timed
    ops built from them pass the check after a run."""
    torch = pytest.importorskip("torch")
    mine = replace(group, cases=workloads.torch_cases(_loops(group), "cpu"))
    assert {(c.variant, c.implementation) for c in mine.cases} == {("unfused", EAGER),
                                                                  (HYBRID, EAGER)}
    units, outputs = recurrent.torch_units(mine, np.random.default_rng(5), torch.device("cpu"),
                                           torch)
    for case in mine.cases:
        unit, work = units[case](), outputs[case]
        for i in range(1, 4):
            unit()
            got = work.readback[0]()
            want = work.reference(i)
            if case.variant == HYBRID:
                np.testing.assert_allclose(work.read(), want, rtol=1e-4, atol=1e-5)
            else:
                assert isinstance(got, float) and np.isclose(got, want[0], rtol=1e-4)
    built, ops, verify, _ = workloads.torch_operations(mine, np.random.default_rng(5), {},
                                                       "cpu")
    assert built.cases == mine.cases
    for op in ops.values():
        op(STEPS)
    assert verify(dict.fromkeys(mine.cases, STEPS)) == []


def test_host_reads_on_another_workload_are_a_problem_of_the_suite(tmp_path):
    """`host_reads` on a workload without them, or on a kernel benchmark: one line each."""
    suite = write_suite(tmp_path, """
defaults: {host_reads: true}
benchmarks:
  - {name: chain, fusion: chain, k_sweep: [1, 2], elements: [64]}
  - {name: one, kernel: add_one, elements: 64}
""")
    proc = in_process("validate", str(suite), "--no-compile")
    assert proc.returncode == 2
    assert (proc.stdout + proc.stderr).count("remove `host_reads`") == 2
