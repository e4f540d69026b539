"""row_medians gives numpy's medians bit for bit (the simulations' coverage and odd.py's
verdicts rest on it): rows odd and even, ties, infinities, NaN, rows of NaN alone, and
nanmedian's warning where numpy gives it."""

import warnings

import numpy as np
import pytest

from gpuoverhead.analysis.row_medians import median_rows, nanmedian_rows


def _said(f, a: np.ndarray) -> tuple[np.ndarray, set[str]]:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        found = f(a)
    return found, {str(w.message) for w in said}


@pytest.mark.parametrize("shape", [(400, 20), (300, 7, 5), (500, 3), (200, 4, 2), (50, 1)])
def test_the_medians_of_rows_are_numpy_s(shape):
    rng = np.random.default_rng(list(shape))
    x = rng.standard_normal(shape)
    x[rng.random(shape) < 0.02] = np.inf
    x[rng.random(shape) < 0.02] = -np.inf
    gaps = np.where(rng.random(shape) < 0.3, np.nan, x)
    gaps[:5] = np.nan  # rows of NaN alone
    for a in (x, np.round(x, 1), gaps):  # ties
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert np.array_equal(median_rows(a), np.median(a, axis=-1), equal_nan=True)
            assert np.array_equal(nanmedian_rows(a), np.nanmedian(a, axis=-1), equal_nan=True)
    # What numpy warns of where the values are finite or NaN (odd.py's levels).
    for a, warned in ((np.where(np.isfinite(gaps), gaps, np.nan), {"All-NaN slice encountered"}),
                      (rng.standard_normal(shape), set())):
        assert _said(nanmedian_rows, a)[1] == _said(lambda a: np.nanmedian(a, axis=-1), a)[1] \
            == warned
        assert _said(median_rows, a)[1] == set()


def test_the_median_of_nanoseconds_is_numpy_s():
    """A worker's medians of integer nanoseconds (run/rounds.py: a round's loop readings,
    the warm-up's moving window, the clock's cost) as np.median gives them, odd and even."""
    rng = np.random.default_rng(5)
    for n in (5, 6, 8, 9, 20_000):
        a = rng.integers(0, 10**12, n)
        micro = a[: n // 2 * 2] // 1000  # an even count of smaller values
        assert float(median_rows(a)) == float(np.median(a))
        assert float(median_rows(micro)) == float(np.median(micro))
