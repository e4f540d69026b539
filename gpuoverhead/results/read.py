"""Reading result sets back: find run folders, check their schema, load their tables.

Every problem a user can cause here (a path that matches nothing, a corrupt or truncated
Parquet file, a run of another schema version, a run.json field of the wrong type) is a
UserError naming the file.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gpuoverhead import metrics
from gpuoverhead.errors import UserError, at_most, listed
from gpuoverhead.results.bounded import SAMPLES_BOUND, SUMMARY_BOUND, frame, read_json, read_table
from gpuoverhead.results.columns import (
    RUN_JSON,
    SAMPLES,
    SCHEMA_VERSION,
    STATES,
    STATES_COLUMNS,
    SUMMARY,
    RunRecord,
)
from gpuoverhead.results.summary_checks import check_columns, check_pairs, check_units


@dataclass
class ResultSet:
    """One run folder: its run.json, its summary (only estimates over all processes) and
    each process's own estimates (`per_process`: what `compare` weighs two runs by, made a
    frame when first asked for: `history` over 2,000 runs spent a third of its time on
    frames it never used)."""

    folder: Path
    info: dict[str, Any]
    summary: pd.DataFrame
    processes: Callable[[], pd.DataFrame] = field(default=pd.DataFrame, repr=False)

    @functools.cached_property
    def per_process(self) -> pd.DataFrame:
        return self.processes()

    def states(self) -> pd.DataFrame:
        """Its jobs' estimates in a CPU state beside the headline's (`states.parquet`, the
        summary's columns and `cpu_state`; over all processes and per process), empty where
        it kept none: read only where asked (`compare`)."""
        path = self.folder / f"{STATES}.parquet"
        if not path.is_file():
            return pd.DataFrame(columns=STATES_COLUMNS)
        found = frame(read_table(path, SUMMARY_BOUND))
        if "cpu_state" not in found:
            raise UserError(f"{path}: no cpu_state column: not a gpuoverhead states table")
        check_columns(found, path)
        check_units(found, path)
        return migrate(found)

    def samples(self, columns: list[str] | None = None, filters: list | None = None
                ) -> pd.DataFrame:
        """The samples table, reading only `columns` and the rows that pass `filters`
        (pyarrow's (column, op, value) triples)."""
        path = self.folder / f"{SAMPLES}.parquet"
        return frame(read_table(path, SAMPLES_BOUND, columns, filters))


#: Most folders searched under one path for runs: a folder of result sets holds a few
#: hundred; more means a path such as `/` or a home folder, whose walk would take minutes.
MAX_SEARCHED = 10_000


def skipped(name: str) -> bool:
    """Whether a folder met while looking for runs is passed over: a hidden one, which holds
    no run of its own (.git, .venv), or what an interrupted `run --force` left beside the
    run it was to replace (`.<run>.<pid>.new`, run/files.py): reading it would stand in
    for that run."""
    return name.startswith(".")


def _runs_under(root: Path) -> list[Path]:
    """The run folders below `root` (not inside a run folder, nor in skipped folders); a
    UserError once MAX_SEARCHED folders were searched without reaching the end."""
    found = []
    for searched, (folder, names, files) in enumerate(os.walk(root), 1):
        if searched > MAX_SEARCHED:
            raise UserError(f"{root}: more than {MAX_SEARCHED:,} folders to search for runs; "
                            "name the run folders, or the folder that holds them")
        if RUN_JSON in files:
            found.append(Path(folder))
            names.clear()
        else:
            names[:] = sorted(n for n in names if not skipped(n))
    return found


def find_folders(paths: list[str]) -> list[Path]:
    """Run folders under each path (a folder, a glob, or a file inside a run folder)."""
    folders: list[Path] = []
    for pattern in paths:
        matches = [Path(p) for p in glob.glob(pattern, recursive=True)] or [Path(pattern)]
        for match in matches:
            if match.is_file():
                match = match.parent
            if not match.exists():
                raise UserError(f"{pattern}: no such file or folder")
            if (match / RUN_JSON).is_file():
                folders.append(match)
            else:
                folders += _runs_under(match)
    unique = list(dict.fromkeys(f.resolve() for f in folders))
    if not unique:
        raise UserError(f"no result sets (folders with {RUN_JSON}) under {listed(paths)}")
    return unique


def load(folder: Path) -> ResultSet:
    """A result set, checked: readable run.json of this schema version, readable summary."""
    path = folder / RUN_JSON
    if not path.is_file():
        raise UserError(f"{folder}: not a run folder (no {RUN_JSON})")
    info = read_json(path)
    version = info.get("schema_version") if isinstance(info, dict) else None
    if isinstance(version, bool) or version not in READABLE:  # true == 1 in Python
        raise UserError(f"{path}: schema version {version!r}, this gpuoverhead reads versions "
                        f"{', '.join(map(str, READABLE))}")
    check_record(info, path)
    path = folder / f"{SUMMARY}.parquet"
    table = read_table(path, SUMMARY_BOUND)
    if not {"metric", "unit"} <= set(table.column_names):
        raise UserError(f"{path}: no metric/unit columns: not a gpuoverhead summary")
    pairs = table.select(["metric", "unit"]).group_by(["metric", "unit"]).aggregate([])
    check_pairs(zip(*(pairs[c].to_pylist() for c in ("metric", "unit")), strict=True), path)
    if "process" not in table.column_names:  # before version 3: estimates over all only
        return ResultSet(folder, info, _summary(table, path))
    over_all = pc.is_null(table["process"], nan_is_null=True)
    rest = table.filter(pc.invert(over_all))  # split as read: text columns are still codes
    summary = _summary(table.filter(over_all), path)
    # `process` as the whole column reads (an integer column with gaps reads as float)
    return ResultSet(folder, info, summary, lambda: _summary(rest, path).astype(
        {"process": summary["process"].dtype}))


def _summary(table: pa.Table, path: Path) -> pd.DataFrame:
    """Rows of a summary as a frame, checked, with the columns this version writes."""
    summary = frame(table)
    check_columns(summary, path)
    return migrate(summary)


#: Schema versions this gpuoverhead reads; older ones gain their missing columns on load.
READABLE = (1, 2, 3, 4, SCHEMA_VERSION)
#: Columns added since version 1 (or to its later sets), with what an older set means.
_ADDED = {"variant": "", "k": 0, "ci_level": float("nan"), "ci_kind": "", "bound": "",
          "processes": 1, "rel_spread_between": float("nan"), "rel_ci_within": float("nan"),
          "modes": "", "regime": "", "settled_s": float("nan"), "call": ""}


def migrate(summary: pd.DataFrame) -> pd.DataFrame:
    """An older summary with the columns this version writes (`ci_level` NaN: the interval
    of a version-1 set was labelled 95% whatever its real coverage)."""
    missing = {c: v for c, v in _ADDED.items() if c not in summary}
    if "family" not in summary:  # before version 3 each implementation was its own family
        missing["family"] = summary["implementation"]
    if "hint" not in summary:
        described = [metrics.METRICS.get(m, metrics.Metric(u, "time" if u == "ns" else "ratio",
                                                            "none"))
                     for m, u in zip(summary["metric"], summary["unit"], strict=True)]
        missing["hint"] = [d.hint for d in described]
        missing["better"] = [d.better for d in described]
    if "process" not in summary:
        missing["process"] = pd.array([pd.NA] * len(summary), dtype="Int64")
    return summary.assign(**missing) if missing else summary


#: A run's status while it measures, and after an interrupt: its folder holds only the
#: benchmarks it finished before it stopped (run/files.py).
UNFINISHED = ("running", "interrupted")


def unfinished(rs: ResultSet) -> str | None:
    """A line saying that a run did not finish, and how much of it did, or None: a run killed
    with `kill -9` keeps status `running`, and its tables read like a finished run's."""
    status = rs.info.get("status")
    if status not in UNFINISHED:
        return None
    done = len({str(b.get("id")) for b in rs.info.get("benchmarks", [])})
    planned = rs.info.get("planned") or []
    how = "killed, or still measuring" if status == "running" else "stopped by a signal"
    return (f"run {rs.info.get('run_id', rs.folder.name)} ({rs.folder}) did not finish "
            f"(status {status!r}: {how}): it holds {done}"
            + (f" of the {len(planned)}" if planned else "") + " benchmarks it set out to "
            "measure, and its figures are of those alone")


def load_all(paths: list[str], notes: list[str] | None = None) -> list[ResultSet]:
    """The result sets under `paths`, each run once: a run found in several folders (a
    copied folder) is read from the first, and `notes` gets a line naming it and them, and
    a line per run that did not finish (`unfinished`)."""
    sets = [load(f) for f in find_folders(paths)]
    sets, repeated = one_per_run(sets)
    if notes is not None:
        notes += at_most(repeated, "runs in several folders") + at_most(
            [line for rs in sets if (line := unfinished(rs))], "runs that did not finish")
    if len(sets) > 1:
        check_units(pd.concat([rs.summary[["metric", "unit"]] for rs in sets]),
                     Path(listed(rs.folder for rs in sets)))
    return sets


def run_identity(rs: ResultSet) -> tuple[str, str] | None:
    """What names a run wherever its folder lies: its id and start time (a reused --run-id
    on another day or machine is another run), or None where run.json has no id."""
    run_id, started = rs.info.get("run_id"), rs.info.get("started")
    return (run_id, str(started)) if isinstance(run_id, str) else None


#: What a summary row was measured with: a report's row is one of these.
MEASURED = ["vendor", "adapter", "backend", "implementation"]


def _measured(rs: ResultSet) -> set[tuple]:
    columns = [c for c in MEASURED if c in rs.summary]
    return set(rs.summary[columns].itertuples(index=False, name=None)) if columns else set()


def one_per_run(sets: list[ResultSet]) -> tuple[list[ResultSet], list[str]]:
    """Each run once, from the first folder it was found in, and a line per run found in
    more than one: merged twice, one run's figures would count as two runs' agreement. A
    folder of the same run.json whose rows name other adapters (a copy rewritten to stand
    for another machine) shares no row with it and is kept."""
    measured = [_measured(rs) for rs in sets]
    copies: dict[int, list[int]] = {}  # a kept set's index: the sets that are its run
    kept: dict[tuple[str, str], list[int]] = {}  # the kept sets of each identity
    for j, rs in enumerate(sets):
        identity = run_identity(rs)
        first = next((i for i in kept.get(identity, []) if measured[i] & measured[j]), None) \
            if identity is not None else None
        if first is None:
            copies[j] = [j]
            if identity is not None:
                kept.setdefault(identity, []).append(j)
        else:
            copies[first].append(j)
    notes = []
    for i, found in copies.items():
        if len(found) > 1:
            differ = any(not sets[j].summary.equals(sets[i].summary) for j in found[1:])
            notes.append(f"run {sets[i].info['run_id']} is in {len(found):,} folders ("
                         f"{listed(sets[j].folder for j in found)}): counted once, "
                         "from the first" + (" (their summaries differ)" if differ else ""))
    return [sets[i] for i in copies], notes


def check_record(info: dict[str, Any], path: Path) -> None:
    """Each field of RunRecord that run.json has, of its type (older versions lack some
    fields and have others: those are not checked): a number where a list belongs would
    surface as a TypeError in whatever reads it next."""
    hints = _record_hints()
    for f in fields(RunRecord):
        if f.name in info:
            wrong = _mismatch(info[f.name], hints[f.name], f.name)
            if wrong is not None:
                name, hint, value = wrong
                raise UserError(f"{path}: field {name!r} is {_found(value)}, not "
                                f"{_expected(hint)}: not a gpuoverhead run record")


@functools.cache
def _record_hints() -> dict[str, Any]:
    """RunRecord's field types (resolving them took a third of reading a small run)."""
    return typing.get_type_hints(RunRecord)


def _mismatch(value: Any, hint: Any, name: str) -> tuple[str, Any, Any] | None:
    """(where, expected type, value) of the first part of `value` that is not of `hint`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        return None if any(_mismatch(value, a, name) is None for a in args) else \
            (name, hint, value)
    if origin is list:
        if not isinstance(value, list):
            return name, hint, value
        return next((m for i, item in enumerate(value)
                     if (m := _mismatch(item, args[0], f"{name}[{i}]")) is not None), None)
    if origin is dict:
        if not isinstance(value, dict):
            return name, hint, value
        if args[1] is Any:  # a benchmark's entry: thousands of values, each of any type
            return None
        return next((m for key, item in value.items()
                     if (m := _mismatch(item, args[1], f"{name}.{key}")) is not None), None)
    if hint is float:  # JSON writes 60.0 as 60 where a person typed it
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:  # true and false are ints to Python, not to JSON
        ok = isinstance(value, hint) and not (isinstance(value, bool) and hint is not bool)
    return None if ok else (name, hint, value)


_ONE = {str: "a string", int: "an integer", float: "a number", bool: "true/false",
        type(None): "null"}
_MANY = {str: "strings", int: "integers", float: "numbers", bool: "true/false values",
         type(None): "nulls"}


def _expected(hint: Any, plural: bool = False) -> str:
    """A type as a reader of JSON says it: 'a list of objects', 'a string or null'."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_expected(a, plural) for a in args)
    if origin is list:
        return ("lists" if plural else "a list") + f" of {_expected(args[0], True)}"
    if origin is dict:
        whole = "objects" if plural else "an object"
        return whole if args[1] is Any else f"{whole} of {_expected(args[1], True)}"
    return (_MANY if plural else _ONE).get(hint, getattr(hint, "__name__", str(hint)))


def _found(value: Any) -> str:
    kinds = {bool: "true/false", int: "an integer", float: "a number", str: "a string",
             list: "a list", dict: "an object", type(None): "null"}
    shown = json.dumps(value)
    return f"{kinds.get(type(value), type(value).__name__)} " \
        f"({shown if len(shown) <= 40 else shown[:37] + '...'})"


def runs_in(folder: Path) -> pd.DataFrame | None:
    """The run folders directly inside `folder` (id, status, suite, start), or None: what
    `show` lists when given a folder of runs rather than one run."""
    rows = []
    for info in sorted(folder.glob("*/run.json")) if folder.is_dir() else []:
        if skipped(info.parent.name):
            continue
        try:
            data = read_json(info)
        except UserError:
            continue
        if isinstance(data, dict):
            suite = data.get("suite")
            rows.append({"run": info.parent.name, "status": str(data.get("status", "?")),
                         "suite": str(suite.get("name", "?") if isinstance(suite, dict) else "?"),
                         "started": str(data.get("started", "?"))})
    return pd.DataFrame(rows) if rows else None
