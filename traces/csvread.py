"""Streaming CSV reading with DuckDB: read_csv -> SQL casts -> Arrow record batches, so a
27-million-row file never becomes Python objects. Values that do not parse become NULL in SQL
and are reported (with their line) by the caller; structural errors name the line too."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from shadowreplay.errors import DatasetError

from .base import open_text

SQL_DIR = Path(__file__).parent / "sql"
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


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def stream_sql(path: Path, sql_file: str, columns: dict, threads: int | None = None,
               batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Runs sql/<sql_file> with {src} = read_csv(path, all varchar) and {name} = quoted column
    identifiers, yielding Arrow record batches in file order."""
    import duckdb

    sql = (SQL_DIR / sql_file).read_text()
    src = (f"read_csv({_lit(str(path))}, header=true, all_varchar=true, delim=',', quote='\"', "
           f"compression='auto', auto_detect=false, columns=" + "{" +
           ", ".join(f"{_lit(c)}: 'VARCHAR'" for c in columns["__header__"]) + "})")
    sql = sql.format(src=src, **{k: (_ident(v) if v is not None else "CAST(NULL AS VARCHAR)")
                                  for k, v in columns.items() if k != "__header__"})
    con = duckdb.connect()
    try:
        con.execute("SET preserve_insertion_order = true")
        con.execute("SET enable_progress_bar = false")
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        try:
            reader = con.sql(sql).to_arrow_reader(batch_rows)
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                yield batch
        except duckdb.Error as e:
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DatasetError(f"{path}: unreadable CSV: {msg}") from None
    finally:
        con.close()
