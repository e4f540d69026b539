"""Rounds measured while the worker's CPU was contended: kept in the samples, left out of
the estimates.

On a lent H200 VM (2026-11-27, `benchmarks/process_levels.py`) each vCPU switched between
two states for stretches of 0.1-1.5 s: a fixed Python loop took 1.1 µs a step in one and
2.0-2.5 µs in the other, and wgpu-native's `submit` 40 µs and 60 µs with them. Fresh
processes of one job then measured anywhere from 38 to 72 µs, by the share of their time in
the slow state, and neither three processes (±26%) nor six an A/A half could pin a figure
down; choosing the CPU that was fastest just before a process started did not help (the
state changed within the process). So every measured round carries a check of its CPU
(run/rounds.py `cpu_check_ns`), and a round whose check took CONTENDED times the job's quiet
check (the QUIET_QUANTILE of its processes' checks) is marked contended (phase 2 of the
records, `contended` in the samples table) and left out of the estimates, where its
process keeps MIN_SHARE of its rounds and MIN_ROUNDS; a process slowed nearly throughout
keeps every round, and its level makes it odd (analysis/odd.py) where it is far off the
others. Where no CPU is slowed no check reaches the factor, and nothing changes. What a
figure means is said in docs/methodology.md: the cost where the CPU is not shared.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpuoverhead.analysis.samples import GroupSamples

#: A round whose CPU check took this many times the quiet check is contended: the VM's
#: slow state ran the loop 1.8-2.3x slower, a quiet CPU's checks vary by well under 1.2x.
CONTENDED = 1.5
#: The quiet check: this quantile of every measured round's check of a job's processes.
QUIET_QUANTILE = 0.1
#: A process leaves its contended rounds out only where at least this share of its rounds,
#: and MIN_ROUNDS, remain.
MIN_SHARE = 0.25
MIN_ROUNDS = 3
#: The phase of a contended round's records (0 measured, 1 warm-up).
PHASE = 2


def quiet_ns(runs: list[GroupSamples]) -> float | None:
    """The job's quiet CPU check in ns; None where no round was checked."""
    checks = [c for s in runs for c in s.checks if c > 0]
    return float(np.quantile(checks, QUIET_QUANTILE)) if checks else None


def contended_rounds(samples: GroupSamples, quiet: float | None) -> list[int]:
    """The measured rounds of one process that ran contended and can be left out."""
    if quiet is None:
        return []
    slow = [r for r, c in enumerate(samples.checks) if c >= CONTENDED * quiet]
    left = samples.rounds - len(slow)
    return slow if slow and left >= max(MIN_ROUNDS, MIN_SHARE * samples.rounds) else []


def mark(runs: list[GroupSamples]) -> tuple[list[GroupSamples], list[int]]:
    """Each process's samples with its contended rounds' records in PHASE, and how many
    rounds each had so."""
    quiet = quiet_ns(runs)
    out, counts = [], []
    for samples in runs:
        slow = set(contended_rounds(samples, quiet))
        counts.append(len(slow))
        if slow:
            samples = replace(samples, records=[
                (i, n, r, PHASE, t0, wall) if phase == 0 and r in slow else
                (i, n, r, phase, t0, wall) for i, n, r, phase, t0, wall in samples.records])
        out.append(samples)
    return out, counts
