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
Pattern = Literal["chain", "loop", "rmsnorm", "matmul"]
PosInt = Annotated[int, Field(gt=0)]

_WRITES_DIRECTIVE = re.compile(r"//\s*gpuoverhead:\s*writes\s*=\s*(all|first)\b")
_FUSION_DIRECTIVE = re.compile(r"//\s*gpuoverhead:\s*fusion\s*=")


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
    k_sweep: list[PosInt] | None = Field(None, min_length=1)

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
    kernel: Annotated[str, Field(min_length=1)] | None = None
    #: A fusion benchmark names its pattern instead of a kernel (see gpuoverhead/fusion.py).
    fusion: Pattern | None = None


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
    "k_sweep": [1, 2, 5, 8, 16, 32, 64],
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
#: Methodology of fusion cases (fused vs unfused forms of the same work).
FUSION = "fusion"
#: Fixed sizes of the fusion patterns: RMSNorm's hidden size (Qwen2.5-0.5B) and dispatches,
#: the most cells the dependent loop holds in one workgroup, matmul's tile.
RMSNORM_HIDDEN = 896
RMSNORM_STEPS = 5
LOOP_MAX_CELLS = 256
MATMUL_TILE = 16
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
    #: Fusion: `unfused`, `fused` or (matmul) `single`; the pattern's K, L or M is `k`.
    variant: str = ""
    k: int = 0

    def dispatches(self, n: int) -> int:
        """Dispatches one sample with N = n issues (the FFI floor issues none); a fusion
        case's N counts units of work, and so does its count."""
        return 0 if self.methodology == FFI_FLOOR else n

    @property
    def id(self) -> str:
        base = f"{self.benchmark}/elements={self.elements}/{self.methodology}"
        if self.methodology == FUSION:
            base = f"{base}/k={self.k}/{self.variant}"
            if self.sync == TIMESTAMPS:
                return f"{base}/gpu-timestamps"
            return f"{base}/{self.implementation}" if self.implementation else base
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
    #: The fusion pattern of a fusion benchmark's group.
    fusion: str | None = None

    @property
    def id(self) -> str:
        if self.fusion == "matmul":
            return f"{self.benchmark}/matmul"
        return f"{self.benchmark}/elements={self.elements}"


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    sha256: str
    groups: tuple[Group, ...]


def load_suite(path: Path, outside_shaders: bool = False) -> Suite:
    """Load, validate and expand a suite; raises UserError listing every problem found.
    `outside_shaders` allows kernel paths that leave the suite's folder."""
    problems = suite_problems(path, outside_shaders)
    if problems:
        more = f" (and {len(problems) - 1} more: run `gpuoverhead validate {path}`)"
        raise UserError(problems[0] + (more if len(problems) > 1 else ""))
    return _expand(path, load_yaml(path), outside_shaders)


def suite_problems(path: Path, outside_shaders: bool = False) -> list[str]:
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
        merged = _merged(model.defaults, bench)
        if bench.fusion is not None:
            problems += [_describe(doc, loc + (key,), message)
                         for key, message in _fusion_problems(bench, merged)]
        elif bench.kernel is None:
            problems.append(_describe(doc, loc + ("kernel",),
                                      "required key is missing (or name a `fusion` pattern)"))
        else:
            try:
                _kernel(doc.path, bench.kernel, outside_shaders)
            except UserError as exc:
                problems.append(_describe(doc, loc + ("kernel",), str(exc)))
        if merged["min_rounds"] > merged["max_rounds"]:
            problems.append(_describe(doc, loc, "min_rounds is larger than max_rounds"))
    return problems


def _fusion_problems(bench: _Benchmark, cfg: dict[str, Any]) -> list[tuple[str, str]]:
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
    if bench.fusion == "matmul":
        bad = [k for k in cfg["k_sweep"] if k % MATMUL_TILE]
        if bad:
            found.append(("k_sweep", f"matmul sizes (k_sweep) must be multiples of "
                                     f"{MATMUL_TILE}, not {bad[0]}"))
    return found


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
        merged.update(layer.model_dump(exclude_none=True, exclude={"name", "kernel", "fusion"}))
    return merged


