"""Loading and selecting the requests to replay, and computing their send offsets.

DuckDB reads the recording (Hive-partitioned Parquet, `requests` table); the user's --where is a
DuckDB predicate over that table. The result is one Arrow table in send order; no Python object
per row is built here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from shadowreplay import sqlfiles
from shadowreplay.dataset import CheckedFiles, check_files, duckdb_type, find_tables, parquet_files
from shadowreplay.storage import is_remote, register_duckdb
from shadowreplay.durations import TimePoint, parse_time
from shadowreplay.errors import ConfigError, DatasetError
from shadowreplay.schema import REQUESTS, REQUESTS_SCHEMA

from . import damaged
from .safety import UPSTREAM_KEY, Endpoint, recorded_endpoints

# Columns the replayer cannot work without, and those it uses when present (NULL otherwise).
REQUIRED = ("request_id", "ts_start", "path", "request_body")
OPTIONAL = (
    "method", "scheme", "host", "port", "protocol", "kind", "client_id", "model", "stream",
    "prompt_chars", "completion_tokens", "request_headers", "grpc_service", "grpc_method",
    "grpc_messages", "e2e_ms", "prompt_tokens", "hash_ids", "hash_block_chars", "prefix_hash",
)

@dataclass(frozen=True)
class Filters:
    where: str | None = None
    start: str | TimePoint | None = None  # shadowreplay.durations forms: ISO time or offset
    end: str | TimePoint | None = None
    limit: int | None = None
    lead_in_s: float = 0.0  # also select this much before --start (the lead-in)
    include_damaged: bool = False  # also select the rows replayer/damaged.py names damaged


@dataclass
class Selection:
    root: Path  # dataset root holding requests/
    files: list[Path]
    table: pa.Table  # selected rows in send order (REQUIRED + OPTIONAL + route_index)
    recording_first: dt.datetime  # first request of the whole recording
    recording_last: dt.datetime
    recording_rows: int
    start: dt.datetime
    end: dt.datetime
    lead_in_rows: int = 0  # the first rows of `table`, before `start`
    endpoints: set[Endpoint] = field(default_factory=set)  # what the whole recording was recorded from
    skipped_files: list[str] = field(default_factory=list)  # left out by --skip-bad-files
    damaged: dict[str, int] = field(default_factory=dict)  # damaged rows by kind: left out, or in `table` with --include-damaged

    def __len__(self) -> int:
        return self.table.num_rows


def recording_files(recording: str | Path) -> tuple[Path, CheckedFiles]:
    """The requests table's Parquet files, each checked (readable, schema version, table)."""
    tables = find_tables(recording)
    if REQUESTS not in tables:
        raise DatasetError(f"{recording}: no {REQUESTS}/ table found (is this a shadowreplay recording?)")
    root = tables[REQUESTS]
    files = parquet_files(root, REQUESTS)
    if not files:
        raise DatasetError(f"{root / REQUESTS}: no Parquet files")
    checked = check_files(files, REQUESTS)
    missing = [c for c in REQUIRED if c not in checked.columns]
    if missing:
        raise DatasetError(f"{root / REQUESTS}: recording lacks column(s) {', '.join(missing)}")
    return root, checked


