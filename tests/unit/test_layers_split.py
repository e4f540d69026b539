"""The layer split without the native layer: api is the raw issue slope less the FFI floor
per native call, round by round (synthetic slopes, so the arithmetic is exact)."""

from dataclasses import replace

import numpy as np
import pytest

from gpuoverhead.cases import Case
from gpuoverhead.gpu.layers.raw import CALLS_PER_OP
from gpuoverhead.methods.sequential import _layers

BASE = Case("unit", "empty", 1024, 64, "sequential", "submit", "wait", (1, 8, 32))


@pytest.mark.parametrize("encoding", sorted(CALLS_PER_OP))
def test_api_is_raw_less_its_calls_times_the_floor_in_every_round(encoding):
    rng = np.random.default_rng(7)
    raw, wrapper = rng.uniform(2e3, 7e4, 9), rng.uniform(8e4, 9e4, 9)
    floor, times = rng.uniform(100, 160, 9), np.arange(9.0)
    slopes = {(encoding, layer, None): (replace(BASE, encoding=encoding, layer=layer), None,
                                        cpu, times)
              for layer, cpu in (("wrapper", wrapper), ("raw", raw))}
    out: dict = {}
    _layers(out, slopes, floor)
    by_metric = {key.metric: (key, series) for key, series in out.items()}
    assert set(by_metric) == {"api_ns", "python_ns"}
    key, api = by_metric["api_ns"]
    calls = CALLS_PER_OP[encoding]
    assert f"{calls} x ffi floor" in key.estimator
    np.testing.assert_allclose(api.values, raw - calls * floor)
    np.testing.assert_allclose(by_metric["python_ns"][1].values, wrapper - api.values)
