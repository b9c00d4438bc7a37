"""Reading and writing shadowreplay datasets (Parquet, Hive-partitioned by date and hour).

Writes are crash-safe: each file is written under a hidden temporary name in its final folder
and renamed when complete, so a reader globbing `**/*.parquet` never sees a partial file.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import DatasetError
from .schema import SCHEMA_VERSION, SCHEMA_VERSION_KEY, SCHEMAS, TABLE_KEY, TABLES, TIME_COLUMN

TMP_SUFFIX = ".tmp"  # files being written end in .parquet.tmp, so **/*.parquet never matches them


def table_dir(root: str | os.PathLike, table: str) -> Path:
    return Path(root) / table


def rows_to_table(rows: Iterable[Mapping[str, Any]], table: str) -> pa.Table:
    """Builds an Arrow table of the given table's schema from dict rows; missing keys are null."""
    schema = SCHEMAS[table]
    rows = list(rows)
    columns = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.Table.from_pydict(columns, schema=schema)


def conform(data: pa.Table, table: str) -> pa.Table:
    """Casts/extends an Arrow table to the exact schema of `table` (missing columns become null)."""
    schema = SCHEMAS[table]
    cols = []
    for f in schema:
        if f.name in data.column_names:
            col = data.column(f.name)
            cols.append(col if col.type == f.type else col.cast(f.type))
        else:
            cols.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def write_table(
    root: str | os.PathLike,
    table: str,
    data: pa.Table,
    *,
    compression: str = "zstd",
    row_group_size: int = 128 * 1024,
    extra_metadata: Mapping[str, str] | None = None,
) -> list[Path]:
    """Writes `data` into ROOT/TABLE/date=.../hour=.../part-*.parquet, one file per hour present.

    Returns the paths written. Each file appears atomically (temp name, then rename)."""
    data = conform(data, table)
    if data.num_rows == 0:
        return []
    tcol = TIME_COLUMN[table]
    ts = data.column(tcol)
    if ts.null_count:
        raise DatasetError(f"{table}: {ts.null_count} rows have no {tcol}")
    # Integer hour number since epoch: cheap grouping key for partitioning.
    hour_no = pc.divide(ts.cast(pa.int64()), pa.scalar(3_600_000_000, pa.int64()))
    # floor division for pre-1970 timestamps is not needed: recordings are recent.
    uniq = pc.unique(hour_no).to_pylist()
    written = []
    meta = dict(data.schema.metadata or {})
    for k, v in (extra_metadata or {}).items():
        meta[f"shadowreplay.{k}".encode()] = str(v).encode()
    for h in sorted(uniq):
        part = data.filter(pc.equal(hour_no, pa.scalar(h, pa.int64()))) if len(uniq) > 1 else data
        part = part.replace_schema_metadata(meta)
        when = dt.datetime.fromtimestamp(h * 3600, tz=dt.timezone.utc)
        folder = table_dir(root, table) / f"date={when:%Y-%m-%d}" / f"hour={when:%H}"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"part-{when:%Y%m%dT%H}-{uuid.uuid4().hex[:12]}.parquet"
        tmp = folder / (name + TMP_SUFFIX)
        final = folder / name
        try:
            pq.write_table(part, tmp, compression=compression, row_group_size=row_group_size)
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        written.append(final)
    return written


def write_rows(root: str | os.PathLike, table: str, rows: Iterable[Mapping[str, Any]], **kw) -> list[Path]:
    return write_table(root, table, rows_to_table(rows, table), **kw)


def parquet_files(root: str | os.PathLike, table: str) -> list[Path]:
    """The complete Parquet files of one table under root (temporary files excluded)."""
    d = table_dir(root, table)
    if not d.is_dir():
        return []
    return sorted(d.rglob("*.parquet"))


def find_tables(path: str | os.PathLike) -> dict[str, Path]:
    """Maps table name -> dataset root for every shadowreplay table found at or below `path`
    (a dataset folder, a folder holding several, or a table folder itself)."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"{p}: no such file or folder")
    found: dict[str, Path] = {}
    if p.name in TABLES and p.is_dir():
        found[p.name] = p.parent
        return found
    for t in TABLES:
        if (p / t).is_dir():
            found[t] = p
    if not found and p.is_dir():
        for t in TABLES:
            for d in sorted(p.glob(f"*/{t}")):
                if d.is_dir() and t not in found:
                    found[t] = d.parent
    return found


def check_file(path: Path, table: str | None = None) -> pq.FileMetaData:
    """Reads a file's footer and checks the schema version; raises DatasetError with the file named."""
    try:
        md = pq.read_metadata(path)
    except Exception as e:  # corrupt footer, not Parquet, truncated
        raise DatasetError(f"{path}: not a readable Parquet file ({e})") from None
    kv = md.metadata or {}
    version = kv.get(SCHEMA_VERSION_KEY)
    if version is None:
        raise DatasetError(f"{path}: not a shadowreplay file (no {SCHEMA_VERSION_KEY.decode()} in its metadata)")
    if version.decode() != SCHEMA_VERSION:
        raise DatasetError(
            f"{path}: schema version {version.decode()} is not supported (this shadowreplay reads version {SCHEMA_VERSION})"
        )
    if table is not None and kv.get(TABLE_KEY, table.encode()).decode() != table:
        raise DatasetError(f"{path}: holds table {kv[TABLE_KEY].decode()!r}, expected {table!r}")
    return md


def glob_for(root: str | os.PathLike, table: str) -> str:
    """The glob DuckDB reads a table with: read_parquet(glob, hive_partitioning=true)."""
    return str(table_dir(root, table) / "**" / "*.parquet")
