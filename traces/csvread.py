"""Streaming CSV reading with DuckDB: read_csv -> SQL casts -> Arrow record batches, so a
27-million-row file never becomes Python objects. Values that do not parse become NULL in SQL
and are reported (with their line) by the caller; structural errors name the line too."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from shadowreplay import sqlfiles
from shadowreplay.errors import DatasetError

from .base import open_text

BATCH_ROWS = 1 << 20


def read_header(path: Path) -> list[str]:
    with open_text(path) as f:
        try:
            line = f.readline()
        except (OSError, EOFError) as e:
            raise DatasetError(f"{path}: cannot read ({e})") from None
    line = line.lstrip("\ufeff").strip()
    if not line:
        raise DatasetError(f"{path}: empty file (no header line)")
    return [c.strip() for c in next(csv.reader([line]))]


def check_columns(path: Path, header: list[str], required: tuple[str, ...], fmt: str) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        raise DatasetError(
            f"{path}: not a {fmt} CSV: missing column(s) {', '.join(missing)} "
            f"(expected {', '.join(required)}; found {', '.join(header) or 'none'})"
        )


def stream_sql(path: Path, sql_file: str, columns: dict, threads: int | None = None,
               batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Runs sql/<sql_file> over the view csv_rows (csv_rows.sql: `path` read as text, each
    `columns[name]` header column renamed to `name`, a NULL column where it is None), yielding
    Arrow record batches in file order."""
    import duckdb

    header = columns["__header__"]
    names = {k: v for k, v in columns.items() if k != "__header__"}
    con = duckdb.connect()
    unreadable = f"{path}: unreadable CSV"
    try:
        con.execute("SET preserve_insertion_order = true")
        con.execute("SET enable_progress_bar = false")
        if threads:
            con.execute("SET threads = $n", {"n": int(threads)})
        rows = sqlfiles.relation(con, sqlfiles.load(__package__, "csv_rows.sql"),
                                 {"path": str(path), "columns": {c: "VARCHAR" for c in header}}, context=unreadable)
        text = duckdb.sqltype("VARCHAR")
        rows.select(*[duckdb.ColumnExpression(h).alias(k) if h is not None
                      else duckdb.ConstantExpression(None).cast(text).alias(k)
                      for k, h in names.items()]).create_view("csv_rows")
        yield from sqlfiles.arrow_batches(con, sqlfiles.load(__package__, sql_file), batch_rows=batch_rows,
                                          context=unreadable)
    except duckdb.Error as e:
        raise DatasetError(f"{unreadable}: {sqlfiles.first_line(e)}") from None
    finally:
        con.close()
