"""analysis/odd.py: a process far slower than its job's others is found, and only such one."""

from __future__ import annotations

import numpy as np

from gpuoverhead.analysis.odd import FAR, far, levels, odd_processes
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
    assert 3.0 < level < 3.5  # its times over the median process's (1.1), GPU time aside


def test_processes_that_vary_as_processes_do_are_all_kept():
    rng = np.random.default_rng(7)
    spread = np.exp(rng.normal(0.0, 0.15, (20_000, 10)))  # the H100's processes, 15% apart
    assert far(np.log(spread)).mean() < 1e-4
    slow = spread.copy()
    slow[:, 0] *= 3.4
    assert far(np.log(slow))[:, 0].mean() > 0.95  # 3.4x less the spread: over FAR = 2.5


def test_two_processes_have_no_odd_one_and_fast_ones_are_not_left_out():
    assert odd_processes([_process(1.0), _process(5.0)]) == []
    assert odd_processes([_process(1.0), _process(1.0), _process(1.0 / 5)]) == []
    assert FAR >= 2.0


def test_a_process_without_times_has_no_level():
    assert np.isnan(levels([{}, _process(1.0)])[0])
