"""pairs: ratios of time-adjacent processes of two jobs, on synthetic series."""

import math
from dataclasses import replace

import numpy as np
import pytest

from gpuoverhead.analysis.pairs import paired_ratios, reference_of, same_case
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.cases import Case

CASE = Case("unit", "empty", 1024, 64, "sequential", "submit", "wait", (1, 16), "native")
KEY = Key(CASE, "cpu_per_dispatch_ns", "ns", "synthetic")


def _jobs(mine: list[float], theirs: list[float]) -> tuple[list, list]:
    """One process per median, seven rounds around it; the same key in both jobs."""
    def job(medians: list[float]) -> list[dict[Key, Series]]:
        spread = np.arange(-3, 4, dtype=float)
        return [{KEY: Series(m + spread, spread, 7)} for m in medians]
    return job(mine), job(theirs)


def _ratio(mine: list[float], theirs: list[float]):
    rows = paired_ratios(*_jobs(mine, theirs), "other", "paired_ratio",
                         ("cpu_per_dispatch_ns",), same_case)
    assert len(rows) == 1
    return rows[0]


def test_each_pair_gives_a_ratio_and_the_estimate_is_their_median():
    # The machine's drift (x1, x1.5, x3) hits both jobs of a pair: it cancels.
    row = _ratio([200.0, 300.0, 600.0], [100.0, 150.0, 300.0])
    assert row.key.metric == "paired_ratio" and row.key.call == "cpu_per_dispatch_ns"
    est = row.estimate
    assert est.value == pytest.approx(2.0) and est.ci_low == pytest.approx(2.0)
    assert est.n_samples == 21 and est.level == 0.95


def test_one_slow_pair_among_many_hardly_moves_the_interval():
    theirs = [100.0] * 10
    mine = [200.0 + 2 * i for i in range(10)]
    calm = _ratio(mine, theirs).estimate
    slowed = _ratio([*mine[:-1], 2 * mine[-1]], theirs).estimate
    assert "interpolated order statistics on logs" in calm.kind
    assert (slowed.value, slowed.ci_low, slowed.ci_high) == \
        (calm.value, calm.ci_low, calm.ci_high)
    assert 2.0 < calm.ci_low < calm.value < calm.ci_high < 2.18  # within the pair ratios


def test_a_pair_whose_reference_is_below_resolution_leaves_the_ratio_unbounded():
    few = _ratio([200.0, 210.0, 190.0], [100.0, -5.0, 100.0]).estimate
    assert few.ci_high == math.inf and few.level == 0.75 and "observed range" in few.kind
    many = _ratio([200.0] * 6, [100.0] * 5 + [-5.0]).estimate
    assert many.ci_high == math.inf and many.value == pytest.approx(2.0)
    neither = _ratio([200.0, -3.0, 190.0], [100.0, -5.0, 100.0]).estimate
    assert math.isnan(neither.value) and "undetermined" in neither.kind


def test_one_pair_gives_no_interval_and_an_unmatched_key_no_row():
    one = _ratio([200.0], [100.0]).estimate
    assert one.value == 2.0 and math.isnan(one.ci_low) and one.level == 0.0
    reference = replace(CASE, layer="native", variant="reference")
    match = reference_of({"submit": reference})
    assert match(KEY) == Key(reference, KEY.metric, KEY.unit, KEY.estimator, KEY.call)
    assert match(Key(replace(CASE, layer="wrapper"), KEY.metric, "ns", "")) is None
    mine, theirs = _jobs([200.0, 210.0], [100.0, 100.0])
    assert paired_ratios(mine, theirs, "x", "reference_ratio", ("cpu_per_dispatch_ns",),
                         lambda key: None) == []


def test_each_job_is_paired_with_the_jobs_its_ratios_divide_by():
    """What a partial pass must run beside a job for its ratios to gain a pair
    (run/finish.partners, the same rules as the ratios themselves)."""
    from types import SimpleNamespace

    from gpuoverhead.run.finish import partners

    def job(implementation: str, driver: str, reference: bool = False) -> SimpleNamespace:
        label = implementation + (" reference" if reference else "")
        return SimpleNamespace(adapter=SimpleNamespace(implementation=implementation),
                               driver=driver, reference=reference, label=label)

    jobs = [job("dawn", "webgpu"), job("dawn", "webgpu", reference=True),
            job("wgpu-native", "webgpu"), job("wgpu-native", "webgpu", reference=True),
            job("chromium", "chromium"), job("torch", "torch"), job("torch-cpu", "cpu-ref"),
            job("numpy-cpu", "cpu-ref")]
    assert partners(jobs) == [
        (1, 6),        # dawn: its reference loop, the CPU reference
        (),            # a reference loop's figures stand alone
        (0, 3, 6),     # wgpu-native: over Dawn (the first compared), its loop, the CPU
        (),
        (0, 2, 6),     # chromium: over Dawn, and its browser tax over both natives
        (6,),          # torch: the CPU reference
        (),            # the CPU reference itself
        (6,),          # numpy-cpu
    ]


def test_a_pair_whose_slope_fell_below_zero_gives_a_ratio_held_at_zero():
    """One process's slope lost in its noise (below zero) makes its pair's ratio negative;
    the mean of two pairs then fell below zero (-0.043 in a crossover run beside a busy
    core, outside its own interval [0, 12.7]): a ratio of costs is held at 0, said so."""
    two = _ratio([-30.0, 5.0], [100.0, 100.0]).estimate
    assert two.value == 0.0 and two.ci_low == 0.0 and two.ci_high > 0.05
    assert "fell below zero (-0.125), held at 0" in two.kind
    one = _ratio([-30.0], [100.0]).estimate
    assert one.value == 0.0 and math.isnan(one.ci_high) and "held at 0" in one.kind
    below = _ratio([-30.0, -20.0, -25.0, -26.0, -31.0, -22.0], [100.0] * 6).estimate
    assert math.isnan(below.ci_low) and below.level == 0.0 and "wholly below" in below.kind
    kept = _ratio([30.0, -2.0, 28.0], [100.0] * 3).estimate
    assert kept.value == pytest.approx(56 / 300) and kept.ci_low == 0.0


def test_a_latency_in_two_modes_is_paired_by_its_trimmed_means():
    """Where a job's latency falls in two modes within its processes its figure is each
    process's trimmed mean (combine), so its pairs' ratio is of those, not of the medians,
    which sit in whichever mode holds more than half: 40% at 100 and 60% at 300 give a
    median of 300 and a mean of 220, against the other job's 100."""
    latency = Key(replace(CASE, methodology="naive"), "latency_ns", "ns", "median")
    rng = np.random.default_rng(7)
    mixed = np.concatenate([np.full(40, 100.0), np.full(60, 300.0)])
    mine = [{latency: Series(rng.permutation(mixed) * rng.normal(1, 0.01, 100),
                             np.arange(100.0), 100)} for _ in range(4)]
    theirs = [{latency: Series(np.full(100, 100.0) * rng.normal(1, 0.01, 100),
                               np.arange(100.0), 100)} for _ in range(4)]
    [row] = paired_ratios(mine, theirs, "other", "paired_ratio", ("latency_ns",), same_case)
    assert row.estimate.value == pytest.approx(2.2, rel=0.02)  # medians: 3.0
    assert "trimmed mean" in row.key.estimator
