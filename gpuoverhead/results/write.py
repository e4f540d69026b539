"""Result files, each replaced atomically so that a reader never sees a half-written one.

A file is written beside its final name and moved over it with os.replace, which is atomic
on POSIX and Windows; a run killed at any moment leaves the previous complete version. On
Windows the replace fails while another process holds the file open (a reader, an editor,
a virus scan): it is tried again for a few seconds before the error is given up to.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from gpuoverhead.results.columns import RUN_JSON, SAMPLES, SUMMARY

#: Waits between tries of a replace that another process's open handle refuses.
REPLACE_WAITS_S = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


def atomic(path: Path, write: Callable[[Path], None]) -> None:
    """`write` a temporary file beside `path`, then move it over `path`; the temporary file
    is removed whatever happens (a full disk, `ulimit -f`), so no partial file is left."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        write(tmp)
        _replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _replace(tmp: Path, path: Path) -> None:
    for wait in REPLACE_WAITS_S:
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            time.sleep(wait)
    os.replace(tmp, path)


def write_table(folder: Path, name: str, table: pd.DataFrame) -> None:
    """`name`.parquet (zstd: a quarter smaller than the default snappy for a run's samples)
    and `name`.csv in `folder`."""
    atomic(folder / f"{name}.parquet", lambda p: table.to_parquet(
        p, index=False, compression="zstd", compression_level=9))
    atomic(folder / f"{name}.csv", lambda p: table.to_csv(p, index=False))


def write_json(path: Path, data: dict[str, Any]) -> None:
    atomic(path, lambda p: p.write_text(json.dumps(data, indent=2, default=str) + "\n",
                                         encoding="utf-8"))


def write_run(folder: Path, samples: pd.DataFrame, summary: pd.DataFrame,
              run_info: dict[str, Any]) -> None:
    """All five files of a run folder; run.json last, so it never names unwritten data."""
    write_table(folder, SAMPLES, samples)
    write_table(folder, SUMMARY, summary)
    write_json(folder / RUN_JSON, run_info)

