"""The suite YAML schema (pydantic), built-in defaults, and problems as file:line: key lines."""

from __future__ import annotations

import re
from math import isqrt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuoverhead import encodings
from gpuoverhead.cases import MOST_PROCESSES
from gpuoverhead.errors import shortened
from gpuoverhead.methods import SUITE_NAMES
from gpuoverhead.suite.source import Loc, YamlDocument, key_text
from gpuoverhead.workloads.decode_model import MAX_BINDING
from gpuoverhead.workloads.matmul import MATMUL_TILE
from gpuoverhead.workloads.registry import WORKLOADS

Methodology = Literal[SUITE_NAMES]  # type: ignore[valid-type]
Encoding = Literal[encodings.NAMES]  # type: ignore[valid-type]
Sync = Literal["wait", "readback"]
Layer = Literal["wrapper", "raw", "native"]
BindGroup = Literal["reused", "per_dispatch"]
Pattern = Literal[tuple(WORKLOADS)]  # type: ignore[valid-type]
PosInt = Annotated[int, Field(gt=0)]
#: Most operations in one sample: more would take longer than any stall timeout allows.
MAX_N = 65536
#: The longest idle gap between a cadence's bursts (a second: slower is no cadence).
MAX_GAP_MS = 1000.0
#: Most dispatches one unit times one sample's units may add up to (a fusion workload's
#: largest K steps or ops a unit, times its largest N): an H100 takes over 1 s for the
#: dependent loop's 10,000 steps, and fusion.yaml asks 80,000 a sample; a million take
#: minutes on a slow adapter, longer than a stall timeout allows.
MAX_DISPATCHES = 1 << 20
#: Workloads whose K counts dispatches a unit (steps or ops); matmul's K is a size, the
#: decode step's a cache length (its own limit), the others take none.
K_STEPS = ("chain", "loop", "population", "recurrent")
#: Largest matmul size M (k_sweep): M x M f32 in one binding, a multiple of its tile.
MAX_MATMUL = isqrt(MAX_BINDING // 4) // MATMUL_TILE * MATMUL_TILE


def _int_is_float(value: Any) -> Any:
    """Strict mode refuses an int where a float is expected; in YAML `2` means 2.0 here.
    YAML 1.1 reads `1e-3` (no dot, or no sign) as text: said as such, since "a valid
    number" is what its author believes they wrote."""
    if isinstance(value, str) and (found := _EXPONENT.fullmatch(value)):
        sign, whole, part, exponent = found.groups()
        raise ValueError(f"{value!r} is text to YAML 1.1 (an exponent needs a dot and a "
                         f"sign): write {sign}{whole}.{part or '0'}e"
                         f"{exponent if exponent[0] in '+-' else '+' + exponent}")
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: A number with an exponent that YAML 1.1's float pattern does not take.
_EXPONENT = re.compile(r"([-+]?)([0-9][0-9_]*)(?:\.([0-9_]*))?[eE]([-+]?[0-9]+)")


class _Settings(BaseModel):
    """Every setting a benchmark can take; all optional so that `defaults` can be partial."""

    model_config = ConfigDict(extra="forbid", strict=True)

    elements: list[PosInt] | None = Field(None, min_length=1)
    workgroup_size: PosInt | None = None
    methodologies: list[Methodology] | None = Field(None, min_length=1)
    naive_sync: list[Sync] | None = Field(None, min_length=1)
    encodings: list[Encoding] | None = Field(None, min_length=1)
    layers: list[Layer] | None = Field(None, min_length=1)
    #: Sequential cases with one bind group reused (every layer), and, with `per_dispatch`,
    #: wrapper-layer twins that create theirs before each dispatch (`bind_group_ns`).
    bind_group: list[BindGroup] | None = Field(None, min_length=1)
    gpu_timestamps: bool | None = None
    n_sweep: list[Annotated[int, Field(gt=0, le=MAX_N)]] | None = Field(None, min_length=2)
    #: A fusion benchmark's fused forms' N sweep (default: `n_sweep`): a fused unit is cheap,
    #: and its samples must lie well above a completion floor (docs/methodology.md).
    fused_n_sweep: list[Annotated[int, Field(gt=0, le=MAX_N)]] | None = Field(
        None, min_length=2)
    budget_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] | None = None
    target_rel_ci: Annotated[float, Field(gt=0, lt=1)] | None = None
    min_rounds: Annotated[int, Field(ge=3)] | None = None
    max_rounds: Annotated[int, Field(ge=3)] | None = None
    warmup_max_rounds: Annotated[int, Field(ge=1)] | None = None
    torch_compile_max_n: Annotated[int, Field(ge=0)] | None = None
    #: Seconds one torch.compile build may take before it is a failed case's row.
    compile_limit_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] | None = None
    k_sweep: list[Annotated[int, Field(gt=0, le=MAX_DISPATCHES)]] | None = Field(
        None, min_length=1)
    precision: Literal["f32", "f16"] | None = None
    #: Steps of one sample of a host-read loop (the decode step's token loop, the recurrent
    #: step's `host_reads`; workloads/work.read_loop).
    loop_tokens: Annotated[int, Field(gt=0, le=MAX_N)] | None = None
    #: The recurrent step's host-read loops (synced, pipelined, never) and hybrid form.
    host_reads: bool | None = None
    #: States stepped side by side (a fusion workload that has a batch: the recurrent step).
    batch: Annotated[int, Field(ge=1, le=1024)] | None = None
    #: The cadence methodology's idle ms between bursts, each gap a group of its own (so
    #: its own processes), and the ops of a burst, issued back to back before its one wait.
    gaps_ms: list[Annotated[float, Field(ge=0, le=MAX_GAP_MS, allow_inf_nan=False)]] | None \
        = Field(None, min_length=1)
    burst: Annotated[int, Field(gt=0, le=MAX_N)] | None = None

    @field_validator("gaps_ms", mode="before")
    @classmethod
    def _gaps(cls, value: Any) -> Any:
        return [_int_is_float(v) for v in value] if isinstance(value, list) else value

    @field_validator("elements", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, int) and not isinstance(value, bool) else value

    _floats = field_validator("budget_s", "target_rel_ci", "compile_limit_s",
                              mode="before")(_int_is_float)

    @field_validator("n_sweep", "fused_n_sweep")
    @classmethod
    def _distinct(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and len(set(value)) < 2:
            raise ValueError("needs at least two different N to fit a slope")
        return value


#: Longest suite or benchmark name (as a run id): each is echoed in a run's lines and rows.
MAX_NAME = 100
#: Longest kernel path (Linux's PATH_MAX) and suite description.
MAX_PATH = 4096


class _Benchmark(_Settings):
    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME,
                               pattern=r"^[A-Za-z0-9_.-]+$")]
    kernel: Annotated[str, Field(min_length=1, max_length=MAX_PATH)] | None = None
    #: A fusion benchmark names its pattern instead of a kernel (see gpuoverhead/fusion.py).
    fusion: Pattern | None = None


class SuiteModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str, Field(min_length=1, max_length=MAX_NAME)] | None = None
    description: Annotated[str, Field(max_length=MAX_PATH)] | None = None
    #: Seconds the whole run may take: worker processes share what is left (run/budget.py);
    #: less than one cannot hold a worker's start-up.
    time_limit_s: Annotated[float, Field(ge=1, le=86400, allow_inf_nan=False)] | None = None
    #: Worker processes per job of a plain run (default cases.DEFAULT_PROCESSES), sharing
    #: each case's `budget_s`; `--processes` overrides it.
    processes: Annotated[int, Field(ge=1, le=MOST_PROCESSES)] | None = None
    #: `hardware`: the browser's WebGPU adapter must be a GPU; where the page gets a software
    #: one (SwiftShader), chromium is left out of the run, or the run exits 2 if it was asked
    #: for by name (drivers/chromium.py). `any` (the default) takes what the page gets.
    browser_adapter: Literal["any", "hardware"] | None = None
    defaults: _Settings = _Settings()

    _floats = field_validator("time_limit_s", mode="before")(_int_is_float)
    benchmarks: list[_Benchmark] = Field(min_length=1)


#: Values for settings that neither the suite's defaults nor the benchmark give.
BUILTIN_DEFAULTS: dict[str, Any] = {
    "elements": [1],
    "workgroup_size": 64,
    "methodologies": ["naive", "sequential"],
    "naive_sync": ["wait", "readback"],
    "encodings": list(encodings.NAMES),
    "layers": ["wrapper"],
    "bind_group": ["reused"],
    "gpu_timestamps": True,
    "n_sweep": [1, 4, 16, 64, 256],
    "budget_s": 2.0,
    "target_rel_ci": 0.02,
    "min_rounds": 10,
    "max_rounds": 100_000,
    "warmup_max_rounds": 30,
    "torch_compile_max_n": 64,
    "compile_limit_s": 120.0,
    "k_sweep": [1, 2, 5, 8, 16, 32, 64],
    "precision": "f32",
    "loop_tokens": 256,
    "host_reads": False,
    "batch": 1,
    "gaps_ms": [0.0, 1.0, 4.0, 16.0, 50.0],
    "burst": 64,
}


