"""Opens a DuckDB connection with the shadowreplay views registered over one or more datasets.

Views: `requests` (recording), `replay_results`, `engine_metrics`, `replayed` (replay results
joined to the recording by request_id), and `lat` (one normalized row per request, the input of
every analysis query). A replay's manifest.json `recording` field points at its recording, so
`shadowreplay analyze REPLAY_DIR` finds the recording without being told."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from shadowreplay import sqlfiles
from shadowreplay.dataset import absent_columns, checked_columns, find_tables, glob_for, parquet_files, run_dirs
from shadowreplay.errors import ConfigError, DatasetError
from shadowreplay.schema import REPLAY_RESULTS, REQUESTS, TABLES
from shadowreplay.storage import is_remote, location, register_duckdb

log = logging.getLogger(__name__)

SQL_DIR = Path(__file__).resolve().parent / "sql"


def sql_text(name: str) -> str:
    """The text of analysis/sql/NAME.sql."""
    return sqlfiles.load(__package__, name)


@dataclass
class Sources:
    """The Parquet globs found for each table (several roots are read together)."""

    globs: dict[str, list[str]] = field(default_factory=dict)
    roots: dict[str, list[Path]] = field(default_factory=dict)
    empty: list[str] = field(default_factory=list)  # tables whose folder holds no Parquet file

    def has(self, table: str) -> bool:
        return bool(self.globs.get(table))

    def describe(self) -> str:
        parts = [f"{t} ({', '.join(str(r) for r in self.roots[t])})" for t in TABLES if self.has(t)]
        return "; ".join(parts) if parts else "no tables"


def _manifest_recording(root: Path) -> Path | None:
    # a sharded replay (`replay --shard K/N`) writes one manifest per shard, manifests/shard-K-of-N.json
    shards = sorted((root / "manifests").glob("*.json"))
    for cand in (root / "manifest.json", root / REPLAY_RESULTS / "manifest.json", *shards):
        if cand.is_file():
            try:
                rec = json.loads(cand.read_text()).get("recording")
            except (OSError, ValueError, AttributeError):
                log.warning("%s: unreadable manifest, ignored", cand)
                return None
            if not rec:
                return None
            p = location(rec)
            if not p.is_absolute():
                p = (cand.parent / p).resolve()
            return p
    return None


def find_sources(paths: list[str | os.PathLike], follow_manifest: bool = True) -> Sources:
    src = Sources()

    def add(table: str, root: Path) -> None:
        root = location(root)  # a local folder or an s3:// prefix
        if root in src.roots.get(table, []):
            return
        if not parquet_files(root, table):
            src.empty.append(f"{root}/{table}")
            return
        src.roots.setdefault(table, []).append(root)
        src.globs.setdefault(table, []).append(glob_for(root, table))

    for p in paths:
        for run in run_dirs(p):  # a repeated replay's runs are read together
            found = find_tables(run)
            if not found:
                raise DatasetError(f"{run}: no shadowreplay dataset here (expected a requests/, replay_results/ or engine_metrics/ folder)")
            for table, root in found.items():
                add(table, root)
    if follow_manifest and src.has(REPLAY_RESULTS) and not src.has(REQUESTS):
        for root in list(src.roots[REPLAY_RESULTS]):
            rec = _manifest_recording(root)
            if rec is None:
                continue
            if not rec.exists():
                log.warning("the replay's manifest names recording %s, which is not there", rec)
                continue
            rt = find_tables(rec)
            if REQUESTS in rt:
                add(REQUESTS, rt[REQUESTS])
    return src


def connect(threads: int | None = None, memory_limit: str | None = None, warmup_s: float = 0.0) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB; `warmup_s` leaves the first seconds of each run out of `lat`."""
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    # Every view and query re-binds read_parquet over the same (often hundreds of hourly) files:
    # keep their footers instead of reading them again each time.
    con.execute("SET parquet_metadata_cache = true")
    sqlfiles.set_variables(con, {"warmup_s": float(warmup_s)})
    if threads:
        con.execute("SET threads = $n", {"n": int(threads)})
    if memory_limit:
        con.execute("SET memory_limit = $m", {"m": str(memory_limit)})
    con.execute("SET TimeZone = 'UTC'")
    return con


