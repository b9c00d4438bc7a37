"""`--engine spark`: the analysis SQL on Apache Spark, over the same Hive-partitioned Parquet.

The SparkSession is the user's (`SparkSession.builder.getOrCreate()`: spark-submit,
PYSPARK_SUBMIT_ARGS and SPARK_* settings apply; `local[*]` when nothing names a master). Each
analysis/sql file is parsed in DuckDB's dialect, its parameters bound as literal nodes of the AST
(getvariable('x') and $x), the few constructs SQLGlot does not translate rewritten by the table
REWRITES below, and the result generated as Spark SQL. DuckDB's temp tables become cached temp
views; rows from Python become createDataFrame views."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from shadowreplay.dataset import check_files, parquet_files, table_dir
from shadowreplay.errors import ConfigError, DatasetError
from shadowreplay.schema import REPLAY_RESULTS, REQUESTS, SCHEMAS, TABLES

from .session import Sources, choose_table, find_sources, first_line, lat_source_name, split_statements, sql_text

NEEDS = "--engine spark needs the spark extra (pip install 'shadowreplay[spark]') and Java 17+"

# Session settings the analysis relies on: UTC timestamps (as DuckDB's SET TimeZone), and NULL
# (not an error) for x / 0 and out-of-range list indexes, as in DuckDB.
PARTITION_COLUMNS = ("date", "hour")  # Hive partitions of every table (dataset.write_table)
SESSION_CONF = {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "false"}


# --- the dialect differences SQLGlot leaves, in one place -------------------------------------
# Each Spark template names the DuckDB call's arguments _0, _1...; the template is parsed once in
# Spark's dialect and the arguments are put in as AST nodes.
FUNCTION_REWRITES: dict[str, str] = {
    "epoch_us": "unix_micros(_0)",
    "to_microseconds": "make_dt_interval(0, 0, 0, _0 / 1000000.0)",
    "list_avg": "aggregate(_0, CAST(0 AS DOUBLE), (acc, v) -> acc + v) / nullif(size(_0), 0)",
}


def _from_template(template: str, args: list[exp.Expression]) -> exp.Expression:
    tree = sqlglot.parse_one(template, read="spark")

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("_") and node.name[1:].isdigit():
            return args[int(node.name[1:])].copy()
        return node

    return tree.transform(put)


def _epoch(node: exp.TimeToUnix) -> exp.Expression:
    # DuckDB's epoch() keeps the microseconds (Spark's unix_timestamp truncates to seconds).
    return _from_template("unix_micros(_0) / 1000000.0", [node.this])


def _quantile(node: exp.PercentileCont) -> exp.Expression:
    # quantile_cont(x, q | [q...]) = Spark's percentile (exact, linear interpolation).
    return exp.Anonymous(this="percentile", expressions=[node.this, node.expression])


def _ordered_list(node: exp.Expression) -> exp.Expression:
    """list(x ORDER BY k [DESC]) [FILTER (WHERE c)]: Spark's collect_list keeps no order (and drops
    NULLs): collect (k, x) pairs, sort them, keep x; NULL where DuckDB's list would have no rows."""
    if isinstance(node, exp.ArrayAgg) and isinstance(node.parent, exp.Filter):
        return node  # rewritten with its FILTER, as the Filter node
    filt = node if isinstance(node, exp.Filter) else None
    agg = filt.this if filt else node
    if not isinstance(agg, exp.ArrayAgg):
        return node
    order = agg.this
    if not isinstance(order, exp.Order):
        return node
    keys = order.expressions
    if len(keys) != 1:
        raise DatasetError("spark: list(... ORDER BY) with several keys is not translated")
    key = keys[0]
    pair = exp.Anonymous(this="named_struct", expressions=[exp.Literal.string("k"), key.this.copy(),
                                                           exp.Literal.string("v"), order.this.copy()])
    collected: exp.Expression = exp.Anonymous(this="collect_list", expressions=[pair])
    if filt:
        collected = exp.Filter(this=collected, expression=filt.expression.copy())
    asc = exp.false() if key.args.get("desc") else exp.true()
    return _from_template("CASE WHEN size(_0) > 0 THEN transform(sort_array(_0, _1), p -> p.v) END", [collected, asc])


