"""Every metric the analysis can emit is declared in gpuoverhead/metrics.py, and `compare`
judges each by its own direction."""

from __future__ import annotations

import ast
import math

import pandas as pd
import pytest
from conftest import ROOT

from gpuoverhead import metrics
from gpuoverhead.errors import UserError
from gpuoverhead.present import compare


def _emitted() -> set[str]:
    """Metric names the package builds rows with: the second argument of every `Key(...)`."""
    found = set()
    for path in (ROOT / "gpuoverhead").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Key" and \
                    len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                found.add(node.args[1].value)
    return found


def test_every_emitted_metric_is_declared_with_a_known_hint_and_direction():
    emitted = _emitted()
    assert {"latency_ns", "tokens_per_s", "overhead_share", "overlapped_ns"} <= emitted
    assert emitted <= set(metrics.METRICS), emitted - set(metrics.METRICS)
    assert all(m.hint in metrics.HINTS and m.better in ("lower", "higher", "none")
               for m in metrics.METRICS.values())
    with pytest.raises(KeyError):
        metrics.of("no_such_metric")


@pytest.mark.parametrize(("better", "ratio", "expected"), [
    ("lower", 1.6, "slower"), ("lower", 0.6, "faster"), ("higher", 1.6, "better"),
    ("higher", 0.6, "worse"), ("none", 1.6, "higher")])
def test_hostile_compare_judges_a_change_by_the_direction_of_its_metric(better, ratio, expected):
    """Issue 26.2: a 1.6x rise in tokens/s was called slower and counted against the gate."""
    assert compare.verdict(ratio, ratio * 0.95, ratio * 1.05, math.nan, 0.05, better) \
        == expected


def test_only_changes_for_the_worse_are_regressions():
    table = pd.DataFrame({"verdict": ["slower", "better", "worse", "faster"],
                          "ratio": [1.6, 1.6, 1 / 1.6, 0.6]})
    assert list(compare.regressions(table, 0.5)["verdict"]) == ["slower", "worse"]


@pytest.mark.parametrize("threshold", [math.nan, -1.0, math.inf])
def test_hostile_compare_thresholds_that_turn_the_verdicts_off_are_refused(threshold):
    with pytest.raises(UserError, match="finite percentage"):
        compare.check_thresholds(threshold, None)
    with pytest.raises(UserError, match="--fail-above"):
        compare.check_thresholds(5.0, threshold)
