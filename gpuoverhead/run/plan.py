"""What a run will measure, settled before anything is measured.

Everything that can fail because of the user's input fails here, in seconds: the suite, the
adapters, the native layer's build, device limits, every kernel compiled once. The plan is
the list of jobs: each suite group as measured by each implementation.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuoverhead.browser import chromium
from gpuoverhead.browser import worker as browser_worker
from gpuoverhead.errors import UserError
from gpuoverhead.gpu import adapters, implementations
from gpuoverhead.gpu.implementations import CHROMIUM
from gpuoverhead.gpu.kernels import compile_pipeline
from gpuoverhead.gpu.layers import native as native_layer
from gpuoverhead.pytorch import baseline as torch_baseline
from gpuoverhead.pytorch import fusion_patterns as torch_fusion
from gpuoverhead.suite.expand import load_suite, quick
from gpuoverhead.suite.model import REFERENCE, TIMESTAMPS, Case, Group, Suite


@dataclass
class RunOptions:
    suite: Path
    out_root: Path
    backend: str | None = None
    adapter: str | None = None
    implementations: list[str] | None = None
    quick: bool = False
    processes: int = 3
    #: Seconds the whole run may take, instead of the suite's `time_limit_s` (0: none).
    time_limit_s: float | None = None
    seed: int | None = None
    run_id: str | None = None
    force: bool = False
    outside_shaders: bool = False
    #: Seconds a worker may go without finishing a round before it is stopped (a hung wait).
    stall_timeout_s: float = 300.0
    #: The browser of the `chromium` implementation (None: look for one).
    browser: str | None = None
    argv: list[str] = field(default_factory=lambda: list(sys.argv))


@dataclass(frozen=True)
class Job:
    """A suite group as one implementation measures it, on its adapter. A `reference` job
    is the reference loop of the job before it: its native sequential cases alone, on a
    device requested with no features or limits, nothing else on it."""

    group: Group
    adapter: adapters.AdapterInfo
    reference: bool = False

    @property
    def label(self) -> str:
        return self.adapter.implementation + (" reference" if self.reference else "")


@dataclass
class Plan:
    """The suite as it will run, the adapters measured, and per benchmark (suite group) its
    jobs, whose worker processes alternate in time (process 0 of each, then 1, ...)."""

    suite: Suite
    adapters: list[dict[str, Any]]
    benchmarks: list[list[Job]]
    processes: int
    native: dict[str, str] | None
    limits: dict[adapters.AdapterInfo, dict[str, int]]
    notes: list[str]
    software: list[str]
    #: Seconds the whole run may take (the suite's, or --time-limit's), if any.
    time_limit_s: float | None = None
    #: The browser that `chromium` jobs start, where there are any.
    browser: str | None = None


def prepare(options: RunOptions) -> Plan:
    """The plan of a run, or a UserError saying what in the input is wrong."""
    check_options(options)
    suite = load_suite(options.suite, options.outside_shaders)
    if options.quick:
        suite = quick(suite)
    wanted = options.implementations
    own = [implementations.TORCH, CHROMIUM]  # implementations without a wgpu adapter
    found, notes = adapters.discover(
        None if wanted is None else [w for w in wanted if w not in own])
    no_wgpu = bool(wanted) and all(w in own for w in wanted)
    if not found and notes and not no_wgpu:
        # A named implementation that is not installed needs installing, not lavapipe.
        raise UserError("; ".join(notes if options.implementations else
                                  [adapters.NO_ADAPTER, *notes]))
    chosen = adapters.select(found, options.backend, options.adapter, no_wgpu)
    suite, native = _native_layer(suite, notes)
    timestamps = _any(suite, lambda c: c.sync == TIMESTAMPS)
    notes += [f"{f.info.label} has no timestamp queries: no GPU times (gpu_ns)"
              for f in chosen if timestamps and not f.info.timestamps]
    limits = {f.info: required_limits(f, suite) for f in chosen}
    for f in chosen:
        _check_shaders(f, suite, timestamps and f.info.timestamps, limits[f.info])
    described = [{**f.info.__dict__, **f.details(), "implementation_versions":
                  implementations.get(f.info.implementation).versions()} for f in chosen]
    torch = _torch_adapter(options, notes)
    if wanted == [implementations.TORCH] and torch is None:
        raise UserError(notes[-1].removeprefix(TORCH_SKIPPED))
    if torch is not None:
        described.append(dict(torch.__dict__))
    page, browser = _browser_adapter(options, notes)
    if page is not None:
        described.append({**page[0].__dict__, **page[1]})
    f16 = {f.info for f in chosen if "shader-f16" in f.adapter.features}
    notes += [f"{f.info.label} has no shader-f16: the f16 decode step is not measured on it"
              for f in chosen if f.info not in f16
              and any(g.precision == "f16" for g in suite.groups)]
    benchmarks = [jobs for group in suite.groups
                  if (jobs := _jobs(group, [f.info for f in chosen
                                            if f.info in f16 or group.precision != "f16"],
                                    torch, page[0] if page else None))]
    if not benchmarks:
        raise UserError("nothing to measure: no adapter and no PyTorch baseline here")
    notes += [f"{f.info.device} is the GPU of a virtual machine: its timings describe the "
              "hypervisor's path as well, not a GPU on its own" for f in chosen
              if f.info.is_virtual]
    limit = suite.time_limit_s if options.time_limit_s is None else options.time_limit_s
    software = [f.info.device for f in chosen if f.info.is_software]
    if page is not None and page[0].is_software:
        software.append(page[0].device)
    return Plan(suite, described, benchmarks, 1 if options.quick else options.processes,
                native, limits, notes, software, limit or None, browser)


TORCH_SKIPPED = "PyTorch baselines skipped: "
#: A run id is one plain path component: it names a folder under --out, nothing else.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_options(options: RunOptions) -> None:
    """The command-line values that no suite can make right, refused before anything runs."""
    if options.processes < 1:
        raise UserError(f"--processes must be at least 1, not {options.processes}")
    if options.seed is not None and not 0 <= options.seed < 2 ** 32:
        raise UserError(f"--seed must be between 0 and 2**32 - 1, not {options.seed}")
    if not (math.isfinite(options.stall_timeout_s) and options.stall_timeout_s > 0):
        raise UserError(f"--stall-timeout must be a positive number of seconds, not "
                        f"{options.stall_timeout_s}")
    limit = options.time_limit_s
    if limit is not None and not (math.isfinite(limit) and 0 <= limit <= 86400):
        raise UserError(f"--time-limit must be between 0 (none) and 86400 seconds, not {limit}")
    if options.run_id is not None and not RUN_ID.fullmatch(options.run_id):
        raise UserError(f"--run-id {options.run_id[:40]!r} is not a plain folder name: up to "
                        "100 letters, digits, '.', '_' or '-', starting with a letter or digit")


def _native_layer(suite: Suite, notes: list[str]) -> tuple[Suite, dict[str, str] | None]:
    """Build the C loop once here (workers find it in the cache), or drop its cases."""
    if not _any(suite, lambda c: c.layer == "native"):
        return suite, None
    loaded = native_layer.load()
    if isinstance(loaded, str):
        notes.append(loaded)
        return _without(suite, lambda c: c.layer == "native"), None
    return suite, {"library": str(loaded.path), "compiler": loaded.compiler}


def _jobs(group: Group, chosen: list[adapters.AdapterInfo],
          torch: adapters.AdapterInfo | None, page: adapters.AdapterInfo | None = None
          ) -> list[Job]:
    """A suite group's jobs: each adapter's, each followed by its reference loop where the
    group has native cases, then the browser's and the PyTorch baseline's."""
    jobs = []
    for info in chosen:
        jobs.append(Job(group if info.timestamps else _without_timestamps(group), info))
        native = tuple(replace(c, variant=REFERENCE) for c in group.cases
                       if c.layer == "native" and c.methodology == "sequential"
                       and c.sync != TIMESTAMPS)
        if native:
            jobs.append(Job(replace(group, cases=native), info, reference=True))
    if page is not None and (cases := browser_worker.cases(group)):
        page_group = replace(group, cases=cases)
        jobs.append(Job(page_group if page.timestamps else _without_timestamps(page_group),
                        page))
    if torch is not None and (cases := _torch_cases(group, torch.backend)):
        torch_group = replace(group, cases=cases)
        jobs.append(Job(torch_group if torch.timestamps else _without_timestamps(torch_group),
                        torch))
    return jobs


def _torch_adapter(options: RunOptions, notes: list[str]) -> adapters.AdapterInfo | None:
    """The PyTorch baselines' device, where they are asked for (explicitly or by `all`)."""
    wanted = options.implementations
    if wanted is not None and implementations.TORCH not in wanted:
        return None
    reason = torch_baseline.available()
    if reason is not None:
        notes.append(TORCH_SKIPPED + reason)
        return None
    return torch_baseline.adapter_info()


