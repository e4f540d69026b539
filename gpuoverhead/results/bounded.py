"""Reading a result set's files within bounds, each checked before the file is read: a
file from elsewhere must not take minutes or all memory (a 670 KB summary.parquet held 4
million rows, which `show` read for 41 s and 9.4 GB; a 1 GiB run.json took 2.2 GB before
its one-line error). docs/schema.md says the bounds.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gpuoverhead.errors import UserError
from gpuoverhead.suite.source import check_kind, read_capped


@dataclass(frozen=True)
class Bound:
    """The most of one table of a result set that is read, far above the largest real
    table's."""

    #: Bytes of the file on disk.
    file_bytes: int
    #: Rows, from the file's metadata.
    rows: int
    #: Columns, from the file's metadata (a run's tables have 28 and 43).
    columns: int
    #: Bytes of the columns read once unpacked (its pages uncompressed, by the metadata) and
    #: once decoded (a text repeated in every row, as Parquet keeps it once, counted in each).
    decoded_bytes: int


#: The largest result files committed (results/): a run.json of 147 KB, a summary of 2,392
#: rows (98 KB, 1 MiB decoded), samples of 172,766 rows (2.2 MB, 58 MiB decoded).
RUN_JSON_BYTES = 16 << 20
SUMMARY_BOUND = Bound(file_bytes=64 << 20, rows=200_000, columns=256, decoded_bytes=256 << 20)
SAMPLES_BOUND = Bound(file_bytes=1 << 30, rows=10_000_000, columns=256, decoded_bytes=2 << 30)


def read_json(path: Path) -> Any:
    """A JSON file's data, a regular file of at most RUN_JSON_BYTES (a 1 GiB one took 2.2 GB
    before its error); a UserError naming it where it cannot be read or parsed, including a
    number longer than Python reads (4,300 digits) and nesting deeper than its parser
    recurses, which no gpuoverhead record has."""
    try:
        raw = read_capped(path, RUN_JSON_BYTES)
        if len(raw) > RUN_JSON_BYTES:
            raise UserError(f"{path}: larger than {RUN_JSON_BYTES >> 20} MiB, the most a run "
                            "record is read up to (docs/schema.md): not a gpuoverhead run "
                            "record")
        return json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    except ValueError:  # int("9" * 5000): Python's limit on digits
        raise UserError(f"{path}: cannot read: a number of more than "
                        f"{sys.get_int_max_str_digits():,} digits: not a gpuoverhead run "
                        "record") from None
    except RecursionError:
        raise UserError(f"{path}: cannot read: lists or objects nested too deep: not a "
                        "gpuoverhead run record") from None


def read_table(path: Path, bound: Bound, columns: list[str] | None = None,
                filters: list | None = None) -> pa.Table:
    """The table, where `path` is a regular file (a FIFO would block the read, a device
    never end it; pyarrow called both "no such file") within `bound`, checked on its size
    and metadata before its rows are read, and on their text before it is decoded; its
    text columns as dictionaries (`frame` decodes them)."""
    try:
        info = os.stat(path)
        check_kind(info.st_mode)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    _check_size("bytes on disk", info.st_size, bound.file_bytes, path)
    try:
        with pq.ParquetFile(path) as file:
            meta, schema = file.metadata, file.schema_arrow
        _check_size("rows", meta.num_rows, bound.rows, path)
        _check_size("columns", meta.num_columns, bound.columns, path)
        wanted = set(schema.names if columns is None else columns)
        _check_size("bytes unpacked", sum(
            chunk.total_uncompressed_size for g in range(meta.num_row_groups)
            for chunk in map(meta.row_group(g).column, range(meta.num_columns))
            if chunk.path_in_schema in wanted), bound.decoded_bytes, path)
        texts = [f.name for f in schema if f.name in wanted and _is_text(f.type)]
        table = pq.read_table(path, columns=columns, filters=filters, read_dictionary=texts)
    except UserError:
        raise
    except Exception as exc:  # pyarrow raises several types for corrupt or truncated files
        raise UserError(f"{path}: not a readable Parquet file ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else 'no detail'})") from None
    _check_size("bytes decoded", _decoded_bytes(table), bound.decoded_bytes, path)
    return table


def frame(table: pa.Table) -> pd.DataFrame:
    """A table read by `read_table` as pandas reads it (its text decoded)."""
    plain = pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
                       for f in table.schema], metadata=table.schema.metadata)
    return table.cast(plain).to_pandas()


def _check_size(what: str, found: int, most: int, path: Path) -> None:
    if found > most:
        raise UserError(f"{path}: {found:,} {what}, more than the {most:,} a result table is "
                        "read up to (docs/schema.md): not a gpuoverhead result set")


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _decoded_bytes(table: pa.Table) -> int:
    """What `table` takes once its text columns (read as dictionaries) are decoded: each
    row's text, and 8 bytes a row for its offset."""
    total = 0
    for column in table.columns:
        if not pa.types.is_dictionary(column.type):
            total += column.nbytes
            continue
        for chunk in column.chunks:
            lengths = pc.binary_length(chunk.dictionary)
            total += (pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0) + 8 * len(chunk)
    return total
