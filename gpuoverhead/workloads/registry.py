"""The workloads, chosen in one place. A workload module has `groups(request)` (what a
suite's fusion benchmark expands into, workloads/groups.py), `problems(cfg)` (the sizes it
cannot take, as (key, message) pairs), `PRECISIONS`, `webgpu(ctx, group, rng)` (each case's
Work on a device), `torch_units(group, rng, dev, torch)` (its PyTorch forms),
`torch_fused(case, kind, group)` (which PyTorch forms its fused case has) and `GPU_TIMES`
(whether PyTorch's forms are timed with CUDA events); optionally `numpy_units(group, rng)`
(its step in plain numpy: the workload then has CPU references, `host_cases`) and
`ops_issued(case)` (ops issued per unit: the sequential throughput, `per_op_rows`) and
`MEMORY_FLOOR` (its GPU time has a memory floor: the worker measures the read bandwidth
and the GPU's own time per dispatch, `floor_notes`), `FEATURES` (device features its
worker asks for where the adapter offers them: `features`) and `kernels_note_of(device)`
(its kernel choices as that device ran them, for run.json); adding
one is its module, its shader and one line in WORKLOADS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuoverhead.analysis.series import Key
from gpuoverhead.cases import HYBRID, READ_LOOPS, TIMESTAMPS, Case, Group
from gpuoverhead.records import DISPATCHES_PER_UNIT, GPU_PER_DISPATCH_NS, READ_GB_S
from gpuoverhead.torch_forms import EAGER
from gpuoverhead.workloads.work import Context, Work, check, issue

if TYPE_CHECKING:  # pandas with it: a worker builds workloads but estimates nothing
    from gpuoverhead.analysis.combine import Row


class Modules(Mapping[str, ModuleType]):
    """The workload modules by name, each imported where it is first looked up: a worker
    that measures a kernel, or one workload, imports no other (the decode step's model
    tables, the PyTorch builds: some 0.07 CPU-s of every worker's and every run's start)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def __getitem__(self, name: str) -> ModuleType:
        if name not in self.names:
            raise KeyError(name)
        return import_module(f"{__package__}.{name}")

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


WORKLOADS: Mapping[str, ModuleType] = Modules(("chain", "loop", "population", "rmsnorm", "mlp",
                                                "matmul", "decode", "recurrent", "readback"))


def build(device: Any, group: Group, rng: np.random.Generator, wait: Callable[[], None]
          ) -> dict[Case, Work]:
    """Every case's Work, checked with one unit against numpy before anything is timed."""
    ctx = Context(device, group)
    works = WORKLOADS[group.fusion].webgpu(ctx, group, rng)  # type: ignore[index]

    def one(_: Case, work: Work) -> None:
        if work.host is not None:
            work.host()
        else:
            issue(ctx, work, 1)
            wait()
        if work.readback is not None:
            work.readback[0]()  # a unit ends with its read (the hybrid's host stage)

    return checked(works, one)


def features(group: Group) -> tuple[str, ...]:
    """The device features the group's workload asks for where the adapter offers them."""
    return getattr(WORKLOADS[group.fusion], "FEATURES", ())  # type: ignore[index]


