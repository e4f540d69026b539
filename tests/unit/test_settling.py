"""When a level settles over a process's age (analysis/settling.py), on seeded timelines
shaped like the regimes measured (issue 54)."""

from __future__ import annotations

import math

import numpy as np

from gpuoverhead.analysis.settling import settle


def _timeline(level, seconds: float = 10.0, bursts: int = 200, noise: float = 0.05,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ages = np.sort(rng.uniform(0, seconds, bursts))
    return ages, level(ages) * np.exp(noise * rng.standard_normal(bursts))


def test_a_flat_level_settles_at_once_whatever_its_noise():
    for noise in (0.02, 0.05, 0.2):
        ages, values = _timeline(lambda a: np.full(a.shape, 17.0), noise=noise)
        found = settle(ages, values)
        assert found.settled and found.at_s < 1.0, (noise, found.at_s)


def test_a_ramp_settles_where_it_ends_and_its_level_is_the_plateaus():
    """16-22 µs for 3 s, then a ramp to 33 by 6 s (bursts 30 ms apart on the H200 VM)."""
    def ramp(a):
        return np.interp(a, [0, 3, 6, 10], [17, 20, 33, 33])

    for seed in range(5):
        ages, values = _timeline(ramp, seed=seed)
        found = settle(ages, values)
        assert found.settled and 4.5 <= found.at_s <= 6.9, (seed, found.at_s)
        level = np.median(values[found.kept(ages)])
        assert abs(level / 33 - 1) < 0.03
        # The whole process's median would be off the settled level.
        assert np.median(values) < 0.95 * 33


def test_a_level_still_moving_at_the_end_is_not_settled():
    ages, values = _timeline(lambda a: 17 + 2.0 * a)
    found = settle(ages, values)
    assert not found.settled and found.at_s > 6.0


def test_the_level_over_age_is_binned_medians_in_age_order():
    ages, values = _timeline(lambda a: np.where(a < 5, 10.0, 20.0), noise=0.0)
    found = settle(ages, values)
    assert len(found.level) == 16
    starts = [a for a, _ in found.level]
    assert starts == sorted(starts) and starts[0] == ages.min()
    assert found.level[0][1] == 10.0 and found.level[-1][1] == 20.0
    assert 4.3 <= found.at_s <= 5.0


def test_each_bin_s_level_is_the_median_of_its_values_odd_or_even_in_count():
    """Bins sorted once for all (not a median a bin) give np.median's value bit for bit."""
    rng = np.random.default_rng(3)
    for n in (48, 49, 50, 61, 200):
        ages, values = np.sort(rng.uniform(0, 10, n)), rng.lognormal(3, 0.4, n)
        found = settle(ages, values)
        edges = [a for a, _ in found.level] + [np.inf]
        for (start, level), stop in zip(found.level, edges[1:], strict=True):
            inside = values[(ages >= start) & (ages < stop)]
            assert inside.size and level == np.median(inside), (n, start)


def test_few_or_no_values():
    found = settle(np.array([0.1, 0.2]), np.array([5.0, 6.0]))
    assert found.settled and found.at_s == 0.1 and len(found.level) == 1
    empty = settle(np.array([]), np.array([]))
    assert not empty.settled and math.isnan(empty.at_s) and empty.level == ()


def test_one_disturbed_bin_does_not_unsettle_a_flat_level():
    """The H200 VM's back-to-back process whose last of 16 bins read 21.9 µs against 19.1-19.5:
    a flat level, settled at once, its figure not that one bin's."""
    for where in (0.0, 5.0, 9.4):
        ages, values = _timeline(lambda a: np.full(a.shape, 19.3), noise=0.01)
        values = np.where((ages >= where) & (ages < where + 0.6), 21.9, values)
        found = settle(ages, values)
        assert found.settled and found.at_s < 0.7, (where, found.at_s)
        assert abs(np.median(values[found.kept(ages)]) / 19.3 - 1) < 0.01
