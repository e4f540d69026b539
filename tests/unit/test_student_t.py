"""Student t's figures without scipy where they can be had otherwise: the same values as
scipy.special's, bit for bit, and scipy left unimported where no figure needs it."""

import math
import subprocess
import sys

import numpy as np
from scipy.special import stdtr, stdtrit

from gpuoverhead.analysis import stats, student_t


def test_the_kept_quantiles_are_scipys_bit_for_bit():
    assert 0.5 + stats.CONFIDENCE / 2 == 0.975
    for df, kept in student_t.QUANTILES_975.items():
        assert kept == float(stdtrit(df, 0.975)), df
    for df in (0, 5, 30):  # beyond the table: scipy's own
        found = student_t.quantile(df, 0.975)
        assert found == stdtrit(df, 0.975) or math.isnan(found) and df == 0


def test_a_t_interval_over_processes_is_the_one_scipys_quantile_gives():
    rng = np.random.default_rng(5)
    for n in range(2, stats.ORDER_MIN):
        x = rng.lognormal(3, 0.2, size=(7, n))
        low, high = stats._t_bounds(x)
        half = stdtrit(n - 1, 0.5 + stats.CONFIDENCE / 2) * x.std(axis=1, ddof=1) / math.sqrt(n)
        assert np.array_equal(low, x.mean(axis=1) - half)
        assert np.array_equal(high, x.mean(axis=1) + half)


def test_the_kept_critical_values_are_scipys_rounded_down():
    for df, kept in student_t.CRITICAL_0001.items():
        exact = float(stdtrit(df, 1 - 0.001 / 2))
        assert exact - 0.001 <= kept < exact and 2.0 * stdtr(df, -kept) > 0.001, df


def test_the_two_sided_p_is_scipys_wherever_it_is_at_most_the_limit():
    """Over t from 0 to 12 and degrees of freedom from 6 (drift's least) to a million,
    about the kept ones: None exactly where scipy's p is above the limit, scipy's p bit for
    bit elsewhere."""
    ts = np.r_[np.linspace(0.0, 12.0, 1201), math.inf, -3.0, -7.5]
    for df in (6, 7, 10, 11, 38, 100, 101, 998, 1000, 1001, 10**6):
        expected = 2.0 * stdtr(df, -np.abs(ts))
        for limit in (stats.DRIFT_MAX_P, 0.05):
            for t, p in zip(ts, expected, strict=True):
                found = student_t.two_sided_p(float(t), df, limit)
                assert found == (float(p) if p <= limit else None), (df, limit, t)


def test_a_run_without_strong_drift_imports_no_scipy():
    """Three processes' t interval and a weak trend (rho past its threshold, p far above
    drift's) need no scipy: importing it was ~0.3 CPU-s of a run's parent."""
    code = ("import sys\nimport numpy as np\nfrom gpuoverhead.analysis import stats\n"
            "rng = np.random.default_rng(2)\n"
            "stats.between_processes(rng.lognormal(3, 0.2, size=(4, 3)), True)\n"
            "values = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8.0])\n"
            "found = stats.drift(values, np.arange(12.0))\n"
            "rho = stats._spearman(np.arange(12.0), values)\n"
            "print(found is None, abs(rho) >= stats.DRIFT_MIN_RHO, 'scipy' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split()
    assert found == ["True", "True", "False"]
