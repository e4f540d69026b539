"""Values are written by their row's display hint, never by guessing from a metric's name."""

from __future__ import annotations

import math

import pytest

from gpuoverhead import metrics
from gpuoverhead.present import format as fmt
from gpuoverhead.present.report import CROSSOVER_FIGURES, FIGURES


@pytest.mark.parametrize(("v", "hint", "want"), [
    (135_000.0, "time", "135.0"), (-5.0, "time", fmt.BELOW), (-2_100.0, "difference", "-2.1"),
    (2.08, "ratio", "2.08x"),
    (math.inf, "ratio", "∞"), (19.96, "rate", "19.96"), (0.21, "share", "21.0%"),
    (145.0, "size", "M 145"), (math.nan, "time", "—")])
def test_a_value_is_written_as_its_hint_says(v, hint, want):
    assert fmt.value(v, hint) == want


def test_every_hint_a_metric_declares_is_written_without_a_unit_of_another_hint():
    written = {hint: fmt.with_ci(0.5, 0.25, 0.75, hint) for hint in set(
        m.hint for m in metrics.METRICS.values()) - {"error"}}
    assert written == {"time": "0.0 [0.0–0.0]", "difference": "0.0 [0.0–0.0]",
                       "ratio": "0.50x [0.25–0.75]",
                       "rate": "0.5 [0.25–0.75]", "share": "50.0% [25.0%–75.0%]",
                       "size": "M 0 [0–1]"}


def test_every_report_figure_is_a_declared_metric():
    for figure in FIGURES + CROSSOVER_FIGURES:
        assert metrics.of(figure.metric).hint in metrics.HINTS
