"""Suites: YAML files of benchmarks, validated with file/line/key errors, expanded into cases.

A suite has `defaults` and a list of `benchmarks`; each benchmark inherits the defaults and
overrides what it names. A benchmark expands into one *group* per element count: the group
is the set of cases that are compared with each other and therefore sampled interleaved
(naive variants and sequential encodings of one kernel on one buffer size).
"""
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuoverhead.cases import (
    CADENCE,
    DEFAULT_PROCESSES,
    FUSION,
    TIMESTAMPS,
    Case,
    Group,
    Sampling,
    Suite,
)
from gpuoverhead.errors import UserError
from gpuoverhead.methods import METHODS
from gpuoverhead.suite.schema import (
    BATCH_MESSAGE,
    HOST_READS_MESSAGE,
    SuiteModel,
    _Benchmark,
    _Settings,
    bind_group_problem,
    describe,
    error_text,
    fusion_problems,
    precision_message,
    settings_of,
)
from gpuoverhead.suite.shaders import f16_kernel, fusion_kernel, resolve_kernel
from gpuoverhead.suite.source import Loc, YamlDocument, load_yaml
from gpuoverhead.workloads.groups import Request
from gpuoverhead.workloads.registry import WORKLOADS


def load_suite(path: Path, outside_shaders: bool = False) -> Suite:
    """Load, validate and expand a suite; raises UserError listing every problem found.
    `outside_shaders` allows kernel paths that leave the suite's folder."""
    suite, problems = checked_suite(path, outside_shaders)
    if suite is None:
        more = f" (and {len(problems) - 1} more: run `gpuoverhead validate {path}`)"
        raise UserError(problems[0] + (more if len(problems) > 1 else ""))
    return suite


def checked_suite(path: Path, outside_shaders: bool = False) -> tuple[Suite | None, list[str]]:
    """The suite expanded, or None with its problems (`suite_problems`), from one parse of
    its file and one schema check."""
    try:
        doc = load_yaml(path)
    except UserError as exc:
        return None, [str(exc)]
    model, problems = _checked(doc, outside_shaders)
    if problems:  # a model that failed its schema (None) always has some
        return None, problems
    assert model is not None
    return _expand(path, doc, model, outside_shaders), []


def suite_problems(path: Path, outside_shaders: bool = False) -> list[str]:
    """Every problem of a suite as 'file:line: key: message' lines; empty when it is sound."""
    try:
        doc = load_yaml(path)
    except UserError as exc:
        return [str(exc)]
    return _checked(doc, outside_shaders)[1]


def _checked(doc: YamlDocument, outside_shaders: bool) -> tuple[SuiteModel | None, list[str]]:
    """The suite's model where it passes the schema (else None), and every problem. Schema
    errors do not hide the rest: the benchmarks whose settings (their own and those they take
    from `defaults`) pass the schema are checked in full, the others for what needs none of
    their settings (a duplicate name, a kernel file that is not there)."""
    try:
        model = SuiteModel.model_validate(doc.data)
    except ValidationError as exc:
        errors = exc.errors()
        return None, [describe(doc, tuple(err["loc"]), error_text(err)) for err in errors] + \
            _benchmark_problems(doc, *_sound_parts(doc.data, errors), outside_shaders)
    return model, _benchmark_problems(doc, model.defaults,
                                      [(i, b, True) for i, b in enumerate(model.benchmarks)],
                                      outside_shaders)


def _sound_parts(data: Any, errors: list[Any]
                 ) -> tuple[_Settings, list[tuple[int, _Benchmark, bool]]]:
    """Of a suite that failed its schema: the defaults less their failed keys, and each
    benchmark that still has a name once its failed keys are left out, with whether it is
    whole (no failed setting of its own, none among the defaults it takes; an unknown key
    is no setting)."""
    broken_defaults: set[Any] = set()  # failed keys; None: the defaults as a whole
    broken: dict[Any, set[Any]] = {}  # the same per benchmark index
    for err in errors:
        loc = tuple(err["loc"])
        if loc[0] == "defaults":
            broken_defaults.add(loc[1] if len(loc) > 1 else None)
        elif loc[0] == "benchmarks" and len(loc) > 1:
            broken.setdefault(loc[1], set()).add(loc[2] if len(loc) > 2 else None)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        return _Settings(), []
    raw_defaults = data.get("defaults") or {}
    defaults = _Settings() if None in broken_defaults else _Settings.model_validate(
        {k: v for k, v in raw_defaults.items() if k not in broken_defaults})
    parts = []
    for i, raw in enumerate(data["benchmarks"]):
        mine = broken.get(i, set())
        if None in mine:
            continue
        try:
            bench = _Benchmark.model_validate({k: v for k, v in raw.items() if k not in mine})
        except ValidationError:  # its name failed, or is missing
            continue
        settings = (mine | broken_defaults - set(raw)) & set(_Benchmark.model_fields)
        parts.append((i, bench, not settings and None not in broken_defaults))
    return defaults, parts


