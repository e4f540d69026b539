"""combine: per-process series into estimates over processes, on synthetic series whose
process medians are known."""

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from gpuoverhead.analysis.combine import combine
from gpuoverhead.analysis.drift import WITHIN_PROCESSES, drifts
from gpuoverhead.analysis.modes import MEAN
from gpuoverhead.analysis.samples import Calibration
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.cases import DECODE_KERNEL, FUSION, TIMESTAMPS, Case
from gpuoverhead.methods.fusion import _floor_multiple, _token_parts
from gpuoverhead.workloads.decode_model import MODELS, bytes_per_token

CASE = Case("unit", "empty", 1024, 64, "sequential", "submit", "wait", (1, 16))


def _key(metric: str) -> Key:
    return Key(CASE, metric, "ns", "synthetic")


def _series(values, denominator=None, start: float = 0.0) -> Series:
    values = np.asarray(values, dtype=float)
    return Series(values, start + np.arange(values.size, dtype=float), values.size,
                  None if denominator is None else np.asarray(denominator, dtype=float))


def _rows(per_process):
    rows = combine(per_process, np.random.default_rng(0))
    return ({r.key.metric: r for r in rows if r.process is None},
            [r for r in rows if r.process is not None])


def _processes(medians, metric="cpu_per_dispatch_ns", spread=1.0):
    """One process per median: nine rounds symmetric around it."""
    return [{_key(metric): _series(m + spread * np.arange(-4, 5))} for m in medians]


def test_the_estimate_is_the_centre_of_its_interval_over_process_medians():
    medians = [1000.0, 1100.0, 5000.0]  # the third process five times as slow
    combined, own = _rows(_processes(medians))
    row = combined["cpu_per_dispatch_ns"]
    est = row.estimate
    # Under six processes the t interval on logs: its centre, the geometric mean, is shown
    # (run/finish.py leaves such a slow process out before it gets here: test_odd.py).
    assert est.value == pytest.approx((1000.0 * 1100.0 * 5000.0) ** (1 / 3))
    assert est.value == pytest.approx((est.ci_low * est.ci_high) ** 0.5)
    assert "geometric mean of 3 process medians" in est.kind
    assert est.ci_low < 1000.0 and est.ci_high > 5000.0 and est.ci_low > 0
    assert est.kind.startswith("between processes") and est.kind.endswith("on logs")
    assert est.n_samples == 27 and est.level == 0.95
    assert row.rel_spread_between == pytest.approx((5000 - 1000) / est.value)
    assert [r.process for r in own] == [0, 1, 2]
    assert [r.estimate.value for r in own] == medians
    assert all(r.estimate.kind.startswith("within one process") for r in own)


def test_many_processes_get_order_statistics_that_one_slow_process_barely_moves():
    medians = [1000.0 + 10 * i for i in range(9)]
    calm = _rows(_processes(medians))[0]["cpu_per_dispatch_ns"].estimate
    slowed = _rows(_processes([*medians[:-1], 2 * medians[-1]]))[0]["cpu_per_dispatch_ns"]
    assert "interpolated order statistics" in calm.kind
    assert slowed.estimate.value == calm.value
    assert slowed.estimate.ci_low == calm.ci_low
    assert slowed.estimate.ci_high - calm.ci_high < 0.5 * (calm.ci_high - calm.ci_low)


def test_a_check_keeps_a_linear_interval_across_zero_and_a_cost_never_goes_below():
    """A check of the layer split is either sign; a cost measured as a difference (Python's
    share, a bind group's) is a cost: its linear interval held at zero, as a time's."""
    medians = [-5.0, 3.0, 12.0]
    check = _rows(_processes(medians, "ffi_check_ns"))[0]["ffi_check_ns"].estimate
    assert check.ci_low < 0 < check.ci_high and "on logs" not in check.kind
    for metric in ("python_ns", "bind_group_ns", "latency_ns"):  # one below the resolution
        cost = _rows(_processes(medians, metric))[0][metric].estimate
        assert cost.ci_low == 0.0 and cost.ci_high == pytest.approx(check.ci_high), metric
    # All three above zero: the difference keeps its linear interval (a log one would
    # exclude zero, which the cost may be), the time its interval on logs.
    medians = [1.0, 8.0, 20.0]
    python = _rows(_processes(medians, "python_ns"))[0]["python_ns"].estimate
    assert "on logs" not in python.kind and python.ci_low == 0.0
    time = _rows(_processes(medians, "latency_ns"))[0]["latency_ns"].estimate
    assert "on logs" in time.kind and time.ci_low > 0