def fusion_problems(bench: _Benchmark, cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """What a fusion workload cannot do with the settings given, as (key, message) pairs."""
    workload = WORKLOADS[bench.fusion]
    found = []
    if bench.kernel is not None:
        found.append(("kernel", f"a fusion benchmark runs its pattern's shipped kernels "
                                f"(shaders/fusion_{bench.fusion}.wgsl); remove `kernel`"))
    if bench.precision is not None and bench.precision not in workload.PRECISIONS:
        found.append(("precision", precision_message(bench.precision)))
    if cfg["batch"] != 1 and not getattr(workload, "BATCHED", False):
        found.append(("batch", BATCH_MESSAGE))
    if bench.bind_group is not None:
        found.append(("bind_group", "a fusion benchmark has no bind_group variant "
                                    "(it is the sequential methodology's): remove it"))
    if cfg["host_reads"] and not getattr(workload, "HOST_READS", False):
        found.append(("host_reads", HOST_READS_MESSAGE))
    if problem := k_sweep_problem(bench.fusion, cfg):
        found.append(("k_sweep", problem))
    return found + workload.problems(cfg)


def k_sweep_problem(pattern: str, cfg: dict[str, Any]) -> str | None:
    """Why a fusion workload's K cannot run (K x N dispatches a sample, a matmul too large
    for one binding), or None: a run would otherwise stop at its time limit, not here."""
    k, n = max(cfg["k_sweep"]), max(cfg["n_sweep"])
    if pattern in K_STEPS and k * n > MAX_DISPATCHES:
        return (f"K = {k} dispatches a unit times N = {n} units a sample is {k * n:,}, over "
                f"the {MAX_DISPATCHES:,} a sample can issue in time: lower the largest K or N")
    if pattern == "matmul" and k > MAX_MATMUL:
        return (f"a matmul of size {k} holds {k * k * 4:,} bytes, over the {MAX_BINDING:,} of "
                f"one binding: at most {MAX_MATMUL}")
    return None


#: Where a batch other than 1 is asked of what has none.
BATCH_MESSAGE = "a batch exists for the `recurrent` workload only (remove `batch`)"
HOST_READS_MESSAGE = ("host-read loops are the `recurrent` workload's (the decode step has "
                      "its token loop): remove `host_reads`")


def bind_group_problem(cfg: dict[str, Any]) -> str | None:
    """Why a kernel benchmark's `bind_group` cannot be run as asked, or None (without
    `sequential` in its methodologies it asks for nothing, as `encodings` does)."""
    if "per_dispatch" not in cfg["bind_group"]:
        return None
    if "reused" not in cfg["bind_group"]:
        return "per_dispatch is measured against reused: list both"
    if "wrapper" not in cfg["layers"]:
        return "per_dispatch runs in the wrapper layer only: list `wrapper` in `layers`"
    return None


def precision_message(precision: str) -> str:
    names = [f"`{name}`" for name, w in WORKLOADS.items() if precision in w.PRECISIONS]
    return f"{precision} weights exist for the {', '.join(names)} workload only"


def error_text(error: Any) -> str:
    """pydantic's message, reworded where the suite's author needs more than it says."""
    if error["type"] == "extra_forbidden":
        loc = error["loc"]
        parent = SuiteModel if len(loc) == 1 else _Settings if loc[0] == "defaults" else _Benchmark
        known = ", ".join(sorted(parent.model_fields))
        return f"unknown key {shortened(str(error['loc'][-1]))!r}; known keys: {known}"
    if error["type"] == "missing":
        return "required key is missing"
    return str(error["msg"])


def describe(doc: YamlDocument, loc: Loc, message: str) -> str:
    line = doc.line_of(loc)
    where = f"{doc.path}:{line}" if line else str(doc.path)
    return f"{where}: {key_text(loc)}: {message}"


def settings_of(defaults: _Settings, bench: _Benchmark) -> dict[str, Any]:
    merged = dict(BUILTIN_DEFAULTS)
    for layer in (defaults, bench):
        merged.update(layer.model_dump(exclude_none=True, exclude={"name", "kernel", "fusion"}))
    return merged

