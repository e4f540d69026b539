"""The run folder while a run writes it: whole benchmarks only, and a --force run that takes
the old folder's place only once it has something to put there.

Each finished benchmark is one `Finished` record (its run.json entries, warnings and rows
together), added in one step; `save` writes the tables and run.json from those records, so
no moment exists at which run.json names a finished benchmark whose rows are not saved.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from gpuoverhead.analysis.crossover import with_crossovers
from gpuoverhead.analysis.ranking import with_ratio_to_fastest
from gpuoverhead.errors import UserError
from gpuoverhead.results.columns import RUN_JSON, SAMPLE_COLUMNS, SUMMARY_COLUMNS, RunRecord
from gpuoverhead.results.write import write_run
from gpuoverhead.run import environment
from gpuoverhead.run.checks import said_once


@dataclass(frozen=True)
class Finished:
    """What one benchmark adds to a run: run.json entries and notes, and its rows."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    samples: list[pd.DataFrame] = field(default_factory=list)
    summaries: list[pd.DataFrame] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    #: What limited sampling, as (kind, example): said once per run (run/checks.py).
    sampling: list[tuple[str, str]] = field(default_factory=list)
    #: The jobs the time limit left out (no process of theirs ran whole): `group (label)`.
    skipped: list[str] = field(default_factory=list)


@dataclass
class RunFolder:
    """The run's folder and record so far. A run that replaces an older one (--force)
    writes beside it, in a staging folder of its own process, and takes its place only once
    it has a finished benchmark: an interrupted start does not destroy the old results."""

    folder: Path
    start: RunRecord
    replaces: Path | None = None
    done: list[Finished] = field(default_factory=list)

    @classmethod
    def open(cls, target: Path, record: RunRecord, force: bool) -> RunFolder:
        """The folder a run writes, made now (a UserError where it cannot be written)."""
        replaces = target if force and (target / RUN_JSON).is_file() else None
        staging = target.with_name(f".{target.name}.{os.getpid()}.new") if replaces else target
        _make_folder(staging)
        return cls(staging, record, replaces)

    def record(self) -> RunRecord:
        """run.json as of now: the start record with every finished benchmark's part."""
        r = self.start
        said = said_once([n for d in self.done for n in d.sampling])
        return replace(r, benchmarks=r.benchmarks + [e for d in self.done for e in d.entries],
                       warnings=r.warnings + [w for d in self.done for w in d.warnings] + said,
                       errors=r.errors + [e for d in self.done for e in d.errors],
                       drift=r.drift + [x for d in self.done for x in d.drift])

    def skipped(self) -> list[str]:
        return [s for d in self.done for s in d.skipped]

    def summary(self) -> pd.DataFrame:
        return with_ratio_to_fastest(with_crossovers(
            _concat([s for d in self.done for s in d.summaries], SUMMARY_COLUMNS)))

    def add(self, finished: Finished) -> None:
        self.done.append(finished)  # one step: a signal lands before it or after it

    def save(self, status: str) -> None:
        self.start.status = status
        if status != "running":
            self.start.finished = environment.now_iso()
        write_run(self.folder, _concat([s for d in self.done for s in d.samples],
                                       SAMPLE_COLUMNS), self.summary(), self.record().as_json())
        if self.replaces is not None and (self.done or status == "complete"):
            old = self.replaces.with_name(f".{self.replaces.name}.{os.getpid()}.old")
            shutil.rmtree(old, ignore_errors=True)
            self.replaces.rename(old)
            self.folder.rename(self.replaces)
            shutil.rmtree(old, ignore_errors=True)
            self.folder, self.replaces = self.replaces, None

    def abandon(self) -> None:
        """An interrupted run with nothing finished leaves the results it would replace."""
        if self.replaces is not None and not self.done:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = self.replaces


def _concat(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns=columns)


def _make_folder(folder: Path) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write results to {folder}: {exc.strerror or exc}") from None
    return folder
