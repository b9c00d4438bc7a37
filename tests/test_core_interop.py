"""Tables written by other tools or older versions: files without our metadata, with optional
columns missing, and a fixture written by schema version 1. A file that cannot be read as the
table gives one clear error naming the file, the column and the expected type."""

from __future__ import annotations

import datetime as dt
import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shadowreplay.schema import REQUESTS
from tests.analysis_helpers import run_cli, run_json

FIXTURE = Path(__file__).parent / "data" / "schema1"
T0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.timezone.utc)


def foreign_requests(root: Path, n: int = 30, **extra) -> Path:
    """A requests table as another tool writes it (pyarrow, no shadowreplay metadata): the
    documented columns it has, in its own types (int64 ports, microsecond timestamps)."""
    cols = {
        "request_id": [f"x{i}" for i in range(n)],
        "ts_start": pa.array([T0 + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "path": ["/v1/completions"] * n, "kind": ["completion"] * n, "model": ["m"] * n, "port": pa.array([8000] * n, pa.int64()),
        "request_body": ['{"model": "m", "prompt": "hello there", "max_tokens": 8}'] * n, "ttft_ms": [10.0 + i for i in range(n)],
        "e2e_ms": [100.0 + i for i in range(n)], "client_id": ["c_a" if i % 2 else "c_b" for i in range(n)],
    }  # fmt: skip
    cols.update(extra)
    d = root / REQUESTS / "date=2026-12-01" / "hour=10"
    d.mkdir(parents=True)
    pq.write_table(pa.table(cols), d / "gateway-logs.parquet")
    return d / "gateway-logs.parquet"


def test_a_file_without_our_metadata_is_read_with_one_warning(tmp_path, capsys, caplog):
    import shadowreplay.dataset as ds

    ds._warned_no_metadata = False
    foreign_requests(tmp_path / "a")
    with caplog.at_level(logging.WARNING, logger="shadowreplay.dataset"):
        rc, out, err = run_cli(capsys, "replay", tmp_path / "a", "--target", "http://127.0.0.1:9", "--out", tmp_path / "o", "--dry-run")
        assert rc == 0, err
        assert "30 requests" in out
        rep = run_json(capsys, "analyze", tmp_path / "a")
    assert rep["requests"] == 30
    total = next(g for g in rep["groups"] if g["total"])
    assert total["ttft_ms"]["max"] == 39.0  # the file's own values, read through
    warnings = [r for r in caplog.records if "no shadowreplay.schema_version" in r.getMessage()]
    assert len(warnings) == 1


def test_optional_columns_missing_from_every_file_read_as_nulls(tmp_path, capsys):
    foreign_requests(tmp_path / "a", n=60)  # no hash_ids, no grpc columns, no prompt_chars, ...
    rc, out, err = run_cli(capsys, "analyze", "anomalies", tmp_path / "a", "--period", "60s", "--bucket", "10s")
    assert rc == 0, err
    rc, out, err = run_cli(capsys, "sql", tmp_path / "a", "-c", "SELECT count(*) AS n, count(hash_ids) AS h, count(grpc_method) AS g FROM requests")
    assert rc == 0, err
    assert "60" in out


def test_columns_missing_from_some_files_read_as_nulls(tmp_path, capsys):
    shutil.copytree(FIXTURE, tmp_path / "a")
    p = foreign_requests(tmp_path / "b", n=5)
    shutil.copy(p, next((tmp_path / "a" / REQUESTS).rglob("hour=10")) / "other.parquet")
    rc, out, err = run_cli(capsys, "sql", tmp_path / "a", "-c", "SELECT count(*) AS n, count(prefix_hash) AS p FROM requests")
    assert rc == 0, err
    assert "17" in out and "12" in out  # 12 fixture rows carry prefix_hash, the 5 foreign ones do not


@pytest.mark.parametrize(
    "change,message",
    [
        ({"request_id": None}, "required column 'request_id' (string) is missing"),
        ({"ts_start": [str(i) for i in range(30)]}, "column 'ts_start' is string, expected timestamp"),
        ({"ttft_ms": ["fast"] * 30}, "column 'ttft_ms' is string, expected double"),
    ],
)
def test_an_unreadable_file_is_one_clear_error(tmp_path, capsys, change, message):
    cols = dict(change)
    p = foreign_requests(tmp_path / "a", **{k: v for k, v in cols.items() if v is not None})
    if cols.get("request_id", "") is None:
        t = pq.read_table(p).drop_columns(["request_id"])
        pq.write_table(t, p)
    for argv in (["replay", tmp_path / "a", "--target", "http://127.0.0.1:9", "--out", tmp_path / "o", "--dry-run"],
                 ["analyze", tmp_path / "a"]):
        rc, out, err = run_cli(capsys, *argv)
        assert rc == 2, (argv, out, err)
        assert message in err and str(p) in err and "Traceback" not in err


def test_a_newer_schema_version_is_refused(tmp_path, capsys):
    p = foreign_requests(tmp_path / "a")
    t = pq.read_table(p)
    pq.write_table(t.replace_schema_metadata({b"shadowreplay.schema_version": b"2", b"shadowreplay.table": b"requests"}), p)
    rc, out, err = run_cli(capsys, "analyze", tmp_path / "a")
    assert rc == 2 and "schema version 2 is not supported" in err


def test_the_schema_1_fixture_still_reads(tmp_path, capsys):
    rep = run_json(capsys, "analyze", FIXTURE / "requests")
    assert rep["requests"] == 12
    rc, out, err = run_cli(capsys, "replay", FIXTURE, "--target", "http://127.0.0.1:9", "--out", tmp_path / "o", "--dry-run")
    assert rc == 0 and "12 requests" in out, err
    rc, out, err = run_cli(capsys, "sql", FIXTURE, "-c", "SELECT count(*) FROM replayed WHERE rec_ttft_ms IS NOT NULL")
    assert rc == 0 and "12" in out, err


def test_export_reads_foreign_files(tmp_path, capsys):
    foreign_requests(tmp_path / "a", n=4, prompt_tokens=pa.array([5, 6, 7, 8], pa.int64()), completion_tokens=[3, 3, 3, 3])
    rc, out, err = run_cli(capsys, "export", "mooncake", tmp_path / "a", "--out", tmp_path / "t.jsonl", "--no-hash-ids")
    assert rc == 0, err
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert len(lines) == 4
