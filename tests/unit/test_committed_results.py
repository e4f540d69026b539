"""Every committed result set reads: `show`, `report` and `compare`, as a user runs them on
the repository's own `results/` (older schema versions included)."""

from __future__ import annotations

import functools
import json
import math
import shutil
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import ROOT
from typer.testing import CliRunner

from gpuoverhead.analysis.runs import ORDER_MIN
from gpuoverhead.cli import app
from gpuoverhead.present import compare as comparing
from gpuoverhead.results import read

FOLDERS = sorted(p.parent for p in (ROOT / "results").rglob("run.json"))
#: The sets checked in the fast tests (`-m "not slow"`): the three smallest; every set,
#: 1-3 s each, in the whole suite.
FAST = sorted(FOLDERS, key=lambda f: (f / "summary.parquet").stat().st_size)[:3]
#: What a copy of a set multiplies every time by: far beyond compare's 5% threshold.
FACTOR = 2.0


def test_there_are_committed_sets():
    assert len(FOLDERS) >= 10


def _slowed(folder: Path, to: Path) -> Path:
    """A copy of a set whose times (ns estimates with their intervals, and the raw samples'
    times) are FACTOR times longer; ratios, rates and shares are left as they were. Made
    with pyarrow (the samples' times doubled as floats, their pandas types as `* FACTOR` made
    them) and written uncompressed, without statistics: a pandas
    round trip of the tables took twice the CPU. Of the samples only the columns compare
    reads are copied (all 28 took four times the CPU)."""
    to.mkdir()
    shutil.copy(folder / "run.json", to / "run.json")
    summary = pq.read_table(folder / "summary.parquet")
    times = pc.equal(summary["unit"], "ns")
    for column in ("value", "ci_low", "ci_high"):
        summary = summary.set_column(summary.schema.get_field_index(column), column,
                                     pc.if_else(times, pc.multiply(summary[column], FACTOR),
                                                summary[column]))
    pq.write_table(summary, to / "summary.parquet", compression="none")
    names = pq.read_schema(folder / "samples.parquet").names
    samples = pq.read_table(folder / "samples.parquet",  # the columns compare reads
                            columns=[c for c in comparing.RAW_COLUMNS if c in names])
    pandas = json.loads(samples.schema.metadata[b"pandas"])
    for column in ("wall_ns", "issue_ns", "gpu_ns"):  # older sets lack the later ones
        if column in samples.column_names:
            samples = samples.set_column(
                samples.schema.get_field_index(column), column,
                pc.multiply(samples[column].cast(pa.float64()), FACTOR))
            for entry in pandas["columns"]:  # Int64 (nullable) doubled is Float64
                if entry["name"] == column:
                    entry.update(pandas_type="float64", numpy_type=entry["numpy_type"].replace(
                        "int", "float").replace("Int", "Float"))
    samples = samples.replace_schema_metadata({"pandas": json.dumps(pandas)})
    pq.write_table(samples, to / "samples.parquet", compression="none",
                   write_statistics=False)
    return to


def _hodges_lehmann_half(logs: np.ndarray) -> float:
    """Half-width of the Mann-Whitney interval of the shift between `logs` and themselves
    moved (any shift: the differences only move with it), its rank found by enumerating
    every split of the 2m ranks (U's exact null distribution), not as compare does."""
    m = len(logs)
    k = _rank(m)
    d = np.sort((logs[:, None] - logs[None, :]).ravel())
    return (d[m * m - k] - d[k - 1]) / 2


