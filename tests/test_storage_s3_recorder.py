"""The real recorder writing s3://: inside real mitmdump (two instances into one prefix), and its
writer process killed with SIGKILL in the middle of an upload. Against moto's S3 server in its
own process, reached through a throttling TCP relay where an upload must be caught in flight."""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from shadowreplay.dataset import check_file
from shadowreplay.recorder.exchange import HttpExchange, RowOptions
from shadowreplay.recorder.record_writer_process import ProcessWriter
from shadowreplay.recorder.record_writer import WriterConfig, read_status
from shadowreplay.storage import location
from tests.analysis_helpers import run_cli
from tests.conftest import free_port
from tests.recorder_helpers import Proxy, chat, port_open, server, wait_for  # noqa: F401 (server: a fixture)
from tests.s3_helpers import moto_server, s3, set_aws_env  # noqa: F401 (fixtures)

EMAIL = "marta.kowalska@example.org"


class S3Proxy(Proxy):
    """mitmdump with the recorder addon writing an s3:// prefix as instance `instance`."""

    def __init__(self, upstream: str, url: str, key_file: Path, port: int, log_dir: Path, instance: str, **sets) -> None:
        super().__init__(upstream, log_dir / "unused", key_file, port, shadowreplay_instance=instance, **sets)
        self.s3_url = url
        self.instance = instance
        self.log_path = log_dir / f"mitmdump-{instance}.log"

    def command(self) -> list[str]:
        return [f"shadowreplay_out={self.s3_url}" if c == f"shadowreplay_out={self.out}" else c for c in super().command()]

    def start(self, wait: bool = True) -> "S3Proxy":
        super().start(wait=False)
        status = location(self.s3_url) / "recorder_status" / f"{self.instance}.json"
        wait_for(lambda: self._check_alive() and port_open("127.0.0.1", self.port) and status.exists(),
                 timeout=30, what=f"mitmdump {self.instance} to listen and write its status object")
        return self


@pytest.mark.slow
def test_two_recorders_in_mitmdump_write_one_s3_prefix(s3, server, key_file, tmp_path, capsys):
    url = s3.url("fleet")
    sent = {"gw-a": 6, "gw-b": 4}
    proxies = {name: S3Proxy(server.url, url, key_file, free_port(), tmp_path, name, shadowreplay_rotate_seconds="500ms")
               for name in sent}
    try:
        for p in proxies.values():
            p.start()
        for name, n in sent.items():
            with httpx.Client(base_url=proxies[name].url, timeout=30) as c:
                for i in range(n):
                    r = c.post("/v1/chat/completions", json=chat(f"{name} {i} write to {EMAIL}", max_tokens=2, stream=bool(i % 2)))
                    assert r.status_code == 200
        for p in proxies.values():
            assert p.stop(signal.SIGINT) == 0, p.log()
    finally:
        for p in proxies.values():
            if p.proc is not None and p.proc.poll() is None:
                p.stop()
    keys = s3.keys("fleet/")
    parquet = [k for k in keys if k.endswith(".parquet")]
    assert sorted(k for k in keys if k.startswith("fleet/recorder_status/")) == \
        ["fleet/recorder_status/gw-a.json", "fleet/recorder_status/gw-b.json"]
    assert "fleet/recorder_status.json" not in keys  # one object per instance on object storage
    for name in sent:  # every file carries its writer's id; none is shared
        assert [k for k in parquet if f"-{name}-" in k]
    assert all(("-gw-a-" in k) != ("-gw-b-" in k) for k in parquet)
    assert not [k for k in keys if not (k.endswith(".parquet") or k.endswith(".json"))]
    for k in keys:  # scrubbed before anything left the recorder
        assert EMAIL.encode() not in s3.get(k)
    statuses = {name: json.loads(s3.get(f"fleet/recorder_status/{name}.json")) for name in sent}
    assert {n: st["rows_written"] for n, st in statuses.items()} == sent
    assert all(st["instance"] == n and st["writer"] == "process" for n, st in statuses.items())

    rc, out, err = run_cli(capsys, "analyze", url, "--json")
    assert rc == 0, err
    res = json.loads(out)
    assert res["requests"] == sum(sent.values())
    assert {r["instance"]: (r["rows_written"], r["drops"]) for r in res["recorders"]} == {n: (k, 0) for n, k in sent.items()}
    rc, out, err = run_cli(capsys, "analyze", url)
    assert rc == 0, err
    assert "Recorders" in out and "gw-a" in out and "gw-b" in out


