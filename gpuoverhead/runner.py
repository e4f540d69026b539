"""Run a suite on one adapter: groups are measured one after another, each written when done.

Flow: suite -> adapter -> every kernel compiled once (a bad shader fails in a second, not
after minutes) -> for each group: P worker processes one after another (worker.py), each
sampling the group interleaved and checking its outputs -> estimates across processes ->
result files rewritten atomically. An interrupted run keeps every group that finished; a
group whose output check fails in any process is recorded as an error and contributes no
rows. Each process gets 1/P of the group's budget, so P changes precision, not run time.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from gpuoverhead import (
    adapters,
    estimates,
    implementations,
    noise,
    runinfo,
    torch_baseline,
    torch_fusion,
    worker,
    writers,
)
from gpuoverhead.errors import UserError
from gpuoverhead.layers import native as native_layer
from gpuoverhead.suite import TIMESTAMPS, Case, Group, Suite, load_suite, quick
from gpuoverhead.workload import compile_pipeline


class Reporter(Protocol):
    """What the runner tells the user while it works (the console implements it)."""

    def group_started(self, group: Group, index: int, total: int, processes: int,
                      implementation: str) -> None: ...
    def round_done(self, process: int, rounds: int, elapsed_s: float, budget_s: float
                   ) -> None: ...
    def group_done(self, group: Group, summary: pd.DataFrame | None, error: str | None) -> None: ...


@dataclass
class RunOptions:
    suite: Path
    out_root: Path
    backend: str | None = None
    adapter: str | None = None
    implementations: list[str] | None = None
    quick: bool = False
    processes: int = 3
    seed: int | None = None
    run_id: str | None = None
    force: bool = False
    outside_shaders: bool = False
    #: Seconds a worker may go without finishing a round before it is stopped (a hung wait).
    stall_timeout_s: float = 300.0
    argv: list[str] = field(default_factory=lambda: list(sys.argv))


@dataclass
class RunResult:
    folder: Path
    info: dict[str, Any]
    summary: pd.DataFrame

    @property
    def failed(self) -> bool:
        return bool(self.info["errors"])


def prepare(options: RunOptions) -> tuple[Suite, list[adapters.FoundAdapter], list[str]]:
    """Everything that can fail because of the user's input, before anything is measured:
    the suite, and per implementation the adapter to measure (with notes on the others)."""
    if options.processes < 1:
        raise UserError(f"--processes must be at least 1, not {options.processes}")
    suite = load_suite(options.suite, options.outside_shaders)
    if options.quick:
        suite = quick(suite)
    found, notes = adapters.discover(options.implementations)
    torch_only = options.implementations == [implementations.TORCH]
    if not found and notes and not torch_only:
        raise UserError("; ".join([adapters.NO_ADAPTER, *notes]))
    return suite, adapters.select(found, options.backend, options.adapter, torch_only), notes


def run(options: RunOptions, reporter: Reporter) -> RunResult:
    suite, chosen, notes = prepare(options)
    native = False
    if _any(suite, lambda c: c.layer == "native"):
        loaded = native_layer.load()  # compiles once here; workers find it in the cache
        native = not isinstance(loaded, str)
        if not native:
            notes.append(str(loaded))
            suite = _without(suite, lambda c: c.layer == "native")
    timestamps = _any(suite, lambda c: c.sync == TIMESTAMPS)
    for found in chosen:
        if timestamps and not found.info.timestamps:
            notes.append(f"{found.info.label} has no timestamp queries: no GPU times (gpu_ns)")
    limits = {f.info: _required_limits(f, suite) for f in chosen}
    for found in chosen:
        _check_shaders(found, suite, timestamps and found.info.timestamps, limits[found.info])
    processes = 1 if options.quick else options.processes
    run_id = options.run_id or runinfo.new_run_id()
    folder = _make_folder(options.out_root / run_id, options.force)
    seed = options.seed if options.seed is not None else secrets.randbits(32)
    rng = np.random.default_rng(seed)
    info = runinfo.base_info(run_id, options.argv, suite.path, suite.name, suite.sha256, seed)
    info["processes"] = processes
    info["adapters"] = [{**f.info.__dict__, **f.details(),
                         "implementation_versions": implementations.get(
                             f.info.implementation).versions()} for f in chosen]
    info["layers"] = {"native": loaded_info(loaded) if native else None}
    info["drift"] = []
    info["warnings"].extend(notes)
    state, noisy = noise.check()
    info["noise"] = {"before": state}
    info["warnings"].extend(noisy)
    info["warnings"].extend(
        f"{f.info.device} is a CPU (software) adapter: its figures describe a driver running "
        "on the CPU, not a GPU" for f in chosen if f.info.is_software)
    samples_parts: list[pd.DataFrame] = []
    summary_parts: list[pd.DataFrame] = []
    run_start = time.time_ns()

    def save(status: str) -> None:
        info["status"] = status
        if status != "running":
            info["finished"] = runinfo.now_iso()
        writers.write_run(folder, _concat(samples_parts, estimates.SAMPLE_COLUMNS),
                          estimates.with_ratio_to_fastest(_concat(summary_parts, None)), info)

    torch = _torch_adapter(options, notes)
    if torch is not None:
        info["adapters"].append(dict(torch.__dict__))
    jobs = [(g, f.info) for g in suite.groups for f in chosen]
    jobs += [(replace(g, cases=cases), torch) for g in suite.groups
             if torch is not None and (cases := _torch_cases(g, torch.backend))]
    jobs.sort(key=lambda job: suite.groups.index(next(
        g for g in suite.groups if (g.benchmark, g.elements) == (job[0].benchmark,
                                                                 job[0].elements))))
    if not jobs:
        raise UserError("nothing to measure: no adapter and no PyTorch baseline here")
    save("running")
    try:
        for index, (suite_group, adapter) in enumerate(jobs):
            group = suite_group if adapter.timestamps else _without_timestamps(suite_group)
            reporter.group_started(group, index, len(jobs), processes, adapter.implementation)
            entry: dict[str, Any] = {"id": group.id, "benchmark": group.benchmark,
                                     "elements": group.elements,
                                     "implementation": adapter.implementation}
            share = replace(group, sampling=replace(
                group.sampling, budget_s=group.sampling.budget_s / processes))
            outcomes = [worker.run(worker.Job(share, adapter, worker.seeds(seed, index, p),
                                              p, native, limits.get(adapter, {})),
                                   reporter.round_done, options.stall_timeout_s)
                        for p in range(processes)]
            errors = [o.error for o in outcomes if o.error]
            if errors:
                entry["status"] = "failed"
                info["errors"].extend(f"{group.id} ({adapter.implementation}): {e}"
                                      for e in errors)
                info["benchmarks"].append(entry)
                summary_parts.append(estimates.error_row(run_id, adapter, group, errors[0]))
                reporter.group_done(group, None, errors[0])
                save("running")
                continue
            rows, summary = _tables(run_id, adapter, group, outcomes, run_start, rng)
            entry.update(status="ok", sampling=group.sampling.__dict__,
                         processes=[_process_entry(o) for o in outcomes])
            info["benchmarks"].append(entry)
            info["warnings"].extend(_timer_warnings(group, outcomes))
            info["warnings"].extend(_precision_warnings(group, summary))
            found_drift = estimates.drifts([estimates.series(o.samples, o.calibration,
                                                             o.clock_offset_ns)
                                            for o in outcomes])
            info["drift"].extend({**d, "implementation": adapter.implementation}
                                 for d in found_drift)
            if found_drift:
                worst = max(found_drift, key=lambda d: abs(d["change"]))
                info["warnings"].append(
                    f"{group.id} ({adapter.implementation}): {len(found_drift)} trends over "
                    f"time (see drift in run.json); largest: {worst['case']} {worst['metric']}, "
                    f"{worst['change']:+.1%} first to last quarter ({worst['scope']})")
            samples_parts.append(rows)
            summary_parts.append(summary)
            save("running")
            reporter.group_done(group, summary, None)
    except KeyboardInterrupt:
        save("interrupted")
    else:
        state, noisy = noise.check()
        info["noise"]["after"] = state
        info["warnings"].extend(w + " (at the end of the run)" for w in noisy)
        save("failed" if info["errors"] else "complete")
    return RunResult(folder, info,
                     estimates.with_ratio_to_fastest(_concat(summary_parts, None)))


def _torch_adapter(options: RunOptions, notes: list[str]) -> adapters.AdapterInfo | None:
    """The PyTorch baselines' device, where they are asked for (explicitly or by `all`)."""
    wanted = options.implementations
    if wanted is not None and implementations.TORCH not in wanted:
        return None
    reason = torch_baseline.available()
    if reason is not None:
        notes.append(reason)
        return None
    return torch_baseline.adapter_info()


