"""The one way the project runs its SQL files on DuckDB.

- `load(package, name)` reads `<package>/sql/<name>` with importlib.resources (works from a wheel).
- `split(text)` splits it into statements with DuckDB's own parser (`duckdb.extract_statements`):
  a `;` inside a string literal or a comment does not end a statement.
- `run(con, text, params)` runs every statement, binding named `$params`; each statement gets only
  the parameters it names, so one dict serves a whole file. The last statement's result is
  fetched with `rows`, `arrays` (numpy) or `arrow_batches` (a stream). A `duckdb.Error` becomes one
  line: `error(f"{context}: {first line of the DuckDB message}")` (default error: DatasetError).

Values are always bound. Two things cannot be: a view (`CREATE VIEW`) cannot hold a prepared
parameter, so the analysis views read DuckDB session variables (`SET VARIABLE x = ?` by
`set_variables`, `getvariable('x')` in the .sql) while queries bind `$params`; and a view's
Parquet glob list or a column list made from the schema is SQL text. For those, `fill` puts a
`:name` marker's text in, and `literal` / `identifier` quote strings by DuckDB's rules (the
one place for that). A user's predicate (`--where`) is a DuckDB expression: give it to the
relational API (`relation(...).filter(text)` or `duckdb.SQLExpression(text)`), which parses it
as one expression."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any, Callable

import duckdb
import pyarrow as pa

from shadowreplay.errors import DatasetError, ShadowReplayError
from shadowreplay.readpolicy import SKIP_BAD_FILES, engine_read_failed, skip_bad_files

Statements = Sequence[duckdb.Statement]


def first_line(e: BaseException) -> str:
    """The first line of an error's message (DuckDB's carry hints and context on later lines).
    DuckDB's failure to read one file of a dataset (a damaged page: `Failed to read file "X": ...`)
    also says how to read the other files."""
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    if isinstance(e, duckdb.Error) and not isinstance(e, _QUERY_MISTAKES):
        engine_read_failed()  # the CLI then looks for a damaged file (shadowreplay/cli.py)
    if isinstance(e, duckdb.Error) and _FAILED_FILE in line and not skip_bad_files():
        line += f"; pass {SKIP_BAD_FILES} to read the other files without it"
    return line


_FAILED_FILE = 'Failed to read file "'
# errors of the query itself (a --where typo), not of the data: no damaged file is looked for
_QUERY_MISTAKES = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)


def load(package: str, name: str) -> str:
    """The text of `<package>/sql/<name>` (name with or without `.sql`)."""
    if not name.endswith(".sql"):
        name += ".sql"
    return resources.files(package).joinpath("sql", name).read_text()


def split(text: str, context: str = "SQL") -> list[str]:
    """The statements of `text` (comments before a statement stay with it; none are empty)."""
    return [s.query for s in statements(text, context)]


def statements(text: str, context: str = "SQL") -> list[duckdb.Statement]:
    try:
        return list(duckdb.extract_statements(text))
    except duckdb.Error as e:
        raise DatasetError(f"{context}: {first_line(e)}") from None


def literal(value: str | Sequence[str]) -> str:
    """A DuckDB string literal, or a list of them: `'it''s'`, `['a', 'b']`."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return "[" + ", ".join(literal(str(v)) for v in value) + "]"


def identifier(name: str) -> str:
    """A quoted DuckDB identifier: `"Request tokens"`."""
    return '"' + name.replace('"', '""') + '"'


def fill(text: str, **fragments: str) -> str:
    """Puts each `:name` marker's SQL text in (a quoted glob list, schema-made columns)."""
    for k, v in fragments.items():
        marker = f":{k}"
        if marker not in text:
            raise ValueError(f"no {marker} marker in the SQL")
        text = text.replace(marker, v)
    return text


def set_variables(con: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> None:
    """DuckDB session variables (read by getvariable('x'), which views may use)."""
    for k, v in values.items():
        if not k.isidentifier():
            raise ValueError(f"bad variable name {k!r}")
        if v is None:
            con.execute(f"SET VARIABLE {k} = NULL")
        else:
            con.execute(f"SET VARIABLE {k} = $v", {"v": v})


def run(con: duckdb.DuckDBPyConnection, sql: str | Statements, params: dict[str, Any] | None = None, *,
        context: str = "query failed", error: Callable[[str], ShadowReplayError] = DatasetError,
        ) -> duckdb.DuckDBPyConnection:
    """Runs each statement with the `$params` it names; returns the connection holding the last
    statement's result. A DuckDB error (a missing parameter included) raises `error` with one line."""
    *before, last = _statements(sql, context, error)
    try:
        for s in before:
            con.execute(s.query, _used(s, params))
        return con.execute(last.query, _used(last, params))
    except duckdb.Error as e:
        raise error(f"{context}: {first_line(e)}") from None


def relation(con: duckdb.DuckDBPyConnection, sql: str | Statements, params: dict[str, Any] | None = None, *,
             context: str = "query failed", error: Callable[[str], ShadowReplayError] = DatasetError,
             ) -> duckdb.DuckDBPyRelation:
    """As `run`, but the last statement (a query) becomes a lazy relation: Arrow output without an
    extra copy, and room for the relational API (`.filter(user_predicate)`)."""
    *before, last = _statements(sql, context, error)
    try:
        for s in before:
            con.execute(s.query, _used(s, params))
        return con.sql(last.query, params=_used(last, params))
    except duckdb.Error as e:
        raise error(f"{context}: {first_line(e)}") from None


def _statements(sql: str | Statements, context: str, error: Callable[[str], ShadowReplayError]) -> list[duckdb.Statement]:
    stmts = statements(sql, context) if isinstance(sql, str) else list(sql)
    if not stmts:
        raise error(f"{context}: no SQL statement")
    return stmts


def _used(stmt: duckdb.Statement, params: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (params or {}).items() if k in stmt.named_parameters}


def rows(con: duckdb.DuckDBPyConnection, sql: str | Statements, params: dict[str, Any] | None = None,
         **kw: Any) -> list[dict[str, Any]]:
    """`run`, then the last statement's rows as dicts."""
    cur = run(con, sql, params, **kw)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def arrays(con: duckdb.DuckDBPyConnection, sql: str | Statements, params: dict[str, Any] | None = None,
           **kw: Any) -> dict[str, Any]:
    """`run`, then the last statement's columns as numpy arrays."""
    return run(con, sql, params, **kw).fetchnumpy()


def arrow_table(con: duckdb.DuckDBPyConnection, sql: str | Statements, params: dict[str, Any] | None = None,
                *, context: str = "query failed", error: Callable[[str], ShadowReplayError] = DatasetError,
                ) -> pa.Table:
    """The last statement's result as one Arrow table."""
    rel = relation(con, sql, params, context=context, error=error)
    try:
        return rel.to_arrow_table()
    except duckdb.Error as e:
        raise error(f"{context}: {first_line(e)}") from None


def arrow_batches(con: duckdb.DuckDBPyConnection, sql: str | Statements, params: dict[str, Any] | None = None,
                  batch_rows: int = 1 << 16, *, context: str = "query failed",
                  error: Callable[[str], ShadowReplayError] = DatasetError) -> Iterator[pa.RecordBatch]:
    """The last statement's result as a stream of Arrow record batches (an error while streaming,
    e.g. a bad CSV line, becomes the same one line)."""
    rel = relation(con, sql, params, context=context, error=error)
    try:
        yield from rel.to_arrow_reader(batch_rows)
    except duckdb.Error as e:
        raise error(f"{context}: {first_line(e)}") from None
