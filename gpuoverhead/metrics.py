"""Every metric a summary row can hold, declared once: its unit, how it is shown, and which
direction is better. Printers, reports and `compare` read a row's own `hint` and `better`
columns (nvbench's summary hints) instead of guessing from its name.

Hints: `time` (ns, shown in µs), `difference` (ns between two times that checks a split,
shown in µs, below zero where the part subtracted is the larger: never clipped), `ratio`
(shown as 1.23x), `rate` (per second), `share` (a fraction, shown in %), `size` (a matrix
size M), `error` (a benchmark that failed). A time, ratio or rate and its interval are
never below zero.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    unit: str
    hint: str
    #: `lower`, `higher`, or `none` (a figure with no better direction, e.g. a difference).
    better: str


_TIME = Metric("ns", "time", "lower")
_SPEEDUP = Metric("ratio", "ratio", "higher")
METRICS = {
    **dict.fromkeys(("latency_ns", "per_dispatch_ns", "fixed_ns", "cpu_per_dispatch_ns",
                     "gpu_ns", "gpu_fixed_ns", "api_ns", "ffi_floor_ns",
                     "call_ns", "first_round_ns", "first_round_per_dispatch_ns",
                     "per_unit_ns", "cpu_per_unit_ns", "overlapped_ns", "token_ns",
                     "cpu_per_token_ns", "per_op_ns", "step_ns", "cpu_per_step_ns",
                     "build_ns", "read_floor_ns", "dispatch_gpu_ns", "kernel_excess_ns",
                     "burst_per_op_ns", "burst_cpu_per_op_ns", "completion_floor_ns"), _TIME),
    "wait_per_unit_ns": _TIME,  # a cost, measured as a difference, as python_ns
    "python_ns": _TIME,  # a cost, measured as a difference (analysis/combine.DIFFERENCES)
    "bind_group_ns": _TIME,
    "bind_group_ratio": Metric("ratio", "ratio", "lower"),
    "ffi_check_ns": Metric("ns", "difference", "none"),
    "closure_ns": Metric("ns", "difference", "none"),
    "inflation": Metric("ratio", "ratio", "none"),
    "fusion_speedup": _SPEEDUP,
    "fusion_speedup_synced": _SPEEDUP,
    "fusion_gpu_speedup": _SPEEDUP,
    "cpu_over_gpu": _SPEEDUP,
    "paired_ratio": Metric("ratio", "ratio", "lower"),
    "binding_ratio": Metric("ratio", "ratio", "lower"),
    "reference_ratio": Metric("ratio", "ratio", "none"),
    "cpu_ratio": Metric("ratio", "ratio", "lower"),
    "browser_tax": Metric("ratio", "ratio", "lower"),
    "browser_tax_synced": Metric("ratio", "ratio", "lower"),
    "browser_tax_gpu": Metric("ratio", "ratio", "lower"),
    "sync_slowdown": Metric("ratio", "ratio", "lower"),
    "hybrid_slowdown": Metric("ratio", "ratio", "lower"),
    "gpu_share": Metric("ratio", "share", "none"),
    "floor_multiple": Metric("ratio", "ratio", "lower"),
    "floor_multiple_read": Metric("ratio", "ratio", "lower"),
    "overhead_share": Metric("ratio", "share", "lower"),
    "tokens_per_s": Metric("1/s", "rate", "higher"),
    "crossover_size": Metric("M", "size", "none"),
    "crossover_size_synced": Metric("M", "size", "none"),
    "crossover_hidden": Metric("H", "size", "none"),
    "error": Metric("-", "error", "none"),
    "skipped": Metric("-", "error", "none"),
}
#: The figures a user publishes: compared side by side (`ratio_to_fastest`) and judged by
#: the A/A self-test.
HEADLINE = ("latency_ns", "per_dispatch_ns")
HINTS = ("time", "difference", "ratio", "rate", "share", "size", "error")


def of(metric: str) -> Metric:
    """The metric's description; a KeyError for one never declared (a test finds it)."""
    return METRICS[metric]
