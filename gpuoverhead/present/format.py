"""One way to write a value for people: times in µs, ratios with x, sizes as M, absent as —."""

from __future__ import annotations

import math


def value(v: float | None, unit: str, decimals: int = 1) -> str:
    """'135.0' (µs) for times, '2.08x' for ratios (∞ for an unbounded one), '—' for what is
    not a number."""
    if unit == "ratio" and v == math.inf:
        return "∞"
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v:.2f}x" if unit == "ratio" else f"{v / 1e3:.{decimals}f}"


def with_ci(v: float, low: float, high: float, kind: str) -> str:
    """'135.0 [132.7–142.4]' in µs, '2.08x [1.96–2.27]' for ratios ('24.0x [10.1–∞]' or
    '> 10.1x' where the denominator's CI reaches zero, 'undetermined' where nothing bounds
    it), 'M 145 [88–222]' for sizes; '—' when absent."""
    if kind == "ratio" and v == math.inf:
        return f"> {low:.2f}x" if math.isfinite(low) and low > 0 else "undetermined"
    if v is None or not math.isfinite(v):
        return "—"
    if kind == "ratio":
        return f"{v:.2f}x [{low:.2f}–{'∞' if high == math.inf else f'{high:.2f}'}]"
    if kind == "size":
        return f"M {v:.0f} [{low:.0f}–{high:.0f}]"
    return f"{v / 1e3:.1f} [{low / 1e3:.1f}–{high / 1e3:.1f}]"


def ratio_with_ci(r: float, low: float, high: float) -> str:
    """A comparison's NEW/BASE: '1.042 [0.987–1.101]'."""
    return "—" if not math.isfinite(r) else f"{r:.3f} [{low:.3f}–{high:.3f}]"