def register_views(con: duckdb.DuckDBPyConnection, src: Sources, schema: str | None = None) -> list[str]:
    """Creates the table views (and `replayed`) in `schema` (default: main). Returns their names."""
    if any(is_remote(r) for roots in src.roots.values() for r in roots):
        register_duckdb(con)  # s3:// globs are read through s3fs
    if schema:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {sqlfiles.identifier(schema)}")
        con.execute("SET schema = $s", {"s": schema})
    made = []
    try:
        for table in TABLES:
            if not src.has(table):
                continue
            globs = src.globs[table]
            # a view cannot hold a parameter: the glob list goes in as a quoted literal
            lit = sqlfiles.literal(globs[0] if len(globs) == 1 else globs)
            present = checked_columns([f for root in src.roots[table] for f in parquet_files(root, table)], table)
            text = sqlfiles.fill(sql_text(f"view_{table}"), absent=absent_columns(table, present), glob=lit)
            sqlfiles.run(con, text, context=f"cannot read the dataset ({src.describe()})")
            made.append(table)
        if src.has(REQUESTS) and src.has(REPLAY_RESULTS):
            sqlfiles.run(con, sql_text("view_replayed"), context=f"cannot read the dataset ({src.describe()})")
            made.append("replayed")
    except duckdb.Error as e:
        raise DatasetError(f"cannot read the dataset ({src.describe()}): {first_line(e)}") from None
    finally:
        if schema:
            con.execute("SET schema = 'main'")
    return made


def choose_table(src: Sources, table: str | None) -> str:
    """The table analyzed: the one asked for, else replay_results when present, else requests."""
    if table:
        if table not in (REQUESTS, REPLAY_RESULTS):
            raise ConfigError(f"--table must be {REQUESTS} or {REPLAY_RESULTS}")
        if not src.has(table):
            raise DatasetError(f"no {table} table found ({src.describe()})")
        return table
    if src.has(REPLAY_RESULTS):
        return REPLAY_RESULTS
    if src.has(REQUESTS):
        return REQUESTS
    what = "; ".join(src.empty) if src.empty else src.describe()
    raise DatasetError(f"nothing to analyze: no requests or replay_results with data ({what} is empty)")


def lat_source_name(src: Sources, table: str) -> str:
    """The .sql file that makes `lat_source` for `table` (see lat.sql)."""
    return "lat_requests" if table == REQUESTS else ("lat_replayed" if src.has(REQUESTS) else "lat_replay_results")


def register_lat(con: duckdb.DuckDBPyConnection, src: Sources, table: str, schema: str | None = None) -> None:
    name = lat_source_name(src, table)
    if schema:
        con.execute("SET schema = $s", {"s": schema})
    try:
        sqlfiles.run(con, sql_text(name), context=f"cannot read {table}")  # lat_source
        sqlfiles.run(con, sql_text("lat"), context=f"cannot read {table}")
        if con.execute("SELECT coalesce(getvariable('warmup_s'), 0) > 0").fetchall()[0][0]:  # fetched to the end: the connection is free
            sqlfiles.run(con, sql_text("lat_warmup"), context=f"cannot read {table}")
    except duckdb.Error as e:
        raise DatasetError(f"cannot read {table}: {first_line(e)}") from None
    finally:
        if schema:
            con.execute("SET schema = 'main'")


first_line = sqlfiles.first_line


def set_params(con: duckdb.DuckDBPyConnection, params: dict[str, Any]) -> None:
    """Session variables for the analysis .sql files, which read getvariable('x') (views need it)."""
    sqlfiles.set_variables(con, params)


