"""One way to write a value for people, by its row's display hint (gpuoverhead/metrics.py):
times in µs, ratios with x, rates per second, shares in %, sizes as M, absent as —."""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from rich.markup import escape

from gpuoverhead.analysis.crossover import Crossing
from gpuoverhead.analysis.stats import CONFIDENCE

BELOW = "below resolution"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Unicode's bidirectional overrides and isolates: they reorder what follows them on screen.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str, newlines: bool = False) -> str:
    """`text` with its control characters written out ('\\x1b', '\\x00', '\\n', '\\u202e'):
    a string that a user or a file controls (a suite's name, a path, a benchmark in a result
    file) must not colour the terminal, move its cursor or forge a line of the tool's own.
    `newlines` keeps line breaks (a worker's traceback)."""
    return "".join(_escaped(c) if (unicodedata.category(c) == "Cc" or c in _BIDI)
                   and not (newlines and c == "\n") else c for c in text)


#: What a Markdown cell or line from a result file must not hold as it is: `\\` (it would
#: escape what follows), `|` (a new cell) and `<` (raw HTML, or a `<!--` that hides the
#: rest of a report); and `](`, which makes a link of what precedes it.
_MARKDOWN = str.maketrans({"\\": "\\\\", "|": "\\|", "<": "&lt;"})


def markdown_text(text: object) -> str:
    """A string that a user or a file controls (a run id, a device name, a warning) as
    Markdown shows it, as text: its control characters written out (`printable`: a line
    break would end a table row, or start a heading) and Markdown's own characters
    escaped."""
    return printable(str(text)).translate(_MARKDOWN).replace("](", "\\](")


def markdown_table(frame: Any) -> str:
    """A frame as a Markdown table, each header and text cell `markdown_text`."""
    shown = frame.rename(columns=markdown_text).map(
        lambda v: markdown_text(v) if isinstance(v, str) else v)
    return shown.to_markdown(index=False)


def literal(text: object, newlines: bool = False) -> str:
    """A string from the user or a file, as rich prints it among the tool's markup: its
    brackets taken as text (a suite named '[bold]x[/bold]' showed as 'x'), its control
    characters written out (`printable`)."""
    return escape(printable(str(text), newlines))


def _escaped(c: str) -> str:
    code = ord(c)
    return _NAMED.get(c) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def value(v: float | None, hint: str, decimals: int = 1) -> str:
    """'135.0' (µs) for a time or a difference ('-2.1'), '2.08x' for a ratio (∞ for an
    unbounded one), '19.96' for a rate, '21.0%' for a share, 'M 145' for a size, '—' for
    what is not a number. A time below zero is no cost: it reads 'below resolution'."""
    if hint == "ratio" and v == math.inf:
        return "∞"
    if v is None or not math.isfinite(v):
        return "—"
    if hint == "time":
        return BELOW if v < 0 else f"{v / 1e3:.{decimals}f}"
    if hint == "difference":
        return f"{v / 1e3:.{decimals}f}"
    if hint == "rate":
        return f"{v:.4g}"
    if hint == "share":
        return f"{v:.1%}"
    if hint == "size":
        return f"M {v:.0f}"
    return f"{v:.2f}x"


def interval(row: Any) -> str:
    """A summary row's interval: 'low–high' as it is, with its real coverage where that is
    under 95%; '—' where there is none."""
    level = getattr(row, "ci_level", CONFIDENCE)
    if not (math.isfinite(row.ci_low) or math.isfinite(row.ci_high)) or level == 0:
        return "—"
    text = f"{value(row.ci_low, row.hint)}–{value(row.ci_high, row.hint)}"
    if isinstance(level, float) and math.isnan(level):
        return text + " (coverage ?)"
    return text if level >= CONFIDENCE else f"{text} ({level:.0%})"


def relative(row: Any) -> str:
    """The interval's half-width relative to the estimate, '—' where that means nothing."""
    rel = row.rel_ci
    return "—" if not math.isfinite(rel) or getattr(row, "ci_level", 1) == 0 else f"{rel:.1%}"


def with_ci(v: float, low: float, high: float, hint: str, level: float = CONFIDENCE) -> str:
    """'135.0 [132.7–142.4]' in µs, '2.08x [1.96–2.27]' for ratios ('> 10.10x' where the
    denominator's CI reaches zero, 'undetermined' where nothing bounds it), 'M 145 [88–222]'
    for sizes, '21.0% [18.2%–24.9%]' for shares; '—' when absent."""
    if hint == "ratio" and v == math.inf:
        return f"> {low:.2f}x" if math.isfinite(low) and low > 0 else "undetermined"
    if v is None or not math.isfinite(v):
        return "—"
    if hint == "time" and v < 0:
        return f"{BELOW} [≤ {high / 1e3:.1f}]"
    bare = [value(b, hint).removesuffix("x").removeprefix("M ") for b in (low, high)]
    text = f"{value(v, hint)} [{bare[0]}–{bare[1]}]"
    if not math.isfinite(low) and not math.isfinite(high) or level == 0:
        return text.split(" [")[0] + " (no interval)"
    if math.isnan(level):
        return f"{text} (coverage unknown)"
    return text if level >= CONFIDENCE else f"{text} ({level:.0%} interval)"


def shown(v: float | None, hint: str) -> str:
    """A value with its unit where the value alone does not say it: '135.00 µs', '19.96 /s'."""
    if v is None or not math.isfinite(v):
        return "∞" if v == math.inf else "—"
    text = value(v, hint, 2)
    unit = {"time": " µs", "difference": " µs", "rate": " /s"}.get(hint, "")
    return text + unit if text != BELOW else text


def ratio_with_ci(r: float, low: float, high: float) -> str:
    """A comparison's NEW/BASE: '1.042 [0.987–1.101]'."""
    return "—" if not math.isfinite(r) else f"{r:.3f} [{low:.3f}–{high:.3f}]"


def crossover(line: Any, c: Crossing, reference: str) -> str:
    """'recurrent: wgpu-native fused beats torch-cpu from H = 512 [256–1024]', with where it
    stays undecided: a win is claimed only where an interval excludes a tie, and a sweep of
    one H gets no range (analysis/crossover.py)."""
    bench, who = f"{line.benchmark}: ", f"{line.implementation} {line.variant}"
    if c.outcome == "beyond":
        return (f"{bench}{who} does not beat {reference} {c.span}: its crossover is beyond the "
                "largest H measured")
    if c.outcome == "not decided":
        if not c.won and not c.lost:
            return f"{bench}whether {who} beats {reference} is not decided {c.span}"
        return (f"{bench}{who} is not shown to beat {reference} {c.span}"
                + _at("won", c.won) + _at("lost", c.lost) + _at("undecided", c.undecided))
    first = c.sizes[0]
    at = (f"at or below the smallest H measured, H = {first}" if c.censored
          else f"from H = {c.value:.0f}")
    low = f"at or below {first}" if c.low == first else f"{c.low:.0f}"
    high = f"beyond {c.sizes[-1]}" if math.isinf(c.high) else f"{c.high:.0f}"
    interval = "" if c.low == c.high else f" [{low}–{high}]"
    return f"{bench}{who} beats {reference} {at}{interval}" + _at("undecided", c.undecided)


def _at(what: str, sizes: tuple[int, ...]) -> str:
    """'; undecided at H = 16, 64', or nothing where there are no such H."""
    return f"; {what} at H = {', '.join(map(str, sizes))}" if sizes else ""
