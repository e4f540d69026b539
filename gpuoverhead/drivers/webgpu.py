"""The WebGPU driver: wgpu-native (package `wgpu`) and Dawn (package `wgpudawn`), through the
same Python API.

It finds and picks their adapters (`--backend`, `--adapter`), builds the native layer's C
loop once, checks device limits and compiles every kernel before anything is measured,
gives each group a job per adapter (and a reference-loop job where the group has native
sequential cases: its native cases alone, with no other job's cases beside them), and in a
worker opens the devices (a kernel group's encodings that record large command buffers each
on a device of their own: `device_sets`) and builds the timed operations of kernels and
workloads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache, partial
from typing import Any

import numpy as np

from gpuoverhead import methods
from gpuoverhead.cases import (
    BIND_PER_DISPATCH,
    CADENCE,
    REFERENCE,
    TIMESTAMPS,
    Case,
    Group,
    Kernel,
    Suite,
)
from gpuoverhead.drivers.base import (
    Job,
    Offer,
    Prepared,
    Request,
    adapter_notes,
    without_timestamps,
)
from gpuoverhead.errors import UserError
from gpuoverhead.gpu import adapters
from gpuoverhead.gpu.bindings import Binding
from gpuoverhead.gpu.targets import Target, build_targets, compile_pipeline, parse_shader
from gpuoverhead.gpu.wait import waiter
from gpuoverhead.methods import fusion as fusion_method
from gpuoverhead.records import LeftOut
from gpuoverhead.workloads import registry as workloads
from gpuoverhead.workloads.work import verify_outputs

FAMILY = "webgpu"
BINDINGS = (
    Binding("wgpu-native", "wgpu", "wgpu.backends.wgpu_native",
            "wgpu.backends.wgpu_native._ffi",
            instance_extras="wgpu.backends.wgpu_native.extras", queue_period=True,
            shared_context=("opengl",)),
    Binding("dawn", "wgpudawn", "wgpudawn.backends.dawn", "wgpudawn.backends.dawn",
            quantization_toggle="timestamp_quantization",
            toggles_module="wgpudawn.backends.dawn.extras"),
)
IMPLEMENTATIONS = tuple(b.name for b in BINDINGS)
COMPARED = True
SAMPLE_SHARE = None
TAX_OVER: tuple[str, ...] = ()
F16 = "shader-f16"


def binding(name: str) -> Binding:
    return next(b for b in BINDINGS if b.name == name)


def offers(request: Request, notes: list[str]) -> list[Offer]:
    """One adapter per binding asked for (the best matching `--backend`/`--adapter`), with
    the native layer built, the suite's limits checked and its kernels compiled on it."""
    asked = [b for b in BINDINGS if request.names is None or b.name in request.names]
    found, missing = adapters.discover(asked, request.named)
    if not found and missing:
        # A named implementation that is not installed needs installing, not lavapipe.
        raise UserError("; ".join(missing if request.named else [adapters.NO_ADAPTER, *missing]))
    notes += missing + _not_installed(asked, request.named)
    chosen = adapters.select(found, request.backend, request.adapter)
    notes += _unmatched(found, chosen, request)
    suite = request.suite
    native = _native_layer(suite, notes)
    timestamps = _any(suite, lambda c: c.sync == TIMESTAMPS)
    f16 = any(g.precision == "f16" for g in suite.groups)
    out = []
    for f in chosen:
        info = f.info
        notes += [f"{info.label} has no timestamp queries: no GPU times (gpu_ns)"] \
            if timestamps and not info.timestamps else []
        notes += [f"{info.label} has no shader-f16: the f16 decode step is not measured on it"
                  ] if f16 and F16 not in f.adapter.features else []
        notes += adapter_notes(info)
        limits = required_limits(f, suite)
        _check_shaders(f, suite, timestamps and info.timestamps, limits)
        out.append(Offer(info, {**f.details(), "implementation_versions":
                                binding(info.implementation).versions()}, limits,
                         {"layers": {"native": native}, "f16": F16 in f.adapter.features}))
    return out