def query(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None, schema: str | None = None) -> list[dict[str, Any]]:
    """Runs analysis/sql/NAME.sql (its last statement is the result) and returns rows as dicts."""

    return _run_sql_file(con, name, params, schema, sqlfiles.rows)


def query_arrays(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None,
                 schema: str | None = None) -> dict[str, Any]:
    """As query(), for large results: the last statement's columns as numpy arrays."""
    return _run_sql_file(con, name, params, schema, sqlfiles.arrays)


def _run_sql_file(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None, schema: str | None, fetch):
    """Sets `params` as session variables (and binds them as $params), runs every statement of
    NAME.sql in `schema`, and fetches the last one's result with `fetch` (sqlfiles.rows/arrays);
    a DuckDB error becomes one DatasetError line."""
    if params:
        set_params(con, params)
    if schema:
        con.execute("SET schema = $s", {"s": schema})
    try:
        return fetch(con, sql_text(name), params, context=f"query {name} failed")
    finally:
        if schema:
            con.execute("SET schema = 'main'")


def split_statements(text: str) -> list[str]:
    """The statements of SQL text, split by DuckDB's parser (sqlfiles.split); a parse error is
    one DatasetError line."""
    return sqlfiles.split(text, context="query failed")


def open_dataset(paths: list[str], table: str | None = None, threads: int | None = None, memory_limit: str | None = None,
                 warmup_s: float = 0.0):
    """connect + find + register views + lat. Returns (con, sources, table analyzed)."""
    src = find_sources(paths)
    con = connect(threads, memory_limit, warmup_s)
    register_views(con, src)
    t = choose_table(src, table)
    register_lat(con, src, t)
    return con, src, t


def scalar(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """The single value of a query; a read failure (corrupt file...) becomes a DatasetError."""
    try:
        return con.execute(sql).fetchone()[0]
    except duckdb.Error as e:
        raise DatasetError(f"cannot read the dataset: {first_line(e)}") from None


def has_column_data(con: duckdb.DuckDBPyConnection, expr: str, view: str = "lat") -> bool:
    return bool(scalar(con, f"SELECT count({expr}) > 0 FROM {view}"))


# materialize() keeps about 100-130 bytes a row (a command peaks near 1.3 GB at 10 M rows): above
# this many rows `lat` stays on the Parquet files (each query streams them again), so memory
# does not grow with the rows.
MATERIALIZE_MAX_ROWS = 20_000_000


def materialize(con: duckdb.DuckDBPyConnection, columns: list[str] | None = None, max_rows: int | None = None) -> int:
    """Reads the `lat` view's Parquet once into a temporary table and points `lat` at it, so the
    several queries of a command do not each re-open every hourly file. `columns` limits what is
    kept (the itl_ms lists are dropped by default: they are read, once, by itl.sql beforehand).
    Over `max_rows` rows (default MATERIALIZE_MAX_ROWS) nothing is copied. Returns the rows."""
    cols = ", ".join(columns) if columns else "* EXCLUDE (itl_ms)"
    if con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'lat_mat' AND temporary").fetchone()[0]:
        return con.execute("SELECT count(*) FROM lat_mat").fetchone()[0]  # done already, with a superset
    try:
        con.execute("SET preserve_insertion_order = false")  # lets the copy run in parallel, in less memory
        n = con.execute("SELECT count(*) FROM lat").fetchone()[0]
        if n > (MATERIALIZE_MAX_ROWS if max_rows is None else max_rows):
            return n
        con.execute(f"CREATE OR REPLACE TEMP TABLE lat_mat AS SELECT {cols} FROM lat")
        con.execute("CREATE OR REPLACE TEMP VIEW lat AS SELECT * FROM lat_mat")
    except duckdb.Error as e:
        raise DatasetError(f"cannot read the dataset: {first_line(e)}") from None
    return n
