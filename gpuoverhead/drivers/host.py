"""The host driver (family `cpu-ref`): the machine's CPU as the reference a GPU has to beat,
measured in the same run and the same interleaved groups as the GPU implementations (issue
28's crossover).

- `torch-cpu`: a workload's step in PyTorch eagerly on the CPU, whatever device torch's best
  is (the torch driver measures that one);
- `numpy-cpu`: the same ops in plain numpy, the reference with no framework at all.

Only workloads with a numpy build have CPU cases (workloads/registry.host_cases: the
recurrent step); every other group gets no host job. The other implementations' per-unit
times are divided by `torch-cpu`'s (registry.CPU_REFERENCE), process pair by process pair
(`cpu_ratio`), which is what the crossover H is read from (analysis/crossover.py).
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.cases import Group, Suite
from gpuoverhead.drivers import pytorch
from gpuoverhead.drivers.base import Job, Offer, Prepared, Request
from gpuoverhead.errors import UserError
from gpuoverhead.records import AdapterInfo
from gpuoverhead.torch_forms import CPU
from gpuoverhead.workloads import registry as workloads

FAMILY = "cpu-ref"
NUMPY = "numpy-cpu"
IMPLEMENTATIONS = (CPU, NUMPY)
#: Its ratios to the GPU's are `cpu_ratio` rows, not `paired_ratio` ones (run/finish.py).
COMPARED = False
SAMPLE_SHARE = None
TAX_OVER: tuple[str, ...] = ()


def offers(request: Request, notes: list[str]) -> list[Offer]:
    """The CPU once per implementation asked for, where the suite has a workload the CPU
    runs (asked by name: else an error); `torch-cpu` only where torch imports (likewise)."""
    if not any(workloads.host_cases(g, CPU) for g in request.suite.groups):
        if request.named:
            raise UserError(f"{', '.join(request.names or ())}: the CPU references run only "
                            "workloads with a numpy build (fusion: recurrent), and this suite "
                            "has none; try --suite crossover")
        return []
    out = []
    for name in request.names or IMPLEMENTATIONS:
        reason = pytorch.available() if name == CPU else None
        if reason is not None:
            if request.named:
                raise UserError(reason)
            notes.append(pytorch.left_out(CPU, reason, f"{CPU} skipped: {reason}"))
            continue
        out.append(Offer(_info(name)))
    return out


def jobs(group: Group, offer: Offer, notes: list[str]) -> list[Job]:
    """The group's CPU cases (none where its workload has no numpy build)."""
    cases = workloads.host_cases(group, offer.info.implementation)
    return [Job(replace(group, cases=cases), offer, FAMILY)] if cases else []


@contextmanager
def prepare(job: Job, rng: np.random.Generator) -> Iterator[Prepared]:
    """In the worker: the workload's numpy build, or its PyTorch build on the CPU."""
    notes: dict[str, Any] = {}
    if job.adapter.implementation == NUMPY:
        group, ops, verify = workloads.numpy_operations(job.group, rng, notes)
    else:
        group, ops, verify, _ = workloads.torch_operations(job.group, rng, notes, "cpu")
    yield Prepared(group, ops, verify, None, notes)


def setup_hint_s(job: Job) -> float:
    """Start-up expected of a worker: importing torch (1.2 s on the 2-core development
    machine; numpy is already imported)."""
    return 1.5 if job.adapter.implementation == CPU else 0.5


def listing(browser: str | None, notes: list[str]) -> list[Offer]:
    """None: `gpuoverhead adapters` lists WebGPU's adapters."""
    return []


def libraries() -> dict[str, Any]:
    return {}


def compile_kernels(suite: Suite) -> None:
    """The CPU compiles no WGSL."""
    return None


def _info(name: str) -> AdapterInfo:
    """The CPU in the schema's words, with the library's version as its driver."""
    if name == CPU:  # not imported here: planning waited 0.9 s for torch's import
        version = f"torch {importlib.metadata.version('torch')}"
    else:
        version = f"numpy {np.__version__}"
    return AdapterInfo(name, "cpu", "CPU", "cpu", 0, platform.processor() or "CPU", version,
                       False)