def _browser_adapter(options: RunOptions, notes: list[str]
                     ) -> tuple[tuple[adapters.AdapterInfo, dict[str, Any]] | None, str | None]:
    """The browser's adapter and details, and the browser, where `chromium` is asked for:
    by name (a browser that cannot run is then an error) or by `all` (then a note)."""
    wanted = options.implementations
    if wanted is not None and CHROMIUM not in wanted:
        return None, None
    try:
        executable = chromium.find(options.browser)
        info, details = browser_worker.adapter(executable)
    except UserError as exc:
        if wanted is not None:
            raise
        notes.append(f"chromium skipped: {exc}")
        return None, None
    notes += browser_worker.warnings(info, details)
    return (info, details), executable


def _torch_cases(group: Group, kind: str) -> tuple[Case, ...]:
    """The PyTorch baseline's cases of a group (none where it has no such kernel)."""
    if group.fusion is not None:
        return torch_fusion.cases(group, kind)
    if group.kernel.name in torch_baseline.KERNELS:
        return torch_baseline.cases(group, kind)
    return ()


def _without_timestamps(group: Group) -> Group:
    return replace(group, cases=tuple(c for c in group.cases if c.sync != TIMESTAMPS))


def _any(suite: Suite, predicate: Callable[[Case], bool]) -> bool:
    return any(predicate(c) for g in suite.groups for c in g.cases)


def _without(suite: Suite, predicate: Callable[[Case], bool]) -> Suite:
    """The suite less the cases that cannot run here (the reason goes into run.json)."""
    groups = tuple(replace(g, cases=tuple(c for c in g.cases if not predicate(c)))
                   for g in suite.groups)
    return replace(suite, groups=groups)


def required_limits(chosen: adapters.FoundAdapter, suite: Suite) -> dict[str, int]:
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
