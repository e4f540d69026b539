"""Per-vendor overhead tables from many result sets.

One row per vendor / device / backend / implementation, for one benchmark (by default the
empty kernel, which is all overhead). Where several runs measured the same adapter and
implementation, the row shows the median of their estimates and the span of their
intervals, from the lowest bound to the highest (so the spread between runs is never
hidden; it is no 95% interval of that median), and says how many runs it merged.
Warnings of the runs (software adapter, quantized timer, ...) become footnotes of the row.
A run found in several folders (a copy) counts once (results/read.load_all), and no output
is written into a run folder or onto a result file (`check_outputs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuoverhead.cases import BIND_PER_DISPATCH, REFERENCE
from gpuoverhead.errors import UserError, at_most, listed, shortened
from gpuoverhead.present.note_words import read_back, run_warnings
from gpuoverhead.results.columns import RUN_JSON, SAMPLES, SUMMARY
from gpuoverhead.results.read import ResultSet, unfinished

#: Variants of sequential cases that the report's figures leave out.
APART = (REFERENCE, BIND_PER_DISPATCH)

ROW_KEYS = ["vendor", "adapter", "backend", "implementation"]
#: The footnote of a row that merges several runs.
MERGED = ("runs > 1: the median of the runs' estimates, and the span of their intervals from "
          "the lowest bound to the highest (not a 95% interval of that median)")


@dataclass(frozen=True)
class Figure:
    """A column of the table: which estimate of the benchmark it shows."""

    label: str
    metric: str
    methodology: str = "sequential"
    encoding: str | None = "submit"  # None: any (the PyTorch baselines have none)
    sync: str = "wait"
    layer: str = "wrapper"
    #: A fusion figure's K (L, M): one column per K of the benchmark.
    k: int | None = None


FIGURES = (
    Figure("naive", "latency_ns", "naive", encoding=None),
    Figure("submit", "per_dispatch_ns"),
    Figure("pass", "per_dispatch_ns", encoding="pass"),
    Figure("dispatch", "per_dispatch_ns", encoding="dispatch"),
    Figure("cpu (submit)", "cpu_per_dispatch_ns"),
    Figure("cpu (dispatch)", "cpu_per_dispatch_ns", encoding="dispatch"),
    Figure("api (submit)", "api_ns"),
    Figure("python (submit)", "python_ns"),
    Figure("sequential (torch)", "per_dispatch_ns", encoding="-"),
    Figure("gpu", "gpu_ns", encoding="dispatch", sync="timestamps"),
    Figure("inflation", "inflation"),
)
#: A matmul sweep's columns: the sizes where GPU time overtakes dispatch overhead.
CROSSOVER_FIGURES = (
    Figure("crossover M", "crossover_size", "fusion", "dispatch", "-"),
    Figure("crossover M (synced)", "crossover_size_synced", "fusion", "dispatch", "-"),
)


def _fusion_figures(rows: pd.DataFrame) -> list[Figure]:
    """A fusion benchmark's columns: the speedup at each K (amortized), or the crossover."""
    if "crossover_size" in set(rows["metric"]):
        return list(CROSSOVER_FIGURES)
    ks = sorted(int(k) for k in rows.loc[rows["metric"] == "fusion_speedup", "k"].unique())
    return [Figure(f"speedup K={k}", "fusion_speedup", "fusion", "dispatch", k=k) for k in ks]


@dataclass(frozen=True)
class Source:
    """One run behind a report's rows, as its run.json says: what a reader needs to judge
    where a figure came from (when, on what, with which versions and limits)."""

    run_id: str
    folder: str
    started: str
    finished: str
    status: str
    host: str
    processes: int
    time_limit_s: float | None
    #: 'implementation: device (backend), driver' per adapter.
    adapters: list[str]
    #: 'name version' per package, and the native libraries' versions.
    packages: list[str]
    #: The run's warnings in the words its last lines used (note_words.run_warnings).
    warnings: list[str]


def source(rs: ResultSet) -> Source:
    info = rs.info
    host = info.get("host", {})
    native = [f"{name} {lib.get('version', '?')}" for name, lib in info.get("native", {}).items()
              if isinstance(lib, dict)]
    return Source(
        str(info.get("run_id", rs.folder.name)), str(rs.folder), str(info.get("started", "?")),
        str(info.get("finished") or "?"), str(info.get("status", "?")),
        f"{host.get('platform', host.get('os', '?'))}, {host.get('cpu', '?')} "
        f"({host.get('cpu_count', '?')} CPUs), Python {host.get('python', '?')}",
        int(info.get("processes", 1)), info.get("time_limit_s"),
        [f"{a.get('implementation', '?')}: {a.get('device', '?')} ({a.get('backend', '?')}), "
         f"driver {a.get('driver') or '?'}" for a in info.get("adapters", [])],
        [f"{k} {v}" for k, v in info.get("packages", {}).items() if v] + native,
        run_warnings([read_back(w) for w in info.get("warnings", [])]))


