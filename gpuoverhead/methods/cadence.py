"""Cadence: bursts of ops with idle gaps between them, each gap in processes of its own.

What one op costs depends on how densely its process has been submitting over the last
seconds: on a lent H200 VM a plain C loop's `submit` cost 16-19 µs back to back for 10 s,
and with bursts 30 ms apart 16-22 µs for about 3 s, then 29-37 µs by 5-8 s (issue 54).
An engine that feeds the GPU back to back and a UI that submits once a frame do not pay
the same, so the cadence is a methodology of its own (as nvbench measures hot and cold in
modes of their own, never mixed):

- a case issues a burst of `burst` ops in its encoding and layer (the sequential
  methodology's loops: `sequential.operation`), reads the clock, waits; the sampler then
  idles `gap_ms` before the next burst (run/rounds.py), so a process submits at one
  cadence all its life;
- each gap of a benchmark is a group of its own (suite/expand.py), so its processes know
  no other cadence; within one, the cases take turns in blocks of BLOCK bursts, in an
  order shuffled each round, so the layers share the state they are compared in; the first
  burst of a block is kept as a warm-up one (run/rounds.py): what a burst costs depends on
  the burst before it. On the H200 VM (2026-11-29, bursts rotating one at a time) a
  wgpu-native `submit` burst through the C loop cost 16.7 µs an op after another `submit`
  burst and 19.4 after a `pass` or `dispatch` one (one submit) back to back, and 36.0
  against 48.5 with 16 ms gaps: after a burst of its own kind it cost what a plain C loop
  of the same bursts costs (16.4 µs back to back, 36.2 with 30 ms gaps), the figure an
  application repeating its work pays;
- a process bursts for its whole budget, with no early stop: its regime settles over
  seconds, and when is measured (analysis/settling.py): the figure is the median per op of
  the bursts after its level settled (`burst_per_op_ns`: wall / N, the wait's cost shared by
  the burst's ops; `burst_cpu_per_op_ns`: the clock read before the wait, / N); when it
  settled and the level over the process's age go to run.json and the summary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpuoverhead.analysis.series import Key, Out, Series, View
from gpuoverhead.analysis.settling import settle
from gpuoverhead.cases import CADENCE, Case
from gpuoverhead.gpu.targets import Target
from gpuoverhead.methods.sequential import operation as sequential_operation

#: The name a suite's `methodologies` asks for it by.
SUITE_NAME = CADENCE
#: Bursts of one case in a row (the first a warm-up one: it pays for the case before).
BLOCK = 4
#: Its figures: what one op of a burst costs, wall time (the wait shared by the burst's
#: ops), and issue time, the clock read before the wait.
METRICS = ("burst_per_op_ns", "burst_cpu_per_op_ns")


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """Per gap, every encoding through every layer, each a burst of `burst` ops."""
    if SUITE_NAME not in cfg["methodologies"]:
        return []
    return [replace(base, methodology=CADENCE, encoding=e, layer=layer, gap_ms=gap,
                    n_values=(cfg["burst"],))
            for gap in dict.fromkeys(cfg["gaps_ms"]) for layer in dict.fromkeys(cfg["layers"])
            for e in dict.fromkeys(cfg["encodings"])]


def claims(case: Case) -> bool:
    return case.methodology == CADENCE


def operation(target: Target, case: Case, native: Any) -> Callable[[int], tuple[int]]:
    """A burst: the sequential methodology's op (n ops, the clock, the wait)."""
    return sequential_operation(target, case, native)


def series(view: View, index: int, case: Case, out: Out) -> None:
    """Per op of each burst after its level settled, wall and issue time, with when it
    settled and the level over the process's age."""
    pos, walls, times = view.measured(index)
    if not walls.size:
        return
    burst = view.n(index)[0]
    ages = (times - view.started_ns) / 1e9
    issued = view.issue(pos, index)[:, 0]
    for metric, values, how in ((METRICS[0], walls / burst, "wall time"),
                                (METRICS[1], issued / burst, "issue time (clock read "
                                 "before the wait)")):
        found = settle(ages, values)
        kept = found.kept(ages)
        out[Key(case, metric, "ns", f"median {how} / {burst} of the bursts after the level "
                "settled")] = Series(values[kept], times[kept], int(kept.sum()),
                                     settled=found)


def derive(out: Out, view: View) -> None:
    """Nothing spans a cadence's cases."""
