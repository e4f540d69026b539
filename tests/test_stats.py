"""The estimators on synthetic data whose true values are known."""

import numpy as np

from gpuoverhead.stats import median_ci, outlier_flags, round_fits


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