@dataclass
class Report:
    """The table (value, low and high columns per figure), its footnotes and its inputs."""

    benchmark: str
    elements: int
    table: pd.DataFrame
    figures: list[Figure]
    notes: list[str]
    #: The runs that gave the table's rows, in the order they were read.
    sources: list[Source]
    #: A line per run read that gave no row (report.left_out).
    left_out: list[str] = field(default_factory=list)


#: The files of a run folder: a report written onto one would replace a run's results.
RESULT_FILES = (RUN_JSON, *(f"{t}.{s}" for t in (SUMMARY, SAMPLES) for s in ("parquet", "csv")))


def check_outputs(files: list[Path], folders: list[Path]) -> None:
    """A UserError, before anything is read or written, for an output file or folder
    inside a run folder (one holding run.json), or for an output file onto an existing
    result file: `report R -o R/summary.csv` replaced the run's own summary."""
    for path, is_folder in [(f, False) for f in files] + [(f, True) for f in folders]:
        if path.exists() and path.is_dir() != is_folder:
            raise UserError(f"-o {path} is a folder: -o takes the file to write, named with "
                            "its format (e.g. out.md)" if not is_folder else
                            f"--plots {path} is a file: --plots takes a folder, which "
                            "receives the plots")
        _check_folder(path, path if is_folder else path.parent)
        target = path.resolve()  # through links: a link to R/summary.csv is R/summary.csv
        around = ([target] if is_folder else []) + [target.parent, *target.parent.parents]
        run = next((p for p in around if (p / RUN_JSON).is_file()), None)
        if run is not None:
            raise UserError(f"{path}: inside the run folder {run}; write reports and plots "
                            "outside run folders, whose files are the run's results")
        if not is_folder and target.name in RESULT_FILES and target.exists():
            raise UserError(f"{path}: exists and is named as a run's result file "
                            f"({', '.join(RESULT_FILES)}); a report is not written over one")


def _check_folder(path: Path, folder: Path) -> None:
    """A UserError where `folder`, or the first of its parents that exists, is no folder:
    making it would fail with "File exists", which names neither it nor what to do."""
    found = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if found is not None and not found.is_dir():
        raise UserError(f"{path}: {found} is not a folder; name an output in a folder that "
                        "exists or can be made")


def merged_summary(sets: list[ResultSet]) -> pd.DataFrame:
    frames = []
    for i, rs in enumerate(sets):
        frames.append(rs.summary.assign(result_set=i))
    return pd.concat(frames, ignore_index=True)


def select(sets: list[ResultSet], benchmark: str | None, elements: int | None
           ) -> tuple[str, int, pd.DataFrame]:
    """The benchmark, its element count and its summary rows over all sets (`result_set`:
    the set's index); defaults: `empty`, else the first, at its smallest size."""
    summary = merged_summary(sets)
    benchmarks = list(summary["benchmark"].unique())
    if not benchmarks:
        raise UserError("the result sets hold no estimates")
    bench = benchmark or ("empty" if "empty" in benchmarks else benchmarks[0])
    rows = summary[summary["benchmark"] == bench]
    if rows.empty:
        raise UserError(f"no benchmark {shortened(bench)!r} in the result sets; they have "
                        f"{listed(map(shortened, benchmarks))}")
    size = elements if elements is not None else int(rows["elements"].min())
    rows = rows[rows["elements"] == size]
    if rows.empty:
        raise UserError(f"benchmark {bench!r} was not measured at {size} elements")
    return bench, size, rows


def left_out(sets: list[ResultSet], bench: str, size: int, rows: pd.DataFrame) -> list[str]:
    """A line per run that gives none of `rows` (the selected benchmark at its size), saying
    what it has instead: a table or history that dropped it silently looked complete."""
    lines = []
    for i in sorted(set(range(len(sets))) - set(rows["result_set"])):
        summary = sets[i].summary
        sizes = sorted(int(e) for e in summary.loc[summary["benchmark"] == bench, "elements"]
                       .unique())
        others = listed(repr(shortened(str(b))) for b in summary["benchmark"].unique())
        has = (f"it measured {bench!r} at {listed(sizes)} elements (--elements)"
               if sizes else f"it has no benchmark {bench!r}, only {others} (--benchmark)"
               if others else "it has no estimates")
        lines.append(f"run {sets[i].info.get('run_id', sets[i].folder.name)} "
                     f"({sets[i].folder}) is left out of {bench!r} at {size} elements: {has}")
    return at_most(lines, f"runs left out of {bench!r} at {size} elements")


def figures_of(rows: pd.DataFrame, masks: dict | None = None) -> list[Figure]:
    """The columns the rows of one benchmark have: FIGURES, or a fusion benchmark's."""
    fusion = (rows["methodology"] == "fusion").any()
    return [f for f in (_fusion_figures(rows) if fusion else FIGURES)
            if _shown(rows, f, masks).any()]  # no frame of the rows: a take of each column