@functools.cache
def _rank(m: int) -> int:
    """The rank k of the interval's ends for m processes a side: the least k with P(U <= k)
    above 2.5%, from every split of the 2m ranks (once per m: ten a side are 184,756)."""
    us = np.sort([sum(r) - m * (m - 1) // 2 for r in combinations(range(2 * m), m)])
    k = 1
    while np.mean(us <= k) <= 0.025:  # P(U <= k) within 2.5%: d_(k + 1) still covers
        k += 1
    return k


def _half_widths(summary: read.ResultSet, table: pd.DataFrame) -> pd.Series:
    """Half-width on logs of each compared row's NEW/BASE interval, found without compare:
    where the set has ORDER_MIN or more processes of the estimate, the Hodges-Lehmann
    shift's Mann-Whitney interval (`_hodges_lehmann_half`); two to five, Welch's interval of
    their log values against the same values moved by the row's factor (scipy's, for the
    rows of one process count at once; a shift does not change its width), nan where one
    is not above zero or unbounded; otherwise sqrt(2) x the set's own half-width on logs
    (both sets have the same relative widths)."""
    from scipy import stats as sps

    rows = summary.per_process
    values = rows["value"].to_numpy(float)
    per_process = {k: values[i] for k, i in  # the groups' rows, not a frame each
                   rows.groupby(comparing.KEY, dropna=False, sort=False).indices.items()}
    own = table.merge(summary.summary[comparing.KEY + ["ci_low", "ci_high"]],
                      on=comparing.KEY, how="left", validate="one_to_one")
    halves = np.full(len(table), math.nan)
    welch: dict[int, list[int]] = {}
    keys = list(zip(*(table[k] for k in comparing.KEY), strict=True))
    for i, (key, base, low, high) in enumerate(zip(keys, table["base"], own["ci_low"],
                                                   own["ci_high"], strict=True)):
        values = per_process.get(key)
        if values is None or len(values) < 2:
            with np.errstate(divide="ignore", invalid="ignore"):
                if base > 0 and low > 0:
                    halves[i] = math.sqrt(2) * math.log(high / low) / 2
        elif not (np.isfinite(values) & (values > 0)).all():
            continue
        elif np.ptp(np.log(values)) == 0:
            halves[i] = 0.0
        elif len(values) >= ORDER_MIN:
            halves[i] = _hodges_lehmann_half(np.log(values))
        else:
            welch.setdefault(len(values), []).append(i)
    for rows in welch.values():
        logs = np.log([per_process[keys[i]] for i in rows])
        ci = sps.ttest_ind(logs, logs, equal_var=False, axis=1).confidence_interval()
        halves[rows] = (ci.high - ci.low) / 2
    return pd.Series(halves, index=table.index)


def _expected(base: read.ResultSet, table: pd.DataFrame) -> pd.Series:
    """The verdict each compared row must get, from the set's own values: its NEW/BASE
    interval (`_half_widths`) lies around FACTOR for a time and 1 for anything else. A time
    is `slower` where that interval excludes 1 (unless the rank test on its samples says
    p >= alpha), else `unsure` (a change of x2 is never `same`); anything else is `same`
    where the interval lies within x1.5 either way, else `unsure`."""
    half = _half_widths(base, table)
    bounded = np.isfinite(half)
    time = table["unit"] == "ns"
    blocked = table["p_value"].notna() & (table["p_value"] >= comparing.ALPHA)
    slower = time & bounded & (FACTOR * np.exp(-half) > 1) & ~blocked
    same = ~time & bounded & (half <= math.log(comparing.RESOLVABLE))
    return pd.Series(np.select([slower, same], ["slower", "same"], "unsure"),
                     index=table.index)


@pytest.mark.parametrize("folder", [f if f in FAST else pytest.param(f, marks=pytest.mark.slow)
                                    for f in FOLDERS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_committed_set_shows_and_compare_finds_its_times_doubled(folder, tmp_path,
                                                                   monkeypatch):
    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(folder)])
    assert shown.exit_code == 0, shown.output
    slow = _slowed(folder, tmp_path / "slow")
    # What a user sees: the CLI on the pair, and its gate at 50% on the slower ones; the
    # table it judged by, kept by a spy on the real compare (computed once, not twice).
    made: list[tuple[read.ResultSet, pd.DataFrame]] = []
    real = comparing.compare

    def kept(base: read.ResultSet, new: read.ResultSet, *args) -> pd.DataFrame:
        made.append((base, real(base, new, *args)))
        return made[-1][1]

    monkeypatch.setattr(comparing, "compare", kept)
    # The fast sets' comparison as the terminal table; the others' as JSON (a third of the
    # CPU of the table's rendering, which is the same code for every set): every row of the
    # table it judged by is there either way (checked below).
    form = [] if folder in FAST else ["--json"]
    gated = runner.invoke(app, ["compare", str(folder), str(slow), "--fail-above", "50", *form])
    assert gated.exit_code == 1, gated.output
    ((base, table),) = made
    if form:
        assert [row["verdict"] for row in json.loads(gated.stdout)["estimates"]] == \
            list(table["verdict"])
    assert base.folder == folder
    judged = base.summary[~base.summary.metric.isin(comparing.DIAGNOSTICS)]
    assert len(table) == len(judged)  # every estimate paired with its own copy, once
    times = table["unit"] == "ns"
    assert np.allclose(table.loc[times, "ratio"].dropna(), FACTOR)
    assert np.allclose(table.loc[~times, "ratio"].dropna(), 1.0)
    expected = _expected(base, table)
    wrong = table.assign(expected=expected)[table["verdict"] != expected]
    assert wrong.empty, wrong[["case", "metric", "call", "verdict", "expected", "ratio_low",
                               "ratio_high", "p_value"]].head(10).to_string()
    assert (expected == "slower").sum() >= 10
    assert f"{(expected == 'slower').sum()} estimates got slower by more than 50" in \
        gated.output


def test_all_committed_sets_report_together():
    result = CliRunner().invoke(app, ["report", str(ROOT / "results")])
    assert result.exit_code == 0, result.output
    assert "NVIDIA H100" in result.output
