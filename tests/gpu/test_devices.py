"""Each encoding that records large command buffers has a device of its own, so that its
state (every later submit on a device costs more after one encoder of 1024 passes) never
reaches the cases of another encoding: real devices on the test adapter, no mocks."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import pytest
from conftest import BACKEND, CONFIGS, read_run

from gpuoverhead.cases import BIND_PER_DISPATCH, TIMESTAMPS
from gpuoverhead.drivers import webgpu
from gpuoverhead.drivers.base import Request
from gpuoverhead.gpu import adapters
from gpuoverhead.suite.expand import load_suite

SMALL = {("naive", "naive"), ("sequential", "submit"), ("breakdown", "breakdown"),
         ("ffi-floor", "ffi-floor")}


def _kind(case) -> tuple[str, str]:
    """(methodology, encoding), the encoding of a case outside `sequential` being its
    methodology's own."""
    sequential = case.methodology == "sequential"
    return case.methodology, case.encoding if sequential else case.methodology


def test_the_full_suite_s_submit_cases_never_share_a_device_with_large_encoders():
    groups = [g for g in load_suite(CONFIGS / "full.yaml").groups if g.fusion is None]
    assert groups
    for group in groups:
        sets = [{(c.methodology, c.encoding, c.variant) for c in cases}
                for cases in webgpu.device_sets(group.cases)]
        assert sum(map(len, webgpu.device_sets(group.cases))) == len(group.cases)
        small = next(s for s in sets if ("sequential", "submit", "") in s)
        assert ("naive", "submit", "") in small
        assert not {("sequential", "pass", ""), ("sequential", "dispatch", "")} & small
        # The bind-group-per-dispatch twins (the full suite asks for them) apart as well.
        assert sorted(sorted(s) for s in sets if s is not small) == [
            [("sequential", e, v)] for e in ("dispatch", "pass", "submit")
            for v in ("", BIND_PER_DISPATCH) if (e, v) != ("submit", "")]


@pytest.mark.slow
def test_prepare_puts_submit_targets_on_another_device_than_pass_and_dispatch():
    """A default-suite group, and its reference loop, prepared in a fresh process as a worker
    prepares it: the targets of `submit` (with naive, breakdown and the FFI floor) are on
    one device, `pass`'s on a second, `dispatch`'s (with its GPU-timestamp twin) on a third,
    each waiting on its own device; every op runs, and the one output check covers every
    case whichever device it is on."""
    suite = load_suite(CONFIGS / "default.yaml")
    offer = next(o for o in webgpu.offers(Request(suite, backend=BACKEND,
                                                  names=("wgpu-native",)), [])
                 if o.info.implementation == "wgpu-native")
    product, reference = webgpu.jobs(suite.groups[0], offer, [])
    assert reference.reference
    with ProcessPoolExecutor(1, get_context("spawn"), max_tasks_per_child=1) as pool:
        for job in (product, reference):
            found = pool.submit(_prepare_and_run, job).result(timeout=300)
            devices = found["devices"]
            assert found["notes"]["devices"] == len(devices) == 3 == found["waits"]
            # Enumerated afresh for each device; on OpenGL one for all (the test below).
            assert found["adapters"] == (1 if BACKEND == "opengl" else 3)
            submit = next(d for d in devices if ("sequential", "submit") in d)
            assert submit <= SMALL
            assert ("sequential", "pass") not in submit
            assert ("sequential", "dispatch") not in submit
            assert sorted(sorted(d) for d in devices if d is not submit) == [
                [("sequential", "dispatch")], [("sequential", "pass")]]
            stamped = any(c.sync == TIMESTAMPS for c in job.group.cases)
            assert (found["tick_ns"] is not None) == stamped
            assert found["stamped_on"] == ([{("sequential", "dispatch")}] if stamped else [])


def test_on_opengl_a_worker_s_devices_come_from_one_adapter():
    """wgpu-hal's GLES backend has one EGL context an instance, and each enumeration wraps
    it in an adapter object with a lock of its own: devices from two enumerations made it
    current on two threads at once (wgpu-py's poll thread reading timestamps on one, the
    other issuing), and the worker aborted on EGL's BadAccess in 3 of 3 default runs
    (test_run.py runs one on OpenGL). There every device of a worker comes from one adapter
    object; elsewhere each from an adapter enumerated afresh, as before."""
    found = adapters.discover([webgpu.binding("wgpu-native")])[0]
    gl = next((f.info for f in found if f.info.backend == "opengl"), None)
    if gl is None:
        pytest.skip("no OpenGL adapter here")
    source = webgpu.adapter_source(gl)
    assert source() is source()
    if BACKEND != "opengl":
        fresh = webgpu.adapter_source(next(f.info for f in found if f.info.backend == BACKEND))
        assert fresh() is not fresh()


