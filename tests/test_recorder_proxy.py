"""The recorder in a real mitmdump process, in front of a real local SSE server (tests/sse_server.py)."""

from __future__ import annotations

import gzip
import json
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import httpx
import pyarrow.parquet as pq
import pytest

from shadowreplay.dataset import check_file, parquet_files
from tests.conftest import free_port
from tests import recorder_helpers
from tests.recorder_helpers import REPO, Proxy, port_open, read_requests, rows_by_header, server, wait_for  # noqa: F401 (server: a fixture)

pytestmark = pytest.mark.slow


def chat(content: str, **kw) -> dict:
    return recorder_helpers.chat(content, model="fake-llm", **kw)


def stream_request(client: httpx.Client, url: str, body: dict, headers: dict) -> dict:
    """Sends one streamed request and measures, as a client, when each token event arrived."""
    t0 = time.time()
    token_times: list[float] = []
    text = []
    buf = b""
    with client.stream("POST", url, json=body, headers=headers) as r:
        for chunk in r.iter_raw():
            now = time.time()
            buf += chunk
            while b"\n\n" in buf:
                ev, buf = buf.split(b"\n\n", 1)
                data = ev.decode()[len("data: ") :]
                if data == "[DONE]":
                    continue
                obj = json.loads(data)
                for ch in obj.get("choices", []):
                    t = ch.get("delta", {}).get("content") or ch.get("text")
                    if t:
                        token_times.append(now)
                        text.append(t)
    return {"t0": t0, "token_times": token_times, "text": "".join(text), "status": r.status_code}


