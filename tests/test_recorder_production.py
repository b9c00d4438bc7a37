"""The recorder left on in production, end to end: `shadowreplay record` (a real mitmdump with the
default writer process) with a conversation sample, filters and `--metrics-port`, under
concurrent streamed load; the metrics endpoint scraped while it runs and after, checked against
the Parquet files on disk."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from shadowreplay.dataset import parquet_files
from shadowreplay.prometheus import parse
from tests.conftest import free_port
from tests.recorder_helpers import REPO, port_open, read_requests, server, wait_for  # noqa: F401 (server: a fixture)

pytestmark = pytest.mark.slow

CONVERSATIONS = 60
WORKERS = 6


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {(s.metric, tuple(sorted(s.labels.items()))): s.value for s in parse(text, keep_buckets=True)}


def m(snap: dict, name: str, **labels: str) -> float:
    """A sample's value; a counter by its name without `_total`."""
    key = tuple(sorted(labels.items()))
    for metric in ("shadowreplay_" + name + "_total", "shadowreplay_" + name):
        if (metric, key) in snap:
            return snap[(metric, key)]
    raise KeyError(f"no sample {name} {labels} in {sorted(snap)}")


def conversation(c: int) -> list[dict]:
    """The bodies of conversation c's turns (1-5 of them), each repeating the earlier ones."""
    msgs = [{"role": "system", "content": "You are terse."}]
    bodies = []
    for t in range(1 + c % 5):
        msgs = [*msgs, {"role": "user", "content": f"conversation {c} turn {t}"}]
        bodies.append({"model": "m", "stream": True, "max_tokens": 4, "messages": msgs})
        msgs = [*msgs, {"role": "assistant", "content": f"reply {t}"}]
    return bodies


@pytest.mark.parametrize("writer", ["process", "thread"])
def test_sampled_filtered_recording_under_load_metrics_match_the_rows_written(tmp_path, server, key_file, writer):
    out = tmp_path / "data"
    port, mport = free_port(), free_port()
    cmd = [
        sys.executable, "-m", "shadowreplay", "record", "--upstream", server.url, "--listen-port", str(port),
        "--out", str(out), "--key-file", str(key_file), "--rotate", "500ms", "--sample", "50%",
        "--exclude-header", "x-probe=.", "--metrics-port", str(mport), "--writer", writer,
    ]  # fmt: skip
    log = tmp_path / "record.log"
    sent = {"chat": 0, "health": 0, "probe": 0}
    turns_of = {c: len(conversation(c)) for c in range(CONVERSATIONS)}
    lock = threading.Lock()
    snaps = []

    def client(worker: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as h:
            for c in range(worker, CONVERSATIONS, WORKERS):
                for t, body in enumerate(conversation(c)):
                    r = h.post("/v1/chat/completions", json=body, headers={"x-test-id": f"{c}-{t}"})
                    assert r.status_code == 200 and "data:" in r.text
                    h.get("/health")
                    h.post("/v1/chat/completions", json=body, headers={"x-probe": "1"})
                    with lock:
                        sent["chat"] += 1
                        sent["health"] += 1
                        sent["probe"] += 1

    with open(log, "wb") as lf:
        proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            wait_for(lambda: proc.poll() is None and port_open("127.0.0.1", port) and port_open("127.0.0.1", mport),
                     timeout=60, what="record with its metrics endpoint")  # fmt: skip
            threads = [threading.Thread(target=client, args=(w,)) for w in range(WORKERS)]
            for th in threads:
                th.start()
            while any(th.is_alive() for th in threads):  # scraped while the load runs
                snaps.append(scrape(mport))
                threads[0].join(0.2)
            for th in threads:
                th.join()
            total = sent["chat"] + sent["health"] + sent["probe"]

            def settled():
                s = scrape(mport)
                files = parquet_files(out, "requests")
                on_disk = sum(pq.read_metadata(f).num_rows for f in files)
                ok = m(s, "requests_seen") == total and m(s, "rows_written") == on_disk == m(s, "requests_recorded")
                last[:] = [total, on_disk, {k[0]: v for k, v in s.items() if not k[1]}]
                return (s, files, on_disk) if ok else None

            last: list = []
            try:
                final, files, on_disk = wait_for(settled, timeout=30, interval=0.2, what="the metrics to match the files")
            except AssertionError:
                raise AssertionError(f"sent, on disk, scraped: {last}") from None
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert rc == 0, text

    # scraped under load: the counters only ever grow, and the load was seen while it ran
    assert len(snaps) >= 3
    for name in ("requests_seen", "requests_recorded", "rows_written", "bytes_written"):
        values = [m(s, name) for s in snaps] + [m(final, name)]
        assert values == sorted(values), name
    assert 0 < m(snaps[len(snaps) // 2], "requests_seen") < total

    # the decisions add up to what was sent
    assert m(final, "requests_filtered", reason="default") == sent["health"]
    assert m(final, "requests_filtered", reason="header") == sent["probe"]
    assert m(final, "requests_sampled_out") + m(final, "requests_recorded") == sent["chat"]
    assert m(final, "sample_rate") == 0.5 and m(final, "writer_up") == 1
    assert m(final, "requests_dropped", reason="queue_full") == 0
    # what was written, as the files on disk have it
    assert m(final, "files_written") == len(files)
    assert m(final, "bytes_written") == sum(Path(f).stat().st_size for f in files)
    assert m(final, "scrub_seconds_count") == on_disk
    assert m(final, "scrub_seconds_bucket", le="+Inf") == on_disk
    assert 0 < m(final, "scrub_seconds_sum") < on_disk * 1.0

    # the sample: whole conversations, about half of them; no probe or health check among them
    rows = read_requests(out)
    assert len(rows) == on_disk
    ids = [json.loads(r["request_headers"])["x-test-id"] for r in rows]
    assert all("x-probe" not in json.loads(r["request_headers"]) for r in rows)
    assert all(r["path"] == "/v1/chat/completions" for r in rows)
    kept = {}
    for i in ids:
        c, _ = i.split("-")
        kept[int(c)] = kept.get(int(c), 0) + 1
    assert all(kept[c] == turns_of[c] for c in kept), "a sampled conversation was not recorded whole"
    assert 0.25 * CONVERSATIONS < len(kept) < 0.75 * CONVERSATIONS
    for f in files:
        meta = pq.read_metadata(f).metadata
        assert meta[b"shadowreplay.recorder.sample_rate"] == b"0.5"
        assert meta[b"shadowreplay.recorder.sample_by"] == b"conversation"
        assert meta[b"shadowreplay.anonymize.extra.ja"].startswith(b"fugashi ")  # the scrubber's optional parts
    # analyze: the estimate of the whole traffic is labelled as such
    res = subprocess.run([sys.executable, "-m", "shadowreplay", "analyze", str(out)], capture_output=True, text=True,
                         cwd=REPO, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Estimated totals (a sample: sampled at 50% by conversation" in res.stdout
