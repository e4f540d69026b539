"""Suites: YAML files of benchmarks, validated with file/line/key errors, expanded into cases.

A suite has `defaults` and a list of `benchmarks`; each benchmark inherits the defaults and
overrides what it names. A benchmark expands into one *group* per element count: the group
is the set of cases that are compared with each other and therefore sampled interleaved
(naive variants and sequential encodings of one kernel on one buffer size).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuoverhead.errors import UserError
from gpuoverhead.resources import SHADERS_DIR
from gpuoverhead.yaml_source import Loc, YamlDocument, load_yaml

Methodology = Literal["naive", "sequential", "breakdown"]
Encoding = Literal["submit", "pass", "dispatch"]
Sync = Literal["wait", "readback"]
Layer = Literal["wrapper", "raw", "native"]
PosInt = Annotated[int, Field(gt=0)]

_WRITES_DIRECTIVE = re.compile(r"//\s*gpuoverhead:\s*writes\s*=\s*(all|first)\b")


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
    n_sweep: list[PosInt] | None = Field(None, min_length=2)
    budget_s: Annotated[float, Field(gt=0)] | None = None
    target_rel_ci: Annotated[float, Field(gt=0, lt=1)] | None = None
    min_rounds: Annotated[int, Field(ge=3)] | None = None
    max_rounds: Annotated[int, Field(ge=3)] | None = None
    warmup_max_rounds: Annotated[int, Field(ge=1)] | None = None
    torch_compile_max_n: Annotated[int, Field(ge=0)] | None = None

    @field_validator("elements", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("budget_s", "target_rel_ci", mode="before")
    @classmethod
    def _int_is_float(cls, value: Any) -> Any:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("n_sweep")
    @classmethod
    def _distinct(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and len(set(value)) < 2:
            raise ValueError("needs at least two different N to fit a slope")
        return value


class _Benchmark(_Settings):
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")]
    kernel: Annotated[str, Field(min_length=1)]


class _Suite(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = None
    description: str | None = None
    defaults: _Settings = _Settings()
    benchmarks: list[_Benchmark] = Field(min_length=1)


#: Values for settings that neither the suite's defaults nor the benchmark give.
BUILTIN_DEFAULTS: dict[str, Any] = {
    "elements": [1],
    "workgroup_size": 64,
    "methodologies": ["naive", "sequential"],
    "naive_sync": ["wait", "readback"],
    "encodings": ["submit", "pass", "dispatch"],
    "layers": ["wrapper"],
    "gpu_timestamps": True,
    "n_sweep": [1, 4, 16, 64, 256],
    "budget_s": 2.0,
    "target_rel_ci": 0.02,
    "min_rounds": 10,
    "max_rounds": 100_000,
    "warmup_max_rounds": 30,
    "torch_compile_max_n": 64,
}


@dataclass(frozen=True)
class Kernel:
    """A WGSL kernel and its output contract.

    `writes` says what each dispatch adds 1 to: `all` of the first `elements` u32 of
    binding 0, or only the `first` one. The shader declares it in a comment line
    `// gpuoverhead: writes=first` (default: all).
    """

    name: str
    path: Path
    source: str
    writes: Literal["all", "first"]


@dataclass(frozen=True)
class Sampling:
    """How long and how precisely a group is sampled."""

    budget_s: float
    target_rel_ci: float
    min_rounds: int
    max_rounds: int
    warmup_max_rounds: int


#: Methodology of the case that times a trivial native call (the FFI floor of `raw`).
FFI_FLOOR = "ffi-floor"
#: Sync of the sequential case timed by GPU timestamp queries instead of the CPU clock.
TIMESTAMPS = "timestamps"
#: The FFI floor's sweep is the N sweep times this: one call costs far less than a dispatch.
FLOOR_CALLS_PER_N = 16


@dataclass(frozen=True)
class Case:
    """One measured combination: methodology, encoding, completion sync and layer.

    A sequential case is a series over `n_values`; its samples carry their own N. `layer`
    says what drives the calls: the Python `wrapper`, the `raw` FFI or a `native` C loop.
    """

    benchmark: str
    kernel: str
    elements: int
    workgroup_size: int
    methodology: str
    encoding: str
    sync: str
    n_values: tuple[int, ...]
    layer: str = "wrapper"
    #: Set where the case names its own implementation (the PyTorch baselines).
    implementation: str | None = None

    def dispatches(self, n: int) -> int:
        """Dispatches one sample with N = n issues (the FFI floor issues none)."""
        return 0 if self.methodology == FFI_FLOOR else n

    @property
    def id(self) -> str:
        base = f"{self.benchmark}/elements={self.elements}/{self.methodology}"
        if self.implementation:
            return f"{base}/{self.implementation}"
        if self.methodology == "naive":
            return f"{base}/{self.sync}"
        if self.methodology == "sequential":
            driver = "gpu-timestamps" if self.sync == TIMESTAMPS else self.layer
            return f"{base}/{self.encoding}/{driver}"
        return f"{base}/{self.layer}"


@dataclass(frozen=True)
class Group:
    """Cases of one benchmark at one element count, sampled interleaved round by round."""

    benchmark: str
    kernel: Kernel
    elements: int
    workgroup_size: int
    sampling: Sampling
    cases: tuple[Case, ...]
    #: Longest N-op chain handed to torch.compile in the PyTorch baseline (0: none).
    torch_compile_max_n: int = 64

    @property
    def id(self) -> str:
        return f"{self.benchmark}/elements={self.elements}"


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    sha256: str
    groups: tuple[Group, ...]


def load_suite(path: Path) -> Suite:
    """Load, validate and expand a suite; raises UserError listing every problem found."""
    problems = suite_problems(path)
    if problems:
        more = f" (and {len(problems) - 1} more: run `gpuoverhead validate {path}`)"
        raise UserError(problems[0] + (more if len(problems) > 1 else ""))
    return _expand(path, load_yaml(path))


def suite_problems(path: Path) -> list[str]:
    """Every problem of a suite as 'file:line: key: message' lines; empty when it is sound."""
    try:
        doc = load_yaml(path)
    except UserError as exc:
        return [str(exc)]
    try:
        model = _Suite.model_validate(doc.data)
    except ValidationError as exc:
        return [_describe(doc, tuple(err["loc"]), _message(err)) for err in exc.errors()]
    problems = []
    seen: set[str] = set()
    for i, bench in enumerate(model.benchmarks):
        loc: Loc = ("benchmarks", i)
        if bench.name in seen:
            message = f"duplicate benchmark name {bench.name!r}"
            problems.append(_describe(doc, loc + ("name",), message))
        seen.add(bench.name)
        try:
            _kernel(doc.path, bench.kernel)
        except UserError as exc:
            problems.append(_describe(doc, loc + ("kernel",), str(exc)))
        merged = _merged(model.defaults, bench)
        if merged["min_rounds"] > merged["max_rounds"]:
            problems.append(_describe(doc, loc, "min_rounds is larger than max_rounds"))
    return problems


def _message(error: Any) -> str:
    """pydantic's message, reworded where the suite's author needs more than it says."""
    if error["type"] == "extra_forbidden":
        loc = error["loc"]
        parent = _Suite if len(loc) == 1 else _Settings if loc[0] == "defaults" else _Benchmark
        known = ", ".join(sorted(parent.model_fields))
        return f"unknown key {error['loc'][-1]!r}; known keys: {known}"
    if error["type"] == "missing":
        return "required key is missing"
    return str(error["msg"])


def _describe(doc: YamlDocument, loc: Loc, message: str) -> str:
    line = doc.line_of(loc)
    where = f"{doc.path}:{line}" if line else str(doc.path)
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    return f"{where}: {key or '(top level)'}: {message}"


def _merged(defaults: _Settings, bench: _Benchmark) -> dict[str, Any]:
    merged = dict(BUILTIN_DEFAULTS)
    for layer in (defaults, bench):
        merged.update(layer.model_dump(exclude_none=True, exclude={"name", "kernel"}))
    return merged


def _kernel(suite_path: Path, name: str) -> Kernel:
    """Resolve a kernel: a shipped one by name, or a `.wgsl` path relative to the suite."""
    if name.endswith(".wgsl"):
        path = (suite_path.parent / name).resolve()
    else:
        path = SHADERS_DIR / f"{name}.wgsl"
        if not path.is_file():
            shipped = sorted(p.stem for p in SHADERS_DIR.glob("*.wgsl"))
            raise UserError(f"unknown kernel {name!r}; shipped kernels: {', '.join(shipped)}")
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read shader {path}: {exc.strerror or exc}") from None
    match = _WRITES_DIRECTIVE.search(source)
    writes = match.group(1) if match else "all"
    return Kernel(name=Path(name).stem, path=path, source=source, writes=writes)  # type: ignore[arg-type]


def _expand(path: Path, doc: YamlDocument) -> Suite:
    model = _Suite.model_validate(doc.data)
    groups = []
    for bench in model.benchmarks:
        cfg = _merged(model.defaults, bench)
        kernel = _kernel(path, bench.kernel)
        sampling = Sampling(
            budget_s=cfg["budget_s"],
            target_rel_ci=cfg["target_rel_ci"],
            min_rounds=cfg["min_rounds"],
            max_rounds=cfg["max_rounds"],
            warmup_max_rounds=cfg["warmup_max_rounds"],
        )
        n_values = tuple(sorted(set(cfg["n_sweep"])))
        for elements in cfg["elements"]:
            base = Case(bench.name, kernel.name, elements, cfg["workgroup_size"],
                        "naive", "submit", "wait", (1,))
            cases = []
            if "naive" in cfg["methodologies"]:
                cases += [replace(base, sync=s) for s in dict.fromkeys(cfg["naive_sync"])]
            layers = list(dict.fromkeys(cfg["layers"]))
            if "sequential" in cfg["methodologies"]:
                seq = replace(base, methodology="sequential", n_values=n_values)
                cases += [replace(seq, encoding=e, layer=layer)
                          for layer in layers for e in dict.fromkeys(cfg["encodings"])]
                if cfg["gpu_timestamps"]:
                    cases.append(replace(seq, encoding="dispatch", sync=TIMESTAMPS))
            if "breakdown" in cfg["methodologies"]:
                cases += [replace(base, methodology="breakdown", layer=layer)
                          for layer in layers if layer != "native"]
            if "raw" in layers:
                cases.append(replace(base, methodology=FFI_FLOOR, encoding="-", sync="-",
                                     layer="raw",
                                     n_values=tuple(n * FLOOR_CALLS_PER_N for n in n_values)))
            groups.append(Group(bench.name, kernel, elements, cfg["workgroup_size"],
                                sampling, tuple(cases), cfg["torch_compile_max_n"]))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Suite(path=path, name=model.name or path.stem, sha256=digest, groups=tuple(groups))


def quick(suite: Suite) -> Suite:
    """A smoke test of the same groups (`--quick`): a tiny budget, the N sweep's first four
    values and no torch.compile, so that even a CPU gets through the default suite fast."""
    smoke = Sampling(budget_s=0.25, target_rel_ci=0.05, min_rounds=3, max_rounds=50,
                     warmup_max_rounds=3)

    def shrink(case: Case) -> Case:
        return replace(case, n_values=case.n_values[:4])

    return replace(suite, groups=tuple(
        replace(g, sampling=smoke, cases=tuple(map(shrink, g.cases)), torch_compile_max_n=0)
        for g in suite.groups))
