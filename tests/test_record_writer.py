"""The writer thread: rotation, flush on close, drop counters, write failures (real Parquet)."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from shadowreplay.anonymize import Scrubber
from shadowreplay.recorder.exchange import RowOptions
from shadowreplay.recorder.record_writer import Writer, WriterConfig, read_status
from shadowreplay.dataset import parquet_files
from tests.recorder_helpers import wait_for


class Ex:
    """A minimal exchange (the writer only needs to_row)."""

    def __init__(self, i: int, gate: threading.Event | None = None, text: str = "x") -> None:
        self.request_id = f"r{i}"
        self.ts_start = time.time()
        self.gate = gate
        self.text = text

    def to_row(self, scrubber, opts):
        if self.gate is not None:
            self.gate.wait(10)
        return {
            "request_id": self.request_id,
            "ts_start": dt.datetime.fromtimestamp(self.ts_start, dt.timezone.utc),
            "response_text": self.text,
        }


class Broken(Ex):
    def to_row(self, scrubber, opts):
        raise KeyError("secret-content-should-not-appear")


def writer(tmp_path: Path, **kw) -> Writer:
    cfg = WriterConfig(out_dir=tmp_path / "out", **kw)
    return Writer(cfg, Scrubber(b"k" * 32), RowOptions()).start()


def count(out: Path) -> int:
    return duckdb.connect().execute(f"select count(*) from read_parquet('{out}/requests/**/*.parquet')").fetchone()[0]


def test_close_flushes_everything_with_metadata(tmp_path):
    w = writer(tmp_path)
    for i in range(50):
        assert w.submit(Ex(i))
    w.close()
    out = tmp_path / "out"
    assert count(out) == 50
    files = parquet_files(out, "requests")
    assert len(files) == 1
    meta = pq.read_metadata(files[0]).metadata
    assert meta[b"shadowreplay.schema_version"] == b"1"
    assert meta[b"shadowreplay.recorder.dropped_queue_full"] == b"0"
    st = read_status(out)
    assert st["rows_written"] == 50 and st["dropped_queue_full"] == 0 and st["submitted"] == 50
    assert st["writer_alive"] is False  # written as the writer stopped


def test_the_status_says_the_writer_is_alive_while_it_runs(tmp_path):
    w = writer(tmp_path)
    w.submit(Ex(0))
    w.flush()
    assert read_status(tmp_path / "out")["writer_alive"] is True
    w.close()
    assert read_status(tmp_path / "out")["writer_alive"] is False


def test_rotation_by_time_and_size(tmp_path):
    w = writer(tmp_path, rotate_seconds=0.2)
    w.submit(Ex(1))
    out = tmp_path / "out"
    wait_for(lambda: len(parquet_files(out, "requests")) == 1, timeout=10, what="time rotation")
    w.submit(Ex(2))
    wait_for(lambda: len(parquet_files(out, "requests")) == 2, timeout=10, what="second time rotation")
    w.close()
    w2 = writer(tmp_path / "b", rotate_bytes=5_000)
    for i in range(10):
        w2.submit(Ex(i, text="y" * 1000))
    w2.flush()
    files = parquet_files(tmp_path / "b" / "out", "requests")
    assert len(files) >= 2  # ~1.2 kB a row: a file every 5 rows
    w2.close()
    assert count(tmp_path / "b" / "out") == 10


def test_queue_full_drops_are_counted_not_blocking(tmp_path):
    gate = threading.Event()
    w = writer(tmp_path, queue_size=5)
    results = [w.submit(Ex(i, gate)) for i in range(20)]
    t0 = time.monotonic()
    assert w.submit(Ex(99)) is False
    # never blocks the proxy: a blocking put would wait on the gate for good; a bound above a
    # busy machine's scheduling delays (not 50 ms) still tells the two apart
    assert time.monotonic() - t0 < 2.0
    accepted = sum(results)
    assert w.dropped_queue_full == 20 - accepted + 1 and accepted >= 5
    gate.set()
    w.close()
    st = read_status(tmp_path / "out")
    assert st["dropped_queue_full"] == w.dropped_queue_full
    assert st["rows_written"] == accepted == count(tmp_path / "out")


def test_write_failure_is_counted_and_writer_keeps_going(tmp_path):
    w = writer(tmp_path)
    out = tmp_path / "out"
    (out / "requests").write_text("not a folder")  # makes every write fail
    for i in range(3):
        w.submit(Ex(i))
    w.flush()
    assert w.dropped_write_failed == 3 and w.last_error
    (out / "requests").unlink()
    w.submit(Ex(4))
    w.close()
    st = read_status(out)
    assert st["dropped_write_failed"] == 3 and st["rows_written"] == 1 and count(out) == 1


def test_conversion_bug_keeps_a_row_without_content(tmp_path):
    w = writer(tmp_path)
    w.submit(Broken(7))
    w.close()
    rows = duckdb.connect().execute(f"select request_id, error from read_parquet('{tmp_path}/out/requests/**/*.parquet')").fetchall()
    assert rows == [("r7", "recorder could not convert this exchange (KeyError)")]
    assert "secret-content" not in (tmp_path / "out" / "recorder_status.json").read_text()
