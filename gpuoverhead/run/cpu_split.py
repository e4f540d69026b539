"""Which rounds a job's figures come from where its benchmark's CPU met two states
(analysis/states.py), and what run.json says of it.

A job's figures come from the rounds of the kept state (`states.find`) only where that
state moves them (`states.moves`: one of its headline figures, judged over the job's
processes) and at least drift.LEAST_T processes of the job have the suite's `min_rounds`
rounds in that state; otherwise from every round. A process with fewer is left out of the
split figures (it measured no level of that state): with six processes a job, one that met
the slow state in 2 of 390 rounds took its whole job to every round and compared 0.74x
against the run before, whose job kept the slow state's (PyTorch eager's sequential per op,
H200, 2026-11-29). The job is split whole, each figure from the same rounds,
since a figure the test cannot show to move may still: in the H200 session of 2026-11-29
wgpu-native's `pass` through the raw FFI had a process at 0.78x in its fast rounds and one
with three fast rounds at 1.32x (no pooled change), and taken from every round its interval
was ±14.7% where the slow rounds' gave ±3.2%. No process is left out for its state: leaving
out those with under `min_rounds` rounds in the kept state left most fusion and browser jobs
of that session (5 rounds a process) with one process and every browser tax with no
interval, so a process is left out only where LEAST_T others keep the state. A job whose
state moves its figures but that takes every round is of both states, and its regime says
so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuoverhead.analysis import states
from gpuoverhead.analysis.drift import LEAST_T
from gpuoverhead.analysis.series import STOP_METRICS, Key, Series
from gpuoverhead.methods import series
from gpuoverhead.run.rounds import MIN_ROUNDS
from gpuoverhead.run.worker import Outcome


@dataclass(frozen=True)
class Split:
    """A job's figures per process, and the rounds and states they came from."""

    cpu: states.States | None
    #: Per process, its rounds in the kept state where the figures come from them; None:
    #: every round.
    kept: list[np.ndarray | None]
    #: The headline figures the state moved (`case metric`).
    moved: tuple[str, ...]
    #: Per process its figures.
    figures: list[dict[Key, Series]]
    #: Per process its figures in the other state (None: under MIN_ROUNDS rounds in it).
    other: list[dict[Key, Series] | None]
    #: Where the state moved figures but every round counts: the processes with too few
    #: rounds in it.
    mixed: str = ""
    #: Where the job is split: the processes left out of its figures, too few rounds in the
    #: kept state.
    short: tuple[int, ...] = ()
    #: Where the state moved figures: per state other than the figures' own (the other one
    #: where the job is split, each where every round counts) that at least LEAST_T
    #: processes measured, per process its figures from that state's rounds (None: under
    #: the suite's min_rounds of them). Kept beside the headline (`states.parquet`), so
    #: that `compare` can judge two runs in a state both measured.
    beside: dict[str, list[dict[Key, Series] | None]] = field(default_factory=dict)

    @property
    def split(self) -> bool:
        return self.kept[0] is not None

    def of(self, outcome: Outcome, i: int, rounds: np.ndarray, least: int,
           state: str | None = None) -> dict[Key, Series] | None:
        """Process `i`'s figures from `rounds` alone (of those, the kept state's where the
        job is split; `state`'s where given), or None where fewer than `least` would make
        them."""
        within = self.kept[i] if state is None or self.cpu is None else \
            states.rounds_in(outcome.samples, self.cpu, state)
        if within is not None:
            rounds = np.intersect1d(rounds, within)
        if rounds.size < least:
            return None
        return series(outcome.samples, outcome.calibration, outcome.clock_offset_ns, rounds)

    def regime(self, base: str) -> str:
        """The regime of the job's figures: the kept state's, both states', or the plain one."""
        if self.cpu is None or not self.moved:
            return base
        return self.cpu.regime(base) if self.split else f"{base}{states.BOTH}"