def _prepare_and_run(job) -> dict:
    """In a spawned process (a worker's fresh interpreter): prepare `job`, tell which cases
    share a device by the identity of the device objects their targets hold, run each op
    at the sweep's first two N and check every output."""
    with webgpu.prepare(job, np.random.default_rng(0)) as prepared:
        targets = prepared.verify.targets
        assert set(targets) == set(job.group.cases) == set(prepared.ops)
        devices: dict[int, set[tuple[str, str]]] = {}
        waits = {}
        for case, target in targets.items():
            devices.setdefault(id(target.device), set()).add(_kind(case))
            assert target.queue is target.device.queue
            waits[id(target.wait)] = target.device
        assert len({id(d) for d in waits.values()}) == len(waits)  # one wait per device
        counts = dict.fromkeys(prepared.ops, 0)
        for case, op in prepared.ops.items():  # as run/rounds.py counts them
            for n in case.n_values[:2]:
                op(n)
                counts[case] += case.dispatches(n)
        prepared.verify(counts)
        stamped = {id(t.device) for c, t in targets.items() if c.sync == TIMESTAMPS}
        return {"devices": list(devices.values()), "waits": len(waits),
                "adapters": len({id(t.device.adapter) for t in targets.values()}),
                "notes": prepared.notes, "tick_ns": prepared.tick_ns,
                "stamped_on": [devices[d] for d in stamped]}


def test_a_ci_run_checks_every_output_and_reports_every_estimate_with_its_devices(ci_run):
    """configs/ci.yaml asks for every encoding: each worker of a kernel group used 3
    devices (the small encoders', `pass`'s, `dispatch`'s; the reference loop's native cases
    too), a workload's 1; every output check passed, and the summary holds what it held
    with one device, estimates that pair cases of different devices included (the GPU time
    of `dispatch` beside each wrapper encoding's CPU time in overlapped_ns)."""
    _, folder = ci_run
    _, summary, info = read_run(folder)
    assert all(b["status"] == "ok" for b in info["benchmarks"])
    assert not [p for b in info["benchmarks"] for p in b["processes"] if "unchecked" in p]
    devices = {(b["benchmark"], b["implementation"]): {p["devices"] for p in b["processes"]}
               for b in info["benchmarks"] if b["processes"]}
    kernels = {("empty", "wgpu-native"), ("empty", "wgpu-native reference"),
               ("add_one", "wgpu-native"), ("add_one", "wgpu-native reference")}
    # add_one's bind-group-per-dispatch twins (ci.yaml) have three devices of their own.
    assert {k: v for k, v in devices.items() if k in kernels} == {
        **dict.fromkeys(kernels, {3}), ("add_one", "wgpu-native"): {6}}
    assert {k for k, v in devices.items() if v == {1}} == set(devices) - kernels
    pooled = summary[summary.process.isna()]
    for bench in ("empty", "add_one"):
        rows = pooled[pooled.benchmark == bench]
        metrics = {(c, m) for c, m in zip(rows.case, rows.metric, strict=True)}
        for encoding in ("submit", "pass", "dispatch"):
            base = f"{rows.case.iloc[0].split('/')[0]}/{rows.case.iloc[0].split('/')[1]}"
            seq = f"{base}/sequential/{encoding}"
            for layer in ("wrapper", "raw", "native", "native/reference"):
                for metric in ("per_dispatch_ns", "cpu_per_dispatch_ns", "fixed_ns"):
                    assert (f"{seq}/{layer}", metric) in metrics, (seq, layer, metric)
            for metric in ("api_ns", "python_ns", "overlapped_ns"):
                assert (f"{seq}/wrapper", metric) in metrics, (seq, metric)
            assert (f"{seq}/native", "reference_ratio") in metrics
        assert (f"{base}/naive/wait", "latency_ns") in metrics
        assert (f"{base}/sequential/dispatch/gpu-timestamps", "gpu_ns") in metrics