def test_a_cost_within_one_process_is_held_at_zero_where_single_rounds_are_not():
    rounds = [{_key("per_dispatch_ns"): _series([-30.0, -10.0, 5.0, 20.0, 40.0, 60.0, 80.0])}]
    est = _rows(rounds)[0]["per_dispatch_ns"].estimate
    assert est.value == 20.0 and est.ci_low == 0.0 and est.ci_high == 80.0  # n = 7: range
    assert est.kind.startswith("within one process")


def test_a_cost_whose_interval_lies_below_zero_has_none_rather_than_an_inverted_one():
    # A ci run on lavapipe wrote gpu_fixed_ns [0, -3,924]: its upper end below its lower.
    rounds = [{_key("fixed_ns"): _series([-5000.0, -4500.0, -4000.0, -3900.0, -3800.0,
                                          -3700.0, -3600.0])}]
    cost = _rows(rounds)[0]["fixed_ns"].estimate
    assert cost.value == 0.0 and np.isnan(cost.ci_low) and np.isnan(cost.ci_high)
    assert cost.level == 0.0 and "not resolved" in cost.kind and "no interval" in cost.kind


def test_a_cost_whose_median_falls_below_zero_is_held_at_zero_and_says_it_is_not_resolved():
    """A slope lost in the wait's noise (the H100 crossover run: Dawn's fused step -27.5 us
    with an interval [0, 7.4 us]) is never a negative cost outside its own interval; a
    check keeps its sign."""
    values = [-80.0, -60.0, -40.0, -30.0, -10.0, 5.0, 20.0]
    rows = _rows([{_key(m): _series(values) for m in ("per_dispatch_ns", "python_ns",
                                                      "ffi_check_ns")}])[0]
    for metric in ("per_dispatch_ns", "python_ns"):
        cost = rows[metric].estimate
        assert cost.value == 0.0 and cost.ci_low == 0.0 <= cost.ci_high
        assert "not resolved" in cost.kind and "-30" in cost.kind
    check = rows["ffi_check_ns"].estimate
    assert check.value == -30.0 and "not resolved" not in check.kind


def test_a_ratio_is_the_centre_of_the_process_ratios_of_medians():
    key = Key(CASE, "fusion_speedup", "ratio", "synthetic")
    shifts = np.arange(-3, 4)
    per_process = [{key: _series(r * 100.0 + shifts, 100.0 + shifts)} for r in (3.0, 4.0, 9.0)]
    est = _rows(per_process)[0]["fusion_speedup"].estimate
    assert est.value == pytest.approx((3.0 * 4.0 * 9.0) ** (1 / 3))  # the t interval's centre
    assert est.ci_low < 3.0 and est.ci_high > 9.0 and "process ratios" in est.kind


def test_one_process_gives_its_own_interval_and_no_rows_per_process():
    combined, own = _rows(_processes([1000.0]))
    est = combined["cpu_per_dispatch_ns"].estimate
    assert not own and est.kind.startswith("within one process")
    assert math.isnan(combined["cpu_per_dispatch_ns"].rel_spread_between)


def test_a_rise_within_short_processes_is_reported_though_none_shows_it_alone():
    rng = np.random.default_rng(8)
    rounds = np.arange(6)
    # Each process starts afresh: over the run's clock the values saw up and down.
    rising = [{_key("per_dispatch_ns"): _series(1000 * (1 + 0.05 * rounds)
                                                + rng.normal(0, 30, 6), start=100.0 * i)}
              for i in range(10)]
    found = drifts(rising)
    assert [d["scope"] for d in found] == [WITHIN_PROCESSES]
    assert 0.15 < found[0]["change"] < 0.35
    flat = [{_key("per_dispatch_ns"): _series(1000 + rng.normal(0, 30, 6), start=100.0 * i)}
            for i in range(10)]
    assert drifts(flat) == []


