"""The run folder while a run writes it: claimed by one run at a time, whole benchmarks only,
and a --force run that takes the old folder's place only once it has something to put there.

Each finished benchmark is one `Finished` record (its run.json entries, warnings and rows
together), added in one step; `save` writes the tables and run.json from those records, so
no moment exists at which run.json names a finished benchmark whose rows are not saved.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from gpuoverhead.analysis.crossover import with_crossovers
from gpuoverhead.analysis.ranking import with_ratio_to_fastest
from gpuoverhead.errors import UserError
from gpuoverhead.results.columns import (
    RUN_JSON,
    SAMPLE_COLUMNS,
    STATES_COLUMNS,
    SUMMARY_COLUMNS,
    RunRecord,
)
from gpuoverhead.results.write import write_json, write_run
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
    #: Its jobs' estimates in a CPU state beside their headline's (run/finish.py
    #: `_in_state`): `states.parquet`.
    states: list[pd.DataFrame] = field(default_factory=list)


@dataclass
class RunFolder:
    """The run's folder and record so far. A run that replaces an older one (--force)
    writes beside it, in a staging folder of its own process, and takes its place only once
    it has a finished benchmark: an interrupted start does not destroy the old results."""

    folder: Path
    start: RunRecord
    replaces: Path | None = None
    done: list[Finished] = field(default_factory=list)
    #: The claim on the run id (`Claim`), held until `release`.
    claimed: Claim | None = None
    #: How many finished benchmarks the tables on disk hold (-1: none written yet).
    tables_of: int = -1
    #: The summary of how many finished benchmarks (`summary`; -1: none made yet).
    summary_of: tuple[int, pd.DataFrame | None] = (-1, None)

    @classmethod
    def open(cls, target: Path, record: RunRecord, force: bool) -> RunFolder:
        """The folder a run writes, claimed and made now: a UserError where another run
        holds its id, where it exists and `force` is not given (two runs started together
        with one --run-id both passed the check before either made it, and one's results
        were lost), or where it cannot be written."""
        claimed = Claim.take(target)
        try:
            replaces = target if force and (target / RUN_JSON).is_file() else None
            staging = target.with_name(f".{target.name}.{os.getpid()}.new") if replaces \
                else target
            _make_folder(staging, exclusive=not force)
        except BaseException:
            claimed.release()
            raise
        return cls(staging, record, replaces, claimed=claimed)

    def release(self) -> None:
        """Give up the claim on the run id: the run has ended."""
        if self.claimed is not None:
            self.claimed.release()
            self.claimed = None

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
        """The summary of the benchmarks finished so far, made once for each count of them:
        a run's saves, closing notes, precision and result read the same table."""
        if self.summary_of[0] != len(self.done):
            self.summary_of = (len(self.done), with_ratio_to_fastest(with_crossovers(
                _concat([s for d in self.done for s in d.summaries], SUMMARY_COLUMNS))))
        return self.summary_of[1]

    def add(self, finished: Finished) -> None:
        self.done.append(finished)  # one step: a signal lands before it or after it

    def save(self, status: str) -> None:
        self.start.status = status
        if status != "running":
            self.start.finished = environment.now_iso()
        if len(self.done) == self.tables_of:  # tables change only with a finished benchmark
            write_json(self.folder / RUN_JSON, self.record().as_json())
        else:
            write_run(self.folder, _concat([s for d in self.done for s in d.samples],
                                           SAMPLE_COLUMNS), self.summary(),
                      self.record().as_json(),
                      _concat([s for d in self.done for s in d.states], STATES_COLUMNS))
            self.tables_of = len(self.done)
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


def check_free(targets: list[Path], force: bool) -> None:
    """A UserError, before a run plans, where a run folder it would write exists and `force`
    is not given (the claim, `RunFolder.open`, decides; this says it sooner)."""
    for target in targets:
        if target.exists() and not force:
            raise UserError(f"{target} already exists; choose another --run-id, or pass "
                            "--force to overwrite it")


def open_all(targets: list[tuple[Path, RunRecord]], force: bool) -> list[RunFolder]:
    """Each (folder, record) opened (`RunFolder.open`), or none: where one cannot be, those
    already claimed (an A/A run's first half) are given up."""
    found: list[RunFolder] = []
    try:
        for target, record in targets:
            found.append(RunFolder.open(target, record, force))
    except UserError:
        for folder in found:
            folder.release()
        raise
    return found


def _concat(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns=columns)


def _make_folder(folder: Path, exclusive: bool) -> Path:
    """`folder` made, and written to once; with `exclusive` made now or a UserError (its
    making is the claim: of two runs that make it at once, one fails)."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(exist_ok=not exclusive)
    except FileExistsError as exc:
        raise UserError(f"{folder} already exists; choose another --run-id, or pass --force "
                        "to overwrite it" if exclusive else
                        f"cannot write results to {folder}: {exc.strerror}") from None
    except OSError as exc:
        raise UserError(f"cannot write results to {folder}: {exc.strerror or exc}") from None
    try:
        probe = folder / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write results to {folder}: {exc.strerror or exc}") from None
    return folder


@dataclass
class Claim:
    """A run's hold on its id while it runs: a lock on `.<run_id>.lock` beside the run
    folder, which the system lets go of when the run's process ends however it ends (a
    `kill -9` leaves no stale claim), so that two runs of one id never write one folder,
    with or without --force."""

    path: Path
    fd: int

    @classmethod
    def take(cls, target: Path) -> Claim:
        """The claim on `target`'s id, or a UserError where another run holds it."""
        path = target.with_name(f".{target.name}.lock")
        while True:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            except OSError as exc:
                raise UserError(f"cannot write results to {target}: "
                                f"{exc.strerror or exc}") from None
            try:
                _lock(fd)
            except OSError:
                os.close(fd)
                raise UserError(f"{target}: another run with this --run-id is writing it now; "
                                "wait for it to end, or choose another --run-id") from None
            try:  # the file a run that ended removed between our open and our lock is stale
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    return cls(path, fd)
            except FileNotFoundError:
                pass
            os.close(fd)

    def release(self) -> None:
        """Remove the lock file while holding it, then let go (where the system lets an open
        file be removed: elsewhere it stays, empty, for the next run of this id)."""
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self.fd)


def _lock(fd: int) -> None:
    """Lock the open file `fd` for this process, at once or an OSError."""
    if sys.platform == "win32":
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
