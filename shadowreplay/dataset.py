"""Reading and writing shadowreplay datasets (Parquet, Hive-partitioned by date and hour).

A dataset root is a local folder or an `s3://bucket/prefix` (shadowreplay.storage). Writes are
crash-safe: locally each file is written under a temporary name in its final folder and renamed
when complete; on object storage each file is one PUT of the whole object; so a reader globbing
`**/*.parquet` never sees a partial file.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import DatasetError, ShadowReplayError
from .readpolicy import SKIP_BAD_FILES, accepted, not_listed_yet, pages_read, pages_read_before, skip_bad_files
from .schema import SCHEMA_VERSION, SCHEMA_VERSION_KEY, SCHEMAS, TABLE_KEY, TABLES, TIME_COLUMN
from .storage import Location, location, read_parquet_metadata, verify_parquet, write_parquet

log = logging.getLogger(__name__)

META_PREFIX = "shadowreplay."  # write_table's extra_metadata keys are stored under it


def table_dir(root: str | os.PathLike | Location, table: str) -> Location:
    return location(root) / table


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
    root: str | os.PathLike | Location,
    table: str,
    data: pa.Table,
    *,
    compression: str = "zstd",
    row_group_size: int = 128 * 1024,
    extra_metadata: Mapping[str, str] | None = None,
    name_tag: str | None = None,
) -> list[Location]:
    """Writes `data` into ROOT/TABLE/date=.../hour=.../part-*.parquet, one file per hour present.
    `name_tag` (e.g. a replay shard's `shard-0-of-4`, a recorder's instance id) goes into each
    file name after the hour, so that several writers can share one root.

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
        meta[f"{META_PREFIX}{k}".encode()] = str(v).encode()
    for h in sorted(uniq):
        part = data.filter(pc.equal(hour_no, pa.scalar(h, pa.int64()))) if len(uniq) > 1 else data
        part = part.replace_schema_metadata(meta)
        when = dt.datetime.fromtimestamp(h * 3600, tz=dt.timezone.utc)
        folder = table_dir(root, table) / f"date={when:%Y-%m-%d}" / f"hour={when:%H}"
        if isinstance(folder, Path):
            folder.mkdir(parents=True, exist_ok=True)
        tag = f"{name_tag}-" if name_tag else ""
        final = folder / f"part-{when:%Y%m%dT%H}-{tag}{uuid.uuid4().hex[:12]}.parquet"
        write_parquet(part, final, compression=compression, row_group_size=row_group_size)
        written.append(final)
    return written


def write_rows(root: str | os.PathLike | Location, table: str, rows: Iterable[Mapping[str, Any]], **kw) -> list[Location]:
    return write_table(root, table, rows_to_table(rows, table), **kw)


def parquet_files(root: str | os.PathLike | Location, table: str) -> list[Location]:
    """The complete Parquet files of one table under root (temporary files excluded)."""
    d = table_dir(root, table)
    if not d.is_dir():
        return []
    return sorted(d.rglob("*.parquet"))


def find_tables(path: str | os.PathLike | Location) -> dict[str, Location]:
    """Maps table name -> dataset root for every shadowreplay table found at or below `path`
    (a dataset folder, a folder holding several, or a table folder itself; local or s3://)."""
    p = location(path)
    if not isinstance(p, Path):
        p.check_bucket()  # a missing bucket or refused credentials: one clear line
    if not p.exists():
        raise DatasetError(f"{p}: no such file or folder")
    found: dict[str, Location] = {}
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


_warned_no_metadata = False