def _not_installed(asked: list[Binding], named: bool) -> list[str]:
    """Why each binding asked for with `all` is not installed (a named one: `discover`)."""
    return [] if named else [LeftOut(b.name, why.removeprefix(f"{b.name}: "), why)
                             for b in asked if (why := b.missing()) is not None]


def _unmatched(found: list[adapters.FoundAdapter], chosen: list[adapters.FoundAdapter],
               request: Request) -> list[str]:
    """The bindings whose adapters --backend or --adapter passed over."""
    asked = " and ".join(x for x in (request.backend and f"--backend {request.backend}",
                                     request.adapter and f"--adapter {request.adapter!r}") if x)
    kept = {f.info.implementation for f in chosen}
    return [LeftOut(name, f"none of its adapters matches {asked}")
            for name in dict.fromkeys(f.info.implementation for f in found) if name not in kept]


def jobs(group: Group, offer: Offer, notes: list[str]) -> list[Job]:
    """The group on this adapter, then its reference loop where it has native sequential
    cases (on a device requested with no features or limits)."""
    if group.precision == "f16" and not offer.settings["f16"]:
        return []
    if offer.settings["layers"]["native"] is None:
        group = replace(group, cases=tuple(c for c in group.cases if c.layer != "native"))
    if not group.cases:
        return []
    out = [Job(group if offer.info.timestamps else without_timestamps(group), offer, FAMILY)]
    native = tuple(replace(c, variant=REFERENCE) for c in group.cases
                   if c.layer == "native" and c.methodology == "sequential"
                   and c.sync != TIMESTAMPS)
    if native:
        out.append(Job(replace(group, cases=native), replace(offer, limits={}), FAMILY,
                       reference=True))
    return out


@contextmanager
def prepare(job: Job, rng: np.random.Generator) -> Iterator[Prepared]:
    """In the worker: the group's ops (a kernel's targets, or a workload's units), each with
    the completion wait of its own device, and their output check.

    A kernel group's cases are split over devices (`device_sets`), each with its own wait,
    pipeline and targets: the rounds still interleave every case, and each op waits on its
    own device only. The timestamp tick is read on the device of the stamped cases (the
    first, were there several: the period is the adapter's, the same on each of its
    devices). A workload keeps one device: its weights (Qwen2.5-0.5B's shapes in the decode
    step) would be uploaded once per device, and its `pass` encoders hold at most 100 passes
    (25 per decode step, N up to 4 in configs/decode.yaml), not the 1024 that left a device
    slower. run.json's `devices` says how many a worker used."""
    group, info = job.group, job.adapter
    bind = binding(info.implementation)
    bind.only(info.backend)
    timestamps = any(c.sync == TIMESTAMPS for c in group.cases)
    f16 = group.precision == "f16"
    if group.fusion is not None:
        device, notes = open_device(info, adapter_source(info)(), timestamps, job.offer.limits,
                                    f16, workloads.features(group))
        wait = waiter(device)
        tick = bind.tick_ns(device.queue) if timestamps else None
        works = workloads.build(device, group, rng, wait)
        notes |= workloads.floor_notes(device, group, works, wait, tick, info.is_software)
        ops = {case: fusion_method.operation(works[case], device, wait,
                                             case.sync == TIMESTAMPS, case.encoding)
               for case in group.cases}
        yield Prepared(group, ops, partial(verify_outputs, works),
                       tick, {**notes, "wait": wait.__name__, "devices": 1})
        return
    loop = _native_loop() if any(c.layer == "native" for c in group.cases) else None
    targets: dict[Case, Target] = {}
    tick, notes, sets = None, {}, device_sets(group.cases)
    adapter = adapter_source(info)
    for cases in sets:
        stamped = any(c.sync == TIMESTAMPS for c in cases)
        device, found = open_device(info, adapter(), stamped, job.offer.limits, f16)
        wait = waiter(device)
        if stamped and tick is None:
            tick, notes = bind.tick_ns(device.queue), found
        notes = notes or found
        pipeline = compile_pipeline(device, group.kernel, group.workgroup_size)
        targets |= build_targets(device, pipeline, replace(group, cases=cases), rng, bind, wait)
    ops = {case: methods.operation(targets[case], case, loop) for case in group.cases}
    yield Prepared(group, ops, OutputCheck(targets), tick,
                   {**notes, "wait": wait.__name__, "devices": len(sets)})


