"""The estimators on synthetic data whose true values are known."""

import math

import numpy as np
import pytest

from gpuoverhead.analysis.stats import (
    median_ci,
    median_ratio,
    outlier_flags,
    process_median_ci,
    ratio_ci,
    round_fits,
)
from gpuoverhead.present.format import with_ci as cell


def test_round_fits_recover_a_known_slope_and_intercept():
    rng = np.random.default_rng(3)
    n = np.array([1, 4, 16, 64, 256])
    walls = 50_000 + 2_500 * n + rng.normal(0, 800, size=(200, n.size))
    walls[::17] *= 3  # a few rounds hit by a hiccup
    slopes, intercepts = round_fits(n, walls)
    slope, fixed = median_ci(slopes), median_ci(intercepts)
    assert slope.ci_low <= 2_500 <= slope.ci_high
    assert abs(slope.value - 2_500) < 25
    assert fixed.ci_low <= 50_000 <= fixed.ci_high


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(400):
        est = median_ci(rng.lognormal(0.0, 0.5, size=41))  # true median 1.0
        hits += est.ci_low <= 1.0 <= est.ci_high
    assert 0.91 <= hits / 400 <= 0.99


def test_outliers_are_flagged_not_removed():
    values = np.r_[np.full(50, 100.0) + np.arange(50) % 5, 400.0]
    flags = outlier_flags(values)
    assert flags.shape == values.shape
    assert flags[-1] and flags[:-1].sum() == 0


def _noisy_speedup_rounds(rng: np.random.Generator, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-round slopes of an unfused (160 µs) and a fused (5 µs) unit, each with 6 µs of
    round-to-round noise: the fused slope comes out <= 0 in about one round in five."""
    return rng.normal(160_000, 6_000, rounds), rng.normal(5_000, 6_000, rounds)


def test_a_speedup_keeps_the_rounds_whose_fused_slope_came_out_at_or_below_zero():
    rng = np.random.default_rng(11)
    top, bottom = _noisy_speedup_rounds(rng, 400)
    assert (bottom <= 0).sum() > 40
    est = ratio_ci([(top, bottom)], rng)
    assert est.value == median_ratio(top, bottom)
    assert est.ci_low <= 32.0 <= est.ci_high  # the true ratio, 160 / 5
    # The per-round ratio without those rounds is biased low, beyond its own CI's reach.
    kept = bottom > 0
    assert median_ci(top[kept] / bottom[kept]).ci_high < 32.0


def test_a_speedup_whose_denominator_may_be_zero_is_unbounded_above_and_says_so():
    rng = np.random.default_rng(12)
    top, bottom = _noisy_speedup_rounds(rng, 6)
    bottom[:2] = -1_000.0  # two of six rounds: the bootstrap sees a median <= 0 often
    est = ratio_ci([(top, bottom)], rng)
    assert math.isfinite(est.value) and est.ci_low > 0 and est.ci_high == math.inf
    assert cell(est.value, est.ci_low, est.ci_high, "ratio").endswith("–∞]")
    assert cell(math.inf, 12.5, math.inf, "ratio") == "> 12.50x"
    assert cell(math.inf, -0.2, math.inf, "ratio") == "undetermined"
    assert median_ratio(np.array([5.0]), np.array([-1.0])) == math.inf
    assert math.isnan(median_ratio(np.array([-5.0]), np.array([-1.0])))


def _processes(rng: np.random.Generator, count: int, offset_sd: float = 5.0,
               noise_sd: float = 2.0, rounds: int = 60) -> list[np.ndarray]:
    """Processes whose medians are offset from the truth (0) with sd 5, rounds noisy with
    sd 2: what worker processes on a drifting machine look like."""
    return [rng.normal(o, noise_sd, rounds) for o in rng.normal(0.0, offset_sd, count)]


@pytest.mark.parametrize("count", [3, 5])
def test_an_interval_over_few_processes_covers_the_truth_95_percent_of_the_time(count):
    rng = np.random.default_rng(100 + count)
    trials = 2000
    hits = sum(e.ci_low <= 0.0 <= e.ci_high for e in
               (process_median_ci(_processes(rng, count)) for _ in range(trials)))
    assert hits / trials >= 0.93, hits / trials


@pytest.mark.parametrize("count", [3, 5])
def test_a_ratio_over_few_processes_covers_the_truth_95_percent_of_the_time(count):
    rng = np.random.default_rng(200 + count)
    trials, hits = 1000, 0
    for _ in range(trials):
        # per process: a ratio of 4 times a log-normal offset; rounds with 5% noise
        pairs = [(4.0 * np.exp(o) * rng.normal(100, 5, 40), rng.normal(100, 5, 40))
                 for o in rng.normal(0.0, 0.2, count)]
        est = ratio_ci(pairs, rng)
        hits += est.ci_low <= 4.0 <= est.ci_high
    assert hits / trials >= 0.93, hits / trials


def test_a_median_of_few_values_says_its_real_coverage():
    rng = np.random.default_rng(7)
    est = median_ci(np.array([3.0, 1.0, 2.0]))
    assert (est.ci_low, est.ci_high) == (1.0, 3.0) and est.level == 0.75
    draws = rng.normal(0, 1, (4000, 3))
    coverage = np.mean((draws.min(axis=1) <= 0) & (draws.max(axis=1) >= 0))
    assert abs(coverage - est.level) < 0.03
    assert median_ci(rng.normal(0, 1, 41)).level == 0.95


def test_a_cost_below_zero_is_never_shown_as_a_cost():
    from gpuoverhead.present.format import value, with_ci

    assert value(-233_900.0, "ns") == "below resolution"
    assert with_ci(-100.0, -4_401_300.0, 1_859_400.0, "ns") == "below resolution [≤ 1859.4]"
    assert with_ci(5_000.0, -700.0, 9_000.0, "ns") == "5.0 [0.0–9.0]"
