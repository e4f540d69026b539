"""One way to write a value for people: times in µs, ratios with x, sizes as M, absent as —."""

from __future__ import annotations

import math
from typing import Any

from gpuoverhead.analysis.stats import CONFIDENCE

BELOW = "below resolution"


def value(v: float | None, unit: str, decimals: int = 1) -> str:
    """'135.0' (µs) for times, '2.08x' for ratios (∞ for an unbounded one), '—' for what is
    not a number. A time below zero is no cost: it reads 'below resolution'."""
    if unit == "ratio" and v == math.inf:
        return "∞"
    if v is None or not math.isfinite(v):
        return "—"
    if unit == "ns" and v < 0:
        return BELOW
    return f"{v:.2f}x" if unit == "ratio" else f"{v / 1e3:.{decimals}f}"


def interval(row: Any) -> str:
    """A summary row's interval: 'low–high' as it is, with its real coverage where that is
    under 95%; '—' where there is none."""
    level = getattr(row, "ci_level", CONFIDENCE)
    if not (math.isfinite(row.ci_low) or math.isfinite(row.ci_high)) or level == 0:
        return "—"
    text = f"{value(row.ci_low, row.unit)}–{value(row.ci_high, row.unit)}"
    if isinstance(level, float) and math.isnan(level):
        return text + " (coverage ?)"
    return text if level >= CONFIDENCE else f"{text} ({level:.0%})"


def relative(row: Any) -> str:
    """The interval's half-width relative to the estimate, '—' where that means nothing."""
    rel = row.rel_ci
    return "—" if not math.isfinite(rel) or getattr(row, "ci_level", 1) == 0 else f"{rel:.1%}"


def with_ci(v: float, low: float, high: float, kind: str, level: float = CONFIDENCE) -> str:
    """'135.0 [132.7–142.4]' in µs, '2.08x [1.96–2.27]' for ratios ('24.0x [10.1–∞]' or
    '> 10.1x' where the denominator's CI reaches zero, 'undetermined' where nothing bounds
    it), 'M 145 [88–222]' for sizes; '—' when absent."""
    if kind == "ratio" and v == math.inf:
        return f"> {low:.2f}x" if math.isfinite(low) and low > 0 else "undetermined"
    if v is None or not math.isfinite(v):
        return "—"
    if kind == "ns" and v < 0:
        return f"{BELOW} [≤ {high / 1e3:.1f}]"
    if kind == "ratio":
        text = f"{v:.2f}x [{low:.2f}–{'∞' if high == math.inf else f'{high:.2f}'}]"
    elif kind == "size":
        text = f"M {v:.0f} [{low:.0f}–{high:.0f}]"
    else:
        text = f"{v / 1e3:.1f} [{low / 1e3:.1f}–{high / 1e3:.1f}]"
    if not math.isfinite(low) and not math.isfinite(high) or level == 0:
        return text.split(" [")[0] + " (no interval)"
    if math.isnan(level):
        return f"{text} (coverage unknown)"
    return text if level >= CONFIDENCE else f"{text} ({level:.0%} interval)"


def shown(v: float | None, hint: str) -> str:
    """A value as its row's display hint says (gpuoverhead/metrics.py): a time in µs, a
    ratio as 1.23x, a rate per second, a share in %, a size as M."""
    if v is None or not math.isfinite(v):
        return "∞" if v == math.inf else "—"
    if hint == "time":
        return f"{value(v, 'ns', 2)} µs" if v >= 0 else BELOW
    if hint == "rate":
        return f"{v:.4g} /s"
    if hint == "share":
        return f"{v:.1%}"
    if hint == "size":
        return f"M {v:.0f}"
    return value(v, "ratio")


def ratio_with_ci(r: float, low: float, high: float) -> str:
    """A comparison's NEW/BASE: '1.042 [0.987–1.101]'."""
    return "—" if not math.isfinite(r) else f"{r:.3f} [{low:.3f}–{high:.3f}]"
