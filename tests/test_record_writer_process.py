"""The writer process (shadowreplay_writer=process): a real child process fed through a pipe,
real Parquet, and a real mitmdump for crash / SIGKILL behaviour."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import duckdb
import httpx
import pyarrow.parquet as pq
import pytest

from shadowreplay.recorder.exchange import HttpExchange, RowOptions
from shadowreplay.recorder.record_writer_process import ProcessWriter
from shadowreplay.recorder.record_writer import WriterConfig, read_status
from shadowreplay.dataset import check_file, parquet_files
from tests.conftest import free_port
from tests.recorder_helpers import Proxy, chat, read_requests, server, wait_for  # noqa: F401 (server: a fixture)

EMAIL = "marta.kowalska@example.org"
PHONE = "+1 415 555 0134"


def exchange(i: int, text: str = "hello") -> HttpExchange:
    now = time.time()
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}], "stream": True}).encode()
    ex = HttpExchange(
        request_id=f"r{i}",
        ts_start=now,
        method="POST",
        scheme="http",
        host="gw",
        port=80,
        path="/v1/chat/completions",
        request_headers=[("content-type", "application/json"), ("authorization", "Bearer sk-secret-123")],
        request_body=body,
        status=200,
        response_headers=[("content-type", "text/event-stream")],
        ts_response_headers=now,
        streamed=True,
    )
    for tok in ("Hi ", text, " bye"):
        ex.observe(time.time(), b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": tok}}]}).encode() + b"\n\n", 1 << 20)
    ex.observe(time.time(), b"data: [DONE]\n\n", 1 << 20)
    ex.ts_end = time.time()
    return ex


def count(out: Path) -> int:
    return duckdb.connect().execute(f"select count(*) from read_parquet('{out}/requests/**/*.parquet')").fetchone()[0]


def test_record_writer_process_scrubs_writes_and_reports(tmp_path, key_file):
    out = tmp_path / "out"
    w = ProcessWriter(WriterConfig(out_dir=out, rotate_seconds=60), str(key_file), RowOptions()).start()
    n = 300
    for i in range(n):
        assert w.submit(exchange(i, f"mail {EMAIL} or call {PHONE}"))
    w.flush()
    st = read_status(out)
    assert st["writer"] == "process" and st["writer_alive"] is True and st["writer_pid"] != os.getpid()
    assert st["rows_written"] == n and st["submitted"] == n
    w.close()
    assert count(out) == n
    assert read_status(out)["writer_alive"] is False  # the final status says the writer has exited
    files = parquet_files(out, "requests")
    meta = pq.read_schema(files[-1]).metadata
    assert meta[b"shadowreplay.recorder.dropped_queue_full"] == b"0" and b"shadowreplay.recorder.submitted" in meta
    blob = b"".join(f.read_bytes() for f in out.rglob("*") if f.is_file())
    rows = read_requests(out)
    text = json.dumps([{k: v for k, v in r.items() if isinstance(v, str)} for r in rows])
    for secret in (EMAIL, PHONE, "sk-secret-123"):
        assert secret not in text and secret.encode() not in blob
    assert all(r["response_text"].startswith("Hi ") for r in rows)
    assert not any(p.suffix == ".tmp" for p in out.rglob("*"))  # nothing half-written left behind


def test_queue_full_drops_are_counted_in_status_and_metadata(tmp_path, key_file):
    out = tmp_path / "out"
    w = ProcessWriter(WriterConfig(out_dir=out, rotate_seconds=60, queue_size=5), str(key_file), RowOptions())
    # not started: nothing drains the queue, so the 6th submit on is dropped
    accepted = [w.submit(exchange(i)) for i in range(20)]
    assert accepted.count(True) == 5 and w.dropped_queue_full == 15
    w.start()
    w.close()
    st = read_status(out)
    assert st["dropped_queue_full"] == 15 and st["rows_written"] == 5
    meta = pq.read_schema(parquet_files(out, "requests")[0]).metadata
    assert meta[b"shadowreplay.recorder.dropped_queue_full"] == b"15"


def test_child_crash_is_counted_and_a_new_child_takes_over(tmp_path, key_file):
    out = tmp_path / "out"
    w = ProcessWriter(WriterConfig(out_dir=out, rotate_seconds=60), str(key_file), RowOptions()).start()
    for i in range(50):
        w.submit(exchange(i))
    pid = wait_for(lambda: read_status(out).get("writer_pid"), what="the writer process to start")
    wait_for(lambda: w.queued == 0, what="the feeder to send the first 50")
    os.kill(pid, signal.SIGKILL)
    # traffic goes on: submits are accepted while the child is dead and restarting
    for i in range(50, 100):
        assert w.submit(exchange(i))
    wait_for(lambda: w.writer_restarts >= 1, timeout=30, what="a restart")
    for i in range(100, 150):  # after the restart: all recorded
        assert w.submit(exchange(i))
    w.close()
    st = read_status(out)
    # the first 50 died with the child; some of 50..99 may have gone down the pipe before the
    # feeder noticed the death (counted lost too)
    assert st["writer_restarts"] >= 1 and st["dropped_writer_died"] >= 50
    assert st["rows_written"] + st["dropped_writer_died"] == 150 == st["submitted"]
    ids = {r["request_id"] for r in read_requests(out)}
    assert st["rows_written"] == count(out) == len(ids)
    assert {f"r{i}" for i in range(100, 150)} <= ids and not ids & {f"r{i}" for i in range(50)}


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie (exited, not yet reaped by its dead parent's reaper) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def _read_bytes_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


@pytest.mark.slow
def test_writer_child_killed_in_mitmdump_traffic_flows_and_drops_are_counted(tmp_path, server, key_file):
    out = tmp_path / "data"
    with Proxy(server.url, out, key_file, free_port(), shadowreplay_writer="process") as proxy:
        with httpx.Client(base_url=proxy.url, timeout=30) as c:
            for i in range(10):
                assert c.post("/v1/chat/completions", json=chat(f"a {i}", max_tokens=2)).status_code == 200
            pid = read_status(out)["writer_pid"]
            os.kill(pid, signal.SIGKILL)
            for i in range(20):  # the proxy keeps serving while its writer is dead / restarting
                assert c.post("/v1/chat/completions", json=chat(f"b {i}", max_tokens=2, stream=bool(i % 2))).status_code == 200
            wait_for(lambda: read_status(out).get("writer_restarts", 0) >= 1, timeout=30, what="the restart in the status file")
        assert proxy.stop(signal.SIGTERM) == 0
        log = proxy.log()
    st = read_status(out)
    assert st["writer_restarts"] >= 1 and st["dropped_writer_died"] >= 1
    assert st["rows_written"] + st["dropped_writer_died"] == 30 == st["submitted"]
    assert count(out) == st["rows_written"] > 0
    assert "writer process exited" in log and "lost with it" in log


@pytest.mark.slow
def test_sigkill_of_mitmdump_the_child_flushes_the_open_window(tmp_path, server, key_file):
    out = tmp_path / "data"
    # rotation 60 s: nothing is written before the kill, so every row on disk was flushed by the
    # child after it saw the pipe close
    proxy = Proxy(server.url, out, key_file, free_port(), shadowreplay_writer="process").start()
    try:
        pid = read_status(out)["writer_pid"]
        with httpx.Client(base_url=proxy.url, timeout=30) as c:
            for i in range(30):  # not streamed: the row is submitted before the client has the response
                assert c.post("/v1/chat/completions", json=chat(f"q {PHONE} {i}", max_tokens=2)).status_code == 200
        seen = [-1]

        def pipe_settled() -> bool:  # the child has read everything the feeder sent
            n = _read_bytes_of(pid)
            settled = n == seen[0]
            seen[0] = n
            return settled

        wait_for(pipe_settled, interval=0.3, what="the writer's pipe to settle")
        assert parquet_files(out, "requests") == []
        proxy.proc.send_signal(signal.SIGKILL)
        proxy.proc.wait(10)
        wait_for(lambda: _pid_gone(pid), timeout=30, what="the writer process to flush and exit")
    finally:
        proxy.stop()
    files = parquet_files(out, "requests")
    assert files
    for f in files:
        check_file(f, "requests")
    assert count(out) == 30
    blob = b"".join(f.read_bytes() for f in out.rglob("*") if f.is_file())
    assert PHONE.encode() not in blob and PHONE.replace(" ", "").encode() not in blob


def test_cli_writer_flag_is_passed_to_mitmdump_and_optional():
    import argparse

    from shadowreplay.recorder import cli

    ap = argparse.ArgumentParser()
    cli.register(ap.add_subparsers())
    base = ["record", "--upstream", "http://127.0.0.1:1", "--out", "/tmp/x"]
    with_flag = cli.build_command(ap.parse_args([*base, "--writer", "thread"]))
    assert "shadowreplay_writer=thread" in with_flag
    assert not any(a.startswith("shadowreplay_writer=") for a in cli.build_command(ap.parse_args(base)))
    with pytest.raises(SystemExit):
        ap.parse_args([*base, "--writer", "fork"])


class Unpicklable:
    """An exchange from a buggy addon: it converts, but cannot cross the pipe."""

    def __init__(self) -> None:
        self.hook = lambda: None

    def to_row(self, scrubber, opts):
        raise AssertionError("never converted here")


def test_an_unpicklable_exchange_is_dropped_and_counted_not_the_batch(tmp_path, key_file):
    out = tmp_path / "out"
    w = ProcessWriter(WriterConfig(out_dir=out, rotate_seconds=60), str(key_file), RowOptions())
    for i in range(10):  # queued before the start: one batch with the bad one in the middle
        w.submit(Unpicklable() if i == 5 else exchange(i))
    w.start()
    w.close()
    st = read_status(out)
    assert st["dropped_unpicklable"] == 1 and st["rows_written"] == 9 == count(out)
    assert st["dropped_writer_died"] == 0 and st["writer_restarts"] == 0