def split(cpu: states.States | None, outcomes: list[Outcome], least: int) -> Split:
    """A job's figures per process (`least`: the suite's min_rounds)."""
    none: list[np.ndarray | None] = [None] * len(outcomes)
    every = [series(o.samples, o.calibration, o.clock_offset_ns) for o in outcomes]
    if cpu is None:
        return Split(None, none, (), every, list(none))
    kept = [states.rounds_in(o.samples, cpu, cpu.kept) for o in outcomes]
    inside = _in(outcomes, kept)
    dropped = _in(outcomes, [np.setdiff1d(np.arange(o.samples.rounds), k)
                             for o, k in zip(outcomes, kept, strict=True)])
    other = _in(outcomes, [r if r.size >= MIN_ROUNDS else r[:0] for r in (
        states.rounds_in(o.samples, cpu, cpu.other) for o in outcomes)])
    keys = list(dict.fromkeys(k for found in every for k, s in found.items()
                              if k.metric in STOP_METRICS and s.settled is None))
    moved = tuple(f"{k.case.id} {k.metric}" + (f" {k.call}" if k.call else "") for k in keys
                  if states.moves([(_values(i, k), _values(d, k))
                                   for i, d in zip(inside, dropped, strict=True)]))
    short = [(o, k) for o, k in zip(outcomes, kept, strict=True) if k.size < least]
    if not moved or len(outcomes) - len(short) < LEAST_T:
        mixed = ", ".join(f"process {o.process}: {k.size} of {o.samples.rounds} rounds"
                          for o, k in short) if moved else ""
        return Split(cpu, none, moved, every, other, mixed,
                     beside=_beside(cpu, outcomes, (cpu.kept, cpu.other) if moved else (),
                                    least))
    out = {o.process for o, _ in short}
    return Split(cpu, list(kept), moved, [{} if o.process in out else f or {}
                                          for o, f in zip(outcomes, inside, strict=True)],
                 other, short=tuple(sorted(out)),
                 beside=_beside(cpu, outcomes, (cpu.other,), least))


def _beside(cpu: states.States, outcomes: list[Outcome], wanted: tuple[str, ...], least: int
            ) -> dict[str, list[dict[Key, Series] | None]]:
    """Of the `wanted` states, those that at least LEAST_T processes have `least` rounds
    in, with each process's figures from its rounds in it (None: fewer)."""
    found = {}
    for state in wanted:
        rounds = [states.rounds_in(o.samples, cpu, state) for o in outcomes]
        if sum(r.size >= least for r in rounds) >= LEAST_T:
            found[state] = _in(outcomes, [r if r.size >= least else r[:0] for r in rounds])
    return found


def _in(outcomes: list[Outcome], rounds: list[np.ndarray]) -> list[dict[Key, Series] | None]:
    """Each process's figures from `rounds` (None where it has none)."""
    return [series(o.samples, o.calibration, o.clock_offset_ns, r) if r.size else None
            for o, r in zip(outcomes, rounds, strict=True)]


def _values(found: dict[Key, Series] | None, key: Key) -> np.ndarray:
    """A figure's values in one process (a ratio's round by round), empty where none."""
    s = None if found is None else found.get(key)
    if s is None:
        return np.array([])
    return s.values if s.denominator is None else s.values / s.denominator


def record(found: Split, outcomes: list[Outcome]) -> dict[str, Any]:
    """run.json's record of a job's two CPU states: the loop's two speeds, the state kept,
    the figures it moved and where they come from, per process its share of rounds in the
    slow state and how many it kept ("all": no split), and each headline figure's level in
    the other state (the median over the processes with MIN_ROUNDS rounds in it; µs)."""
    cpu = found.cpu
    if cpu is None:
        return {}
    other: dict[str, list[float]] = {}
    for mine in found.other:
        for k, s in (mine or {}).items():
            if k.metric in STOP_METRICS and s.values.size:
                other.setdefault(f"{k.case.id} {k.metric}", []).append(s.point())
    return {"cpu_states": {
        "loop_step_us": {states.FAST: round(cpu.fast_ns / 1e3, 3),
                         states.SLOW: round(cpu.slow_ns / 1e3, 3)},
        "slow_share": round(cpu.slow_share, 3), "kept": cpu.kept,
        "moved": list(found.moved),
        "figures_from": f"the {cpu.kept} state's rounds: it moved them" + (
            "; left out, under min_rounds rounds in it: " + ", ".join(
                f"process {p}" for p in found.short) if found.short else "")
        if found.split else
        f"every round: too few in the {cpu.kept} state ({found.mixed})" if found.mixed else
        "every round: the state moved no figure",
        "processes": [{"process": o.process, "slow_share": round(
            states.rounds_in(o.samples, cpu, states.SLOW).size / max(1, o.samples.rounds), 3),
            "rounds_kept": "all" if r is None else int(r.size)}
            for o, r in zip(outcomes, found.kept, strict=True)],
        f"{cpu.other}_state_us": {k: round(float(np.median(v)) / 1e3, 3)
                                  for k, v in other.items()}}}
