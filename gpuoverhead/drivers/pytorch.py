"""The PyTorch driver: the reference baselines, beside WebGPU in the same interleaved groups.

For a kernel group, the same op semantics (`x += 1` over the group's elements) without
WebGPU; for a workload, its PyTorch build (gpuoverhead/workloads). Forms, each a case of
one interleaved group:
- `torch-eager`: naive (one op, then synchronize) and sequential (N ops, one synchronize);
- `torch-cudagraph`: N ops captured once per N as a CUDA graph, replayed, synchronized (CUDA
  only): the floor of what launching recorded work costs;
- `torch-compile`: `torch.compile(mode="reduce-overhead")` of an N-op chain, for N up to the
  suite's `torch_compile_max_n` (long unrolled chains make compilation slow or fail:
  RecursionError, OOM). Compile time and failures are recorded as data, never allowed to
  stop the run. Inductor fuses the chain into one kernel, so its slope is near zero: that is
  the point of comparing with it.
The device is the one torch finds: cuda, else mps, else cpu. Its forms are not paired with
WebGPU's implementations (they are other programs, not the same calls).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.cases import Case, Group, Suite
from gpuoverhead.drivers.base import Job, Offer, Prepared, Request, without_timestamps
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.gpu import kept
from gpuoverhead.records import AdapterInfo, LeftOut
from gpuoverhead.torch_forms import COMPILE, EAGER, FAMILY, GRAPH, device_name
from gpuoverhead.workloads import registry as workloads

IMPLEMENTATIONS = (FAMILY,)
COMPARED = False
SAMPLE_SHARE = None
TAX_OVER: tuple[str, ...] = ()
SKIPPED = "PyTorch baselines skipped: "
NOT_INSTALLED = "torch is not installed (pip install 'gpuoverhead[torch]')"
FILE = "torch.json"
#: Seconds a device found is trusted (a driver updated in place changes the answer).
KEEP_S = 86400.0
_DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "PYTORCH_ENABLE_MPS_FALLBACK",
                     "PYTHONPATH")  # another torch first on the path: asked again

#: Kernels whose semantics the baseline reproduces (`empty` is one increment of data[0]).
KERNELS = ("add_one", "empty")


def available() -> str | None:
    """None when torch imports (or did, this boot: its device is kept), else why not."""
    if (key := _installed()) is not None and _kept(key) is not None:
        return None
    try:
        import torch  # noqa: F401
    except Exception as exc:
        return f"torch is not usable ({exc}); install gpuoverhead[torch]"
    return None


def left_out(name: str, reason: str, text: str) -> LeftOut:
    """`name` left out for `available`'s `reason`, said in a few words where torch is simply
    not installed."""
    short = NOT_INSTALLED if "No module named 'torch'" in reason else reason
    return LeftOut(name, short, text)


def offers(request: Request, notes: list[str]) -> list[Offer]:
    """The device torch finds, where torch imports (asked by name: else an error); kept a
    day for this torch and this boot (gpuoverhead/gpu/kept.py), since importing torch and
    finding its device took most of a run's planning."""
    key = _installed()
    if key is not None and (info := _kept(key)) is not None:
        return [Offer(info)]
    reason = available()
    if reason is not None:
        if request.named:
            raise UserError(reason)
        notes.append(left_out(FAMILY, reason, SKIPPED + reason))
        return []
    info = adapter_info()
    if key is not None:
        kept.put(FILE, key, dataclasses.asdict(info))
    return [Offer(info)]


def _kept(key: list[Any]) -> AdapterInfo | None:
    """The device kept for this torch, if what was kept reads as one."""
    return kept.get(FILE, key, KEEP_S, _as_info)


def _as_info(found: Any) -> AdapterInfo | None:
    """A kept device as an AdapterInfo, or None where it is not one (gpu/kept.py says so)."""
    types = {f.name: f.type for f in dataclasses.fields(AdapterInfo)}
    if not isinstance(found, dict) or set(found) != set(types) or not all(
            type(found[name]).__name__ == kind for name, kind in types.items()):
        return None
    return AdapterInfo(**found)


