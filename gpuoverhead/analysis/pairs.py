"""Ratios between jobs measured alternately in time: implementation against implementation,
the product against its reference loop.

Worker processes of the jobs being compared run one after another (A p0, B p0, A p1, ...),
so a slow period of the machine hits both members of a pair. Each pair gives one ratio of
the two processes' figures: their medians, or their trimmed means where either job's
latency is in two modes within its processes, as its figure then is (analysis/combine.py);
with several pairs the estimate is their median with its interval over pairs
(`stats.between_processes`, on logs). A ratio of figures from different times would hold
the machine's drift instead (on the lent H100 the same submit loop moved 3.5x within
minutes).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpuoverhead.analysis.combine import Row, two_modes_over
from gpuoverhead.analysis.modes import trimmed_mean
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.analysis.stats import Estimate, held_at_zero, over_processes, ratio_of
from gpuoverhead.cases import Case

Processes = list[dict[Key, Series]]
#: The figures compared between implementations.
PAIRED = ("latency_ns", "per_dispatch_ns", "cpu_per_dispatch_ns")
#: The figures compared with the reference loop.
REFERENCED = ("per_dispatch_ns", "cpu_per_dispatch_ns")
#: The figure compared with the CPU reference: a unit's time with the wait amortized.
ON_CPU = ("per_unit_ns",)
#: The browser's figures over native WebGPU's, by the ratio's metric: a unit's time with
#: the wait amortized, one unit submitted and waited for alone (N = 1), and a unit's GPU
#: time (its timestamps twin's slope: the kernels, whose compiler is Tint in Chromium and
#: Dawn, naga in wgpu-native).
TAXES = {"browser_tax": ("per_unit_ns",), "browser_tax_synced": ("latency_ns",),
         "browser_tax_gpu": ("gpu_ns",)}


def paired_ratios(mine: Processes, theirs: Processes, label: str, metric_name: str,
                  compared: tuple[str, ...], match: Callable[[Key], Key | None],
                  call: str | None = None) -> list[Row]:
    """`metric_name` rows (with `call` = `call`, else the metric compared) on my cases: my
    process figures over theirs, pair by pair in run order. `match` finds their key for
    mine."""
    rows = []
    keys = dict.fromkeys(k for p in mine for k in p if k.metric in compared)
    for key in keys:
        other = match(key)
        means = other is not None and (_in_two_modes(mine, key) or _in_two_modes(theirs, other))
        point = _mean if means else Series.point
        pairs = [(point(a[key]), point(b[other])) for a, b in zip(mine, theirs, strict=False)
                 if other is not None and key in a and other in b]
        if not pairs:
            continue
        ratios = np.array([ratio_of(x, y) for x, y in pairs])
        what = Key(key.case, metric_name, "ratio",
                   f"{key.metric}{' (each process its trimmed mean: two modes)' if means else ''}"
                   f": this / {label}, per time-adjacent process pair",
                   key.metric if call is None else call)
        rows.append(Row(what, _estimate(ratios, sum(p[key].count for p in mine if key in p))))
    return rows


def _in_two_modes(processes: Processes, key: Key) -> bool:
    """Whether a job's figure `key` is each process's trimmed mean (combine: a latency in
    two modes within its processes), so that its pairs' ratios are of the same figures."""
    return two_modes_over([p[key] for p in processes if key in p], key.metric) is not None


def _mean(series: Series) -> float:
    return trimmed_mean(series.values).value


def _estimate(ratios: np.ndarray, count: int) -> Estimate:
    """The pairs' ratio with its interval, held at zero (`held_at_zero`): one process's
    slope lost in its noise gives a pair ratio below zero, which a ratio of costs cannot
    be."""
    if ratios.size == 1:
        return held_at_zero(Estimate(float(ratios[0]), math.nan, math.nan, count, 0.0,
                                     "one pair of processes: no interval"))
    return held_at_zero(over_processes(ratios, True, "pair ratios", count))


def same_case(key: Key) -> Key:
    """Implementations of WebGPU share case descriptions: the same key is theirs."""
    return key


def same_id(cases: tuple[Case, ...]) -> Callable[[Key], Key | None]:
    """Their key for mine: their case of the same id (a browser's N sweep may differ)."""
    by_id = {c.id: c for c in cases}

    def match(key: Key) -> Key | None:
        theirs = by_id.get(key.case.id)
        return None if theirs is None else Key(theirs, key.metric, key.unit, key.estimator,
                                               key.call)

    return match


def reference_of(reference_cases: dict[str, Case]) -> Callable[[Key], Key | None]:
    """Their key for one of my native cases: the reference loop's case of its encoding."""
    def match(key: Key) -> Key | None:
        if key.case.layer != "native" or key.case.encoding not in reference_cases:
            return None
        return Key(reference_cases[key.case.encoding], key.metric, key.unit, key.estimator,
                   key.call)

    return match


def cpu_reference_of(cpu_cases: tuple[Case, ...]) -> Callable[[Key], Key | None]:
    """Their key for one of my fusion cases: the CPU reference's case of the same L (it runs
    the unfused form only: the CPU has no dispatches to fuse)."""
    def match(key: Key) -> Key | None:
        theirs = next((c for c in cpu_cases if c.k == key.case.k), None)
        return None if theirs is None else Key(theirs, key.metric, key.unit, key.estimator,
                                               key.call)

    return match
