"""Rows the recorder marked damaged for a replay: their stored request body is not what
production received, so re-sending it would test something else. The recorder says so in the
row's `error` (recorder/exchange.py, recorder/sse.py; docs/schema.md lists the messages):

- truncated: `request body over cap (...)`, the body stored cut at `body_cap`;
- decompression bomb: `request body: decoded gzip body over N bytes (...)`, the body not kept;
- undecodable: `request body: cannot decode content-encoding ...` (not kept) or
  `request body: not UTF-8` (kept with replacement characters).

A malformed or too deeply nested JSON body is not damaged: it is stored as it came."""

from __future__ import annotations

# (kind, a regular expression over `error`), the first that matches names a row's damage
DAMAGE: tuple[tuple[str, str], ...] = (
    ("truncated", r"(^|; )request body over cap "),
    ("decompression bomb", r"(^|; )request body: decoded \S+ body over "),
    ("undecodable", r"(^|; )request body: (cannot decode|not UTF-8)"),
)
COLUMN = "damage"  # the selection's column naming each row's damage (NULL: none)
OPTION = "--include-damaged"


def expression(has_error_column: bool):
    """The DuckDB expression of COLUMN (relational API: the patterns are constants, not SQL)."""
    import duckdb

    null = duckdb.ConstantExpression(None).cast(duckdb.sqltype("VARCHAR"))
    if not has_error_column:
        return null.alias(COLUMN)
    error = duckdb.ColumnExpression("error")
    case = None
    for kind, pattern in DAMAGE:
        cond = duckdb.FunctionExpression("regexp_matches", error, duckdb.ConstantExpression(pattern))
        val = duckdb.ConstantExpression(kind)
        case = duckdb.CaseExpression(cond, val) if case is None else case.when(cond, val)
    return case.otherwise(null).alias(COLUMN)


def describe(counts: dict[str, int]) -> str:
    """`3 damaged rows (truncated 1, undecodable 2)`."""
    n = sum(counts.values())
    return f"{n} damaged row{'s' if n != 1 else ''} ({', '.join(f'{k} {v}' for k, v in counts.items())})"


def line(counts: dict[str, int], included: bool) -> str:
    """The replay summary's line on its damaged rows."""
    if included:
        return f"{describe(counts)} sent as recorded ({OPTION})"
    return f"{describe(counts)} left out: their stored request body is not what was sent ({OPTION} sends them)"