def test_the_variance_components_say_whether_processes_or_rounds_set_the_width():
    rng = np.random.default_rng(7)
    apart = [{_key("per_dispatch_ns"): _series(m * (1 + 0.002 * rng.standard_normal(40)))}
             for m in (1000.0, 1300.0, 800.0, 1150.0, 950.0, 1250.0)]
    noisy = [{_key("per_dispatch_ns"): _series(1000 * rng.lognormal(0, 0.3, 40))}
             for _ in range(6)]
    between = _rows(apart)[0]["per_dispatch_ns"]
    within = _rows(noisy)[0]["per_dispatch_ns"]
    assert between.rel_spread_between > 0.4 and between.rel_ci_within < 0.01
    assert within.rel_ci_within > 0.05 and within.rel_spread_between < 3 * within.rel_ci_within
    one = _rows(noisy[:1])[0]["per_dispatch_ns"]
    assert one.rel_ci_within == pytest.approx(one.estimate.rel_ci)
    assert math.isnan(one.rel_spread_between)


def test_a_decode_steps_floor_multiple_is_its_gpu_time_over_bytes_by_bandwidth():
    """GPU ns per token (a timestamps slope) over the memory floor: the bytes one step must
    read (f16 weights: fewer) over the adapter's bandwidth (bytes / GB/s is ns); none
    without a bandwidth. Over the measured read stream's bandwidth, a row of its own."""
    case = Case("decode", DECODE_KERNEL, 896, 256, FUSION, "dispatch", TIMESTAMPS, (1, 2),
                variant="fused", k=128)
    f16 = replace(case, kernel=f"{DECODE_KERNEL}_f16")
    floor_ns = bytes_per_token(MODELS[896], 128) / 3350.0
    slopes, times = np.array([2.0, 2.5, np.nan]) * floor_ns, np.arange(3.0)
    known, unknown = (SimpleNamespace(cal=Calibration(0.0, 1.0, bw)) for bw in (3350.0, None))
    out: dict = {}
    for view, c in ((known, case), (known, f16), (unknown, case)):
        _floor_multiple(view, c, out, slopes, times)
    assert [(k.case, k.metric) for k in out] == [(case, "floor_multiple"),
                                                  (f16, "floor_multiple")]
    f32_series, f16_series = out.values()
    assert np.allclose(f32_series.values, [2.0, 2.5])
    assert f16_series.values[0] == pytest.approx(
        2.0 * floor_ns / (bytes_per_token(MODELS[896], 128, "f16") / 3350.0))


PARTS = ("read_floor_ns", "dispatch_gpu_ns", "kernel_excess_ns")


def _taken_apart(processes: int, multiple: float) -> dict:
    """Combined rows of a fused 0.5B step's GPU time and its parts (_token_processes)."""
    return _rows(_token_processes(processes, multiple))[0]


def _token_processes(processes: int, multiple: float, seed: int = 57) -> list[dict]:
    """A fused 0.5B step's GPU time and its parts in each of `processes` seeded
    workers, each with its own read stream (about 4 TB/s) and time per dispatch (about
    1.9 µs), its rounds' GPU-time slopes about `multiple` times its floor."""
    case = Case("decode", DECODE_KERNEL, 896, 256, FUSION, "dispatch", TIMESTAMPS, (1, 2),
                variant="fused", k=128)
    needed, rng, times = bytes_per_token(MODELS[896], 128), np.random.default_rng(seed), \
        np.arange(9.0)
    per_process = []
    for _ in range(processes):
        read = 4000.0 * (1 + 0.05 * rng.standard_normal())
        cal = Calibration(0.0, 1.0, 4800.0, read, 1900.0 * (1 + 0.05 * rng.standard_normal()),
                          {case.id: 127})
        slopes = multiple * needed / read * (1 + 0.03 * rng.standard_normal(9))
        out = {Key(case, "gpu_ns", "ns", "round-median theil-sen"): Series(slopes, times, 18)}
        _token_parts(SimpleNamespace(cal=cal), case, out, slopes, times)
        per_process.append(out)
    return per_process


