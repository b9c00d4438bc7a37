"""`shadowreplay sql`: DuckDB with the shadowreplay views, for -c QUERY, -f FILE or a small REPL."""

from __future__ import annotations

import csv as csvmod
import sys
from pathlib import Path

import duckdb

from shadowreplay.errors import ConfigError, DatasetError
from shadowreplay.schema import REPLAY_RESULTS, REQUESTS

from . import fmt
from shadowreplay.sqlfiles import split

from .session import connect, find_sources, first_line, register_lat, register_views


def setup(paths: list[str]):
    src = find_sources(paths)
    con = connect()
    views = register_views(con, src)
    if src.has(REPLAY_RESULTS) or src.has(REQUESTS):
        register_lat(con, src, REPLAY_RESULTS if src.has(REPLAY_RESULTS) else REQUESTS)
        views.append("lat")
    return con, src, views


def print_result(cur: duckdb.DuckDBPyConnection, out=None, csv: bool = False, max_rows: int = 200) -> None:
    out = out or sys.stdout
    if cur.description is None:
        return
    headers = [d[0] for d in cur.description]
    rows = cur.fetchmany(max_rows + 1)
    more = len(rows) > max_rows
    rows = rows[:max_rows]
    if csv:
        w = csvmod.writer(out)
        w.writerow(headers)
        w.writerows(rows)
        return
    print(fmt.table(headers, [[_txt(v) for v in r] for r in rows]), file=out)
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''}{', more not shown' if more else ''})", file=out)


def _txt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return fmt.cell(v) if not isinstance(v, (str, int)) or isinstance(v, bool) else str(v)


def run_statements(con, text: str, csv: bool, max_rows: int) -> None:
    stmts = split(text, "query failed")
    if not stmts:
        raise ConfigError("no SQL statement given")
    for i, s in enumerate(stmts):
        try:
            cur = con.execute(s)
        except duckdb.Error as e:
            raise DatasetError(f"query failed: {first_line(e)}") from None
        if i == len(stmts) - 1 or cur.description is not None:
            print_result(cur, csv=csv, max_rows=max_rows)


def run(paths: list[str], query: str | None = None, file: str | None = None, csv: bool = False, max_rows: int = 200) -> int:
    con, src, views = setup(paths)
    if query is not None:
        run_statements(con, query, csv, max_rows)
        return 0
    if file is not None:
        try:
            text = Path(file).read_text()
        except OSError as e:
            raise ConfigError(f"{file}: {e.strerror}") from None
        run_statements(con, text, csv, max_rows)
        return 0
    return repl(con, views, csv, max_rows)


def repl(con, views: list[str], csv: bool, max_rows: int) -> int:
    interactive = sys.stdin.isatty()
    if interactive:
        print(f"views: {', '.join(views) or 'none'}. End statements with ';'. .tables lists views, .quit leaves.", file=sys.stderr)
    buf: list[str] = []
    while True:
        if interactive:
            print("sql> " if not buf else "...> ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            break
        s = line.strip()
        if not buf and s in (".quit", ".exit", "\\q"):
            break
        if not buf and s == ".tables":
            print("\n".join(views))
            continue
        buf.append(line)
        if s.endswith(";"):
            text = "".join(buf)
            buf = []
            try:
                print_result(con.execute(text), csv=csv, max_rows=max_rows)
            except duckdb.Error as e:
                print(f"error: {first_line(e)}", file=sys.stderr)
    if any(b.strip() for b in buf):
        try:
            print_result(con.execute("".join(buf)), csv=csv, max_rows=max_rows)
        except duckdb.Error as e:
            print(f"error: {first_line(e)}", file=sys.stderr)
    return 0
