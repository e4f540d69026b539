"""Two runs compared (gpuoverhead/analysis/runs.py) against textbook implementations and
tables: Welch's interval as scipy computes it, Mann-Whitney's critical values."""

import numpy as np
import pytest

from gpuoverhead.analysis.runs import _shift_rank, runs_p, runs_ratio, welch_ratio


def test_welch_ratio_is_scipy_s_welch_interval_on_logs():
    from scipy import stats as sps

    base, new = np.array([10.0, 12.0, 11.0]), np.array([13.0, 12.5, 15.0, 14.0])
    found = welch_ratio(base, new)
    test = sps.ttest_ind(np.log(new), np.log(base), equal_var=False)
    ci = test.confidence_interval(0.95)
    assert found.value[0] == pytest.approx(np.exp(np.log(new).mean() - np.log(base).mean()))
    assert (found.low[0], found.high[0]) == pytest.approx((np.exp(ci.low), np.exp(ci.high)))


def test_the_shift_interval_uses_mann_whitney_s_critical_values():
    # Two-sided 5% critical values of U (tables): 5 for 6 and 6, 11 for 6 and 10, 23 for
    # 10 and 10, 127 for 20 and 20; the interval is (d_(U+1), d_(mn-U)).
    assert [_shift_rank(m, n) for m, n in ((6, 6), (6, 10), (10, 10), (20, 20))] == [
        6, 12, 24, 128]
    base, new = np.arange(1.0, 7.0), np.arange(1.0, 7.0) * 2.0
    found = runs_ratio(base, new)
    shifts = np.sort(np.log(new)[None, :] - np.log(base)[:, None], axis=None)
    assert found.value[0] == pytest.approx(np.exp(np.median(shifts)))
    assert (found.low[0], found.high[0]) == pytest.approx((np.exp(shifts[5]),
                                                           np.exp(shifts[30])))
    assert "Hodges-Lehmann" in found.kind and "Welch" in runs_ratio(base[:5], new[:5]).kind


@pytest.mark.parametrize("processes", [3, 6])
def test_runs_p_of_many_rows_is_each_row_s_own_test(processes):
    """Rows judged in one call (as compare judges a set's estimates) get the p each row
    gets alone from scipy's test on logs (Welch's t under six processes, exact
    Mann-Whitney from six); a row holding a value at or below zero or not finite is nan,
    and leaves the others as they were."""
    from scipy import stats as sps

    rng = np.random.default_rng(11)
    base = rng.lognormal(3.0, 0.2, (5, processes))
    new = base * rng.lognormal(0.3, 0.2, (5, processes))
    new[1, 0], base[3, -1] = 0.0, np.inf
    found = runs_p(base, new)
    for row in (0, 2, 4):
        lb, ln = np.log(base[row]), np.log(new[row])
        alone = (sps.mannwhitneyu(lb, ln, alternative="two-sided", method="exact")
                 if processes >= 6 else sps.ttest_ind(lb, ln, equal_var=False)).pvalue
        assert found[row] == pytest.approx(alone)
    assert np.isnan(found[[1, 3]]).all() and np.isfinite(found[[0, 2, 4]]).all()
    assert np.isnan(runs_p(base[:, :1], new[:, :1])).all()  # one process a run: no test


def test_a_row_with_a_value_at_or_below_zero_leaves_the_other_rows_their_shift():
    """Hodges-Lehmann over rows (six processes a run): the row holding a zero is
    undetermined, every other row is what it is alone."""
    rng = np.random.default_rng(5)
    base, new = rng.lognormal(0.0, 0.2, (4, 6)), rng.lognormal(0.1, 0.2, (4, 6))
    new[2, 3] = 0.0
    found = runs_ratio(base, new)
    assert np.isnan([found.value[2], found.low[2], found.high[2]]).all()
    for row in (0, 1, 3):
        alone = runs_ratio(base[row], new[row])
        assert (found.value[row], found.low[row], found.high[row]) == pytest.approx(
            (alone.value[0], alone.low[0], alone.high[0]))
    assert "undetermined" in found.kind and "undetermined" not in alone.kind