@pytest.mark.parametrize("processes", [1, 3, 8])
def test_a_decode_tokens_gpu_time_taken_apart_adds_up_within_its_interval(processes):
    """The read floor, the dispatches' GPU time and the kernels' excess are there, at or
    above zero with intervals that stay there, and add up to the GPU time: within one
    process a slope less two constants, over processes by construction (the excess the GPU
    time's centre less the others': each part's centre on its own, t intervals on logs for
    3, order statistics for 8, would not add up), its interval holding its value and the
    excess's own interval over processes."""
    rows = _taken_apart(processes, 2.5)
    gpu, parts = rows["gpu_ns"].estimate, [rows[m].estimate for m in PARTS]
    assert all(p.value > 0 and p.ci_low >= 0 for p in parts), parts
    total = sum(p.value for p in parts)
    assert total == pytest.approx(gpu.value, rel=1e-12)
    if processes == 1:
        assert parts[0].level == parts[1].level == 0  # one measurement: no interval
    else:
        own = combine([{k: s for k, s in p.items() if k.metric == "kernel_excess_ns"}
                       for p in _token_processes(processes, 2.5)], np.random.default_rng(0))[0]
        excess, less = parts[2], parts[0].value + parts[1].value
        assert excess.ci_low <= own.estimate.ci_low and own.estimate.ci_high <= excess.ci_high
        # The union of the GPU time's interval less the other parts' centres and its own:
        # neither wider (a sum of the parts' widths) nor narrower (the GPU time's alone).
        assert excess.ci_low == pytest.approx(max(0.0, min(gpu.ci_low - less,
                                                           own.estimate.ci_low)))
        assert excess.ci_high == pytest.approx(max(gpu.ci_high - less, own.estimate.ci_high))
    assert parts[0].value / gpu.value == pytest.approx(1 / 2.5, rel=0.1)
    assert parts[1].value == pytest.approx(127 * 1900.0, rel=0.1)


def test_a_kernels_excess_below_zero_is_held_there_and_says_so():
    """GPU time under the read floor and the dispatches (kernels overlapping them, or a
    slope in the noise): the excess is held at zero with the reason; an interval wholly
    below zero is none."""
    excess = _taken_apart(1, 0.9)["kernel_excess_ns"].estimate
    assert excess.value == 0 and "not resolved" in excess.kind
    assert math.isnan(excess.ci_low) and "no interval" in excess.kind


def test_a_token_has_no_parts_where_its_worker_measured_no_floors():
    """No read stream, no time per dispatch, or no dispatch count for the case: no parts
    (never a guessed one); another workload's GPU-time case: none either."""
    case = Case("decode", DECODE_KERNEL, 896, 256, FUSION, "dispatch", TIMESTAMPS, (1, 2),
                variant="fused", k=128)
    slopes, times = np.full(3, 5e6), np.arange(3.0)
    for cal, c in ((Calibration(0.0, 1.0, None, None, 1900.0, {case.id: 127}), case),
                   (Calibration(0.0, 1.0, None, 4000.0, None, {case.id: 127}), case),
                   (Calibration(0.0, 1.0, None, 4000.0, 1900.0, {}), case),
                   (Calibration(0.0, 1.0, None, 4000.0, 1900.0, {case.id: 127}),
                    replace(case, benchmark="mlp", kernel="fusion_mlp"))):
        out: dict = {}
        _token_parts(SimpleNamespace(cal=cal), c, out, slopes, times)
        assert out == {}, cal


def test_a_decode_slope_held_at_zero_gives_an_unbounded_token_rate():
    """A decode step's wall slope whose median falls below zero (lavapipe beside a busy
    core) is held at zero: its tokens per second, 1e9 over it, is unbounded, not a division
    by zero that ends the run."""
    case = Case("decode", DECODE_KERNEL, 128, 256, FUSION, "dispatch", "wait", (1, 2),
                variant="fused", k=16)
    key = Key(case, "per_unit_ns", "ns", "round-median theil-sen")
    rows = combine([{key: _series([-3.0, -2.0, -1.0, 1.0, -2.5])}], np.random.default_rng(0))
    rate = {r.key.metric: r.estimate for r in rows if r.process is None}["tokens_per_s"]
    assert math.isinf(rate.value)


