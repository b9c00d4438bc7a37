"""What `shadowreplay record` prints and leaves: no line per connection or per metrics sample
unless --verbose, and a final status file that says the writer has exited."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

from shadowreplay.ports import free_port
from tests.conftest import REPO
from tests.recorder_helpers import chat, port_open, wait_for
from tests.sse_server import SseServer


def record(tmp_path, upstream: SseServer, *extra: str) -> tuple[str, dict]:
    """Runs `shadowreplay record` with --metrics-url, sends 3 requests, waits for 3 samples, stops
    it; returns its output and its final status file."""
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    (keys / "k").write_bytes(b"record-output-test-key-0123456789")
    out, port = tmp_path / f"rec{len(extra)}", free_port()
    log = tmp_path / f"record{len(extra)}.log"
    env = {k: v for k, v in os.environ.items() if k != "SHADOWREPLAY_SCRUB_KEY"}
    samples_before = sum(r.path == "/metrics" for r in upstream.requests)  # the server may serve several runs
    with open(log, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "shadowreplay", "record", "--upstream", upstream.url,
                                 "--listen-port", str(port), "--out", str(out), "--key-file", str(keys / "k"),
                                 "--metrics-url", upstream.url + "/metrics", "--metrics-interval", "100ms", *extra],
                                stdout=f, stderr=subprocess.STDOUT, cwd=REPO, env=env)
        try:
            wait_for(lambda: proc.poll() is None and port_open("127.0.0.1", port) and (out / "recorder_status.json").exists(),
                     timeout=60, what="the recorder")
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
                for i in range(3):
                    assert c.post("/v1/chat/completions", json=chat(f"hi {i}", max_tokens=2)).status_code == 200
            wait_for(lambda: sum(r.path == "/metrics" for r in upstream.requests) - samples_before >= 4, timeout=30,
                     what="metrics samples")
        finally:
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(60)
    assert rc == 0, log.read_text()
    return log.read_text(errors="replace"), json.loads((out / "recorder_status.json").read_text())


@pytest.mark.slow
def test_record_is_quiet_by_default_and_verbose_on_request(tmp_path):
    with SseServer() as upstream:
        quiet, status = record(tmp_path, upstream)
        assert "client connect" not in quiet and "HTTP Request: GET" not in quiet, quiet
        assert "shadowreplay recorder: instance" in quiet  # the recorder's own lines stay
        assert status["rows_written"] == 3 and status["writer_alive"] is False, status
        verbose, _ = record(tmp_path, upstream, "--verbose")
        assert "client connect" in verbose and "HTTP Request: GET" in verbose, verbose
