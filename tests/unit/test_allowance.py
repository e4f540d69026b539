"""How far two runs here may differ (present/allowance.py): measured from a back-to-back
comparison's headline intervals, kept for this machine, suite and adapters, and allowed by
compare's verdicts (present/compare.py `verdict`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gpuoverhead.present import allowance
from gpuoverhead.present.compare import verdict
from gpuoverhead.results.read import ResultSet


def _table(lows: list[float], highs: list[float], metric: str = "per_dispatch_ns"):
    return pd.DataFrame({"metric": metric, "ratio_low": lows, "ratio_high": highs})


def test_the_allowance_is_how_far_all_but_5_percent_of_the_intervals_lie_from_1():
    # 40 rows: 36 hold 1, four lie 2%, 4%, 6% and 9% off it (two above, two below).
    lows = [0.95] * 36 + [1.02, 1.04, 0.8, 0.8]
    highs = [1.05] * 36 + [1.2, 1.2, 1 / 1.06, 1 / 1.09]
    # The 95th percentile of (0 x 36, 0.02, 0.04, 0.06, 0.09): 0.0405, rounded up to 4.5%.
    assert allowance.measured(_table(lows, highs)) == pytest.approx(0.045)
    assert allowance.measured(_table([0.9] * 20, [1.1] * 20)) == 0.0
    # Only headline rows count; none: no allowance.
    assert math.isnan(allowance.measured(_table([2.0], [3.0], "api_ns")))


def test_a_change_within_the_allowance_is_not_called_and_same_reaches_past_it():
    # 7% slower, its interval [1.04, 1.10]: a change without an allowance, not with 5%.
    assert verdict(1.07, 1.04, 1.10, 1e-4, 0.05) == "slower"
    assert verdict(1.07, 1.04, 1.10, 1e-4, 0.05, allowance=0.05) == "same"
    # 12% slower beyond a 5% band: still a change; 12% within 10% + 5%: same under it.
    assert verdict(1.12, 1.08, 1.16, 1e-4, 0.05, allowance=0.05) == "slower"
    assert verdict(0.88, 0.85, 0.91, 1e-4, 0.05, allowance=0.10) == "same"
    # Unresolvable stays unsure, whatever the allowance.
    assert verdict(1.0, 0.6, 1.7, 0.5, 0.05, allowance=0.2) == "unsure"


def test_it_is_kept_for_runs_of_one_suite_and_adapters_on_this_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def run(name: str, sha: str = "s1", device: str = "H200") -> ResultSet:
        info = {"suite": {"sha256": sha}, "adapters": [{"device": device}]}
        return ResultSet(tmp_path / name, info, pd.DataFrame())

    a, b = run("a"), run("b")
    assert allowance.kept_for(a, b) is None
    allowance.keep(b, 0.045)
    allowance.keep(b, np.nan)  # nothing measured: the kept one stays
    assert allowance.kept_for(run("c"), run("d")) == (0.045, "b")
    assert allowance.kept_for(run("c", sha="s2"), run("d", sha="s2")) is None
    assert allowance.kept_for(run("c"), run("d", device="H100")) is None