def build(sets: list[ResultSet], benchmark: str | None = None, elements: int | None = None
          ) -> Report:
    """The per-vendor table of `benchmark` at `elements` (defaults: `empty`, its smallest)."""
    bench, size, rows = select(sets, benchmark, elements)
    fusion = (rows["methodology"] == "fusion").any()
    masks: dict = {}  # pick's comparisons of these rows, each made once
    figures = figures_of(rows, masks)
    notes: list[str] = []
    out = []
    cells = _figure_cells(rows, figures, masks)
    for key, group in rows.groupby(ROW_KEYS, sort=True):
        record = dict(zip(ROW_KEYS, key, strict=True))
        set_ids = sorted(group["result_set"].unique())
        record["runs"] = len(set_ids)
        for column, found in cells.items():
            record[column] = found.get(key, np.nan)
        marks = []
        for warning in dict.fromkeys(w for i in set_ids for w in _row_warnings(sets[i], record)):
            if warning not in notes:
                notes.append(warning)
            marks.append(str(notes.index(warning) + 1))
        if record["runs"] > 1:
            if MERGED not in notes:
                notes.append(MERGED)
            marks.append(str(notes.index(MERGED) + 1))
        record["notes"] = ",".join(marks)
        out.append(record)
    table = pd.DataFrame(out)
    if fusion and figures:  # the unfused forms' rows (torch-eager) have no figure of their own
        table = table[table[[f.label for f in figures]].notna().any(axis=1)]
    used = sorted(rows["result_set"].unique())
    return Report(bench, size, table.reset_index(drop=True), figures, notes,
                  [source(sets[i]) for i in used], left_out(sets, bench, size, rows))


def _figure_cells(rows: pd.DataFrame, figures: list[Figure], masks: dict | None = None
                  ) -> dict[str, dict[tuple, float]]:
    """Per column of the table, its value per row (ROW_KEYS): the median of the runs'
    estimates of each figure, the span of their intervals and their lowest level. Each
    figure's rows are picked once for all rows of the table (picking them group by group
    was most of a report's time over many sets)."""
    cells: dict[str, dict[tuple, float]] = {}
    for figure in figures:
        by_row = pick(rows, figure, masks).groupby(ROW_KEYS, sort=False)
        found = {"": by_row["value"].agg(lambda v: float(np.median(v))),
                 " low": by_row["ci_low"].min(), " high": by_row["ci_high"].max(),
                 " level": by_row["ci_level"].min()}
        for suffix, column in found.items():
            cells[f"{figure.label}{suffix}"] = {k: float(v) for k, v in column.items()}
    return cells


def row_notes(report: Report, i: int) -> list[str]:
    """The texts of the footnotes that row `i` of the table is marked with."""
    marks = str(report.table["notes"].iat[i])
    return [report.notes[int(m) - 1] for m in marks.split(",") if m]


def pick(rows: pd.DataFrame, f: Figure, masks: dict | None = None) -> pd.DataFrame:
    """The rows that figure `f` shows (never the reference loop's, nor the per-dispatch bind
    group twins': the figures are of the reused cases). `masks`: the comparisons of these
    `rows` made so far, kept for the next pick of them (a report picks two dozen times, each
    comparing whole text columns again)."""
    return rows[_shown(rows, f, masks)]


def _shown(rows: pd.DataFrame, f: Figure, masks: dict | None = None) -> pd.Series:
    """Which of `rows` figure `f` shows (`pick`)."""
    masks = {} if masks is None else masks

    def equal(column: str, value: Any) -> pd.Series:
        if (column, value) not in masks:
            masks[column, value] = rows[column] == value
        return masks[column, value]

    if APART not in masks:
        masks[APART] = ~rows["variant"].fillna("").isin(APART)
    mask = equal("metric", f.metric) & masks[APART]
    for column in ("methodology", "encoding", "sync", "layer"):
        if column in rows and getattr(f, column) is not None:
            mask &= equal(column, getattr(f, column))
    if f.k is not None:
        mask &= equal("k", f.k)
    return mask


def _row_warnings(rs: ResultSet, row: dict) -> list[str]:
    """The warnings of a run that qualify the figures of `row` (not the per-benchmark CI
    notes): a warning that begins with an adapter's name (a software adapter, one without
    timestamps) is about that adapter's rows, and where it names its label, about that
    family's; one that names no adapter (a skipped layer), and the line of a run that did
    not finish, is about every row of the run."""
    keep = ("software) adapter", "quantized", "timestamp queries", "layer skipped")
    devices = set(rs.summary["adapter"].dropna())
    found = [stopped] if (stopped := unfinished(rs)) else []  # a run that did not finish
    for w in rs.info.get("warnings", []):
        named = [d for d in devices if w.startswith(f"{d} ")]
        if not any(k in w for k in keep) or (named and row["adapter"] not in named):
            continue
        label = w[len(row["adapter"]) + 2:].split(")")[0] if named and \
            w.startswith(f"{row['adapter']} (") else ""
        if not label or row["implementation"].startswith(label.split(", ")[-1]):
            found.append(w)
    return found