def test_rows_match_requests_one_to_one_with_client_timing(tmp_path, server, key_file):
    out = tmp_path / "data"
    with Proxy(server.url, out, key_file, free_port()) as proxy:
        seen: dict[str, dict] = {}
        with httpx.Client(base_url=proxy.url, timeout=30) as c:
            c.get("/metrics")  # warm the connection, so client and proxy clocks start alike
            for i in range(12):
                h = {"x-test-id": f"s{i}", "x-test-ttft-ms": "40", "x-test-itl-ms": "15"}
                path = "/v1/chat/completions" if i % 2 == 0 else "/v1/completions"
                body = chat(f"tell me about item {i}", max_tokens=6, stream=True, stream_options={"include_usage": True})
                if path == "/v1/completions":
                    body = {"model": "fake-llm", "prompt": f"item {i} is", "max_tokens": 6, "stream": True}
                seen[f"s{i}"] = stream_request(c, path, body, h)
            r = c.post("/v1/chat/completions", json=chat("plain one", max_tokens=3), headers={"x-test-id": "n1"})
            assert r.status_code == 200 and r.json()["echo"]["max_tokens"] == 3
            r = c.post("/v1/embeddings", json={"model": "e", "input": "abc"}, headers={"x-test-id": "e1"})
            assert r.status_code == 200
            r = c.get("/metrics", headers={"x-test-id": "m1"})
            assert r.status_code == 200
            r = c.get("/nope", headers={"x-test-id": "404"})
            assert r.status_code == 404
        assert proxy.stop(signal.SIGINT) == 0
    rows = read_requests(out)
    assert len(rows) == 12 + 3  # GET /metrics (the warm-up and m1) is left out by default
    by_id = rows_by_header(rows)
    assert set(by_id) == {f"s{i}" for i in range(12)} | {"n1", "e1", "404"}
    assert len({r["request_id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["ts_start"] <= r["ts_first_byte"] <= r["ts_end"], r["request_id"]
    assert by_id["n1"]["kind"] == "chat" and by_id["n1"]["stream"] is False and by_id["n1"]["max_tokens"] == 3
    assert by_id["e1"]["kind"] == "embedding" and by_id["404"]["kind"] == "http" and by_id["404"]["status"] == 404
    ttft_diffs, itl_diffs = [], []
    for i in range(12):
        row, cl = by_id[f"s{i}"], seen[f"s{i}"]
        assert row["kind"] == ("chat" if i % 2 == 0 else "completion")
        assert row["stream"] is True and row["status"] == 200 and row["error"] is None
        assert row["response_text"] == cl["text"]
        assert row["completion_tokens"] == 6 or i % 2 == 1
        assert row["chunks"] >= 6 and len(row["itl_ms"]) == 5
        client_ttft = (cl["token_times"][0] - cl["t0"]) * 1000
        assert row["ttft_ms"] >= 40  # the server waited 40 ms
        ttft_diffs.append(client_ttft - row["ttft_ms"])
        client_itl = [(b - a) * 1000 for a, b in zip(cl["token_times"], cl["token_times"][1:])]
        itl_diffs += [abs(a - b) for a, b in zip(client_itl, row["itl_ms"])]
        # the server sleeps 15 ms between its 6 tokens; delivery may bunch two events, never shorten the span
        assert sum(row["itl_ms"]) >= 4 * 15 - 1, (row["itl_ms"], client_itl)
    # the proxy sees the request later and the first token earlier than the client: diff >= 0
    assert min(ttft_diffs) > -1.0, ttft_diffs
    assert statistics.median(ttft_diffs) < 10.0, ttft_diffs  # client stack + two loopback hops; 2-8 ms seen
    assert statistics.median(itl_diffs) < 3.0, itl_diffs
    assert max(itl_diffs) < 25.0, itl_diffs
    # what the server received is what the row says
    got = {json.loads(r.body).get("max_tokens") for r in server.requests if r.body}
    assert got == {6, 3, None}


def test_sse_reaches_the_client_before_the_stream_ends(tmp_path, server, key_file):
    out = tmp_path / "data"
    with Proxy(server.url, out, key_file, free_port()) as proxy:
        first = threading.Event()
        result: dict = {}

        def client() -> None:
            with httpx.Client(base_url=proxy.url, timeout=30) as c:
                body = chat("one two three four", max_tokens=4, stream=True)
                with c.stream("POST", "/v1/chat/completions", json=body, headers={"x-test-hold": "1"}) as r:
                    chunks = []
                    for chunk in r.iter_raw():
                        chunks.append(chunk)
                        if b'"content"' in chunk:
                            first.set()
                    result["body"] = b"".join(chunks)

        t = threading.Thread(target=client)
        t.start()
        # the server holds the stream after its first token until release(): the client must
        # already have that token, so nothing buffered it
        assert first.wait(10), "first SSE event did not reach the client while the server held the stream"
        assert "body" not in result
        server.release()
        t.join(10)
        assert result["body"].endswith(b"data: [DONE]\n\n")
        proxy.stop()
    (row,) = read_requests(out)
    assert row["response_text"] == "one two three four" and row["error"] is None


PII = {
    "email": "li.wei.planted@example.com",
    "phone": "+1 415 555 2671",
    "cn_mobile": "13812345678",
    "cn_id": "11010519491231002X",
    "bearer": "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12",
    "xkey": "sk-live-Zz98Yy87Xx76Ww65Vv54Uu43",
    "card": "4111 1111 1111 1111",
}


def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, bytes):
        yield v.decode("latin-1")
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _strings(k)
            yield from _strings(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _strings(x)


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_planted_pii_never_reaches_disk(tmp_path, server, key_file, writer):
    out = tmp_path / "data"
    text = f"I am {PII['email']}, phone {PII['phone']}, cell {PII['cn_mobile']}, id {PII['cn_id']}, card {PII['card']}"
    with Proxy(server.url, out, key_file, free_port(), shadowreplay_rotate_seconds=0.5, shadowreplay_writer=writer) as proxy:
        with httpx.Client(base_url=proxy.url, timeout=30) as c:
            auth = {"authorization": f"Bearer {PII['bearer']}", "x-user-email": PII["email"]}
            stream_request(c, "/v1/chat/completions", chat(text, max_tokens=40, stream=True), auth)
            c.post("/v1/chat/completions", json=chat(text, max_tokens=40), headers={"x-api-key": PII["xkey"]})
            c.post("/v1/completions", json={"model": "m", "prompt": text, "max_tokens": 40})
            c.post(f"/v1/completions?user={PII['email']}", content=b'{"prompt": "' + text.encode() + b'",', headers=auth)
            c.post("/v1/completions", content=text.encode() + b"\xff\xfe", headers={"content-type": "application/json"})
            c.post("/v1/embeddings", json={"input": [text]}, headers={"user-agent": f"app ({PII['email']})"})
        proxy.stop(signal.SIGTERM)
        log = proxy.log()
    assert json.loads((out / "recorder_status.json").read_text())["writer"] == writer
    rows = read_requests(out)
    assert len(rows) == 6
    assert sum(sum((r["pii_counts"] or {}).values()) for r in rows) >= 20
    haystack: list[str] = [log]
    for f in out.rglob("*"):
        if f.is_file():
            haystack.append(f.read_bytes().decode("latin-1"))  # raw bytes of every file (status, parquet)
        if f.suffix == ".parquet":
            t = pq.read_table(f)
            haystack += list(_strings(t.to_pylist()))
            haystack += list(_strings({k.decode(): v.decode() for k, v in (t.schema.metadata or {}).items()}))
    blob = "\n".join(haystack)
    for name, value in PII.items():
        assert value not in blob, f"planted {name} found on disk"
        assert value.replace(" ", "") not in blob.replace(" ", ""), f"planted {name} found on disk (spaces removed)"


def test_sigkill_leaves_only_readable_files(tmp_path, server, key_file):
    out = tmp_path / "data"
    proxy = Proxy(server.url, out, key_file, free_port(), shadowreplay_rotate_seconds=0.2).start()
    stop = threading.Event()
    sent = [0]

    def load() -> None:
        with httpx.Client(base_url=proxy.url, timeout=5) as c:
            while not stop.is_set():
                try:
                    c.post("/v1/chat/completions", json=chat("hello there", max_tokens=4, stream=True))
                    sent[0] += 1
                except httpx.HTTPError:
                    return

    t = threading.Thread(target=load)
    t.start()
    try:
        wait_for(lambda: len(parquet_files(out, "requests")) >= 3, timeout=30, what="three rotated files")
        proxy.proc.send_signal(signal.SIGKILL)
        proxy.proc.wait(10)
    finally:
        stop.set()
        t.join(10)
        proxy.stop()
    files = parquet_files(out, "requests")
    for f in files:
        check_file(f, "requests")
    n = duckdb.connect().execute(f"select count(*) from read_parquet('{out}/requests/**/*.parquet')").fetchone()[0]
    assert 0 < n <= sent[0] + 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signal_flushes_everything(tmp_path, server, key_file, sig):
    out = tmp_path / "data"
    with Proxy(server.url, out, key_file, free_port()) as proxy:  # rotation 60 s: nothing written yet
        with httpx.Client(base_url=proxy.url, timeout=30) as c:
            for i in range(25):
                c.post("/v1/chat/completions", json=chat(f"n {i}", max_tokens=2, stream=bool(i % 2)))
        assert parquet_files(out, "requests") == []
        assert proxy.stop(sig) == 0
    rows = read_requests(out)
    assert len(rows) == 25
    st = json.loads((out / "recorder_status.json").read_text())
    assert st["rows_written"] == 25 and st["dropped_queue_full"] == 0 and st["dropped_write_failed"] == 0


def _raw_http(port: int, data: bytes, read_until: bytes = b"\r\n\r\n") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        got = b""
        while read_until not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_bad_inputs_each_yield_an_error_row_and_the_proxy_keeps_serving(tmp_path, server, key_file):
    out = tmp_path / "data"
    with Proxy(server.url, out, key_file, free_port(), shadowreplay_body_cap=2000) as proxy:
        with httpx.Client(base_url=proxy.url, timeout=30) as c:
            h = {"content-type": "application/json"}
            c.post("/v1/chat/completions", content=b'{"model": "m", "messages": [', headers={**h, "x-test-id": "malformed"})
            c.post("/v1/completions", content=b'{"prompt": "caf\xe9"}', headers={**h, "x-test-id": "latin1"})
            gz = gzip.compress(json.dumps(chat("zipped hello", max_tokens=2)).encode())
            c.post("/v1/chat/completions", content=gz, headers={**h, "content-encoding": "gzip", "x-test-id": "gzip-req"})
            c.post("/v1/chat/completions", content=b"\x1f\x8b\x08garbage", headers={**h, "content-encoding": "gzip", "x-test-id": "bad-gzip"})
            bomb = gzip.compress(bytes(80 << 20), 9)  # 80 kB that decode to 80 MiB, over the 64 MiB cap
            r = c.post("/v1/chat/completions", content=bomb, headers={**h, "content-encoding": "gzip", "x-test-id": "bomb"})
            assert r.status_code == 400 and b"malformed JSON" in r.content  # the upstream's own answer
            r = c.post(
                "/v1/chat/completions",
                json=chat("squeezed words here", max_tokens=3, stream=True),
                headers={"x-test-gzip": "1", "x-test-id": "gzip-sse", "accept-encoding": "gzip"},
            )
            assert r.status_code == 200 and "squeezed" in r.text  # httpx decoded the gzip'd stream
            c.post("/v1/completions", json={"prompt": "w " * 3000, "max_tokens": 1}, headers={"x-test-id": "over-cap"})
            with pytest.raises(httpx.HTTPError):
                c.post("/v1/chat/completions", json=chat("a b c d e", max_tokens=5, stream=True), headers={"x-test-reset": "2", "x-test-id": "reset"})
        # client disconnects mid-stream: read the first event, then drop the connection
        with httpx.Client(base_url=proxy.url, timeout=30) as c2:
            with c2.stream("POST", "/v1/chat/completions", json=chat("x y z", max_tokens=3, stream=True), headers={"x-test-hold": "1", "x-test-id": "client-gone"}) as r:
                next(r.iter_raw())
        server.release()
        ws = _raw_http(
            proxy.port,
            b"GET /ws HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
            b"sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\nx-test-id: ws\r\n\r\n",
        )
        assert ws.startswith(b"HTTP/1.1 101")
        # still serving
        with httpx.Client(base_url=proxy.url, timeout=30) as c:
            r = c.post("/v1/chat/completions", json=chat("after all that", max_tokens=3), headers={"x-test-id": "ok"})
            assert r.status_code == 200
        wait_for(lambda: proxy.proc.poll() is None, what="proxy alive")
        assert proxy.stop() == 0
    by = rows_by_header(read_requests(out))
    assert "malformed JSON" in by["malformed"]["error"]
    assert "not UTF-8" in by["latin1"]["error"]
    assert by["gzip-req"]["model"] == "fake-llm" and "zipped hello" in by["gzip-req"]["request_body"]
    assert "cannot decode content-encoding gzip" in by["bad-gzip"]["error"]
    assert "request body: decoded gzip body over 67108864 bytes" in by["bomb"]["error"]
    assert by["bomb"]["request_body"] is None and by["bomb"]["request_bytes"] == len(bomb)
    assert by["gzip-sse"]["response_text"] == "squeezed words here" and by["gzip-sse"]["error"] is None
    assert by["over-cap"]["body_truncated"] is True and "over cap" in by["over-cap"]["error"]
    assert len(by["over-cap"]["request_body"]) == 2000
    assert by["reset"]["error"].startswith("proxy:") and by["reset"]["chunks"] == 2
    assert by["client-gone"]["error"].startswith("proxy:")
    assert "websocket upgrade" in by["ws"]["error"] and by["ws"]["status"] == 101
    assert by["ok"]["error"] is None and by["ok"]["response_text"] == "after all that"


def test_upstream_unreachable_yields_an_error_row(tmp_path, key_file):
    out = tmp_path / "data"
    dead = free_port()
    with Proxy(f"http://127.0.0.1:{dead}", out, key_file, free_port()) as proxy:
        for text in ("anyone?", "still?"):  # mitmproxy closes the client connection after a 502
            with httpx.Client(base_url=proxy.url, timeout=30) as c:
                assert c.post("/v1/chat/completions", json=chat(text, max_tokens=2)).status_code == 502
        proxy.stop()
    rows = read_requests(out)
    assert len(rows) == 2
    for r in rows:
        assert r["error"].startswith("proxy:") and r["kind"] == "chat" and r["model"] == "fake-llm"


def test_key_file_inside_output_is_refused(tmp_path, server):
    out = tmp_path / "data"
    out.mkdir()
    (out / "scrub.key").write_bytes(b"x" * 32)
    p = Proxy(server.url, out, out / "scrub.key", free_port()).start(wait=False)
    rc = p.proc.wait(30)
    p.stop()
    log = p.log()
    assert rc == 1
    assert "inside the output folder" in log and "Traceback" not in log
    assert not (out / "requests").exists()


def test_cli_record_end_to_end_with_metrics(tmp_path, server, key_file):
    out = tmp_path / "data"
    port = free_port()
    cmd = [
        sys.executable, "-m", "shadowreplay", "record", "--upstream", server.url, "--listen-port", str(port),
        "--out", str(out), "--key-file", str(key_file), "--metrics-url", f"{server.url}/metrics",
        "--metrics-interval", "0.1",
    ]
    log = tmp_path / "cli.log"
    with open(log, "wb") as lf:
        proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            wait_for(lambda: proc.poll() is None and port_open("127.0.0.1", port) and (out / "recorder_status.json").exists(), timeout=30, what="record to start")
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
                for i in range(3):
                    assert c.post("/v1/chat/completions", json=chat(f"q{i}", max_tokens=2, stream=True)).status_code == 200
            time.sleep(0.3)  # let the sampler take a few samples at its 0.1 s interval
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert rc == 0, text
    assert "writing" in text and str(out) in text and "Traceback" not in text
    assert len(read_requests(out)) == 3
    n = duckdb.connect().execute(
        f"select count(*) from read_parquet('{out}/engine_metrics/**/*.parquet') where metric = 'vllm:num_requests_running'"
    ).fetchone()[0]
    assert n >= 1


def test_cli_user_mistakes_are_one_line(tmp_path, key_file):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "shadowreplay", "record", *args], capture_output=True, text=True, cwd=REPO,
                              env={"PATH": "/usr/bin:/bin"})

    r = run("--upstream", "http://127.0.0.1:1", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "scrub key" in r.stderr and "Traceback" not in r.stderr
    inside = tmp_path / "o2"
    inside.mkdir()
    (inside / "k").write_bytes(b"k" * 32)
    r = run("--upstream", "http://127.0.0.1:1", "--out", str(inside), "--key-file", str(inside / "k"))
    assert r.returncode == 2 and "inside --out" in r.stderr
    r = run("--out", str(tmp_path / "o"), "--key-file", str(key_file))
    assert r.returncode == 2 and "--upstream is required" in r.stderr
    r = run("--print-addon-path")
    assert r.returncode == 0 and Path(r.stdout.strip()).is_file() and r.stdout.strip().endswith("record_addon.py")
