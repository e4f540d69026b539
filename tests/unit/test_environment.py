"""What run.json records of the machine: clocks and how finely they tick."""

from __future__ import annotations

from gpuoverhead.run import environment


def test_the_clocks_are_recorded_and_a_coarse_one_is_warned_about():
    clocks = environment.host()["clocks"]
    assert clocks["perf_counter"]["resolution_ns"] > 0 and clocks["perf_counter"]["monotonic"]
    assert "time" in clocks
    windows = {"perf_counter": {"resolution_ns": 100.0}}
    apple = {"perf_counter": {"resolution_ns": 41.667}}
    linux = {"perf_counter": {"resolution_ns": 1.0}}
    assert "100 ns" in environment.clock_warnings(windows)[0]
    assert environment.clock_warnings(apple) and not environment.clock_warnings(linux)