def check_file(path: Location, table: str | None = None) -> pq.FileMetaData:
    """Reads a file's footer and checks it can be read as `table`: our schema version (a file
    another tool wrote without our metadata is read as the current version, with one warning
    per process), the table's required columns present, every documented column of a
    compatible type. Raises DatasetError naming the file, the column and the expected type."""
    global _warned_no_metadata
    try:
        md = read_parquet_metadata(path)
    except ShadowReplayError:
        raise
    except Exception as e:  # corrupt footer, not Parquet, truncated
        raise DatasetError(f"{path}: not a readable Parquet file ({e})") from None
    kv = md.metadata or {}
    version = kv.get(SCHEMA_VERSION_KEY)
    if version is None:
        if not _warned_no_metadata:
            _warned_no_metadata = True
            log.warning("%s (and maybe others): no %s in the file's metadata; read as schema version %s",
                        path, SCHEMA_VERSION_KEY.decode(), SCHEMA_VERSION)
    elif version.decode() != SCHEMA_VERSION:
        raise DatasetError(
            f"{path}: schema version {version.decode()} is not supported (this shadowreplay reads version {SCHEMA_VERSION})"
        )
    if table is not None and kv.get(TABLE_KEY, table.encode()).decode() != table:
        raise DatasetError(f"{path}: holds table {kv[TABLE_KEY].decode()!r}, expected {table!r}")
    if table is not None:
        _check_columns(path, md.schema.to_arrow_schema(), SCHEMAS[table])
    return md


def check_pages(path: Location) -> None:
    """Reads every page of a file (storage.verify_parquet): a damaged one is a DatasetError naming
    the file."""
    try:
        verify_parquet(path)
    except ShadowReplayError:
        raise
    except Exception as e:  # a failed decompression, a bad page checksum, a short read
        raise DatasetError(f"{path}: a damaged page ({str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__})") from None


def _check_columns(path: Location, have: pa.Schema, want: pa.Schema) -> None:
    for f in want:
        if f.name not in have.names:
            if not f.nullable:
                raise DatasetError(f"{path}: required column {f.name!r} ({f.type}) is missing")
            continue
        got = have.field(f.name).type
        if not compatible(got, f.type):
            raise DatasetError(f"{path}: column {f.name!r} is {got}, expected {f.type}")


def compatible(got: pa.DataType, want: pa.DataType) -> bool:
    """Can a column of type `got` be read where the schema says `want`? The same kind of value:
    any integer width for an integer, any float width, any timestamp unit, string or large string,
    lists, structs and maps of compatible items."""
    t = pa.types
    if got == want or t.is_null(got):
        return True
    for kind in (t.is_integer, t.is_floating, t.is_timestamp, t.is_boolean):
        if kind(want):
            return kind(got) or (kind is t.is_floating and t.is_integer(got))
    if t.is_string(want) or t.is_large_string(want):
        return t.is_string(got) or t.is_large_string(got) or t.is_dictionary(got) and t.is_string(got.value_type)
    if t.is_binary(want) or t.is_large_binary(want):
        return t.is_binary(got) or t.is_large_binary(got)
    if t.is_map(want):
        return t.is_map(got) and compatible(got.key_type, want.key_type) and compatible(got.item_type, want.item_type)
    if t.is_list(want) or t.is_large_list(want):
        return (t.is_list(got) or t.is_large_list(got)) and compatible(got.value_type, want.value_type)
    if t.is_struct(want):
        if not t.is_struct(got):
            return False
        names = [got.field(i).name for i in range(got.num_fields)]
        return all(f.name not in names or compatible(got.field(f.name).type, f.type) for f in want)
    return False


_DUCKDB_SCALARS = (
    (pa.types.is_string, "VARCHAR"), (pa.types.is_large_string, "VARCHAR"), (pa.types.is_boolean, "BOOLEAN"),
    (pa.types.is_int32, "INTEGER"), (pa.types.is_int64, "BIGINT"), (pa.types.is_floating, "DOUBLE"),
    (pa.types.is_binary, "BLOB"),
)


def duckdb_type(t: pa.DataType) -> str:
    """The DuckDB type of an Arrow type of our schema (for typed NULLs of absent columns)."""
    types = pa.types
    for test, name in _DUCKDB_SCALARS:
        if test(t):
            return name
    if types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if types.is_list(t):
        return duckdb_type(t.value_type) + "[]"
    if types.is_map(t):
        return f"MAP({duckdb_type(t.key_type)}, {duckdb_type(t.item_type)})"
    if types.is_struct(t):
        return "STRUCT(" + ", ".join(f'"{t.field(i).name}" {duckdb_type(t.field(i).type)}' for i in range(t.num_fields)) + ")"
    raise TypeError(f"no DuckDB type for {t}")