@dataclass(frozen=True)
class OutputCheck:
    """The output check of a kernel group: every case's target, whichever device it is on,
    must have grown by the dispatches issued to it. `targets` are the group's GPU objects."""

    targets: dict[Case, Target]

    def __call__(self, counts: dict[Case, int]) -> None:
        for case, target in self.targets.items():
            target.dispatched = counts[case]
            target.verify(case.id)


#: Sequential encodings that record large command buffers (N passes in one encoder, N
#: dispatches in one pass): each gets a device of its own.
_LARGE_ENCODERS = ("pass", "dispatch")


def device_sets(cases: tuple[Case, ...]) -> list[tuple[Case, ...]]:
    """Cases that share a device. One command encoder of 1024 passes makes every later submit
    on its device cost about 1.6x more on the H100 and 1.75x on lavapipe (docs/results.md;
    `benchmarks/investigations/submit_gap.py big-encoder`), while a second device of the same
    process does not. So `pass` has a device of its own, and so has `dispatch` with its
    GPU-timestamp twin: on lavapipe one pass of 1024 dispatches left later submits as they
    were, but on the H100 that was not measured, and a device more costs a worker about 10 ms.
    The cases with one small encoder per op (naive, the `submit` encoding, the breakdown, the FFI
    floor: 1024 submits left no such state on lavapipe) share another. In a reference
    loop's job the same split gives each native encoding a device. The twins that create a
    bind group per dispatch get devices of their own the same way: what thousands of
    created bind groups leave on a device was not measured, and must not reach the reused
    cases' figures."""
    sets: dict[tuple[str, bool], list[Case]] = {}
    for case in cases:
        large = case.methodology in ("sequential", CADENCE) and case.encoding in _LARGE_ENCODERS
        key = (case.encoding if large else "", case.variant == BIND_PER_DISPATCH)
        sets.setdefault(key, []).append(case)
    return [tuple(found) for found in sets.values()]


def adapter_source(info: Any) -> Callable[[], Any]:
    """The adapter object of each device a worker opens on `info`: enumerated afresh for
    each (a Dawn adapter serves one device only), or one object for all of them on a
    backend whose devices share their adapter's context (`Binding.shared_context`), so that
    they share its lock too."""
    bind = binding(info.implementation)

    def enumerated() -> Any:
        found = [f for f in adapters.discover([bind])[0] if f.info == info]
        if not found:
            raise UserError(f"adapter {info.label} is gone")
        return found[0].adapter

    return cache(enumerated) if info.backend in bind.shared_context else enumerated


def open_device(info: Any, adapter: Any, timestamps: bool, limits: dict[str, int],
                f16: bool = False, offered: tuple[str, ...] = ()) -> tuple[Any, dict[str, Any]]:
    """A device on `adapter` (described by `info`), with the binding's notes on it; with
    each feature of `offered` that the adapter has (a workload's: the decode step's
    subgroups)."""
    features = (["timestamp-query"] if timestamps else []) + ([F16] if f16 else []) + [
        f for f in offered if f in adapter.features]
    return binding(info.implementation).request_device(adapter, features, limits)


def setup_hint_s(job: Job) -> float:
    """Start-up expected of a worker before one ran: device, pipelines, and a workload's
    weights and their numpy check (a decode step of Qwen2.5-0.5B's shapes took 14-17 s on
    the H100 machine, the tiny one 0.7-1.2 s on lavapipe). A software adapter has no GPU
    driver to bring up: a worker took 0.5 s on lavapipe, 1.2-2.2 s on the H100 machine."""
    if job.group.fusion == "decode":
        return 4.0 + 12.0 * job.group.elements / 896
    return 1.0 if job.adapter.is_software else 2.5