def _torch_cases(group: Group, kind: str) -> tuple[Case, ...]:
    """The PyTorch baseline's cases of a group (none where it has no such kernel)."""
    if group.fusion is not None:
        return torch_fusion.cases(group, kind)
    if group.kernel.name in torch_baseline.KERNELS:
        return torch_baseline.cases(group, kind)
    return ()


def _without_timestamps(group: Group) -> Group:
    return replace(group, cases=tuple(c for c in group.cases if c.sync != TIMESTAMPS))


def loaded_info(loop: Any) -> dict[str, str]:
    return {"library": str(loop.path), "compiler": loop.compiler}


def _tables(run_id: str, adapter: adapters.AdapterInfo, group: Group,
            outcomes: list[worker.Outcome], run_start: int, rng: np.random.Generator
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    per_process = [estimates.series(o.samples, o.calibration, o.clock_offset_ns)
                   for o in outcomes]
    rows = pd.concat([estimates.samples_table(run_id, adapter, o.samples, o.process, run_start,
                                              o.clock_offset_ns, o.calibration)
                      for o in outcomes], ignore_index=True)
    estimated = estimates.combine(per_process, rng)
    summary = estimates.summary_table(run_id, adapter, group, estimated,
                                      [o.samples for o in outcomes], rows)
    return rows, summary


def _process_entry(outcome: worker.Outcome) -> dict[str, Any]:
    s, cal = outcome.samples, outcome.calibration
    entry = {"process": outcome.process, "rounds": s.rounds, "warmup_rounds": s.warmup_rounds,
             "warmup_settled": s.warmup_settled, "stop": s.stop,
             "clock_cost_ns": cal.timer_ns, "timestamp_period_ns": cal.tick_ns,
             **outcome.device_notes}
    timer = estimates.gpu_timer(s, cal.tick_ns) if cal.tick_ns else None
    if timer is not None:
        entry.update(gpu_timer_resolution_ns=timer.resolution_ns,
                     gpu_timer_quantized=timer.quantized)
    return entry


def _timer_warnings(group: Group, outcomes: list[worker.Outcome]) -> list[str]:
    warnings = []
    for o in outcomes:
        timer = estimates.gpu_timer(o.samples, o.calibration.tick_ns) \
            if o.calibration.tick_ns else None
        if timer is not None and timer.quantized:
            warnings.append(f"{group.id}: GPU timestamps are quantized to "
                            f"{timer.resolution_ns:.0f} ns; gpu_ns is no more precise than that")
            break
    unsettled = [o for o in outcomes if not o.samples.warmup_settled]
    if unsettled:
        warnings.append(f"{group.id}: warm-up did not settle in {len(unsettled)} of "
                        f"{len(outcomes)} processes (stopped after at most "
                        f"{max(o.samples.warmup_rounds for o in unsettled)} rounds by "
                        f"warmup_max_rounds or by the warm-up's share of the budget)")
    return warnings


def _precision_warnings(group: Group, summary: pd.DataFrame) -> list[str]:
    head = summary[summary["metric"].isin(estimates.HEADLINE) & summary["process"].isna()]
    head = head[(head["ci_high"] - head["ci_low"]) / 2 > estimates.PRECISE_NS]
    if head.empty or head["stop"].eq("converged").all():
        return []
    worst = head.loc[head["rel_ci"].idxmax()]
    if worst["rel_ci"] <= group.sampling.target_rel_ci:
        return []
    return [f"{group.id}: {worst['case']} {worst['metric']} is only known to "
            f"±{worst['rel_ci']:.1%} (target ±{group.sampling.target_rel_ci:.1%}) when sampling "
            f"stopped ({worst['stop']}): the machine is noisy or the budget too small"]


def _any(suite: Suite, predicate: Callable[[Case], bool]) -> bool:
    return any(predicate(c) for g in suite.groups for c in g.cases)


def _without(suite: Suite, predicate: Callable[[Case], bool]) -> Suite:
    """The suite less the cases that cannot run here (the reason goes into run.json)."""
    groups = tuple(replace(g, cases=tuple(c for c in g.cases if not predicate(c)))
                   for g in suite.groups)
    return replace(suite, groups=groups)


def _concat(parts: list[pd.DataFrame], columns: list[str] | None) -> pd.DataFrame:
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns=columns or [])


def _required_limits(chosen: adapters.FoundAdapter, suite: Suite) -> dict[str, int]:
    """Device limits the suite needs beyond the defaults, checked against the adapter's."""
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
    return {key: need_bytes for key in ("max-storage-buffer-binding-size", "max-buffer-size")
            if need_bytes > (1 << 27)}


def _check_shaders(chosen: adapters.FoundAdapter, suite: Suite, timestamps: bool,
                   limits: dict[str, int]) -> None:
    """Compile every kernel once before anything is measured: a bad shader fails at once."""
    features = ["timestamp-query"] if timestamps else []
    device, _ = implementations.get(chosen.info.implementation).request_device(
        chosen.adapter, features, limits)
    for group in suite.groups:
        if group.fusion is None:  # fusion kernels are checked against numpy by each worker
            compile_pipeline(device, group.kernel, group.workgroup_size)
    device.destroy()


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
