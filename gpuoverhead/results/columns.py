"""The result schema in one place: file names, columns, metric names, version, the run record.

A run folder holds `samples` and `summary` (each as Parquet and CSV) and `run.json`. Readers
check `schema_version`; bump it on any change that a reader of older sets must know about.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Version of the result files' layout (samples, summary, run.json). 2 added `issue_ns` to
#: the samples, `ci_level`, `ci_kind` and `bound` to the summary, and CPU-cost metrics; 3
#: added `family` (the driver that measured a row) to both tables, and `hint` and `better`
#: (how a value is shown, which direction is better: gpuoverhead/metrics.py) to the summary,
#: and `rel_ci_within` (the within-process variance component) beside `rel_spread_between`;
#: 4 added `modes` to the summary (a headline estimate's two modes, analysis/modes.py);
#: 5 added `regime` (the submission regime its processes measured in: cases.Group.regime)
#: and `settled_s` (when a cadence's level settled, analysis/settling.py).
SCHEMA_VERSION = 5

SAMPLES = "samples"
SUMMARY = "summary"
#: A job's estimates in a CPU state beside its headline's (run/cpu_split.py `beside`): the
#: summary's columns and `cpu_state`; only where a job kept such (docs/schema.md).
STATES = "states"
RUN_JSON = "run.json"

#: Columns that say what a sample or an estimate is of.
CASE_COLUMNS = ["run_id", "benchmark", "case", "methodology", "encoding", "sync", "layer",
                "call", "implementation", "family", "backend", "adapter", "vendor", "adapter_type",
                "kernel", "elements", "workgroup_size", "variant", "k"]
SAMPLE_COLUMNS = CASE_COLUMNS + ["n_dispatches", "repetition", "phase", "process",
                                 "elapsed_ns", "wall_ns", "issue_ns", "gpu_ns", "outlier"]

#: Columns of the summary (an empty one has them too: a run with nothing finished is a run).
SUMMARY_COLUMNS = CASE_COLUMNS + [
    "n_dispatches", "process", "metric", "unit", "hint", "better", "estimator", "value",
    "ci_low", "ci_high", "ci_level", "ci_kind", "bound", "n_samples", "rel_ci",
    "rel_spread_between", "rel_ci_within", "processes", "rounds", "warmup_rounds", "stop",
    "target_rel_ci", "outliers", "modes", "regime", "settled_s"]
STATES_COLUMNS = SUMMARY_COLUMNS + ["cpu_state"]

#: Metric of the summary row that records a benchmark that failed (its message in
#: `estimator`), so that the summary says what is missing and why.
ERROR = "error"
#: The `metric` of a job that a time limit left out (no estimates, not an error).
SKIPPED = "skipped"


@dataclass
class RunRecord:
    """What run.json says of a run: how it was made, on what, and how it ended."""

    run_id: str
    argv: list[str]
    suite: dict[str, str]
    seed: int
    started: str
    host: dict[str, Any]
    packages: dict[str, str | None]
    native: dict[str, Any]
    processes: int = 1
    #: Seconds the run was allowed (the suite's time_limit_s or --time-limit), if any.
    time_limit_s: float | None = None
    status: str = "running"
    finished: str | None = None
    adapters: list[dict[str, Any]] = field(default_factory=list)
    layers: dict[str, Any] = field(default_factory=dict)
    noise: dict[str, Any] = field(default_factory=dict)
    benchmarks: list[dict[str, Any]] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: Per implementation, what limited its widest headline figure (run/precision.py).
    precision: list[str] = field(default_factory=list)
    #: The ids of the benchmarks the run set out to measure (`benchmarks` has those it
    #: finished): what a reader of a run that stopped says is missing.
    planned: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, **asdict(self)}