def _function(node: exp.Anonymous) -> exp.Expression:
    template = FUNCTION_REWRITES.get(node.name.lower())
    return _from_template(template, list(node.expressions)) if template else node


REWRITES: dict[type[exp.Expression], Callable[[Any], exp.Expression]] = {
    exp.TimeToUnix: _epoch,
    exp.PercentileCont: _quantile,
    exp.Filter: _ordered_list,
    exp.ArrayAgg: _ordered_list,
    exp.Anonymous: _function,
}


def literal(value: Any) -> exp.Expression:
    """A parameter's value as an AST literal (never pasted into SQL text)."""
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        return exp.cast(exp.Literal.number(repr(value)), exp.DataType.build("DOUBLE"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(v) for v in value])
    raise ConfigError(f"spark: cannot bind a parameter of type {type(value).__name__}")


def bind(tree: exp.Expression, params: dict[str, Any]) -> exp.Expression:
    """Replaces getvariable('name') and $name with the literal of params[name] (unset = NULL)."""

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and node.name.lower() == "getvariable":
            return literal(params.get(node.expressions[0].name))
        if isinstance(node, (exp.Placeholder, exp.Parameter)):
            return literal(params.get(node.name))
        return node

    return tree.transform(put)


def to_spark(tree: exp.Expression, schema: Callable[[], dict[str, dict[str, str]]]) -> str:
    """Spark SQL for one DuckDB statement whose parameters are bound."""
    if any(s.args.get("except") for s in tree.find_all(exp.Star)):
        # SELECT rel.* EXCLUDE (...): Spark has no star-except; expand the stars from the views'
        # columns (only the stars: everything else is left as written).
        tree = qualify(tree, dialect="duckdb", schema=schema(), expand_stars=True, quote_identifiers=False,
                       validate_qualify_columns=False, qualify_columns=True, isolate_tables=False, identify=False)
    for node in reversed(list(tree.walk(bfs=False))):  # each node after everything under it
        fn = REWRITES.get(type(node))
        new = fn(node) if fn else node
        if new is not node:
            tree = new if node is tree else (node.replace(new) and tree)
    return tree.sql(dialect="spark")


# --- the session -----------------------------------------------------------------------------

