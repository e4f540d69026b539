"""Two modes in the samples behind an estimate (analysis/modes.py), on seeded data: what a
sync's completion seen by a poll looks like, and what must not pass for it (one mode with
heavy tails or outliers, a few slow processes)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from gpuoverhead.analysis.modes import split_medians, two_modes

RNG_SEED = 25


def _one_mode(kind: str, rng: np.random.Generator, n: int = 400) -> np.ndarray:
    noise = {"lognormal": rng.normal(0, 0.25, n), "t3": 0.1 * rng.standard_t(3, n),
             "outliers": rng.normal(0, 0.1, n) + np.log(np.where(rng.random(n) < 0.05, 10, 1))}
    return 1e5 * np.exp(noise[kind])


@pytest.mark.parametrize("kind", ["lognormal", "t3", "outliers"])
def test_one_mode_with_tails_or_outliers_is_not_two(kind):
    assert two_modes(_one_mode(kind, np.random.default_rng(RNG_SEED))) is None


def _processes(shares: list[float], rng: np.random.Generator, n: int = 40,
               slow: tuple[int, ...] = ()) -> tuple[pd.Series, pd.Series]:
    """Per process, n samples at 0.4 ms or (with its share) 2.4 ms, 5% noise; a `slow`
    process is 2x throughout instead."""
    values, process = [], []
    for p, share in enumerate(shares):
        late = rng.random(n) < share
        v = np.where(late, 2.4e6, 0.4e6) * np.exp(rng.normal(0, 0.05, n))
        values.append(v * (2.0 if p in slow else 1.0))
        process += [p] * n
    return pd.Series(np.concatenate(values)), pd.Series(process)


def test_completion_in_two_modes_splits_the_medians_and_is_said():
    values, process = _processes([0.3, 0.45, 0.55, 0.7, 0.4, 0.6],
                                 np.random.default_rng(RNG_SEED))
    found = split_medians(values, process)
    assert found is not None
    assert found.low_ns == pytest.approx(0.4e6, rel=0.05)
    assert found.high_ns == pytest.approx(2.4e6, rel=0.05)
    assert 0.4 < found.high_share < 0.6
    assert re.fullmatch(r"(39\d|40\d) µs \(\d+%\) or 2\d{3} µs \(\d+%\)", found.said())


def test_two_modes_that_leave_every_median_in_one_are_not_split():
    values, process = _processes([0.2, 0.25, 0.3, 0.2], np.random.default_rng(RNG_SEED))
    assert two_modes(values.to_numpy()) is not None
    assert split_medians(values, process) is None


def test_a_few_slow_processes_are_the_machine_not_two_modes():
    rng = np.random.default_rng(RNG_SEED)
    values, process = _processes([0.0] * 6, rng, slow=(1, 4))
    assert two_modes(values.to_numpy()) is not None  # two groups of samples...
    assert split_medians(values, process) is None    # ...but of processes, not within them
