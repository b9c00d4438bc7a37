"""The engine interface the analysis commands run on: DuckDB (the default, analysis/session.py) or
Spark (analysis/spark.py). Both run the same analysis/sql/*.sql files and return the same row
dicts, so analyze.py and anomalies.py post-process one kind of result."""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

import duckdb

from . import session

ENGINES = ("duckdb", "spark")


@runtime_checkable
class Engine(Protocol):
    """What analyze/anomalies need from an engine."""

    name: str

    def query(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Runs analysis/sql/NAME.sql with `params` bound; the last statement's rows as dicts."""

    def scalar(self, sql: str) -> Any:
        """The single value of one query written in DuckDB's dialect."""

    def materialize(self, columns: list[str] | None = None) -> int:
        """Keeps `lat` (only `columns`) in memory for the queries that follow; returns its rows."""

    def rows_table(self, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None:
        """A temporary table NAME (columns: (name, DuckDB type)) holding `rows` from Python."""


def has_column_data(eng: Engine, expr: str, view: str = "lat") -> bool:
    return bool(eng.scalar(f"SELECT count({expr}) > 0 FROM {view}"))


class DuckDBEngine:
    """The DuckDB connection of session.open_dataset behind the Engine interface."""

    name = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def query(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return session.query(self.con, name, params)

    def scalar(self, sql: str) -> Any:
        return session.scalar(self.con, sql)

    def materialize(self, columns: list[str] | None = None) -> int:
        return session.materialize(self.con, columns)

    def rows_table(self, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None:
        cols = ", ".join(f"{c} {t}" for c, t in columns)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} ({cols})")
        if rows:
            self.con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in columns)})", list(rows))


def as_engine(con: Engine | duckdb.DuckDBPyConnection) -> Engine:
    """An Engine for `con` (a DuckDB connection is wrapped; an Engine is returned as it is)."""
    return DuckDBEngine(con) if isinstance(con, duckdb.DuckDBPyConnection) else con


def open_engine(engine: str, paths: list[str], table: str | None = None, threads: int | None = None,
                memory_limit: str | None = None, warmup_s: float = 0.0, spark_master: str | None = None):
    """The dataset under `paths` opened on `engine`. Returns (engine, sources, table analyzed)."""
    if engine == "spark":
        from . import spark

        return spark.open_dataset(paths, table, warmup_s, master=spark_master)
    con, src, t = session.open_dataset(paths, table, threads, memory_limit, warmup_s)
    return DuckDBEngine(con), src, t