def _two_modes(shares, metric="latency_ns", n=60, seed=25, slow=()):
    """Per process, n samples at 0.4 ms or (with its share) 2.4 ms, 5% noise; a `slow`
    process is 2x throughout."""
    rng = np.random.default_rng(seed)
    found = []
    for p, share in enumerate(shares):
        v = np.where(rng.random(n) < share, 2.4e6, 0.4e6) * np.exp(rng.normal(0, 0.05, n))
        found.append({_key(metric): _series(v * (2.0 if p in slow else 1.0))})
    return found


def test_samples_in_two_modes_that_split_the_medians_give_each_processs_trimmed_mean():
    """Six processes whose shares of the slow mode put three medians in each: each
    process's figure is its 5% trimmed mean (scipy's trim_mean), the estimate the median of
    those over processes with its interval, said in `estimator` and `modes`."""
    from scipy.stats import trim_mean

    per_process = _two_modes([0.2, 0.3, 0.4, 0.6, 0.7, 0.8])
    combined, own = _rows(per_process)
    row = combined["latency_ns"]
    means = [trim_mean(p[_key("latency_ns")].values, 0.05) for p in per_process]
    assert [r.estimate.value for r in own] == pytest.approx(means)
    assert row.estimate.value == pytest.approx(np.exp(np.median(np.log(means))))  # on logs
    assert row.estimate.ci_low < row.estimate.value < row.estimate.ci_high
    assert "process trimmed means (samples in two modes)" in row.estimate.kind
    assert row.key.estimator == MEAN and all(r.key.estimator == MEAN for r in own)
    assert row.modes is not None and row.modes.low_ns == pytest.approx(0.4e6, rel=0.05)
    assert all(r.estimate.kind.startswith("within one process: Yuen") for r in own)
    assert row.rel_spread_between == pytest.approx((max(means) - min(means))
                                                   / row.estimate.value)


def test_the_mean_moves_with_the_shares_where_the_median_jumps_between_modes():
    """Processes whose slow share is 40-60% had medians 0.4 or 2.4 ms (spread over 1.5x the
    estimate); their means lie within half the estimate of each other, and so do two such
    jobs' estimates."""
    first, _ = _rows(_two_modes([0.4, 0.45, 0.48, 0.52, 0.55, 0.6]))
    second, _ = _rows(_two_modes([0.42, 0.47, 0.49, 0.53, 0.56, 0.58], seed=26))
    assert first["latency_ns"].rel_spread_between < 0.5
    assert second["latency_ns"].estimate.value == pytest.approx(
        first["latency_ns"].estimate.value, rel=0.1)


def test_two_modes_within_processes_are_a_mean_though_every_median_is_in_one():
    """Slow shares of 55-75% (the H200's A/A halves: 49-78%) put every median in the slow
    mode in this run, and one median in the fast mode in the next: whether the medians
    split is chance, so the figure is the trimmed mean either way."""
    per_process = _two_modes([0.55, 0.6, 0.65, 0.7, 0.75, 0.6])
    assert all(np.median(p[_key("latency_ns")].values) > 2e6 for p in per_process)
    combined, _ = _rows(per_process)
    assert combined["latency_ns"].key.estimator == MEAN


def test_a_slope_a_call_and_a_few_slow_processes_keep_the_median():
    """Only a latency whose samples are in two modes within its processes changes: the
    same samples as a slope or a breakdown call (whose two modes the H200's A/A halves did
    not agree on), or processes each wholly in one mode (two of six twice as slow), keep
    the median."""
    shares = [0.2, 0.3, 0.4, 0.6, 0.7, 0.8]
    for per_process, metric in ((_two_modes(shares, "per_dispatch_ns"), "per_dispatch_ns"),
                                (_two_modes(shares, "call_ns"), "call_ns"),
                                (_two_modes([0.0] * 6, slow=(1, 4)), "latency_ns")):
        combined, own = _rows(per_process)
        medians = [np.median(p[_key(metric)].values) for p in per_process]
        assert combined[metric].modes is None and combined[metric].key.estimator == "synthetic"
        assert [r.estimate.value for r in own] == medians
