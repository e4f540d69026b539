"""The readback workload (issue 29): the map+read of each size and argmax sampling on the
GPU against on the CPU, on lavapipe, PyTorch on the CPU and Chromium where one is here;
the checks see a stale read and a wrong argmax."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import (
    BACKEND,
    CONFIGS,
    browser_found,
    in_process,
    only_run_folder,
    read_run,
    write_suite,
)

from gpuoverhead.cases import CPU_ARGMAX, GPU_ARGMAX, HOST_UNITS, READ
from gpuoverhead.drivers import webgpu
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.gpu import adapters
from gpuoverhead.gpu.wait import waiter
from gpuoverhead.methods import fusion as fusion_method
from gpuoverhead.suite.expand import load_suite
from gpuoverhead.workloads import decode, readback
from gpuoverhead.workloads import registry as workloads
from gpuoverhead.workloads.work import Context, verify_outputs

BROWSER, needs_browser = browser_found()

SUITE = """
defaults: {n_sweep: [1, 2], gpu_timestamps: false}
benchmarks:
  - {name: rb, fusion: readback, elements: [ELEMENTS]}
"""


@pytest.fixture(scope="module")
def device():
    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], BACKEND,
                            None)[0]
    return found.adapter.request_device_sync()


def _group(tmp_path, elements: int):
    text = SUITE.replace("ELEMENTS", str(elements))
    (group,) = load_suite(write_suite(tmp_path, text)).groups
    return group


def test_each_form_reads_what_the_gpu_holds_and_a_stale_read_fails(tmp_path, device,
                                                                   monkeypatch):
    """After timed units each form matches numpy (the pattern of the seed the kernel wrote
    after the check before sampling; numpy's argmax); with the kernel no longer run, the
    values read after a reset are those of the earlier seed, and the check says so."""
    group = _group(tmp_path, 3000)
    wait = waiter(device)
    works = workloads.build(device, group, np.random.default_rng(1), wait)
    assert {c.variant for c in works} == set(HOST_UNITS)
    for work in works.values():
        fusion_method.operation(work, device, wait, False)(3)
    assert verify_outputs(works, dict.fromkeys(works, 3)) == []
    case, read = next((c, w) for c, w in works.items() if c.variant == READ)
    monkeypatch.setattr(Context, "submit", lambda self, steps: None)
    read.reset()  # the next seed's pattern is not written: the buffer keeps the old one
    read.host()
    with pytest.raises(IntegrityError, match="read: output check failed"):
        verify_outputs({case: read}, {case: 1})


def test_an_argmax_that_misses_logits_fails_its_check(tmp_path, device, monkeypatch):
    """The largest logit last, and the GPU's reduction covering only the first half (each
    workgroup still takes ARGMAX_ROWS / 2): its token is wrong, and the check says so."""
    monkeypatch.setattr(readback, "logits", lambda n, rng: np.arange(n, dtype=np.float32))
    group = _group(tmp_path, 2 * decode.ARGMAX_ROWS)
    works = workloads.build(device, group, np.random.default_rng(1), waiter(device))
    assert len(works) == 3  # the arange is fine with the whole reduction
    monkeypatch.setattr(decode, "ARGMAX_ROWS", 2 * decode.ARGMAX_ROWS)
    with pytest.raises(IntegrityError, match=f"{GPU_ARGMAX}: output check failed"):
        workloads.build(device, group, np.random.default_rng(1), waiter(device))


def test_gpu_timestamps_are_refused(tmp_path):
    with pytest.raises(UserError, match="gpu_timestamps"):
        load_suite(write_suite(tmp_path, SUITE.replace("false", "true").replace(
            "ELEMENTS", "4")))


@pytest.mark.slow
def test_the_readback_ci_suite_gives_each_size_and_form(tmp_path):
    """configs/readback-ci.yaml on lavapipe (each form checked in the run): per size and form
    a time per unit and a latency, per size the CPU argmax over the GPU's, intervals never
    below zero (no speed asserted), and their table. PyTorch's forms on the CPU are built,
    timed and checked in this process (test_torch_forms_read_each_size_as_numpy_does): in
    the run each size would be a worker importing PyTorch (and the parent a third import,
    to plan), some 4 CPU-s for rows the same code makes of any implementation's samples
    (tests/gpu/test_recurrent.py's run and test_fusion.py's torch_run run a PyTorch worker);
    Chromium adds 11 s of browser start-ups, so its page is tested below. Without the
    suite's time limit (30 s): beside busy cores the start-ups ran past it, and the run, cut
    short, was partial."""
    names = ["wgpu-native"]
    proc = in_process("run", "--suite", str(CONFIGS / "readback-ci.yaml"), "--backend",
                      BACKEND, "--implementation", ",".join(names), "--processes", "1",
                      "--seed", "3", "--out", str(tmp_path), "--time-limit", "0")
    assert proc.returncode == 0, proc.stderr
    _, summary, info = read_run(only_run_folder(tmp_path))
    assert info["status"] == "complete" and not info["errors"]
    combined = summary[summary.process.isna()]
    implementations = set(combined.implementation)
    assert implementations == set(names)
    for metric in ("per_unit_ns", "latency_ns"):
        rows = combined[combined.metric == metric]
        assert sorted(zip(rows.implementation, rows.variant, rows.elements, strict=True)) == \
            sorted((i, v, e) for i in implementations for v in HOST_UNITS for e in (1, 4096))
        assert (rows.ci_low >= 0).all()
    ratios = combined[combined.metric == "cpu_over_gpu"]
    assert sorted(zip(ratios.implementation, ratios.elements, strict=True)) == sorted(
        (i, e) for i in implementations for e in (1, 4096))
    assert set(ratios.variant) == {GPU_ARGMAX} and CPU_ARGMAX in ratios.estimator.iloc[0]
    latencies = combined[combined.metric.isin(("latency_ns", "cpu_over_gpu"))]
    assert ((latencies.ci_low >= 0) & (latencies.ci_low <= latencies.value)
            & (latencies.value <= latencies.ci_high)).all()
    assert "Readback and sampling" in proc.stdout


@pytest.mark.torch_here
@pytest.mark.slow
def test_torch_forms_read_each_size_as_numpy_does():
    """configs/readback-ci.yaml's sizes in PyTorch on the CPU, as a run's worker builds them
    (torch_operations): each form of each size built (its check against numpy before timed
    units raises on a mismatch), timed and checked again after them."""
    pytest.importorskip("torch")
    groups = load_suite(CONFIGS / "readback-ci.yaml").groups
    assert sorted(g.elements for g in groups) == [1, 4096]
    for group in groups:
        group = replace(group, cases=workloads.torch_cases(group, "cpu"))
        assert {c.variant for c in group.cases} == set(HOST_UNITS), group.elements
        kept, ops, verify, _ = workloads.torch_operations(group, np.random.default_rng(3), {},
                                                          "cpu")
        assert kept.cases == group.cases
        for op in ops.values():
            op(3)
        assert verify(dict.fromkeys(ops, 3)) == [], group.elements


@pytest.mark.slow
@needs_browser
def test_in_the_page_each_form_is_checked_and_a_stale_read_or_wrong_argmax_fails(
        tmp_path, monkeypatch):
    """In one page (a browser's start-up is seconds; the CLI run above leaves it out for
    that): each form's staged reads replayed there and checked; with the kernel no longer
    run, the read after a reset is the earlier seed's; with the reduction over half the
    logits (the largest last), the GPU's token is wrong."""
    from gpuoverhead.drivers import chromium

    group = _group(tmp_path, 2 * decode.ARGMAX_ROWS)
    group = replace(group, cases=chromium.cases(group))
    assert {c.variant for c in group.cases} == set(HOST_UNITS)
    monkeypatch.setattr(readback, "logits", lambda n, rng: np.arange(n, dtype=np.float32))
    with chromium.page(BROWSER, group.kernel.source) as (_, tab):
        ops, verify, _ = chromium.workload_operations(group, tab, np.random.default_rng(3))
        for op in ops.values():
            assert op(2).wall_ns > 0
        assert verify(dict.fromkeys(ops, 2)) == []
        monkeypatch.setattr(chromium.PageContext, "submit", lambda self, steps: None)
        ops, verify, _ = chromium.workload_operations(group, tab, np.random.default_rng(3))
        for op in ops.values():
            op(2)
        with pytest.raises(IntegrityError, match="read: output check failed"):
            verify(dict.fromkeys(ops, 2))
        monkeypatch.setattr(decode, "ARGMAX_ROWS", 2 * decode.ARGMAX_ROWS)
        with pytest.raises(IntegrityError, match=f"{GPU_ARGMAX}: output check failed"):
            chromium.workload_operations(group, tab, np.random.default_rng(3))