def _installed() -> list[Any] | None:
    """What decides torch's answer without importing it: this Python, torch's version and
    files, and the variables that choose its device; None where torch is not installed."""
    try:
        found = importlib.metadata.distribution("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
    files = found.locate_file("torch/__init__.py")
    with contextlib.suppress(OSError):
        return [sys.executable, found.version, str(files), os.stat(files).st_mtime_ns,
                [os.environ.get(v) for v in _DEVICE_VARIABLES]]
    return None


def jobs(group: Group, offer: Offer, notes: list[str]) -> list[Job]:
    """The group's PyTorch cases on this device (none where it has no such kernel)."""
    kind = offer.info.backend
    cases = workloads.torch_cases(group, kind) if group.fusion is not None else \
        _cases(group, kind) if group.kernel.name in KERNELS else ()
    if not cases:
        return []
    mine = replace(group, cases=cases)
    return [Job(mine if offer.info.timestamps else without_timestamps(mine), offer, FAMILY)]


@contextmanager
def prepare(job: Job, rng: np.random.Generator) -> Iterator[Prepared]:
    """In the worker: the group's ops (a workload's PyTorch build, or the kernel's twin)."""
    notes: dict[str, Any] = {}
    if job.group.fusion is not None:
        group, ops, verify, cuda_events = workloads.torch_operations(job.group, rng, notes)
        # CUDA events give ns directly: one "tick" is one ns.
        yield Prepared(group, ops, verify, 1.0 if cuda_events else None, notes)
        return
    group, ops, verify = operations(job.group, rng, notes)
    yield Prepared(group, ops, verify, None, notes)


def setup_hint_s(job: Job) -> float:
    """Start-up expected of a worker before one ran: importing torch (and bringing up CUDA:
    4.8 s a worker on the H100 machine, 1.2 s on the CPU alone), the model's weights, and
    torch.compile's compilations."""
    compiles = sum(c.implementation == COMPILE for c in job.group.cases)
    base = 1.5 if job.adapter.is_software else 3.0
    if job.group.fusion == "decode":  # 50-60 s a worker for Qwen2.5-0.5B's on the H100
        return base + (12.0 * compiles + 10.0) * job.group.elements / 896
    # The first torch.compile of a process brings up inductor (about 20 s on an H200).
    return base + (15.0 + 3.0 * (compiles - 1) if compiles else 0.0)


def listing(browser: str | None, notes: list[str]) -> list[Offer]:
    """None: `gpuoverhead adapters` lists WebGPU's adapters, and importing torch is slow."""
    return []


def libraries() -> dict[str, Any]:
    return {}


def compile_kernels(suite: Suite) -> None:
    """PyTorch compiles no WGSL."""
    return None


def adapter_info() -> AdapterInfo:
    """The torch device described in the schema's words."""
    import torch

    kind = device_name()
    if kind == "cuda":
        name = torch.cuda.get_device_name(0)
        driver = f"torch {torch.__version__}, CUDA {torch.version.cuda}"
        return AdapterInfo(FAMILY, "cuda", "DiscreteGPU", "nvidia" if "NVIDIA" in name.upper()
                           else "amd", 0, name, driver, True)
    if kind == "mps":
        return AdapterInfo(FAMILY, "mps", "IntegratedGPU", "apple", 0x106B, "Apple GPU (MPS)",
                           f"torch {torch.__version__}", False)
    import platform

    return AdapterInfo(FAMILY, "cpu", "CPU", "cpu", 0, platform.processor() or "CPU",
                       f"torch {torch.__version__}", False)


def _cases(group: Group, kind: str) -> tuple[Case, ...]:
    """The torch cases of a kernel group: naive and sequential in each implementation
    available (none for a group of neither: a cadence's)."""
    if not any(c.methodology in ("naive", "sequential") for c in group.cases):
        return ()
    base = Case(group.benchmark, group.kernel.name, group.elements, group.workgroup_size,
                "naive", "-", "wait", (1,), "wrapper", EAGER)
    seq = next((c for c in group.cases if c.methodology == "sequential"), None)
    n_values = seq.n_values if seq else (1, 2)
    out = [base, replace(base, methodology="sequential", n_values=n_values)]
    if kind == "cuda":
        out.append(replace(out[1], implementation=GRAPH))
    capped = tuple(n for n in n_values if n <= group.torch_compile_max_n)
    if len(capped) >= 2:
        out.append(replace(out[1], implementation=COMPILE, n_values=capped))
    return tuple(out)


def operations(group: Group, rng: np.random.Generator, notes: dict[str, Any]
               ) -> tuple[Group, dict[Case, Callable[[int], None]],
                          Callable[[dict[Case, int]], None]]:
    """The group as it can run here (a compile case loses the N that did not compile), the
    timed op of each case, and a check of the outputs after sampling."""
    import torch

    kind = device_name()
    dev = torch.device(kind)

    def sync() -> None:
        if kind == "cuda":
            torch.cuda.synchronize()
        elif kind == "mps":
            torch.mps.synchronize()

    ops: dict[Case, Callable[[int], None]] = {}
    tensors: dict[Case, tuple[Any, np.ndarray]] = {}
    kept = []
    for case in group.cases:
        initial = rng.integers(0, 1 << 20, size=group.elements).astype(np.int32)
        x = torch.from_numpy(initial.copy()).to(dev)
        if case.implementation == GRAPH:
            op = _graph_op(x, case.n_values, sync)
        elif case.implementation == COMPILE:
            case, op = _compiled_op(x, case, sync, notes)
            if op is None:
                continue
        else:
            op = _eager_op(x, sync)
        ops[case], tensors[case] = op, (x, initial)
        kept.append(case)
    sync()

    def verify(counts: dict[Case, int]) -> None:
        for case, (x, initial) in tensors.items():
            got = x.cpu().numpy()
            if not np.array_equal(got, initial + counts[case]):
                raise IntegrityError(f"{case.id}: output check failed: expected "
                                     f"+{counts[case]}, found {int(got[0]) - int(initial[0])}")

    return replace(group, cases=tuple(kept)), ops, verify


def _eager_op(x: Any, sync: Callable[[], None]) -> Callable[[int], tuple[int]]:
    def op(n: int) -> tuple[int]:
        for _ in range(n):
            x.add_(1)
        launched = perf_counter_ns()
        sync()
        return (launched,)

    return op


def _graph_op(x: Any, n_values: tuple[int, ...], sync: Callable[[], None]
              ) -> Callable[[int], None]:
    import torch

    graphs = {}
    for n in n_values:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):  # capture records; it does not run the ops
            for _ in range(n):
                x.add_(1)
        graphs[n] = graph

    def op(n: int) -> tuple[int]:
        graphs[n].replay()
        launched = perf_counter_ns()
        sync()
        return (launched,)

    return op


def _compiled_op(x: Any, case: Case, sync: Callable[[], None], notes: dict[str, Any]
                 ) -> tuple[Case, Callable[[int], None] | None]:
    """One compiled chain per N, shortest first; the first N that fails to compile ends the
    sweep there (longer chains fail the same way), and is recorded with its error."""
    import torch

    compiled: dict[int, Any] = {}
    timings = notes.setdefault("torch_compile", {})
    for n in case.n_values:
        def chain(t: Any, n: int = n) -> Any:
            for _ in range(n):
                t = t + 1
            return t

        start = time.perf_counter()
        try:
            fn = torch.compile(chain, mode="reduce-overhead", dynamic=False)
            fn(x.clone())  # compiles and runs once on a copy: x itself is untouched
            sync()
        except Exception as exc:  # RecursionError, OOM, backend failures: data, not a crash
            timings[str(n)] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            break
        timings[str(n)] = {"compile_s": round(time.perf_counter() - start, 3)}
        compiled[n] = fn
    if len(compiled) < 2:
        return case, None
    case = replace(case, n_values=tuple(compiled))

    def op(n: int) -> tuple[int]:
        x.copy_(compiled[n](x))
        launched = perf_counter_ns()
        sync()
        return (launched,)

    return case, op