class Throttle:
    """A TCP relay to `upstream` that passes at most `rate` bytes/s towards it, and counts the
    bytes of PUT requests of .parquet objects passed so far (an upload in flight)."""

    def __init__(self, upstream_port: int, rate: int) -> None:
        self.upstream_port, self.rate = upstream_port, rate
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.parquet_put_bytes = 0
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        parquet_put = False
        try:
            while True:
                data = src.recv(16384)
                if not data:
                    break
                if up:
                    if data.startswith(b"PUT ") and b".parquet" in data.split(b"\r\n", 1)[0]:
                        parquet_put = True
                    elif data[:4] in (b"GET ", b"HEAD", b"POST", b"DELE") or data.startswith(b"PUT "):
                        parquet_put = False
                    if parquet_put:
                        self.parquet_put_bytes += len(data)
                    time.sleep(len(data) / self.rate)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def _exchange(i: int, text: str) -> HttpExchange:
    now = time.time()
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    ex = HttpExchange(request_id=f"r{i}", ts_start=now, method="POST", scheme="http", host="gw", port=80,
                      path="/v1/chat/completions", request_headers=[("content-type", "application/json")],
                      request_body=body, status=200, response_headers=[("content-type", "application/json")],
                      ts_response_headers=now, streamed=False)
    ex.observe(now, b'{"choices": [{"message": {"content": "ok"}}]}', 1 << 20)
    ex.ts_end = time.time()
    return ex


@pytest.mark.slow
def test_sigkill_of_the_writer_mid_upload_leaves_no_visible_partial_object(s3, moto_server, monkeypatch, scrub_key):
    monkeypatch.setenv("SHADOWREPLAY_SCRUB_KEY", base64.b64encode(scrub_key).decode())
    relay = Throttle(moto_server.port, rate=256 << 10)  # 256 KiB/s towards the store
    set_aws_env(monkeypatch, f"http://127.0.0.1:{relay.port}")
    cfg = WriterConfig(out_dir=location(s3.url("rec")), rotate_seconds=600.0, instance="gw-k")
    w = ProcessWriter(cfg, None, RowOptions()).start()
    try:
        pid = wait_for(lambda: _status(cfg).get("writer_pid"), timeout=30, what="the writer process")
        for i in range(4):  # ~1.3 MB of incompressible (base64) text: a PUT of several seconds here
            w.submit(_exchange(i, base64.b64encode(secrets.token_bytes(250_000)).decode()))
        threading.Thread(target=w.flush, args=(60,), daemon=True).start()
        wait_for(lambda: relay.parquet_put_bytes > 200_000, timeout=60, what="the Parquet upload to be under way")
        assert not [k for k in s3.keys("rec/") if k.endswith(".parquet")]  # still in flight
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not _alive(pid), timeout=10, what="the writer to die")
        keys = s3.keys("rec/")
        assert not [k for k in keys if k.endswith(".parquet")], keys  # nothing half-written became visible
        # the restarted writer's next file is complete and visible: the check above could fail
        wait_for(lambda: _status(cfg).get("writer_restarts", 0) >= 1, timeout=60, what="a new writer")
        w.submit(_exchange(9, "small"))
        w.flush(60)
        files = [k for k in s3.keys("rec/") if k.endswith(".parquet")]
        assert len(files) == 1 and check_file(location(f"s3://{s3.bucket}/{files[0]}"), "requests").num_rows == 1
    finally:
        w.close(timeout=10)
        relay.close()
    st = json.loads(s3.get("rec/recorder_status/gw-k.json"))
    assert st["dropped_writer_died"] == 4 and st["rows_written"] == 1


def _status(cfg: WriterConfig) -> dict:
    """The instance's status, or {} while it is missing or being replaced (moto serves a GET that
    overlaps a PUT of the same key from one shared buffer: it can read torn there, unlike S3)."""
    try:
        return read_status(cfg.out_dir, cfg.instance)
    except (OSError, ValueError):
        return {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False
