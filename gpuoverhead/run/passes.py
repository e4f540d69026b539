"""How many passes of worker processes spend a time limit best: the interval each count is
expected to give (`expected_width`) and the count chosen (`best_passes`), on the
start-ups and least sampling that run/budget.py's schedule has measured."""

from __future__ import annotations

#: Prior of the sampling a process needs before its own noise is as large as the spread
#: between processes, in multiples of its least sampling (warm-up and `min_rounds` rounds).
#: On the H100 the spread between processes was 10-50x the noise within one at the least.
BALANCE = 1.0
#: Half-width of the interval over P processes in units of their spread (sigma / sqrt(P)):
#: Student's t at P - 1 degrees of freedom below six processes, above it the median's
#: order-statistic interval, 1.96 x 1.2533 (docs/methodology.md, "Interval coverage").
_T975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776}
_ORDER = 1.96 * 1.2533


def expected_width(passes: int, sampling_s: float, balance_s: float) -> float:
    """An interval's expected half-width over `passes` processes of `sampling_s` each, in
    units of the spread between processes: its quantile over sqrt(passes), times the spread
    widened by each process's own noise (as large as the spread at `balance_s`)."""
    if passes < 2 or sampling_s <= 0:
        return float("inf")
    quantile = _T975.get(passes, _ORDER)
    return quantile / passes ** 0.5 * (1 + balance_s / sampling_s) ** 0.5


def best_passes(time_s: float, startup_s: float, least_s: float, done: int, most: int,
                cap_s: float = float("inf"), halves: int = 1) -> tuple[int, int]:
    """How many passes in all (`done` of them already run) spend `time_s` best, and how many
    would fit: each pass costs `startup_s` of start-up and at least `least_s` of sampling
    (never a pass that cannot reach it), at most `cap_s` of sampling shared by all passes
    (the suite's budget). The choice is the narrowest `expected_width`, the fewer passes
    among equals, and with `halves` a multiple of them (each half as many processes);
    where no further pass fits, both are `done` (at least 1)."""
    best, fit, width = max(done, 1), max(done, 1), float("inf")
    for passes in range(done + 1, most + 1):
        sampling = min(time_s / (passes - done) - startup_s, cap_s / passes)
        if sampling < least_s:
            break
        if passes % halves:
            continue
        fit, found = passes, expected_width(passes, sampling, BALANCE * least_s)
        if found < width * (1 - 1e-9) or best % halves:  # halves: one a half beats none
            best, width = passes, found
    return best, fit