def absent_columns(table: str, present: Iterable[str]) -> str:
    """SQL select items for the documented columns of `table` that no file has: each a typed
    NULL (", CAST(NULL AS BIGINT[]) AS \"hash_ids\", ..."), so queries may name every column."""
    have = set(present)
    return "".join(f', CAST(NULL AS {duckdb_type(f.type)}) AS "{f.name}"' for f in SCHEMAS[table] if f.name not in have)


@dataclass
class CheckedFiles:
    """The files of one table that check_file accepted, with what their footers say."""

    files: list[Location]
    columns: set[str]  # the union of their column names
    metadata: list[dict[str, str]]  # per file: its shadowreplay.* metadata, keys without the prefix
    skipped: list[tuple[Location, str]] = field(default_factory=list)  # (file, why) under skipping_bad_files


def check_files(files: Iterable[Location], table: str) -> CheckedFiles:
    """Checks every file (check_file). A file that fails is a DatasetError naming it and
    --skip-bad-files; within readpolicy.skipping_bad_files() it is left out and listed on stderr instead
    (DatasetError when no file is left). There every page of every file is read once too
    (verify_parquet), so that a file whose footer is sound but a page is not is left out as well."""
    out = CheckedFiles([], set(), [])
    files = list(files)
    skipping = skip_bad_files()
    for f in files:
        try:
            md = check_file(f, table)
            if skipping and not pages_read_before(str(f)):
                check_pages(f)
                pages_read(str(f))
        except DatasetError as e:
            if not skip_bad_files():
                raise DatasetError(f"{e}; pass {SKIP_BAD_FILES} to read the other files without it") from None
            out.skipped.append((f, str(e).removeprefix(f"{f}: ")))
            continue
        out.files.append(f)
        out.columns.update(md.schema.to_arrow_schema().names)
        out.metadata.append({k.decode(errors="replace").removeprefix(META_PREFIX): v.decode(errors="replace")
                             for k, v in (md.metadata or {}).items() if k.startswith(META_PREFIX.encode())})
    fresh = set(not_listed_yet([str(f) for f, _ in out.skipped]))
    new = [(f, why) for f, why in out.skipped if str(f) in fresh]
    if new:
        print(f"shadowreplay: {SKIP_BAD_FILES}: skipped {len(new)} unreadable file{'s' if len(new) > 1 else ''} "
              f"of {len(files)} in {table}:", file=sys.stderr, flush=True)
        for f, why in new:
            print(f"  {f}: {why}", file=sys.stderr, flush=True)
    if files and not out.files:
        raise DatasetError(f"{table}: none of its {len(files)} files is readable")
    accepted(out.files)
    return out


def find_damaged(files: Iterable[Location]) -> tuple[Location, str] | None:
    """The first of `files` with a damaged page, and why (check_pages); None when all are sound."""
    for f in files:
        try:
            check_pages(f)
        except DatasetError as e:
            return f, str(e).removeprefix(f"{f}: ")
    return None


def checked_columns(files: Iterable[Location], table: str) -> set[str]:
    """Checks every file (check_file) and returns the union of their column names."""
    return check_files(files, table).columns


def glob_for(root: str | os.PathLike | Location, table: str) -> str:
    """The glob DuckDB reads a table with: read_parquet(glob, hive_partitioning=true)."""
    return str(table_dir(root, table) / "**" / "*.parquet")


RUN_PREFIX = "run-"  # `replay --repeat N` writes OUT/run-01/ ... OUT/run-NN/, each a replay's output


def run_dir(root: str | os.PathLike | Location, k: int) -> Location:
    """The folder of repeat k (1-based) of a repeated replay."""
    return location(root) / f"{RUN_PREFIX}{k:02d}"


def run_dirs(path: str | os.PathLike | Location) -> list[Location]:
    """The runs of a dataset: the run-NN/ folders of a repeated replay, else the path itself."""
    p = location(path)
    if p.is_dir():
        runs = sorted(d for d in p.glob(f"{RUN_PREFIX}[0-9]*") if d.is_dir() and d.name[len(RUN_PREFIX):].isdigit())
        if runs:
            return runs
    return [p]