def floor_notes(device: Any, group: Group, works: dict[Case, Work], wait: Callable[[], None],
                tick_ns: float | None, software: bool) -> dict[str, Any]:
    """Where the group's workload has a memory floor and is timestamped (the decode step):
    the read bandwidth measured on its device (records.READ_GB_S), the GPU's own time per
    dispatch (GPU_PER_DISPATCH_NS) and the dispatches a unit of each GPU-time case issues
    (DISPATCHES_PER_UNIT), with which analysis takes its GPU time apart; and where the
    workload names its kernel choices (kernels_note_of: the fused decode step's as `device`
    ran them), those."""
    workload = WORKLOADS[group.fusion]  # type: ignore[index]
    note = getattr(workload, "kernels_note_of", None)
    chosen = {"kernels": note(device)} if note else {}
    if tick_ns is None or not getattr(workload, "MEMORY_FLOOR", False):
        return chosen
    notes: dict[str, Any] = {**chosen, DISPATCHES_PER_UNIT: {
        c.id: len(works[c].sequences[0]) for c in group.cases if c.sync == TIMESTAMPS}}
    from gpuoverhead.workloads import read_floor  # here: the decode step's workers alone

    ctx = Context(device, group)  # one shader module for both
    for name, measure in ((READ_GB_S, lambda: read_floor.read_gb_s(ctx, tick_ns, wait,
                                                                    software)),
                          (GPU_PER_DISPATCH_NS,
                           lambda: read_floor.dispatch_gpu_ns(ctx, tick_ns, wait))):
        try:
            notes[name] = measure()
        except Exception as exc:  # the floors are second figures: their failure stops no step
            notes[f"{name}_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return notes


def checked(works: dict[Case, Work], one: Callable[[Case, Work], None]) -> dict[Case, Work]:
    """`works`, each after `one` unit of it (run and waited for by `one`) matched numpy on
    fresh inputs, reset to those inputs: a kernel that does not run fails before sampling."""
    for case, work in works.items():
        one(case, work)
        check(case, work, 1, "before sampling, one unit")
        work.reset()
        work.units_done[0] = 0
    return works


def torch_cases(group: Group, kind: str) -> tuple[Case, ...]:
    """The PyTorch cases of a workload group, in the forms that exist on this device (the
    f16 step is WebGPU's alone so far; torch has no command encodings to choose). Its fused
    forms take the unfused form's N sweep: a CUDA graph replays every step's kernels, not
    one cheap dispatch a unit (a suite's `fused_n_sweep` is for those)."""
    workload = WORKLOADS[group.fusion]  # type: ignore[index]
    if group.precision != "f32":
        return ()
    out: list[Case] = []
    for case in group.cases:
        if case.sync == TIMESTAMPS and not (kind == "cuda" and workload.GPU_TIMES):
            continue
        if case.encoding != "dispatch":
            continue
        forms = (EAGER,) if case.variant in ("unfused", "single", HYBRID) else \
            workload.torch_fused(case, kind, group)
        unfused = next((c.n_values for c in group.cases if c.k == case.k
                        and c.variant == "unfused"), case.n_values)
        out += [replace(case, implementation=form, n_values=unfused) for form in forms]
    return tuple(out)


def torch_operations(group: Group, rng: np.random.Generator, notes: dict[str, Any],
                     kind: str | None = None) -> tuple:
    """The group as it runs on torch's device `kind` (None: the one torch finds), each
    case's timed op, the output check, and whether the ops give GPU times
    (torch_ops.operations)."""
    from gpuoverhead.workloads import torch_ops  # here: PyTorch's and the CPU's workers alone

    units_of = WORKLOADS[group.fusion].torch_units  # type: ignore[index]
    return torch_ops.operations(group, units_of, rng, notes, kind)


def host_cases(group: Group, implementation: str) -> tuple[Case, ...]:
    """A workload group's cases as a CPU reference runs them (named `implementation`): its
    unfused form, op by op, where the workload has a numpy build (no host-read loops: on the
    CPU the state is already on the host)."""
    workload = WORKLOADS.get(group.fusion or "")
    if workload is None or not hasattr(workload, "numpy_units") or group.precision != "f32":
        return ()
    return tuple(replace(c, implementation=implementation) for c in group.cases
                 if c.variant == "unfused" and c.sync not in (TIMESTAMPS, *READ_LOOPS)
                 and c.encoding == "dispatch")


def numpy_operations(group: Group, rng: np.random.Generator, notes: dict[str, Any]
                     ) -> tuple:
    """The group in plain numpy: each case's timed op and the output check."""
    from gpuoverhead.workloads import torch_ops  # here: the CPU reference's workers alone

    units, outputs = WORKLOADS[group.fusion].numpy_units(group, rng)  # type: ignore[index]
    return torch_ops.built(group, units, outputs, lambda: None, notes)


def per_op_rows(group: Group, rows: list[Row]) -> list[Row]:
    """Sequential throughput: each `per_unit_ns` estimate of the group (and its interval)
    divided by the ops issued per unit, where its workload counts them (`per_op_ns`)."""
    workload = WORKLOADS.get(group.fusion or "")
    if not hasattr(workload, "ops_issued"):
        return []
    out = []
    for r in rows:
        if r.key.metric != "per_unit_ns":
            continue
        ops = workload.ops_issued(r.key.case)  # type: ignore[union-attr]
        e = r.estimate
        key = Key(r.key.case, "per_op_ns", "ns", f"per_unit_ns / {ops} ops issued per unit")
        out.append(replace(r, key=key, estimate=replace(e, value=e.value / ops,
                                                         ci_low=e.ci_low / ops,
                                                         ci_high=e.ci_high / ops)))
    return out
