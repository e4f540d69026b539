"""analysis/odd.py: a process far slower than its job's others is found, and only such one."""

from __future__ import annotations

import numpy as np
import pytest

from gpuoverhead.analysis.odd import far, levels, odd_processes
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.cases import Case

CASE = Case("empty/elements=1/sequential/submit", "empty", 1, 64, "sequential", "submit",
            "wait", (1,))


def _process(level: float, gpu: float = 2000.0) -> dict[Key, Series]:
    """One process: CPU-bound times scaled by `level`, a GPU time and a signed difference
    that a slow CPU does not move."""
    found = {Key(CASE, m, "ns", "e"): level * v for m, v in
             (("per_dispatch_ns", 50_000.0), ("cpu_per_dispatch_ns", 16_000.0),
              ("latency_ns", 270_000.0))}
    found[Key(CASE, "gpu_ns", "ns", "e")] = gpu
    found[Key(CASE, "python_ns", "ns", "e")] = -level * 500.0
    return {k: Series(np.full(5, v), np.arange(5.0), 5) for k, v in found.items()}


def test_a_process_on_a_cpu_three_times_slower_is_found_among_three():
    processes = [_process(1.0), _process(3.4), _process(1.1)]
    assert [i for i, _ in odd_processes(processes)] == [1]
    level = dict(odd_processes(processes))[1]
    # Its times over the median of the two kept (sqrt(1.1)), GPU time aside: what FAR is
    # judged against, as the warning says it.
    assert level == pytest.approx(3.4 / 1.1 ** 0.5, rel=1e-6)


def test_processes_that_vary_as_processes_do_are_all_kept():
    rng = np.random.default_rng(7)
    for count in (3, 6, 10):  # none in 20,000 runs (the docstring: 200,000)
        spread = np.exp(rng.normal(0.0, 0.15, (20_000, count)))  # the H100's, 15% apart
        assert not far(np.log(spread)).any()
        slow = spread.copy()
        slow[:, 0] *= 3.4
        assert far(np.log(slow))[:, 0].mean() > 0.9


@pytest.mark.parametrize(("levels", "out"), [
    ([1.0, 1.0, 2.4], []),  # within FAR = 2.5 of the others
    ([1.0, 1.0, 2.6], [2]),  # beyond it, the others alike
    ([1.0, 1.02, 2.6, 1.01, 0.99, 1.0], [2]),
    # 3.3x the median of the two kept, but they differ by 60%: its modified z-score is 3.4,
    # under 3.5, so within their variation (README's and odd.py's example)
    ([1.0, 1.6, 4.2], []),
    ([1.0, 1.1, 4.2], [2]),  # the same process beside two that differ by 10%
    ([1.0, 3.0, 3.2], []),  # two slow among three: the median is theirs
])
def test_the_rule_is_far_beyond_the_kept_processes_and_an_outlier_among_them(levels, out):
    assert [i for i, _ in odd_processes([_process(level) for level in levels])] == out


def test_two_processes_have_no_odd_one_and_fast_ones_are_not_left_out():
    assert odd_processes([_process(1.0), _process(5.0)]) == []
    assert odd_processes([_process(1.0), _process(1.0), _process(1.0 / 5)]) == []


def test_a_process_without_times_has_no_level():
    assert np.isnan(levels([{}, _process(1.0)])[0])
