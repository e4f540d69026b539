"""Student t's figures without scipy where they can be had otherwise: the same values as
scipy.special's (bit for bit, or within a stated tolerance), and scipy left unimported
where no figure needs it."""

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
    assert math.isnan(student_t.quantile(0, 0.975))


def test_the_quantiles_beyond_the_kept_ones_are_scipys_within_a_tolerance():
    """Solved without scipy (a trimmed mean's interval asks for any count): within 1e-12
    of scipy's relative to it up to 1,000 degrees of freedom and 1e-8 to a million."""
    for df in [*range(1, 300), 500, 998, 1000, 1001, 10**4, 10**6]:
        for p in (0.975, 0.95, 0.995, 0.9995, 0.6, 0.51):
            expected = float(stdtrit(df, p))
            tolerance = 1e-12 if df <= 1000 else 1e-8
            assert math.isclose(student_t.quantile(df, p), expected, rel_tol=tolerance), (df, p)


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
    """Over t from 0 to 40 and degrees of freedom from 6 (drift's least) to a million,
    about the kept ones: None exactly where scipy's p is above the limit (but for a p
    within the tolerance of it), scipy's p elsewhere, within 1e-12 of it relative to p up to
    1,000 degrees of freedom and 1e-9 beyond (below 1e-300 both are 0)."""
    ts = np.r_[np.linspace(0.0, 40.0, 801), 1e160, math.inf, -3.0, -7.5]
    for df in (6, 7, 10, 11, 38, 100, 101, 998, 1000, 1001, 10**4, 10**6):
        expected = 2.0 * stdtr(df, -np.abs(ts))
        tolerance = 1e-12 if df <= 1000 else 1e-9
        for limit in (stats.DRIFT_MAX_P, 0.05):
            for t, p in zip(ts, expected, strict=True):
                found = student_t.two_sided_p(float(t), df, limit)
                if abs(p - limit) <= tolerance * limit:
                    continue
                if p > limit:
                    assert found is None, (df, limit, t)
                else:
                    assert found is not None, (df, limit, t)
                    assert math.isclose(found, p, rel_tol=tolerance, abs_tol=1e-300), (df, t)


def test_a_run_imports_no_scipy_for_its_intervals_or_drift():
    """Three processes' t interval, a weak trend (rho past its threshold, p far above
    drift's), a strong one (its p computed) and a trimmed mean's interval need no scipy:
    importing it was ~0.3 CPU-s of a run's parent, where three of four tiny runs on lavapipe
    had a drift."""
    code = ("import sys\nimport numpy as np\nfrom gpuoverhead.analysis import stats\n"
            "rng = np.random.default_rng(2)\n"
            "stats.between_processes(rng.lognormal(3, 0.2, size=(4, 3)), True)\n"
            "values = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8.0])\n"
            "weak = stats.drift(values, np.arange(12.0))\n"
            "rho = stats._spearman(np.arange(12.0), values)\n"
            "strong = stats.drift(np.arange(40.0) + rng.normal(0, 3, 40), np.arange(40.0))\n"
            "from gpuoverhead.analysis import modes\n"
            "trimmed = modes.trimmed_mean(rng.lognormal(3, 0.2, 500))\n"
            "print(weak is None, abs(rho) >= stats.DRIFT_MIN_RHO, 0 < strong.p < 1e-9,\n"
            "      trimmed.ci_low < trimmed.value < trimmed.ci_high, 'scipy' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split()
    assert found == ["True", "True", "True", "True", "False"]
