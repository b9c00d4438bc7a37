"""Results written during the run (replayer/results_writer.py, replayer/results_writer_child.py): a replay killed
with SIGKILL keeps what was flushed; a normal run gives one row per request across several
flush files; Ctrl-C on the terminal's process group still leaves complete results. All against
the real local streaming server, with the CLI as a subprocess where a kill is involved."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from shadowreplay.replayer.replay import ReplayOptions, replay
from shadowreplay.replayer.results import percentile
from shadowreplay.dataset import parquet_files
from tests.conftest import REPO
from tests.replayer_helpers import ServerThread, chat_row, wait_for, write_recording

N = 400
GAP_S = 0.05  # 20 s of schedule: long enough to be killed mid-run


def rows_of(out: Path) -> list[dict]:
    cur = duckdb.connect().execute(
        f"SELECT * FROM read_parquet('{out}/replay_results/**/*.parquet') ORDER BY scheduled_at, request_id")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def assert_complete(rows: list[dict], selection: set[str]) -> None:
    ids = [r["request_id"] for r in rows]
    assert len(ids) == len(set(ids)), "a request has two rows"
    assert set(ids) <= selection
    for r in rows:
        assert r["status"] == 200 and r["error"] is None, r
        assert r["sent_at"] is not None and r["ts_end"] is not None and r["send_lag_ms"] is not None
        assert r["completion_tokens"] == r["expected_completion_tokens"] and r["ttft_ms"] is not None
        assert len(r["itl_ms"]) == r["completion_tokens"] - 1


def start_cli(rec: Path, url: str, out: Path, *extra: str) -> subprocess.Popen:
    # Its own session, like a job started from a shell: signals can go to the whole group.
    return subprocess.Popen([sys.executable, "-m", "shadowreplay", "replay", str(rec), "--target", url,
                             "--out", str(out), "--no-metrics", "--no-progress", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            start_new_session=True)


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
            pass
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] in "ZX"
    except (FileNotFoundError, IndexError):
        return True


def recording(tmp_path: Path, n: int = N, gap: float = GAP_S) -> tuple[Path, set[str]]:
    write_recording(tmp_path / "rec", [chat_row(i, i * gap, completion_tokens=3) for i in range(n)])
    return tmp_path / "rec", {f"r{i:05d}" for i in range(n)}


def test_sigkill_of_the_whole_group_keeps_the_flushed_rows(tmp_path):
    """Both processes die at once (like OOM of the group or a machine crash): what was flushed
    before stays readable, each row complete, none twice."""
    rec, selection = recording(tmp_path)
    out = tmp_path / "out"
    with ServerThread() as srv:
        p = start_cli(rec, srv.url, out, "--flush-interval", "0.5")
        try:
            wait_for(lambda: len(parquet_files(out, "replay_results")) >= 2, 60, "two flushed files")
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        sent = len([a for a in srv.arrivals if a.method == "POST"])
    assert p.returncode == -signal.SIGKILL
    rows = rows_of(out)
    assert_complete(rows, selection)
    assert 0 < len(rows) <= sent < N
    # the flushed rows are the earliest requests (rows are written as requests finish, in order here)
    assert [r["request_id"] for r in rows] == [f"r{i:05d}" for i in range(len(rows))]
    man = json.loads((out / "manifest.json").read_text())
    assert "finished_at" not in man and 0 < man["rows_flushed"] <= len(rows)


def test_sigkill_of_the_replay_alone_the_writer_writes_the_rest(tmp_path):
    """Only the replay process dies (SIGKILL, OOM killer): the writer process gets end of input
    and writes every row it was handed, although no flush was due yet."""
    rec, selection = recording(tmp_path)
    out = tmp_path / "out"
    with ServerThread() as srv:
        p = start_cli(rec, srv.url, out, "--flush-interval", "600")
        kids: list[int] = []
        try:
            wait_for(lambda: len([a for a in srv.arrivals if a.method == "POST"]) >= 40, 60, "40 sends")
            kids = children(p.pid)
            sent = len([a for a in srv.arrivals if a.method == "POST"])
            assert parquet_files(out, "replay_results") == []  # nothing flushed yet
            p.send_signal(signal.SIGKILL)
            p.wait(10)
            assert len(kids) == 1
            wait_for(lambda: gone(kids[0]), 30, "the writer process to finish")
        finally:
            if p.poll() is None:
                p.kill()
            for k in kids:
                if not gone(k):
                    os.kill(k, signal.SIGKILL)
    rows = rows_of(out)
    assert_complete(rows, selection)
    # all but the last pipe tick (0.2 s = 4 requests here) and the few in flight reached the writer
    assert sent - 10 <= len(rows) < N, (sent, len(rows))


def test_normal_run_one_row_per_request_across_flush_files(tmp_path):
    rec, selection = recording(tmp_path, n=60, gap=0.03)
    out = tmp_path / "out"
    with ServerThread() as srv:
        res = replay(ReplayOptions(recording=str(rec), target=srv.url, out=str(out), no_metrics=True,
                                   progress=False, flush_interval_s=0.3), echo=lambda s: None)
        sent = len([a for a in srv.arrivals if a.method == "POST"])
    files = parquet_files(out, "replay_results")
    # written during the run, not only at the end: a file holds only requests sent before the last
    last_sent = [duckdb.connect().execute(f"SELECT max(sent_at) FROM read_parquet('{f}')").fetchone()[0] for f in files]
    assert len(files) >= 2 and min(last_sent) < max(last_sent), files
    assert sorted(res.files) == files
    rows = rows_of(out)
    assert_complete(rows, selection)
    assert sent == len(rows) == 60 and {r["request_id"] for r in rows} == selection
    # the summary (from the runner's arrays) and the rows (from the writer process) agree
    lags = sorted(r["send_lag_ms"] for r in rows)
    assert res.summary["lag_p50_ms"] == percentile(lags, 50) and res.summary["lag_max_ms"] == lags[-1]
    man = json.loads((out / "manifest.json").read_text())
    assert man["rows_flushed"] == 60 and man["flush_interval_s"] == 0.3 and "finished_at" in man
    meta = {duckdb.connect().execute(f"SELECT value FROM parquet_kv_metadata('{f}') "
                                     "WHERE key = 'shadowreplay.run_id'").fetchone()[0] for f in files}
    assert meta == {man["run_id"].encode()}


def test_ctrl_c_on_the_process_group_leaves_complete_results(tmp_path):
    """A terminal's Ctrl-C reaches both processes: the writer ignores it and writes every row the
    replay hands it while draining."""
    rec, selection = recording(tmp_path)
    out = tmp_path / "out"
    with ServerThread() as srv:
        p = start_cli(rec, srv.url, out, "--flush-interval", "0.5", "--drain", "10")
        try:
            wait_for(lambda: len(parquet_files(out, "replay_results")) >= 1, 60, "a flushed file")
            os.killpg(p.pid, signal.SIGINT)
            _, stderr = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        sent = len([a for a in srv.arrivals if a.method == "POST"])
    assert p.returncode == 130 and "Traceback" not in stderr, stderr
    rows = rows_of(out)
    assert_complete(rows, selection)
    assert len(rows) == sent < N
    man = json.loads((out / "manifest.json").read_text())
    assert man["summary"]["interrupted"] is True and man["rows_flushed"] == len(rows)
    assert man["summary"]["not_sent"] == N - len(rows)


def test_writer_process_dies_mid_run_rows_written_at_the_end(tmp_path):
    """The writer process is killed during the run: the replay goes on and writes the rows the
    writer had not confirmed itself, with no duplicates."""
    rec, selection = recording(tmp_path, n=100, gap=0.03)
    out = tmp_path / "out"
    me = os.getpid()
    before = set(children(me))
    done: dict = {}
    with ServerThread() as srv:
        t = threading.Thread(target=lambda: done.setdefault("res", replay(
            ReplayOptions(recording=str(rec), target=srv.url, out=str(out), no_metrics=True, progress=False,
                          flush_interval_s=0.3), echo=lambda s: None)))
        t.start()
        wait_for(lambda: len(parquet_files(out, "replay_results")) >= 1, 60, "a flushed file")
        kids = set(children(me)) - before
        assert len(kids) == 1
        os.kill(kids.pop(), signal.SIGKILL)
        t.join(120)
    assert not t.is_alive()
    rows = rows_of(out)
    assert_complete(rows, selection)
    assert {r["request_id"] for r in rows} == selection
    assert json.loads((out / "manifest.json").read_text())["rows_flushed"] == 100
    assert done["res"].summary["sent"] == 100


def test_flush_interval_zero_writes_once_at_the_end_without_a_writer_process(tmp_path):
    rec, selection = recording(tmp_path, n=30, gap=0.02)
    out = tmp_path / "out"
    me = os.getpid()
    before = set(children(me))
    seen: set[int] = set()
    with ServerThread() as srv:
        t = threading.Thread(target=lambda: replay(ReplayOptions(
            recording=str(rec), target=srv.url, out=str(out), no_metrics=True, progress=False,
            flush_interval_s=0), echo=lambda s: None))
        t.start()
        while t.is_alive():
            seen |= {k for k in set(children(me)) - before if "results_writer_child" in cmdline(k)}
            t.join(0.01)
    assert seen == set()  # no writer process (replayer.results_writer_child) was started
    files = parquet_files(out, "replay_results")
    assert len(files) == 1
    rows = rows_of(out)
    assert_complete(rows, selection)
    assert {r["request_id"] for r in rows} == selection
    assert json.loads((out / "manifest.json").read_text())["rows_flushed"] == 30


def test_the_writer_takes_row_batches_in_without_decoding_them():
    """Taking rows in must cost the writer next to nothing (the sender may be polling, and the
    scheduler then gives the writer whole ticks): batches are decoded when a file is written."""
    import marshal

    from shadowreplay.replayer.results_writer_child import ResultsChild

    child = ResultsChild({"out": "/nonexistent", "run_id": "r", "flush_interval_s": 1.0, "manifest": "{}", "plan": {}})
    batch = marshal.dumps([(0, 1, 2, 3, 200, None, [2], {"completion_tokens": 1}, 0)])
    child.take(marshal.loads(marshal.dumps(("rows", batch))))  # as it comes down the pipe
    child.take(("rows", marshal.dumps([])))
    assert child.batches == [batch, marshal.dumps([])] and child.pending == []
    child.flush()  # no write before the start instant is known
    assert child.batches and child.rows_written == 0


@pytest.mark.parametrize("max_in_flight", [None, 1000])  # the callback sender, the task sender
def test_sender_sleeps_to_each_instant_while_the_writer_writes(tmp_path, monkeypatch, max_in_flight):
    """With a polling lead the timer is armed that long before each send; while the writer
    process says it is writing a file, to the instant itself (the writer gets the gaps)."""
    import time

    from shadowreplay.replayer import pacer, results_writer

    offsets = [0.1 * i for i in range(6)]  # gaps far above any stall, so every wake-up is a timer
    write_recording(tmp_path / "rec", [chat_row(i, t, completion_tokens=2) for i, t in enumerate(offsets)])
    armed: list[int] = []
    real_arm = pacer._TimerFd.arm
    monkeypatch.setattr(pacer._TimerFd, "arm", lambda self, t: (armed.append(t), real_arm(self, t))[1])

    def lead_before_send(out: Path) -> list[float]:
        wall_minus_mono = time.time_ns() - time.monotonic_ns()
        sched = sorted(r[0] for r in duckdb.sql(
            f"SELECT epoch_ns(scheduled_at) FROM read_parquet('{out}/replay_results/**/*.parquet')").fetchall())
        return [(s - (a + wall_minus_mono)) / 1e6 for s, a in zip(sched, armed)]

    with ServerThread() as srv:
        replay(ReplayOptions(recording=str(tmp_path / "rec"), target=srv.url, out=str(tmp_path / "polling"),
                             no_metrics=True, progress=False, spin_lead_ms=20, max_in_flight=max_in_flight),
               echo=lambda s: None)
        polling = lead_before_send(tmp_path / "polling")
        armed.clear()
        monkeypatch.setattr(results_writer.ResultsWriter, "flushing", property(lambda self: True, lambda self, v: None), raising=False)
        replay(ReplayOptions(recording=str(tmp_path / "rec"), target=srv.url, out=str(tmp_path / "writing"),
                             no_metrics=True, progress=False, spin_lead_ms=20, max_in_flight=max_in_flight),
               echo=lambda s: None)
        writing = lead_before_send(tmp_path / "writing")
    assert len(polling) == len(writing) == len(offsets)
    assert all(19 < x < 21 for x in polling), polling  # armed 20 ms early (to within the clocks' offset)
    assert all(-1 < x < 1 for x in writing), writing