def spark_session(master: str | None = None):
    """The user's SparkSession (getOrCreate), `local[*]` when nothing configures a master."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigError(NEEDS) from None
    if not (os.environ.get("JAVA_HOME") and Path(os.environ["JAVA_HOME"], "bin", "java").exists()) and not shutil.which("java"):
        raise ConfigError(NEEDS + " (no java found)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers, if any, as this Python
    b = SparkSession.builder.appName("shadowreplay").config("spark.ui.showConsoleProgress", "false")
    if master:
        b = b.master(master)
    elif not _master_configured():
        b = b.master("local[*]")
    try:
        s = b.getOrCreate()
    except Exception as e:  # a failed JVM start (no/old Java) comes as several exception types
        raise ConfigError(f"{NEEDS}: {first_line(e)}") from None
    for k, v in SESSION_CONF.items():
        s.conf.set(k, v)
    return s


def _master_configured() -> bool:
    if os.environ.get("MASTER") or "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return True
    conf = Path(os.environ.get("SPARK_CONF_DIR") or Path(os.environ.get("SPARK_HOME", "/nonexistent")) / "conf") / "spark-defaults.conf"
    try:
        return any(ln.split()[:1] == ["spark.master"] for ln in conf.read_text().splitlines())
    except OSError:
        return False


ARROW_TYPES = {"INTEGER": pa.int32(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(), "VARCHAR": pa.string(), "BOOLEAN": pa.bool_()}


def spark_type(t: pa.DataType) -> str:
    """The Spark SQL type of an Arrow type of our schema (for typed NULLs of absent columns)."""
    types = pa.types
    if types.is_dictionary(t):
        return spark_type(t.value_type)
    for test, name in ((types.is_string, "STRING"), (types.is_large_string, "STRING"), (types.is_boolean, "BOOLEAN"),
                       (types.is_int8, "TINYINT"), (types.is_int16, "SMALLINT"), (types.is_int32, "INT"), (types.is_int64, "BIGINT"),
                       (types.is_float32, "FLOAT"), (types.is_floating, "DOUBLE"), (types.is_binary, "BINARY"), (types.is_timestamp, "TIMESTAMP")):
        if test(t):
            return name
    if types.is_list(t) or types.is_large_list(t):
        return f"ARRAY<{spark_type(t.value_type)}>"
    if types.is_map(t):
        return f"MAP<{spark_type(t.key_type)}, {spark_type(t.item_type)}>"
    if types.is_struct(t):
        return "STRUCT<" + ", ".join(f"`{t.field(i).name}`: {spark_type(t.field(i).type)}" for i in range(t.num_fields)) + ">"
    raise TypeError(f"no Spark type for {t}")


class SparkEngine:
    """The Engine interface (analysis/engine.py) on a SparkSession."""

    name = "spark"

    def __init__(self, spark) -> None:
        self.spark = spark
        self.params: dict[str, Any] = {}
        self.cached: list[Any] = []
        self.materialized = False

    # SQL ------------------------------------------------------------------------------------
    def _schema(self) -> dict[str, dict[str, str]]:
        out = {}
        for t in self.spark.catalog.listTables():
            if t.isTemporary:
                out[t.name] = {f.name: f.dataType.simpleString() for f in self.spark.table(t.name).schema.fields}
        return out

    def _run(self, stmt: str, params: dict[str, Any]):
        """Runs the DuckDB statement(s) of `stmt`; the last one's DataFrame if it is a query, else None."""
        df = None
        for tree in sqlglot.parse(stmt, read="duckdb"):
            if tree is not None and not isinstance(tree, exp.Semicolon):
                df = self._run_tree(bind(tree, params))
        return df

    def _run_tree(self, tree: exp.Expression):
        from pyspark.errors import PySparkException

        try:
            if isinstance(tree, exp.Create) and tree.kind in ("TABLE", "VIEW"):
                name = tree.this.name if isinstance(tree.this, exp.Table) else tree.this.this.name
                df = self.spark.sql(to_spark(tree.expression, self._schema))
                if tree.kind == "TABLE":  # a DuckDB temp table: computed once, kept in memory
                    df = df.coalesce(self.spark.sparkContext.defaultParallelism).cache()
                    df.count()
                    self.cached.append(df)
                df.createOrReplaceTempView(name)
                return None
            if isinstance(tree, exp.Alter) and isinstance(tree.args.get("actions", [None])[0], exp.AlterRename):
                old, new = tree.this.name, tree.args["actions"][0].this.name
                self.spark.table(old).createOrReplaceTempView(new)
                self.spark.catalog.dropTempView(old)
                return None
            return self.spark.sql(to_spark(tree, self._schema))
        except PySparkException as e:
            raise DatasetError(f"spark: {first_line(e)}") from None

    def run_file(self, name: str, params: dict[str, Any] | None = None):
        if params:
            self.params.update(params)
        stmts = [s for s in split_statements(sql_text(name)) if s.strip()]
        df = None
        for s in stmts:
            df = self._run(s, self.params)
        return df

    def query(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        df = self.run_file(name, params)
        return rows_of(df) if df is not None else []

    def scalar(self, sql: str) -> Any:
        rows = self._run(sql, self.params).collect()
        return plain(rows[0][0]) if rows else None

    def materialize(self, columns: list[str] | None = None) -> int:
        if self.materialized:  # done already (this engine's, not an earlier command's in the same session)
            return self.scalar("SELECT count(*) FROM lat_mat")
        self.materialized = True
        cols = ", ".join(columns) if columns else "* EXCLUDE (itl_ms)"
        self._run(f"CREATE OR REPLACE TEMP TABLE lat_mat AS SELECT {cols} FROM lat", {})
        self._run("CREATE OR REPLACE TEMP VIEW lat AS SELECT * FROM lat_mat", {})
        return self.scalar("SELECT count(*) FROM lat_mat")

    def rows_table(self, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None:
        # Through Arrow: the rows go to the JVM as a local relation, no Python worker runs.
        schema = pa.schema([(c, ARROW_TYPES[t.upper()]) for c, t in columns])
        data = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)
        self.spark.createDataFrame(data).createOrReplaceTempView(name)

    # views ----------------------------------------------------------------------------------
    def register_views(self, src: Sources) -> list[str]:
        """Temp views requests / replay_results / engine_metrics (absent columns as typed NULLs)
        and replayed, over the same Parquet files the DuckDB views read."""
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F

        made = []
        for name in (*TABLES, "replayed"):  # an earlier command's, in a shared session
            self.spark.catalog.dropTempView(name)
        try:
            for table in TABLES:
                if not src.has(table):
                    continue
                checked = check_files([f for root in src.roots[table] for f in parquet_files(root, table)], table)
                files, present = checked.files, checked.columns  # less any --skip-bad-files left out
                # The files' union schema, from the footers pyarrow read: Spark's own merge would
                # run a job over every file.
                schema = pa.unify_schemas([pq.read_schema(f) for f in files], promote_options="permissive")
                ddl = ", ".join(f"`{f.name}` {spark_type(f.type)}" for f in schema if f.name not in PARTITION_COLUMNS)
                df = None
                for root in src.roots[table]:
                    one = (self.spark.read.schema(ddl).option("basePath", str(table_dir(root, table)))
                           .parquet(*[str(f) for f in parquet_files(root, table) if f in files]))
                    df = one if df is None else df.unionByName(one, allowMissingColumns=True)
                for f in SCHEMAS[table]:
                    if f.name not in present and f.name not in df.columns:
                        df = df.withColumn(f.name, F.lit(None).cast(spark_type(f.type)))
                df.createOrReplaceTempView(table)
                made.append(table)
            if src.has(REQUESTS) and src.has(REPLAY_RESULTS):
                self.run_file("view_replayed")
                made.append("replayed")
        except PySparkException as e:
            raise DatasetError(f"cannot read the dataset ({src.describe()}): {first_line(e)}") from None
        return made

    def register_lat(self, src: Sources, table: str, warmup_s: float = 0.0) -> None:
        self.params["warmup_s"] = float(warmup_s)
        self.run_file(lat_source_name(src, table))
        self.run_file("lat")
        if warmup_s > 0:
            self.run_file("lat_warmup")


def plain(v: Any) -> Any:
    """A Spark value as DuckDB's Python API gives it: Rows as dicts, decimals as floats."""
    from pyspark.sql import Row

    if isinstance(v, Row):
        return {k: plain(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dt.datetime) and v.tzinfo is None:
        return v.replace(tzinfo=dt.timezone.utc)  # the session's time zone is UTC
    return v


def rows_of(df) -> list[dict[str, Any]]:
    cols = df.columns
    return [dict(zip(cols, (plain(x) for x in r))) for r in df.collect()]


def open_dataset(paths: list[str], table: str | None = None, warmup_s: float = 0.0, master: str | None = None):
    """find + register views + lat on Spark. Returns (engine, sources, table analyzed)."""
    if any(str(p).startswith("s3://") for p in paths):
        raise ConfigError("--engine spark reads datasets on a local or shared filesystem; s3:// is read by the DuckDB engine only for now")
    src = find_sources(paths)
    eng = SparkEngine(spark_session(master))
    eng.register_views(src)
    t = choose_table(src, table)
    eng.register_lat(src, t, warmup_s)
    return eng, src, t
