"""Run a suite on one adapter: groups are sampled one after another, each written when done.

Flow: suite -> adapter and device -> pipelines (all compiled before anything is measured, so
a bad shader fails in a second, not after minutes) -> for each group: targets, interleaved
sampling, output check, estimates -> result files rewritten atomically. An interrupted run
keeps every group that finished; a group whose output check fails is recorded as an error
and contributes no rows.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from time import perf_counter_ns
from typing import Any, Protocol

import numpy as np
import pandas as pd

from gpuoverhead import adapters, estimates, methods, runinfo, writers
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.estimates import Calibration
from gpuoverhead.layers import native as native_layer
from gpuoverhead.methods.timestamps import timestamp_period_ns
from gpuoverhead.sampling import GroupSamples, sample_group, timer_cost_ns
from gpuoverhead.suite import TIMESTAMPS, Case, Group, Suite, load_suite, quick
from gpuoverhead.workload import build_targets, compile_pipeline


class Reporter(Protocol):
    """What the runner tells the user while it works (the console implements it)."""

    def group_started(self, group: Group, index: int, total: int) -> None: ...
    def round_done(self, samples: GroupSamples, elapsed_s: float, budget_s: float) -> None: ...
    def group_done(self, group: Group, summary: pd.DataFrame | None, error: str | None) -> None: ...


@dataclass
class RunOptions:
    suite: Path
    out_root: Path
    backend: str | None = None
    adapter: str | None = None
    quick: bool = False
    seed: int | None = None
    run_id: str | None = None
    force: bool = False
    argv: list[str] = field(default_factory=lambda: list(sys.argv))


@dataclass
class RunResult:
    folder: Path
    info: dict[str, Any]
    summary: pd.DataFrame

    @property
    def failed(self) -> bool:
        return bool(self.info["errors"])


def prepare(options: RunOptions) -> tuple[Suite, adapters.FoundAdapter]:
    """Everything that can fail because of the user's input, before anything is measured."""
    suite = load_suite(options.suite)
    if options.quick:
        suite = quick(suite)
    chosen = adapters.select(adapters.discover(), options.backend, options.adapter)
    return suite, chosen


def run(options: RunOptions, reporter: Reporter) -> RunResult:
    suite, chosen = prepare(options)
    notes: list[str] = []
    native: native_layer.NativeLoop | None = None
    if _any(suite, lambda c: c.layer == "native"):
        loaded = native_layer.load()
        if isinstance(loaded, str):
            notes.append(loaded)
            suite = _without(suite, lambda c: c.layer == "native")
        else:
            native = loaded
    timestamps = _any(suite, lambda c: c.sync == TIMESTAMPS)
    if timestamps and not chosen.info.timestamps:
        notes.append(f"{chosen.info.device} has no timestamp queries: no GPU times (gpu_ns)")
        suite = _without(suite, lambda c: c.sync == TIMESTAMPS)
        timestamps = False
    device = _request_device(chosen, suite, timestamps)
    cal = Calibration(timer_ns=timer_cost_ns(),
                      tick_ns=timestamp_period_ns(device.queue) if timestamps else None)
    pipelines = {g: compile_pipeline(device, g.kernel, g.workgroup_size) for g in suite.groups}
    run_id = options.run_id or runinfo.new_run_id()
    folder = _make_folder(options.out_root / run_id, options.force)
    seed = options.seed if options.seed is not None else secrets.randbits(32)
    rng = np.random.default_rng(seed)
    info = runinfo.base_info(run_id, options.argv, suite.path, suite.name, suite.sha256, seed)
    info["adapters"].append({**chosen.info.__dict__, **chosen.details(),
                             "timestamp_period_ns": cal.tick_ns})
    info["calibration"] = {"clock_cost_ns": cal.timer_ns, "timestamp_period_ns": cal.tick_ns}
    info["layers"] = {"native": {"library": str(native.path), "compiler": native.compiler}
                      if native else None}
    info["warnings"].extend(notes)
    if chosen.info.is_software:
        info["warnings"].append(
            f"{chosen.info.device} is a CPU (software) adapter: its figures describe a driver "
            "running on the CPU, not a GPU")
    samples_parts: list[pd.DataFrame] = []
    summary_parts: list[pd.DataFrame] = []
    run_start = perf_counter_ns()

    def save(status: str) -> None:
        info["status"] = status
        if status != "running":
            info["finished"] = runinfo.now_iso()
        writers.write_run(folder, _concat(samples_parts, estimates.SAMPLE_COLUMNS),
                          _concat(summary_parts, None), info)

    save("running")
    try:
        for index, group in enumerate(suite.groups):
            reporter.group_started(group, index, len(suite.groups))
            entry: dict[str, Any] = {"id": group.id, "benchmark": group.benchmark,
                                     "elements": group.elements}
            try:
                samples, summary, rows = _measure(group, device, pipelines[group], rng, reporter,
                                                  run_id, chosen.info, run_start, cal, native)
            except IntegrityError as exc:
                entry["status"] = "failed"
                info["errors"].append(str(exc))
                info["benchmarks"].append(entry)
                reporter.group_done(group, None, str(exc))
                save("running")
                continue
            entry.update(status="ok", rounds=samples.rounds, warmup_rounds=samples.warmup_rounds,
                         warmup_settled=samples.warmup_settled, stop=samples.stop,
                         sampling=group.sampling.__dict__)
            timer = estimates.gpu_timer(samples, cal.tick_ns) if cal.tick_ns else None
            if timer is not None:
                entry["gpu_timer_resolution_ns"] = timer.resolution_ns
                entry["gpu_timer_quantized"] = timer.quantized
                if timer.quantized:
                    info["warnings"].append(
                        f"{group.id}: GPU timestamps are quantized to {timer.resolution_ns:.0f} "
                        "ns; gpu_ns figures are no more precise than that")
            info["benchmarks"].append(entry)
            info["warnings"].extend(_precision_warnings(group, samples, summary))
            samples_parts.append(rows)
            summary_parts.append(summary)
            save("running")
            reporter.group_done(group, summary, None)
    except KeyboardInterrupt:
        save("interrupted")
    else:
        save("failed" if info["errors"] else "complete")
    return RunResult(folder, info, _concat(summary_parts, None))


