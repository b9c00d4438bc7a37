"""`--engine spark`: `analyze` and `analyze anomalies` on Spark local mode give the findings and
figures DuckDB gives, on the same generated dataset (four days, a batch client every afternoon)."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from tests.analysis_helpers import PlantedAnomaly, SynthSpec, run_cli, run_json, write_recording

NEEDS = "--engine spark needs the spark extra (pip install 'shadowreplay[spark]') and Java 17+"


@pytest.fixture(scope="module")
def spark():
    """One local Spark for the module; the CLI's getOrCreate() picks it up, as it would a
    spark-submit session."""
    from pyspark.sql import SparkSession

    s = (SparkSession.builder.master("local[2]").appName("shadowreplay-tests")
         .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         # the test data is small: compiling whole-stage code and re-planning adaptively cost more
         # than the queries (the module took about half as long without them); results are the same
         .config("spark.sql.codegen.wholeStage", "false").config("spark.sql.adaptive.enabled", "false")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


# The per-change tier runs the parity checks on a few files; the nightly tier on the 96-file set.
DATASETS = {
    # 12 hourly files: three 4-hour periods, the batch client in the third hour of each
    "small": (SynthSpec(periods=3, period_s=4 * 3600, rate_per_s=0.3, completion_mean=40.0, seed=11,
                        anomaly=PlantedAnomaly(offset_s=2 * 3600, batch_rate_per_s=0.25)), "4h", "+2h-3h of each 4h period"),
    # ~26k requests over four days with a batch client at 14:00 every day; 96 hourly files
    # (Spark's cost is per file more than per row), short outputs keep the token-gap lists (which
    # itl.sql unnests) at about a million values
    "weekly": (SynthSpec(periods=4, period_s=86400, rate_per_s=0.075, completion_mean=40.0, seed=11,
                         anomaly=PlantedAnomaly(offset_s=14 * 3600, batch_rate_per_s=0.06)), "1d", "14:00-15:00 UTC daily"),
}


@pytest.fixture(scope="module", params=["small", pytest.param("weekly", marks=pytest.mark.nightly)])
def dataset(request, tmp_path_factory):
    """(dataset folder, fold period, the planted slot's label), with engine metrics."""
    spec, period, label = DATASETS[request.param]
    root = tmp_path_factory.mktemp(f"spark-{request.param}")
    write_recording(root, spec, engine_metrics=True)
    return root, period, label


def same(a, b, path: str = "") -> list[str]:
    """Where two JSON results differ beyond float rounding (relative 1e-9)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in same(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{path}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        ok = a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        return [] if ok else [f"{path}: {a!r} vs {b!r}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def test_same_catches_a_difference():
    assert same({"x": [1.0, "a"]}, {"x": [1.0 + 1e-12, "a"]}) == []
    assert same({"x": [1.0, "a"]}, {"x": [1.001, "a"]}) and same({"x": 1}, {"y": 1}) and same([1], [1, 2])


@pytest.mark.slow
def test_analyze_same_on_spark(spark, dataset, capsys):
    argv = ["analyze", dataset[0], "--slo", "ttft=500ms,e2e=5s,itl=60ms"]
    duck = run_json(capsys, *argv)
    spk = run_json(capsys, *argv, "--engine", "spark")
    assert {g["client_id"] for g in duck["groups"]} == {None, "web-app", "mobile", "internal-tools", "eval", "batch-etl"}
    assert duck["groups"][0]["itl_source"] == "token gaps" and duck["groups"][0]["windows"] > 1000
    assert same(duck, spk) == []


@pytest.mark.slow
def test_anomalies_same_on_spark(spark, dataset, capsys):
    root, period, label = dataset
    duck = run_json(capsys, "analyze", "anomalies", root, "--period", period)
    spk = run_json(capsys, "analyze", "anomalies", root, "--period", period, "--engine", "spark")
    assert [a["label"] for a in duck["anomalies"]] == [label]
    assert duck["anomalies"][0]["explained_by"][0]["who"] == "batch-etl" and duck["engine"]["windows"] > 1000
    assert same(duck, spk) == []


@pytest.mark.slow
@pytest.mark.nightly  # 2-3 minutes: Spark plans each of the analysis' statements, whatever the data's size
def test_spark_warmup_and_replay_with_recording(spark, tmp_path, capsys):
    """A replay next to its recording (the replayed view, fold on the recording's clock) and a
    warm-up (lat_warmup.sql's view rename), on both engines."""
    from tests.analysis_helpers import write_replay

    rec = tmp_path / "rec"
    req = write_recording(rec, SynthSpec(periods=2, period_s=4 * 3600, rate_per_s=0.05, completion_mean=20.0, itl_lists=False, seed=3,
                                         anomaly=PlantedAnomaly(offset_s=2 * 3600, batch_rate_per_s=0.05)))
    rep = tmp_path / "rep"
    write_replay(rep, req, recording=rec)
    for argv in (["analyze", rep, "--warmup", "1h"], ["analyze", "anomalies", rep, "--period", "4h", "--warmup", "30m"]):
        duck = run_json(capsys, *argv)
        assert duck["requests"] > 1000
        assert same(duck, run_json(capsys, *argv, "--engine", "spark")) == []


def _cli(tmp_path, env: dict[str, str], pre: str = "") -> subprocess.CompletedProcess:
    data = tmp_path / "small"
    if not data.exists():
        write_recording(data, SynthSpec(periods=1, period_s=3600, rate_per_s=0.05, anomaly=None, itl_lists=False))
    code = f"{pre}import sys; from shadowreplay.cli import main; sys.exit(main(['analyze', {str(data)!r}, '--engine', 'spark']))"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_no_java_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"} | {"PATH": str(tmp_path / "no-java-here")}
    r = _cli(tmp_path, env)
    assert r.returncode == 2, r.stderr
    assert NEEDS in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_no_pyspark_is_one_line(tmp_path):
    r = _cli(tmp_path, dict(os.environ), pre="import sys; sys.modules['pyspark'] = None; ")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().endswith(NEEDS) and len(r.stderr.strip().splitlines()) == 1


def test_duckdb_only_flag_combination_is_an_error(dataset, capsys):
    rc, _, err = run_cli(capsys, "analyze", dataset[0], "--spark-master", "local[1]")
    assert rc == 2 and "--spark-master needs --engine spark" in err


def test_parameters_are_bound_as_literals_not_text():
    import sqlglot

    from shadowreplay.analysis.spark import bind, to_spark

    tree = bind(sqlglot.parse_one("SELECT * FROM lat WHERE who = getvariable('who') AND n >= $n AND list_contains(getvariable('m'), x)", read="duckdb"),
                {"who": "x' OR '1'='1", "n": 3, "m": ["ttft", "e2e"]})
    sql = to_spark(tree, dict)
    assert "who = 'x\\' OR \\'1\\'=\\'1'" in sql and "n >= 3" in sql and "ARRAY_CONTAINS(ARRAY('ttft', 'e2e'), x)" in sql
    assert "GETVARIABLE" not in sql.upper()


def test_every_analysis_file_of_the_two_commands_transpiles():
    """No DuckDB-only call is left in the Spark SQL of the files analyze and anomalies run."""
    import sqlglot
    from sqlglot import exp

    from shadowreplay.analysis.session import split_statements, sql_text
    from shadowreplay.analysis.spark import bind, to_spark

    files = ["lat_requests", "lat_replayed", "lat_replay_results", "lat", "lat_warmup", "view_replayed", "itl", "summary",
             "windows", "prefix", "fold", "anomalies", "anomaly_slots", "anomaly_clients", "engine_windows", "engine_slots"]
    left = {"GETVARIABLE", "PERCENTILE_CONT", "UNIX_TIMESTAMP", "EPOCH_US", "TO_MICROSECONDS", "LIST_AVG"}
    for name in files:
        for stmt in split_statements(sql_text(name)):
            for tree in sqlglot.parse(stmt, read="duckdb"):
                if tree is None or isinstance(tree, exp.Semicolon):
                    continue
                sql = to_spark(bind(tree, {}), dict) if not any(s.args.get("except") for s in tree.find_all(exp.Star)) else ""
                bad = [w for w in left if w + "(" in sql.upper()]
                assert not bad, (name, bad)
                assert not [a for a in tree.find_all(exp.ArrayAgg) if isinstance(a.this, exp.Order)] or "SORT_ARRAY(" in sql.upper(), name
