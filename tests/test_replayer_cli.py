"""`shadowreplay replay` as a user runs it: bad input gives one line and a non-zero exit; Ctrl-C
leaves complete, readable, partial results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shadowreplay.dataset import parquet_files
from tests.conftest import REPO, free_port
from tests.replayer_helpers import ServerThread, chat_row, wait_for, write_recording


def cli(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shadowreplay", "replay", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def one_line_error(p: subprocess.CompletedProcess, needle: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.strip().splitlines() if "error" in ln]
    assert len(lines) == 1 and needle in lines[0], p.stderr


@pytest.fixture
def rec(tmp_path):
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.01, client="a" if i % 2 else "b") for i in range(5)])
    return tmp_path / "rec"


@pytest.fixture(scope="module")
def server():
    with ServerThread() as s:
        yield s


def test_missing_recording(tmp_path, server):
    one_line_error(cli(tmp_path / "nope", "--target", server.url, "--out", tmp_path / "o"), "no such file")


def test_folder_without_requests_table(tmp_path, server):
    (tmp_path / "empty").mkdir()
    one_line_error(cli(tmp_path / "empty", "--target", server.url, "--out", tmp_path / "o"), "no requests/ table")


def test_corrupt_parquet(tmp_path, rec, server):
    f = parquet_files(rec, "requests")[0]
    f.write_bytes(f.read_bytes()[:100])
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o"), "not a readable Parquet file")


def test_unknown_schema_version(tmp_path, rec, server):
    f = parquet_files(rec, "requests")[0]
    t = pq.read_table(f)
    meta = dict(t.schema.metadata)
    meta[b"shadowreplay.schema_version"] = b"99"
    pq.write_table(t.replace_schema_metadata(meta), f)
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o"), "schema version 99 is not supported")


def test_missing_columns(tmp_path, server):
    d = tmp_path / "rec" / "requests" / "date=2026-11-29" / "hour=10"
    d.mkdir(parents=True)
    t = pa.table({"request_id": ["a"], "ts_start": pa.array([0], pa.timestamp("us", tz="UTC"))})
    t = t.replace_schema_metadata({b"shadowreplay.schema_version": b"1", b"shadowreplay.table": b"requests"})
    pq.write_table(t, d / "part-x.parquet")
    one_line_error(cli(tmp_path / "rec", "--target", server.url, "--out", tmp_path / "o"), "lacks column(s) path, request_body")


def test_empty_selection(tmp_path, rec, server):
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o", "--where", "client_id = 'zzz'"), "empty selection")


def test_bad_where(tmp_path, rec, server):
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o", "--where", "no_such_col = 1"), "bad --where")


def test_unreachable_target(tmp_path, rec):
    one_line_error(cli(rec, "--target", f"http://127.0.0.1:{free_port()}", "--out", tmp_path / "o"), "cannot reach target")


def test_recorded_host_refused(tmp_path, rec):
    one_line_error(cli(rec, "--target", "https://api.prod.example", "--out", tmp_path / "o"), "--allow-recorded-host")


def test_bad_options(tmp_path, rec, server):
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o", "--speed", "0"), "--speed")
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o", "--header", "nocolon"), "--header")
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o", "--route", "x > 1"), "--route")
    one_line_error(cli(rec, "--target", server.url, "--out", tmp_path / "o", "--spin-lead-ms", "-1"), "--spin-lead-ms")


def test_dry_run_cli(tmp_path, rec, server):
    n = len(server.arrivals)
    p = cli(rec, "--target", server.url, "--out", tmp_path / "o", "--dry-run", "--where", "client_id = 'a'")
    assert p.returncode == 0 and "dry run: 2 requests" in p.stdout
    assert len(server.arrivals) == n


def test_ctrl_c_leaves_partial_readable_results(tmp_path, server):
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.05) for i in range(200)])  # 10 s
    out = tmp_path / "out"
    before = len(server.arrivals)
    p = subprocess.Popen([sys.executable, "-m", "shadowreplay", "replay", str(tmp_path / "rec"), "--target", server.url,
                          "--out", str(out), "--no-metrics", "--drain", "5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        wait_for(lambda: len(server.arrivals) - before >= 10, 30, "first sends")
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130 and "Traceback" not in stderr
    assert "not sent" in stderr
    rows = duckdb.connect().execute(
        f"SELECT request_id, error, status FROM read_parquet('{out}/replay_results/**/*.parquet') ORDER BY request_id").fetchall()
    assert 10 <= len(rows) < 200
    assert [r[0] for r in rows] == [f"r{i:05d}" for i in range(len(rows))]
    assert all(r[2] == 200 for r in rows)
    man = json.loads((out / "manifest.json").read_text())
    assert man["summary"]["interrupted"] is True and man["summary"]["not_sent"] == 200 - len(rows)
    assert not any(n.endswith(".tmp") for n in os.listdir(out))
