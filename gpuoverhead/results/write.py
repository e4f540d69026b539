"""Result files, each replaced atomically so that a reader never sees a half-written one
(gpuoverhead/whole_files.py): a run killed at any moment leaves the previous complete
version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from gpuoverhead.results.columns import RUN_JSON, SAMPLES, SUMMARY
from gpuoverhead.whole_files import atomic


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

