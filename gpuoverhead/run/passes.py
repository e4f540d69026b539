"""How many passes of worker processes the time left holds (`fit_passes`), on the start-ups
and least sampling that run/budget.py's schedule has measured, and which half of an A/A run
each pass's processes go to (`half_of`)."""

from __future__ import annotations


def fit_passes(time_s: float, startup_s: float, least_s: float, done: int, most: int,
               halves: int = 1) -> int:
    """How many passes in all (`done` of them already run, at most `most`) fit in `time_s`:
    each costs `startup_s` of start-up and at least `least_s` of sampling; with `halves` a
    multiple of them (each half as many processes); where no further pass fits, `done`
    (at least 1)."""
    fit = max(done, 1)
    for passes in range(done + 1, most + 1):
        if time_s / (passes - done) - startup_s < least_s:
            break
        if passes % halves == 0:
            fit = passes
    return fit


def half_of(process: int, halves: int) -> int:
    """The half of an A/A run (of `halves`) that worker process `process` is written to: in
    blocks of `halves` passes, each block in the reverse order of the one before (a b b a a b
    ...). Strict alternation gave half b every pass one later than a's and every odd pass: in
    all four A/As on the H200 (2026-11-27 to 29) its processes read above half a's over the
    headline rows, by 1.9-4.3% (median, a steady trend fitted out), where ten plain runs
    split alike scattered from -3.5% to +2.7%; in reversed blocks the halves share a steady
    drift and a pattern from one pass to the next alike."""
    block, place = divmod(process, halves)
    return place if block % 2 == 0 else halves - 1 - place
