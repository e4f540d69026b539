"""The estimators on synthetic data whose true values are known."""

import math

import numpy as np
import pytest

from gpuoverhead.analysis.stats import (
    DRIFT_MAX_P,
    DRIFT_MIN_RHO,
    between_processes,
    drift,
    drift_within,
    median_ci,
    median_ratio,
    outlier_flags,
    process_median_ci,
    ratio_ci,
    round_fits,
)


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
    assert median_ratio(np.array([5.0]), np.array([-1.0])) == math.inf
    assert math.isnan(median_ratio(np.array([-5.0]), np.array([-1.0])))


def test_a_median_of_few_values_says_its_real_coverage():
    rng = np.random.default_rng(7)
    est = median_ci(np.array([3.0, 1.0, 2.0]))
    assert (est.ci_low, est.ci_high) == (1.0, 3.0) and est.level == 0.75
    draws = rng.normal(0, 1, (4000, 3))
    coverage = np.mean((draws.min(axis=1) <= 0) & (draws.max(axis=1) >= 0))
    assert abs(coverage - est.level) < 0.03
    assert median_ci(rng.normal(0, 1, 41)).level == 0.95




def _covers(found, truth: float) -> float:
    return float(np.mean((found.low <= truth) & (truth <= found.high)))


@pytest.mark.parametrize("count", [3, 20])
def test_a_positive_quantity_s_interval_never_reaches_below_zero_and_still_covers(count):
    # Process medians of a cost that varies 2x between processes (log-normal, sd 0.6 on
    # logs, median 1): a linear t interval over three of them reaches below zero about
    # once in five runs.
    medians = np.exp(np.random.default_rng(30 + count).normal(0.0, 0.6, (4000, count)))
    found = between_processes(medians, positive=True)
    assert (found.low > 0).all()
    assert _covers(found, 1.0) >= 0.94
    linear = between_processes(medians, positive=False)
    assert count > 3 or (linear.low < 0).mean() > 0.1  # what the log scale spares


def test_the_review_s_cpu_cost_interval_stays_positive_and_a_difference_may_cross_zero():
    # Three process medians of about 2.27e7 ns whose linear t interval was [-7.8e6, 5.3e7].
    groups = [np.full(5, v) for v in (1.0e7, 2.2e7, 3.6e7)]
    cost = process_median_ci(groups, positive=True)
    assert 0 < cost.ci_low < 1.0e7 and cost.ci_high > 3.6e7
    assert cost.value == pytest.approx((1.0e7 * 2.2e7 * 3.6e7) ** (1 / 3))
    assert cost.kind.endswith("t interval on logs") and cost.level == 0.95
    difference = process_median_ci(groups, positive=False)
    assert difference.ci_low < 0 < difference.ci_high


def test_a_cost_with_a_process_below_resolution_is_held_at_zero_not_below():
    est = process_median_ci([np.array([-50.0, 20.0]), np.array([900.0]),
                             np.array([1100.0])], positive=True)
    assert est.ci_low == 0.0 and est.ci_high > 1100 and "on logs" not in est.kind


@pytest.mark.parametrize("count", [7, 8, 10, 20])
def test_interpolated_order_statistics_cover_95_percent_not_the_wider_pair_s_level(count):
    # Exact pairs cover 98.4% (7), 99.2% (8), 97.9% (10), 95.9% (20): the interpolation
    # between that pair and the next narrower one brings normal data to about 95%.
    medians = np.random.default_rng(40 + count).normal(0.0, 1.0, (6000, count))
    found = between_processes(medians, positive=False)
    assert found.level == 0.95 and "interpolated order statistics" in found.kind
    assert 0.938 <= _covers(found, 0.0) <= 0.962


def test_the_median_lies_inside_its_interval_whatever_the_processes():
    rng = np.random.default_rng(50)
    for count in range(2, 12):
        medians = np.exp(rng.standard_t(3, (2000, count)))  # heavy tails on logs
        for positive in (True, False):
            found = between_processes(medians, positive)
            assert ((found.low <= found.value) & (found.value <= found.high)).all(), count


def test_ratios_over_processes_with_an_unbounded_one_say_so():
    rng = np.random.default_rng(60)

    def speedups(count: int, broken: int) -> list[tuple[np.ndarray, np.ndarray]]:
        groups = [(rng.normal(400, 5, 9), rng.normal(100, 5, 9)) for _ in range(count)]
        return [(t, -b) if i < broken else (t, b) for i, (t, b) in enumerate(groups)]

    few = ratio_ci(speedups(3, 1), rng)  # no t interval over an infinite ratio
    assert few.ci_high == math.inf and few.level == 0.75 and "observed range" in few.kind
    assert 3.5 < few.ci_low < 4.5 and few.value > 3.5
    many = ratio_ci(speedups(8, 1), rng)
    assert many.ci_high == math.inf and math.isfinite(many.value) and many.level == 0.95
    none = ratio_ci([(-t, b) for t, b in speedups(6, 1)], rng)  # -/- : nothing bounds it
    assert math.isnan(none.value) and none.level == 0.0 and "undetermined" in none.kind


def test_drift_shared_by_short_processes_is_found_where_none_shows_it_alone():
    rng = np.random.default_rng(70)
    rounds = np.arange(6)
    rising = [100 * (1 + 0.05 * rounds) + rng.normal(0, 4, 6) for _ in range(12)]
    assert all(drift(g, rounds) is None for g in rising)  # six rounds: too few alone
    found = drift_within(rising)
    assert found is not None and found.rho > 0.5 and 0.15 < found.change < 0.35
    stationary = sum(drift_within([100 + rng.normal(0, 4, 6) for _ in range(12)]) is not None
                     for _ in range(200))
    assert stationary <= 2


def test_a_falling_time_changes_by_no_more_than_all_of_it():
    """Slow first rounds (4x) then steady: the change first to last quarter is -75%, not
    the -288% that dividing by the median of all gave."""
    values = np.r_[np.full(10, 4.0), np.ones(30)] * np.linspace(1.01, 1.0, 40)
    found = drift(values, np.arange(values.size))
    assert found is not None and found.change == pytest.approx(-0.75, abs=0.01)


def test_drift_gives_scipy_spearman_figures_with_ties_and_without():
    """drift's rho and p are scipy.stats.spearmanr's (computed without importing
    scipy.stats at the end of every run): rising, falling, flat, and tied values."""
    from scipy import stats as sps

    rng = np.random.default_rng(71)
    times = rng.permutation(40).astype(float)
    cases = [100 + 0.4 * times + rng.normal(0, 4, 40), 100 - 0.3 * times + rng.normal(0, 2, 40),
             np.round(100 + 0.5 * times + rng.normal(0, 3, 40)), 1.0 + 4.0 * (times >= 30)]
    drifting = 0
    for values in cases:
        expected = sps.spearmanr(times, values)
        found = drift(values, times)
        assert (found is not None) == (abs(expected.statistic) >= DRIFT_MIN_RHO
                                       and expected.pvalue <= DRIFT_MAX_P), expected
        if found is not None:
            drifting += 1
            assert found.rho == pytest.approx(expected.statistic, rel=1e-12)
            assert found.p == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
    assert drifting == len(cases)
    gap = cases[0].copy()
    gap[5] = np.nan  # a round without a value: scipy's rho is nan, and so no drift
    assert math.isnan(sps.spearmanr(times, gap).statistic) and drift(gap, times) is None