def _measure(group: Group, device: Any, pipeline: Any, rng: np.random.Generator,
             reporter: Reporter, run_id: str, adapter: adapters.AdapterInfo, run_start: int,
             cal: Calibration, native: native_layer.NativeLoop | None
             ) -> tuple[GroupSamples, pd.DataFrame, pd.DataFrame]:
    targets = build_targets(device, pipeline, group, rng)
    ops = {case: methods.operation(targets[case], case, native) for case in group.cases}
    counts = dict.fromkeys(group.cases, 0)
    precision = partial(estimates.worst_rel_ci, cal=cal)
    samples = sample_group(group, ops, rng, precision, reporter.round_done, counts)
    for case, target in targets.items():
        target.dispatched = counts[case]
        target.verify(case.id)
    rows = estimates.samples_table(run_id, adapter, samples, run_start, cal)
    summary = estimates.summary_table(run_id, adapter, group, samples, rows, cal)
    return samples, summary, rows


def _any(suite: Suite, predicate: Callable[[Case], bool]) -> bool:
    return any(predicate(c) for g in suite.groups for c in g.cases)


def _without(suite: Suite, predicate: Callable[[Case], bool]) -> Suite:
    """The suite less the cases that cannot run here (the reason goes into run.json)."""
    groups = tuple(replace(g, cases=tuple(c for c in g.cases if not predicate(c)))
                   for g in suite.groups)
    return replace(suite, groups=groups)


def _precision_warnings(group: Group, samples: GroupSamples, summary: pd.DataFrame) -> list[str]:
    warnings = []
    if samples.stop != "converged":
        head = summary[summary["metric"].isin(estimates.HEADLINE)]
        worst = head.loc[head["rel_ci"].idxmax()]
        warnings.append(
            f"{group.id}: {worst['case']} {worst['metric']} is only known to "
            f"±{worst['rel_ci']:.1%} (target ±{group.sampling.target_rel_ci:.1%}) when sampling "
            f"stopped ({samples.stop}): the machine is noisy or the budget too small")
    if not samples.warmup_settled:
        warnings.append(f"{group.id}: warm-up did not settle within "
                        f"{samples.warmup_rounds} rounds")
    return warnings


def _concat(parts: list[pd.DataFrame], columns: list[str] | None) -> pd.DataFrame:
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns=columns or [])


def _request_device(chosen: adapters.FoundAdapter, suite: Suite, timestamps: bool) -> Any:
    """A device with the limits the suite needs, checked against the adapter's first."""
    limits = chosen.adapter.limits
    need_bytes = max(g.elements for g in suite.groups) * 4
    for group in suite.groups:
        for key in ("max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x"):
            if group.workgroup_size > limits[key]:
                raise UserError(f"{group.id}: workgroup_size {group.workgroup_size} is over the "
                                f"adapter's {key} of {limits[key]}")
    for key in ("max-storage-buffer-binding-size", "max-buffer-size"):
        if need_bytes > limits[key]:
            raise UserError(f"elements up to {need_bytes // 4} need {need_bytes} bytes, over the "
                            f"adapter's {key} of {limits[key]}")
    required = {key: max(need_bytes, 1 << 27)
                for key in ("max-storage-buffer-binding-size", "max-buffer-size")
                if need_bytes > (1 << 27)}
    features = ["timestamp-query"] if timestamps else []
    return chosen.adapter.request_device_sync(required_features=features,
                                              required_limits=required)


def _make_folder(folder: Path, force: bool) -> Path:
    if folder.exists() and not force:
        raise UserError(f"{folder} already exists; choose another --run-id, or pass --force "
                        "to overwrite it")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write results to {folder}: {exc.strerror or exc}") from None
    return folder