def _benchmark_problems(doc: YamlDocument, defaults: _Settings,
                        benchmarks: list[tuple[int, _Benchmark, bool]],
                        outside_shaders: bool) -> list[str]:
    """The problems of each benchmark beyond the schema's: in full where it is whole, else
    its name and kernel file only."""
    problems = []
    seen: set[str] = set()
    for i, bench, whole in benchmarks:
        loc: Loc = ("benchmarks", i)
        if bench.name in seen:
            message = f"duplicate benchmark name {bench.name!r}"
            problems.append(describe(doc, loc + ("name",), message))
        seen.add(bench.name)
        if not whole:
            if bench.kernel is not None and bench.fusion is None:
                problems += _kernel_problems(doc, loc, bench.kernel, outside_shaders)
            continue
        cfg = settings_of(defaults, bench)
        if bench.fusion is not None:
            problems += [describe(doc, loc + (key,), message)
                         for key, message in fusion_problems(bench, cfg)]
        elif bench.precision not in (None, "f32"):
            problems.append(describe(doc, loc + ("precision",),
                                      precision_message(bench.precision)))
        elif cfg["batch"] != 1:
            problems.append(describe(doc, loc + ("batch",), BATCH_MESSAGE))
        elif cfg["host_reads"]:
            problems.append(describe(doc, loc + ("host_reads",), HOST_READS_MESSAGE))
        elif bench.kernel is None:
            problems.append(describe(doc, loc + ("kernel",),
                                      "required key is missing (or name a `fusion` pattern)"))
        else:
            problems += _kernel_problems(doc, loc, bench.kernel, outside_shaders)
        if bench.fusion is None and (bind := bind_group_problem(cfg)):
            problems.append(describe(doc, loc + ("bind_group",), bind))
        if cfg["min_rounds"] > cfg["max_rounds"]:
            problems.append(describe(doc, loc, "min_rounds is larger than max_rounds"))
    return problems


def _kernel_problems(doc: YamlDocument, loc: Loc, kernel: str, outside_shaders: bool
                     ) -> list[str]:
    try:
        resolve_kernel(doc.path, kernel, outside_shaders)
    except UserError as exc:
        return [describe(doc, loc + ("kernel",), str(exc))]
    return []


def _fusion_groups(name: str, pattern: str, cfg: dict[str, Any], sampling: Sampling
                   ) -> list[Group]:
    """A fusion benchmark's groups, as its workload lays them out (workloads/groups.py)."""
    kernel = fusion_kernel(pattern)
    if cfg["precision"] == "f16":
        kernel = f16_kernel(kernel)
    base = Case(name, kernel.name, 0, cfg["workgroup_size"], FUSION, "dispatch", "wait",
                tuple(sorted(set(cfg["n_sweep"]))))
    syncs = ("wait", TIMESTAMPS) if cfg["gpu_timestamps"] else ("wait",)
    return WORKLOADS[pattern].groups(Request(pattern, kernel, cfg, sampling, base, syncs))


def _expand(path: Path, doc: YamlDocument, model: SuiteModel, outside_shaders: bool) -> Suite:
    groups = []
    for bench in model.benchmarks:
        cfg = settings_of(model.defaults, bench)
        sampling = Sampling(
            budget_per_case_s=cfg["budget_s"],
            target_rel_ci=cfg["target_rel_ci"],
            min_rounds=cfg["min_rounds"],
            max_rounds=cfg["max_rounds"],
            warmup_max_rounds=cfg["warmup_max_rounds"],
        )
        if bench.fusion is not None:
            groups += _fusion_groups(bench.name, bench.fusion, cfg, sampling)
            continue
        kernel = resolve_kernel(path, bench.kernel, outside_shaders)
        for elements in cfg["elements"]:
            base = Case(bench.name, kernel.name, elements, cfg["workgroup_size"], "naive",
                        "submit", "wait", tuple(sorted(set(cfg["n_sweep"]))))
            cases = tuple(c for method in METHODS for c in method.cases(base, cfg))
            groups += [Group(bench.name, kernel, elements, cfg["workgroup_size"], sampling,
                             mine, cfg["torch_compile_max_n"],
                             compile_limit_s=cfg["compile_limit_s"], gap_ms=gap)
                       for gap, mine in _by_regime(cases)]
    return Suite(path=path, name=model.name or path.stem, sha256=doc.sha256, groups=tuple(groups),
                 time_limit_s=model.time_limit_s,
                 processes=model.processes or DEFAULT_PROCESSES,
                 browser_adapter=model.browser_adapter or "any")


def _by_regime(cases: tuple[Case, ...]) -> list[tuple[float | None, tuple[Case, ...]]]:
    """A kernel benchmark's cases as groups: those sampled in interleaved rounds (gap None),
    and the cadence's cases of each gap, a group each, so that every gap is measured in
    processes of its own (a process's regime is what it did in the seconds before)."""
    found: dict[float | None, list[Case]] = {}
    for case in cases:
        found.setdefault(case.gap_ms if case.methodology == CADENCE else None, []).append(case)
    return [(gap, tuple(mine)) for gap, mine in found.items()]


def quick(suite: Suite) -> Suite:
    """A smoke test of the same groups (`--quick`): a tiny budget, the N sweep's first four
    values and no torch.compile, so that even a CPU gets through the default suite fast."""
    smoke = Sampling(budget_per_case_s=0.25, target_rel_ci=0.05, min_rounds=3, max_rounds=50,
                     warmup_max_rounds=3)

    def shrink(case: Case) -> Case:
        return replace(case, n_values=case.n_values[:4])

    return replace(suite, groups=tuple(
        replace(g, sampling=smoke, cases=tuple(map(shrink, g.cases)), torch_compile_max_n=0)
        for g in suite.groups))
