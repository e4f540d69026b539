"""Two modes in the samples behind an estimate (analysis/modes.py), on seeded data: what a
sync's completion seen by a poll looks like, and what must not pass for it (one mode with
heavy tails or outliers, a few slow processes)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from gpuoverhead.analysis.modes import TRIM, split_medians, trimmed_mean, two_modes
from gpuoverhead.analysis.stats import outlier_flags

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


def test_a_processs_trimmed_mean_and_its_interval_are_yuens_as_scipy_makes_them():
    from scipy.stats import mstats, trim_mean

    rng = np.random.default_rng(RNG_SEED)
    x = np.where(rng.random(200) < 0.3, 2.4e6, 0.4e6) * np.exp(rng.normal(0, 0.05, 200))
    found = trimmed_mean(x)
    assert found.value == pytest.approx(trim_mean(x, TRIM))
    assert [found.ci_low, found.ci_high] == pytest.approx(
        list(mstats.trimmed_mean_ci(x, limits=(TRIM, TRIM))))
    assert found.level == 0.95 and found.n_samples == 200


def test_the_outlier_flag_takes_a_whole_minority_mode_where_the_trim_keeps_it():
    """Why the mean is trimmed rather than taken over samples not flagged `outlier`: a
    process with 20% of its samples in the fast mode has them all flagged (its median and
    MAD are the slow mode's), so a mean without them would be the slow mode's level; the
    trimmed mean is within 3% of the mixture's mean, and 1% of spikes at 20x the slow
    mode move it by under 2% where they move the plain mean by over 15%."""
    rng = np.random.default_rng(RNG_SEED)
    n = 2000
    fast = rng.random(n) < 0.2
    x = np.where(fast, 0.4e6, 2.4e6) * np.exp(rng.normal(0, 0.05, n))
    assert (outlier_flags(x) == fast).all()
    mixture = (0.2 * 0.4e6 + 0.8 * 2.4e6) * math.exp(0.05 ** 2 / 2)
    assert trimmed_mean(x).value == pytest.approx(mixture, rel=0.03)
    spiked = np.where(rng.random(n) < 0.01, 48e6, x)
    assert trimmed_mean(spiked).value == pytest.approx(trimmed_mean(x).value, rel=0.02)
    assert spiked.mean() > 1.15 * x.mean()

