import datetime as dt
import subprocess
import sys

import duckdb
import pyarrow.parquet as pq
import pytest

from shadowreplay.dataset import check_file, find_tables, glob_for, parquet_files, write_rows
from shadowreplay.errors import DatasetError
from shadowreplay.schema import SCHEMA_VERSION, SCHEMA_VERSION_KEY, REQUESTS

UTC = dt.timezone.utc


def _rows(n, start):
    return [
        {"request_id": f"r{i}", "ts_start": start + dt.timedelta(minutes=20 * i), "kind": "chat", "itl_ms": [1.0, 2.5]}
        for i in range(n)
    ]


def test_write_partitions_by_hour_and_reads_back(tmp_path):
    start = dt.datetime(2026, 11, 25, 13, 50, tzinfo=UTC)
    paths = write_rows(tmp_path, REQUESTS, _rows(7, start))
    # 13:50 .. 15:50 in 20-minute steps -> hours 13, 14 and 15: one file per hour
    assert len(paths) == len({p.parent for p in paths}) == 3
    assert all(p.parts[-3].startswith("date=2026-11-25") and p.parts[-2].startswith("hour=") for p in paths)
    got = duckdb.sql(
        f"select request_id, hour, itl_ms from read_parquet('{glob_for(tmp_path, REQUESTS)}', hive_partitioning=true) order by ts_start"
    ).fetchall()
    assert [g[0] for g in got] == [f"r{i}" for i in range(7)]
    assert [int(g[1]) for g in got] == [13, 14, 14, 14, 15, 15, 15]
    assert got[0][2] == [1.0, 2.5]
    for p in paths:
        assert pq.read_metadata(p).metadata[SCHEMA_VERSION_KEY] == SCHEMA_VERSION.encode()
        check_file(p, REQUESTS)
    assert find_tables(tmp_path) == {REQUESTS: tmp_path}
    assert find_tables(tmp_path / REQUESTS) == {REQUESTS: tmp_path}
    assert not list(tmp_path.rglob("*.tmp"))


def test_check_file_rejects_corrupt_and_foreign(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(DatasetError, match="not a readable Parquet file"):
        check_file(bad)
    foreign = tmp_path / "f.parquet"
    import pyarrow as pa

    pq.write_table(pa.table({"a": [1]}), foreign)
    with pytest.raises(DatasetError, match="required column 'request_id' .* is missing"):
        check_file(foreign, REQUESTS)
    future = tmp_path / "v9.parquet"
    pq.write_table(pa.table({"a": [1]}).replace_schema_metadata({SCHEMA_VERSION_KEY: b"9"}), future)
    with pytest.raises(DatasetError, match="schema version 9"):
        check_file(future)


def test_missing_time_column_is_an_error(tmp_path):
    with pytest.raises(DatasetError, match="no ts_start"):
        write_rows(tmp_path, REQUESTS, [{"request_id": "a"}])
    assert parquet_files(tmp_path, REQUESTS) == []


def test_cli_without_command_prints_help_and_version():
    r = subprocess.run([sys.executable, "-m", "shadowreplay", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and "shadowreplay" in r.stdout
    r = subprocess.run([sys.executable, "-m", "shadowreplay"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stdout
