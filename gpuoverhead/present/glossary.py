"""Plain words for what the tables show in short: the summary grid's measures and its `bound`
column, the report's rows and the metric names that `compare` lists, as a caption of the
terms a table holds (docs/schema.md has every metric in full)."""

from __future__ import annotations

from collections.abc import Iterable

_NAIVE = "one op submitted and waited for until the GPU is idle, per op"
_WALL = ("N ops with one wait, the wall time per op (the slope over N): each op its own "
         "submit, its own pass in one encoder, or all in one pass")
_INFLATION = ("naive over the wall time per op of N ops with one wait: what waiting after "
              "every op multiplies an op's cost by")
_FIXED = "what the wait after N ops costs once, whatever N (the submit fit's intercept)"
_REFERENCE = ("the C loop's CPU time per op in this process over the same loop alone in a "
              "process of its own (1.00x: the process around it adds nothing)")
_FIRST = "in the first warm-up round: what a program that runs it once pays (first uses included)"

#: Each term as a table shows it, and what it means.
WORDS = {
    "naive": f"naive: {_NAIVE}",
    "naive readback": "naive readback: the same op with its output read back to the CPU "
                      "instead of the wait",
    "submit wall": f"submit, pass, dispatch wall: {_WALL}",
    "pass wall": f"submit, pass, dispatch wall: {_WALL}",
    "dispatch wall": f"submit, pass, dispatch wall: {_WALL}",
    "api/ref.": f"api/ref.: {_REFERENCE}",
    "fixed wait": f"fixed wait: {_FIXED}",
    "naive/submit": f"naive/submit, naive/dispatch (inflation): {_INFLATION}",
    "naive/dispatch": f"naive/submit, naive/dispatch (inflation): {_INFLATION}",
    "bound": ("bound: cpu or gpu where issuing the op, or the GPU's own time, is 85% or more "
              "of its wall time: the one that limits it"),
    "inflation": f"inflation: {_INFLATION} (a report's row: naive/submit)",
    "latency_ns": f"latency_ns: {_NAIVE}",
    "first_round_ns": f"first_round_ns: a naive op {_FIRST}",
    "first_round_per_dispatch_ns": f"first_round_per_dispatch_ns: an op of N with one wait "
                                   f"{_FIRST}",
    "fixed_ns": f"fixed_ns: {_FIXED}",
    "reference_ratio": f"reference_ratio: {_REFERENCE}",
    "binding_ratio": ("binding_ratio: the wrapper's CPU time per op over the C loop's, round "
                      "by round in one process: what the Python binding multiplies it by"),
}


def caption(terms: Iterable[str], more: str = "") -> str:
    """The meaning of each of `terms` that has one, a line each (a meaning shared by several
    terms once), then `more`."""
    found = dict.fromkeys(WORDS[t] for t in terms if t in WORDS)
    return "\n".join([*found, *([more] if more and found else [])])
