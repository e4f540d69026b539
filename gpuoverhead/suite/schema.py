"""The suite YAML schema (pydantic), built-in defaults, and problems as file:line: key lines."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuoverhead import encodings
from gpuoverhead.suite.model import LOOP_MAX_CELLS, MATMUL_TILE, MAX_CACHE, MODELS, RMSNORM_HIDDEN
from gpuoverhead.suite.source import Loc, YamlDocument
from gpuoverhead.workloads.registry import WORKLOADS

Methodology = Literal["naive", "sequential", "breakdown"]
Encoding = Literal[encodings.NAMES]  # type: ignore[valid-type]
Sync = Literal["wait", "readback"]
Layer = Literal["wrapper", "raw", "native"]
Pattern = Literal[tuple(WORKLOADS)]  # type: ignore[valid-type]
PosInt = Annotated[int, Field(gt=0)]
#: Most operations in one sample: more would take longer than any stall timeout allows.
MAX_N = 65536


def _int_is_float(value: Any) -> Any:
    """Strict mode refuses an int where a float is expected; in YAML `2` means 2.0 here."""
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class _Settings(BaseModel):
    """Every setting a benchmark can take; all optional so that `defaults` can be partial."""

    model_config = ConfigDict(extra="forbid", strict=True)

    elements: list[PosInt] | None = Field(None, min_length=1)
    workgroup_size: PosInt | None = None
    methodologies: list[Methodology] | None = Field(None, min_length=1)
    naive_sync: list[Sync] | None = Field(None, min_length=1)
    encodings: list[Encoding] | None = Field(None, min_length=1)
    layers: list[Layer] | None = Field(None, min_length=1)
    gpu_timestamps: bool | None = None
    n_sweep: list[Annotated[int, Field(gt=0, le=MAX_N)]] | None = Field(None, min_length=2)
    budget_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] | None = None
    target_rel_ci: Annotated[float, Field(gt=0, lt=1)] | None = None
    min_rounds: Annotated[int, Field(ge=3)] | None = None
    max_rounds: Annotated[int, Field(ge=3)] | None = None
    warmup_max_rounds: Annotated[int, Field(ge=1)] | None = None
    torch_compile_max_n: Annotated[int, Field(ge=0)] | None = None
    k_sweep: list[PosInt] | None = Field(None, min_length=1)
    precision: Literal["f32", "f16"] | None = None

    @field_validator("elements", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, int) and not isinstance(value, bool) else value

    _floats = field_validator("budget_s", "target_rel_ci", mode="before")(_int_is_float)

    @field_validator("n_sweep")
    @classmethod
    def _distinct(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and len(set(value)) < 2:
            raise ValueError("needs at least two different N to fit a slope")
        return value


class _Benchmark(_Settings):
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")]
    kernel: Annotated[str, Field(min_length=1)] | None = None
    #: A fusion benchmark names its pattern instead of a kernel (see gpuoverhead/fusion.py).
    fusion: Pattern | None = None


class SuiteModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = None
    description: str | None = None
    #: Seconds the whole run may take: worker processes share what is left (run/budget.py).
    time_limit_s: Annotated[float, Field(gt=0, le=86400, allow_inf_nan=False)] | None = None
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
    "gpu_timestamps": True,
    "n_sweep": [1, 4, 16, 64, 256],
    "budget_s": 2.0,
    "target_rel_ci": 0.02,
    "min_rounds": 10,
    "max_rounds": 100_000,
    "warmup_max_rounds": 30,
    "torch_compile_max_n": 64,
    "k_sweep": [1, 2, 5, 8, 16, 32, 64],
    "precision": "f32",
}


def fusion_problems(bench: _Benchmark, cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """What a fusion pattern cannot do with the sizes given, as (key, message) pairs."""
    found = []
    if bench.kernel is not None:
        found.append(("kernel", f"a fusion benchmark runs its pattern's shipped kernels "
                                f"(shaders/fusion_{bench.fusion}.wgsl); remove `kernel`"))
    if bench.fusion == "loop" and max(cfg["elements"]) > LOOP_MAX_CELLS:
        found.append(("elements", f"the dependent loop keeps all cells in one workgroup: at "
                                  f"most {LOOP_MAX_CELLS} elements"))
    if bench.fusion == "rmsnorm":
        bad = [e for e in cfg["elements"] if e % RMSNORM_HIDDEN]
        if bad:
            found.append(("elements", f"RMSNorm rows have {RMSNORM_HIDDEN} values: elements "
                                      f"must be multiples of {RMSNORM_HIDDEN}, not {bad[0]}"))
    wg = cfg["workgroup_size"]
    if bench.fusion == "rmsnorm" and (wg & (wg - 1) or wg > 1024):
        found.append(("workgroup_size", f"RMSNorm reduces a row in a tree: workgroup_size must "
                                        f"be a power of two up to 1024, not {wg}"))
    if bench.precision == "f16" and bench.fusion != "decode":
        found.append(("precision", "f16 weights exist for the decode step only"))
    if bench.fusion == "decode":
        shapes = ", ".join(f"{h} ({m.name})" for h, m in MODELS.items())
        if bad := [e for e in cfg["elements"] if e not in MODELS]:
            found.append(("elements", f"a decode step's elements name the model by its hidden "
                                      f"size: one of {shapes}, not {bad[0]}"))
        if bad := [k for k in cfg["k_sweep"] if k > MAX_CACHE]:
            found.append(("k_sweep", f"the KV cache (k_sweep) holds at most {MAX_CACHE} "
                                     f"positions, not {bad[0]}"))
    if bench.fusion == "matmul":
        bad = [k for k in cfg["k_sweep"] if k % MATMUL_TILE]
        if bad:
            found.append(("k_sweep", f"matmul sizes (k_sweep) must be multiples of "
                                     f"{MATMUL_TILE}, not {bad[0]}"))
    return found


def error_text(error: Any) -> str:
    """pydantic's message, reworded where the suite's author needs more than it says."""
    if error["type"] == "extra_forbidden":
        loc = error["loc"]
        parent = SuiteModel if len(loc) == 1 else _Settings if loc[0] == "defaults" else _Benchmark
        known = ", ".join(sorted(parent.model_fields))
        return f"unknown key {error['loc'][-1]!r}; known keys: {known}"
    if error["type"] == "missing":
        return "required key is missing"
    return str(error["msg"])


def describe(doc: YamlDocument, loc: Loc, message: str) -> str:
    line = doc.line_of(loc)
    where = f"{doc.path}:{line}" if line else str(doc.path)
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    return f"{where}: {key or '(top level)'}: {message}"


def settings_of(defaults: _Settings, bench: _Benchmark) -> dict[str, Any]:
    merged = dict(BUILTIN_DEFAULTS)
    for layer in (defaults, bench):
        merged.update(layer.model_dump(exclude_none=True, exclude={"name", "kernel", "fusion"}))
    return merged

