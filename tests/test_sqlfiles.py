"""shadowreplay.sqlfiles: the one SQL runner (load, split by DuckDB, bind $params, one-line errors)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shadowreplay import sqlfiles
from shadowreplay.errors import ConfigError, DatasetError


def test_split_by_duckdb_keeps_semicolons_in_strings_and_comments():
    text = "-- first; not a statement end\nSELECT 'a;b' AS s;\n/* ; */ SELECT 2 AS n;\n-- trailing comment\n"
    stmts = sqlfiles.split(text)
    assert len(stmts) == 2
    con = duckdb.connect()
    assert con.execute(stmts[0]).fetchall() == [("a;b",)]
    assert con.execute(stmts[1]).fetchall() == [(2,)]


def test_params_bound_per_statement_and_unused_ignored():
    con = duckdb.connect()
    text = "CREATE TEMP TABLE t AS SELECT range AS x FROM range($n);\nSELECT sum(x) AS total, $label AS label FROM t WHERE x >= $lo;"
    got = sqlfiles.rows(con, text, {"n": 5, "lo": 2, "label": "it's", "unused": 1})
    assert got == [{"total": 2 + 3 + 4, "label": "it's"}]


def test_list_parameter_reads_several_parquet_files(tmp_path):
    for i, vals in enumerate(([1, 2], [10])):
        pq.write_table(pa.table({"v": vals}), tmp_path / f"p{i}.parquet")
    con = duckdb.connect()
    files = [str(tmp_path / "p0.parquet"), str(tmp_path / "p1.parquet")]
    arr = sqlfiles.arrays(con, "SELECT v FROM read_parquet($files) ORDER BY v", {"files": files})
    assert arr["v"].tolist() == [1, 2, 10]


def test_missing_parameter_is_one_dataset_error_line():
    with pytest.raises(DatasetError) as ei:
        sqlfiles.run(duckdb.connect(), "SELECT $a + $b", {"a": 1}, context="query q failed")
    msg = str(ei.value)
    assert msg.startswith("query q failed: ") and "b" in msg and "\n" not in msg


def test_sql_error_is_one_line_of_the_given_type():
    with pytest.raises(DatasetError) as ei:
        sqlfiles.run(duckdb.connect(), "SELECT 1;\nSELECT * FROM no_such_table;")
    assert "no_such_table" in str(ei.value) and "\n" not in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        sqlfiles.run(duckdb.connect(), "SELECT x FROM (SELECT 1 AS y)", context="bad --where", error=ConfigError)
    assert str(ei.value).startswith("bad --where: ") and "\n" not in str(ei.value)
    with pytest.raises(DatasetError):
        sqlfiles.split("SELEC 1")  # a parse error too


def test_streaming_error_is_one_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a\n1\n2\n")
    con = duckdb.connect()
    sql = "SELECT CAST(a AS INTEGER) AS a FROM read_csv($path, header = true, columns = {'a': 'VARCHAR'})"
    assert [b.num_rows for b in sqlfiles.arrow_batches(con, sql, {"path": str(p)})] == [2]
    p.write_text("a\n1\nx\n")
    with pytest.raises(DatasetError) as ei:
        list(sqlfiles.arrow_batches(con, sql, {"path": str(p)}, context=f"{p}: unreadable CSV"))
    assert str(ei.value).startswith(f"{p}: unreadable CSV: ")


def test_load_from_a_package():
    text = sqlfiles.load("shadowreplay.replayer", "bounds.sql")
    assert text == sqlfiles.load("shadowreplay.replayer", "bounds")
    assert "$files" in text
    (stmt,) = sqlfiles.statements(text)
    assert stmt.named_parameters == {"files"}


def test_literal_and_identifier_quote_by_duckdb_rules():
    con = duckdb.connect()
    assert con.execute("SELECT " + sqlfiles.literal("it's")).fetchone()[0] == "it's"
    assert con.execute("SELECT " + sqlfiles.literal(["a'", "b"])).fetchone()[0] == ["a'", "b"]
    assert con.execute(f'SELECT 1 AS {sqlfiles.identifier("we\"ird")}').description[0][0] == 'we"ird'
    assert sqlfiles.fill("SELECT :x", x="1") == "SELECT 1"
    with pytest.raises(ValueError):
        sqlfiles.fill("SELECT 1", x="1")


def test_session_variables_for_views():
    con = duckdb.connect()
    sqlfiles.set_variables(con, {"lo": 3, "none": None})
    con.execute("CREATE VIEW v AS SELECT range AS x FROM range(5) WHERE x >= getvariable('lo')")
    assert sqlfiles.rows(con, "SELECT count(*) AS n, getvariable('none') IS NULL AS unset FROM v") == [{"n": 2, "unset": True}]


def test_replay_selection_binds_values_and_parses_predicates(tmp_path):
    """replayer.schedule on the runner: --where/--route as DuckDB expressions, --limit, typed NULLs."""
    from replayer_helpers import chat_row, write_recording

    from shadowreplay.replayer.schedule import Filters, select

    write_recording(tmp_path, [chat_row(i, i * 0.5, client="c1" if i % 3 == 0 else "c0") for i in range(10)])
    s = select(tmp_path, Filters(where="client_id = 'c0'", start="+1s", limit=4),
               ["client_id = 'c1'", "request_id = 'r00002'"])
    assert s.table.column("request_id").to_pylist() == ["r00002", "r00004", "r00005", "r00007"]
    assert s.table.column("route_index").to_pylist() == [1, None, None, None]
    assert s.table.schema.field("route_index").type == pa.int32()
    assert s.table.column("e2e_ms").null_count == 4  # not recorded: a typed NULL column
    for where, routes in (("no_such = 1", None), (None, ["x >"]), ("TRUE; DROP TABLE t", None)):
        with pytest.raises(ConfigError, match="^bad --where/--route predicate: "):
            select(tmp_path, Filters(where=where), routes)
