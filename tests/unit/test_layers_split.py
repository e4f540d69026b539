"""The layer split without the native layer: api is the raw issue slope less the FFI floor
per native call, round by round; with it, the binding's ratio to the C loop round by round;
and a bind group's cost per op, the per-dispatch twin's issue slope less the reused case's
(synthetic slopes, so the arithmetic is exact)."""

from dataclasses import replace

import numpy as np
import pytest

from gpuoverhead.cases import BIND_PER_DISPATCH, Case
from gpuoverhead.gpu.layers.raw import CALLS_PER_OP
from gpuoverhead.methods.sequential import _bind_groups, _layers

BASE = Case("unit", "empty", 1024, 64, "sequential", "submit", "wait", (1, 8, 32))


@pytest.mark.parametrize("encoding", sorted(CALLS_PER_OP))
def test_api_is_raw_less_its_calls_times_the_floor_in_every_round(encoding):
    rng = np.random.default_rng(7)
    raw, wrapper = rng.uniform(2e3, 7e4, 9), rng.uniform(8e4, 9e4, 9)
    floor, times = rng.uniform(100, 160, 9), np.arange(9.0)
    slopes = {(encoding, layer, None, ""): (replace(BASE, encoding=encoding, layer=layer),
                                            None, cpu, times)
              for layer, cpu in (("wrapper", wrapper), ("raw", raw))}
    # A per-dispatch bind group twin is no layer: the split ignores it.
    twin = replace(BASE, encoding=encoding, variant=BIND_PER_DISPATCH)
    slopes[(encoding, "wrapper", None, BIND_PER_DISPATCH)] = (twin, None, wrapper * 2, times)
    out: dict = {}
    _layers(out, slopes, floor)
    by_metric = {key.metric: (key, series) for key, series in out.items()}
    assert set(by_metric) == {"api_ns", "python_ns"}
    key, api = by_metric["api_ns"]
    calls = CALLS_PER_OP[encoding]
    assert f"{calls} x ffi floor" in key.estimator
    np.testing.assert_allclose(api.values, raw - calls * floor)
    np.testing.assert_allclose(by_metric["python_ns"][1].values, wrapper - api.values)


def test_bind_group_cost_is_the_twin_s_issue_slope_less_the_reused_one_s_round_by_round():
    """Signed (a round where the reused case was the slower stays negative), with the ratio
    of medians beside it; a twin without its reused case, and the reused cases, get none."""
    reused, times = np.array([10e3, 12e3, 11e3, 30e3]), np.arange(4.0)
    fresh = np.array([25e3, 24e3, 26e3, 20e3])
    twin = replace(BASE, variant=BIND_PER_DISPATCH)
    slopes = {("submit", "wrapper", None, ""): (BASE, None, reused, times),
              ("submit", "wrapper", None, BIND_PER_DISPATCH): (twin, None, fresh, times),
              ("pass", "wrapper", None, BIND_PER_DISPATCH): (
                  replace(twin, encoding="pass"), None, fresh, times)}
    out: dict = {}
    _bind_groups(out, slopes)
    by_metric = {key.metric: (key, series) for key, series in out.items()}
    assert set(by_metric) == {"bind_group_ns", "bind_group_ratio"}
    assert all(key.case == twin for key, _ in by_metric.values())
    np.testing.assert_allclose(by_metric["bind_group_ns"][1].values, fresh - reused)
    ratio = by_metric["bind_group_ratio"][1]
    assert ratio.point() == pytest.approx(np.median(fresh) / np.median(reused))


def test_the_binding_ratio_is_taken_round_by_round_so_a_state_both_layers_share_cancels():
    """Rounds in two CPU states that slow both layers 1.5x: each round's ratio is the same,
    where the ratio of the two layers' medians over a mix of states would not be."""
    state = np.array([1.0, 1.5, 1.5, 1.0, 1.5, 1.5, 1.5])
    native, wrapper, times = 16e3 * state, 48e3 * state, np.arange(7.0)
    native[3] = 0.0  # a round whose native slope was lost in the noise: no ratio
    slopes = {("submit", layer, None, ""): (replace(BASE, layer=layer), None, cpu, times)
              for layer, cpu in (("wrapper", wrapper), ("native", native))}
    out: dict = {}
    _layers(out, slopes, None)
    (key, ratio), = [(k, s) for k, s in out.items() if k.metric == "binding_ratio"]
    assert key.case.layer == "wrapper" and key.unit == "ratio"
    np.testing.assert_allclose(ratio.values, 3.0)
    assert ratio.count == 6 and list(ratio.times) == [0, 1, 2, 4, 5, 6]
