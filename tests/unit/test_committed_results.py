"""Every committed result set reads: `show`, `report` and `compare`, as a user runs them on
the repository's own `results/` (older schema versions included)."""

from __future__ import annotations

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from gpuoverhead.cli import app

FOLDERS = sorted(p.parent for p in (ROOT / "results").rglob("run.json"))


def test_there_are_committed_sets():
    assert len(FOLDERS) >= 10


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_committed_set_shows_and_compares_with_itself(folder):
    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(folder)])
    assert shown.exit_code == 0, shown.output
    compared = runner.invoke(app, ["compare", str(folder), str(folder)])
    assert compared.exit_code == 0, compared.output
    assert "slower" not in compared.output and "faster" not in compared.output


def test_all_committed_sets_report_together():
    result = CliRunner().invoke(app, ["report", str(ROOT / "results")])
    assert result.exit_code == 0, result.output
    assert "NVIDIA H100" in result.output