def _kernel(suite_path: Path, name: str, outside_shaders: bool = False) -> Kernel:
    """Resolve a kernel: a shipped one by name, or a `.wgsl` path relative to the suite,
    inside the suite's folder unless `outside_shaders` (a suite from elsewhere must not read
    arbitrary files by naming `../../x.wgsl` or an absolute path)."""
    if name.endswith(".wgsl"):
        folder = suite_path.parent.resolve()
        path = (folder / name).resolve()
        if not outside_shaders and not path.is_relative_to(folder):
            raise UserError(f"shader path {name!r} leads outside the suite's folder {folder}; "
                            "pass --outside-shaders to allow it")
    else:
        path = SHADERS_DIR / f"{name}.wgsl"
        if not path.is_file() or name.startswith("fusion_"):
            shipped = sorted(p.stem for p in SHADERS_DIR.glob("*.wgsl")
                             if not p.stem.startswith("fusion_"))
            raise UserError(f"unknown kernel {name!r}; shipped kernels: {', '.join(shipped)} "
                            "(fusion kernels are named by `fusion: <pattern>`)")
    source = _read_shader(path)
    if _FUSION_DIRECTIVE.search(source):
        raise UserError(f"{path} is a fusion pattern's kernel; name it with `fusion:`")
    match = _WRITES_DIRECTIVE.search(source)
    writes = match.group(1) if match else "all"
    return Kernel(name=Path(name).stem, path=path, source=source, writes=writes)  # type: ignore[arg-type]


def _read_shader(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read shader {path}: {exc.strerror or exc}") from None


def _fusion_kernel(pattern: str) -> Kernel:
    path = SHADERS_DIR / f"fusion_{pattern}.wgsl"
    return Kernel(name=path.stem, path=path, source=_read_shader(path), writes="all")


def _fusion_groups(name: str, pattern: str, cfg: dict[str, Any], sampling: Sampling
                   ) -> list[Group]:
    """A fusion benchmark's groups: per element count, every K with its unfused and fused
    form (and GPU-timestamp twins), interleaved; matmul: one group over its sizes M."""
    kernel = _fusion_kernel(pattern)
    n_values = tuple(sorted(set(cfg["n_sweep"])))
    syncs = ["wait", TIMESTAMPS] if cfg["gpu_timestamps"] else ["wait"]
    base = Case(name, kernel.name, 0, cfg["workgroup_size"], FUSION, "dispatch", "wait",
                n_values)
    ks = list(dict.fromkeys(cfg["k_sweep"]))
    if pattern == "matmul":
        cases = tuple(replace(base, elements=m * m, workgroup_size=MATMUL_TILE ** 2, k=m,
                              variant="single", sync=s) for m in ks for s in syncs)
        return [Group(name, kernel, max(ks) ** 2, MATMUL_TILE ** 2, sampling, cases,
                      cfg["torch_compile_max_n"], pattern)]
    if pattern == "rmsnorm":
        ks = [RMSNORM_STEPS]
    groups = []
    for elements in cfg["elements"]:
        size = elements if pattern == "loop" else cfg["workgroup_size"]
        cases = tuple(replace(base, elements=elements, workgroup_size=size, k=k, variant=v,
                              sync=s)
                      for k in ks for v in ("unfused", "fused") for s in syncs)
        groups.append(Group(name, kernel, elements, size, sampling, cases,
                            cfg["torch_compile_max_n"], pattern))
    return groups


def _expand(path: Path, doc: YamlDocument, outside_shaders: bool) -> Suite:
    model = _Suite.model_validate(doc.data)
    groups = []
    for bench in model.benchmarks:
        cfg = _merged(model.defaults, bench)
        sampling = Sampling(
            budget_s=cfg["budget_s"],
            target_rel_ci=cfg["target_rel_ci"],
            min_rounds=cfg["min_rounds"],
            max_rounds=cfg["max_rounds"],
            warmup_max_rounds=cfg["warmup_max_rounds"],
        )
        if bench.fusion is not None:
            groups += _fusion_groups(bench.name, bench.fusion, cfg, sampling)
            continue
        kernel = _kernel(path, bench.kernel, outside_shaders)
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
