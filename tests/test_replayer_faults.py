"""The replayer under faults of its target and of its own process: the target going down mid-run,
a target that stops answering in time, SIGTERM. Each case: the run ends on its own, every request
has a row (sent or not), the event is counted in the manifest, no partial file is visible, and
what was done before the fault is readable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.replayer_helpers import ServerConfig, ServerThread, chat_row, wait_for, write_recording

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _rows(out: Path) -> list[tuple]:
    return duckdb.connect().execute(
        f"SELECT request_id, status, error FROM read_parquet('{out}/replay_results/**/*.parquet') ORDER BY request_id").fetchall()


def _no_partial_files(out: Path) -> None:
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def _server_process(tmp_path: Path) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, "-m", "tests.replayer_helpers", "--arrivals", str(tmp_path / "arrivals.jsonl")],
                         stdout=subprocess.PIPE, text=True, cwd=REPO)
    line = p.stdout.readline()
    assert line.startswith("PORT"), line
    return p, f"http://127.0.0.1:{line.split()[1]}"


def test_target_down_mid_run(tmp_path):
    n = 60
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.05) for i in range(n)])  # 3 s
    srv, url = _server_process(tmp_path)
    out = tmp_path / "out"
    rep = subprocess.Popen([sys.executable, "-m", "shadowreplay", "replay", str(tmp_path / "rec"), "--target", url, "--out", str(out),
                            "--no-metrics", "--no-progress", "--timeout", "5s", "--flush-interval", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        wait_for(lambda: (out / "replay_results").is_dir() and any((out / "replay_results").rglob("*.parquet")), 30, "a first flush")
        srv.kill()  # the target dies: its connections are reset, new ones refused
        srv.wait(10)
        stdout, stderr = rep.communicate(timeout=60)
    finally:
        for p in (srv, rep):
            if p.poll() is None:
                p.kill()
    assert rep.returncode == 0, stderr
    rows = _rows(out)
    assert [r[0] for r in rows] == [f"r{i:05d}" for i in range(n)]  # a row for every request
    ok = [r for r in rows if r[1] == 200 and r[2] is None]
    failed = [r for r in rows if r[2] is not None]
    assert ok and failed and len(ok) + len(failed) == n
    man = json.loads((out / "manifest.json").read_text())
    kinds = man["summary"]["errors_by_kind"]
    assert sum(kinds.values()) == man["summary"]["errors"] == len(failed)
    assert kinds.get("connect", 0) + kinds.get("reset", 0) >= 1, kinds
    assert "errors:" in stdout
    _no_partial_files(out)


def test_target_that_stops_answering_in_time(tmp_path):
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.1, completion_tokens=4) for i in range(6)])
    with ServerThread(ServerConfig(token_delay_s=3.0, tokens_cap=4)) as srv:  # 12 s per answer
        rc = subprocess.run([sys.executable, "-m", "shadowreplay", "replay", str(tmp_path / "rec"), "--target", srv.url,
                             "--out", str(tmp_path / "out"), "--no-metrics", "--no-progress", "--timeout", "1s"],
                            capture_output=True, text=True, cwd=REPO, timeout=120)
    assert rc.returncode == 0, rc.stderr
    rows = _rows(tmp_path / "out")
    assert len(rows) == 6 and all(r[2] is not None for r in rows)
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["summary"]["errors_by_kind"] == {"timeout": 6}, man["summary"]["errors_by_kind"]
    _no_partial_files(tmp_path / "out")


def test_sigterm_ends_the_run_like_ctrl_c(tmp_path):
    n = 200
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.05) for i in range(n)])  # 10 s
    with ServerThread() as srv:
        out = tmp_path / "out"
        p = subprocess.Popen([sys.executable, "-m", "shadowreplay", "replay", str(tmp_path / "rec"), "--target", srv.url,
                              "--out", str(out), "--no-metrics", "--drain", "5s"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        try:
            wait_for(lambda: len([a for a in srv.arrivals if a.method == "POST"]) >= 10, 30, "first sends")
            p.send_signal(signal.SIGTERM)
            stdout, stderr = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
    assert p.returncode == 143, stderr
    assert "interrupted (SIGTERM)" in stderr and "Traceback" not in stderr
    rows = _rows(out)
    assert 10 <= len(rows) < n and all(r[1] == 200 for r in rows)
    assert [r[0] for r in rows] == [f"r{i:05d}" for i in range(len(rows))]
    man = json.loads((out / "manifest.json").read_text())
    assert man["summary"]["interrupted"] is True and man["summary"]["interrupted_by"] == "SIGTERM"
    assert man["summary"]["not_sent"] == n - len(rows) and "finished_at" in man
    assert not any(name.endswith(".tmp") for name in os.listdir(out))
    _no_partial_files(out)