def listing(browser: str | None, notes: list[str]) -> list[Offer]:
    """Every adapter the installed bindings see, best first (`gpuoverhead adapters`)."""
    found, missing = adapters.discover(BINDINGS)
    notes += missing
    return [Offer(f.info, f.details()) for f in found]


def libraries() -> dict[str, Any]:
    """The native library wgpu-native loaded, for run.json (`native`)."""
    try:
        from wgpu.backends import wgpu_native
    except ImportError:
        return {}
    return {BINDINGS[0].name: {"version": ".".join(map(str, wgpu_native.lib_version_info)),
                               "expected": wgpu_native.__version__,
                               "path": str(wgpu_native.lib_path)}}


def compile_kernels(suite: Suite) -> str:
    """Compile each kernel the suite names on the best adapter, or say why it was not."""
    found = adapters.discover(BINDINGS[:1])[0]
    if not found:
        return "shaders not compiled: no adapter here"
    best = found[0]
    device = best.adapter.request_device_sync(required_limits=required_limits(best, suite))
    kernels = {(g.kernel.path, g.workgroup_size): g for g in suite.groups if g.fusion is None}
    for group in kernels.values():
        compile_pipeline(device, group.kernel, group.workgroup_size)
    workloads = _workload_kernels(suite)
    for kernel in workloads:
        parse_shader(device, kernel)
    device.destroy()
    return f"{len(kernels) + len(workloads)} kernels compiled on {best.info.label}"


def _workload_kernels(suite: Suite) -> list[Kernel]:
    """The workloads' kernel files (f32 ones: f16 needs a feature that the worker asks for)."""
    return list({g.kernel.path: g.kernel for g in suite.groups
                 if g.fusion is not None and g.precision == "f32"}.values())


def _native_loop() -> Any:
    from gpuoverhead.gpu.layers import native as native_layer

    loop = native_layer.load()
    if isinstance(loop, str):
        raise UserError(loop)
    return loop


def _native_layer(suite: Suite, notes: list[str]) -> dict[str, str] | None:
    """Build the C loop once here (workers find it in the cache), or note why not (its cases
    are then left out of every job)."""
    if not _any(suite, lambda c: c.layer == "native"):
        return None
    from gpuoverhead.gpu.layers import native as native_layer

    loaded = native_layer.load()
    if isinstance(loaded, str):
        notes.append(loaded)
        return None
    return {"library": str(loaded.path), "compiler": loaded.compiler}


def required_limits(chosen: adapters.FoundAdapter, suite: Suite) -> dict[str, int]:
    """Device limits the suite needs beyond the defaults, checked against the adapter's."""
    limits = chosen.adapter.limits
    need_bytes = max(g.elements for g in suite.groups) * 4
    for group in suite.groups:
        for key in ("max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x"):
            if group.workgroup_size > limits[key]:
                raise UserError(f"{group.id}: workgroup_size {group.workgroup_size} is over the "
                                f"adapter's {key} of {limits[key]}")
    for key in adapters.BUFFER_LIMITS:
        if need_bytes > limits[key]:
            raise UserError(f"elements up to {need_bytes // 4} need {need_bytes} bytes, over the "
                            f"adapter's {key} of {limits[key]}")
    return {key: need_bytes for key in adapters.BUFFER_LIMITS if need_bytes > (1 << 27)}


def _check_shaders(chosen: adapters.FoundAdapter, suite: Suite, timestamps: bool,
                   limits: dict[str, int]) -> None:
    """Compile every kernel once before anything is measured: a bad shader fails at once."""
    features = ["timestamp-query"] if timestamps else []
    device, _ = binding(chosen.info.implementation).request_device(chosen.adapter, features,
                                                                   limits)
    for group in suite.groups:
        if group.fusion is None:  # workloads are checked against numpy by each worker
            compile_pipeline(device, group.kernel, group.workgroup_size)
    for kernel in _workload_kernels(suite):
        parse_shader(device, kernel)
    device.destroy()


def _any(suite: Suite, predicate: Any) -> bool:
    return any(predicate(c) for g in suite.groups for c in g.cases)