def _endpoints(con, files: list[str], checked: CheckedFiles) -> set[Endpoint]:
    """Every endpoint the whole recording names (replayer/safety.py), not only the selection's."""
    import duckdb

    def col(name: str):
        if name in checked.columns:
            return duckdb.ColumnExpression(name)
        return duckdb.ConstantExpression(None).cast(duckdb.sqltype(duckdb_type(REQUESTS_SCHEMA.field(name).type)))

    def header(key: str):
        return duckdb.FunctionExpression("json_extract_string", col("request_headers"), duckdb.ConstantExpression(key))

    rel = con.read_parquet(files, hive_partitioning=True, union_by_name=True)
    rows = rel.select(col("host").alias("h"), col("port").cast(duckdb.sqltype("INTEGER")).alias("p"),
                      col("scheme").alias("s"), header("$.host").alias("a"),
                      header('$.":authority"').alias("b")).distinct().fetchall()
    upstreams = {u.strip() for md in checked.metadata for u in md.get(UPSTREAM_KEY, "").split(",") if u.strip()}
    return recorded_endpoints([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                              [a for r in rows for a in r[3:]], upstreams)


def _columns(present: set[str]) -> list:
    """The columns the replayer reads, a typed NULL for each absent optional one."""
    import duckdb

    out = []
    for name in REQUIRED + OPTIONAL:
        if name in present:
            out.append(duckdb.ColumnExpression(name))
        else:
            typ = duckdb.sqltype(duckdb_type(REQUESTS_SCHEMA.field(name).type))
            out.append(duckdb.ConstantExpression(None).cast(typ).alias(name))
    return out


def _route_index(route_predicates: list[str] | None):
    """The index of the first --route predicate that matches (NULL: the default target)."""
    import duckdb

    integer = duckdb.sqltype("INTEGER")
    if not route_predicates:
        return duckdb.ConstantExpression(None).cast(integer).alias("route_index")
    case = None
    for i, p in enumerate(route_predicates):
        cond, val = duckdb.SQLExpression(p), duckdb.ConstantExpression(i).cast(integer)
        case = duckdb.CaseExpression(cond, val) if case is None else case.when(cond, val)
    return case.otherwise(duckdb.ConstantExpression(None).cast(integer)).alias("route_index")


def select(recording: str | Path, filters: Filters, route_predicates: list[str] | None = None) -> Selection:
    """Runs the selection query; raises DatasetError/ConfigError with a one-line message."""
    import duckdb

    root, checked = recording_files(recording)
    files = checked.files
    con = duckdb.connect()
    if is_remote(root):
        register_duckdb(con)  # s3:// files are read through s3fs
    params_files = [str(f) for f in files]
    unreadable = f"{root / REQUESTS}: cannot read the recording"
    present = {r["column_name"] for r in sqlfiles.rows(
        con, sqlfiles.load(__package__, "columns.sql"), {"files": params_files}, context=unreadable)}
    (b,) = sqlfiles.rows(con, sqlfiles.load(__package__, "bounds.sql"), {"files": params_files}, context=unreadable)
    try:
        endpoints = _endpoints(con, params_files, checked)
    except duckdb.Error as e:
        raise DatasetError(f"{unreadable}: {sqlfiles.first_line(e)}") from None
    first, last, n = b["first_ts"], b["last_ts"], b["n"]
    if not n:
        raise DatasetError(f"{root / REQUESTS}: the recording holds no requests")
    first = first.astimezone(dt.timezone.utc)
    last = last.astimezone(dt.timezone.utc)
    start = parse_time(filters.start, first, flag="--start") if filters.start else first
    end = parse_time(filters.end, first, flag="--end") if filters.end else last + dt.timedelta(microseconds=1)
    if end <= start:  # name only the flags given
        if not filters.end:
            raise ConfigError(f"--start {filters.start} ({start.isoformat()}) is after the recording's last request "
                              f"({last.isoformat()})")
        if not filters.start:
            raise ConfigError(f"--end {filters.end} ({end.isoformat()}) is not after the recording's first request "
                              f"({first.isoformat()})")
        raise ConfigError(f"--end {filters.end} ({end.isoformat()}) is not after --start {filters.start} ({start.isoformat()})")
    if filters.limit is not None and filters.limit < 1:
        raise ConfigError("--limit must be at least 1")
    window_start = start
    if filters.lead_in_s > 0:
        start = max(first, start - dt.timedelta(seconds=filters.lead_in_s))
    what = "--where/--route predicate" if (filters.where or route_predicates) else "selection"
    try:
        rel = sqlfiles.relation(con, sqlfiles.load(__package__, "select.sql"),
                                {"files": params_files, "start": start, "end": end},
                                context=f"bad {what}", error=ConfigError)
        if filters.where:
            rel = rel.filter(filters.where)  # a DuckDB expression, parsed as one (no SQL pasted)
        rel = rel.select(*_columns(present), _route_index(route_predicates), damaged.expression("error" in present))
        column = duckdb.ColumnExpression(damaged.COLUMN)
        left_out: dict[str, int] = {}
        if not filters.include_damaged:
            counts = rel.filter(column.isnotnull()).aggregate([column, duckdb.FunctionExpression("count")], damaged.COLUMN)
            left_out = {k: int(n) for k, n in sorted(counts.fetchall())}
            rel = rel.filter(column.isnull())
        rel = rel.order("ts_start, request_id")
        if filters.limit:
            rel = rel.limit(int(filters.limit))
        table = rel.to_arrow_table()
    except duckdb.Error as e:
        raise ConfigError(f"bad {what}: {sqlfiles.first_line(e)}") from None
    finally:
        con.close()
    if table.num_rows == 0:
        also = f"; {damaged.describe(left_out)} left out ({damaged.OPTION} sends them)" if left_out else ""
        raise ConfigError(
            f"empty selection: no request of {root / REQUESTS} matches "
            f"(where={filters.where or 'TRUE'}, start={start.isoformat()}, end={end.isoformat()}){also}"
        )
    if filters.include_damaged:
        kinds = pc.value_counts(table.column(damaged.COLUMN).drop_null()).to_pylist()
        left_out = {d["values"]: int(d["counts"]) for d in sorted(kinds, key=lambda d: d["values"])}
    lead = 0
    if window_start > start:
        ts = pc.cast(table.column("ts_start"), pa.int64()).to_numpy()
        lead = int((ts < int(window_start.timestamp() * 1e6)).sum())
        if lead == table.num_rows:
            raise ConfigError(f"empty selection: every selected request is in the lead-in (before {window_start.isoformat()})")
    return Selection(root, files, table, first, last, int(n), window_start, end, lead, endpoints,
                     [str(f) for f, _ in checked.skipped], left_out)


def offsets_ns(table: pa.Table, speed: float) -> list[int]:
    """Scheduled send offsets (ns after the replay's start instant) for rows in send order:
    the recorded gap from the first selected request, divided by `speed`."""
    if speed <= 0:
        raise ConfigError("--speed must be greater than 0")
    us = pc.cast(table.column("ts_start"), pa.int64()).to_pylist()
    t0 = us[0]
    return [round((u - t0) * 1000 / speed) for u in us]


def summary(table: pa.Table, offs: list[int]) -> dict:
    """Schedule figures for --dry-run and the manifest."""
    n = len(offs)
    span_s = offs[-1] / 1e9 if n else 0.0
    per_s: dict[int, int] = {}
    for o in offs:
        per_s[o // 1_000_000_000] = per_s.get(o // 1_000_000_000, 0) + 1
    gaps = sorted(b - a for a, b in zip(offs, offs[1:]))
    return {
        "requests": n,
        "span_s": round(span_s, 3),
        "mean_rate_per_s": round(n / span_s, 2) if span_s > 0 else None,
        "peak_per_s": max(per_s.values()) if per_s else 0,
        "min_gap_ms": round(gaps[0] / 1e6, 3) if gaps else None,
        "median_gap_ms": round(gaps[len(gaps) // 2] / 1e6, 3) if gaps else None,
    }
