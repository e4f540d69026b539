"""How many passes of worker processes the time left holds (`fit_passes`), on the start-ups
and least sampling that run/budget.py's schedule has measured."""

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
