"""Lag fixes: a warm connection pool sized to the schedule's peak, no cyclic GC while sending."""

from __future__ import annotations

import gc

import pytest

from shadowreplay.replayer import runner
from shadowreplay.replayer.replay import ReplayOptions, replay
from shadowreplay.replayer.runner import warm_size
from tests.conftest import REPO
from tests.replayer_helpers import ServerThread, chat_row, write_recording


def run(rec, srv, out, **kw) -> dict:
    kw.setdefault("no_metrics", True)
    kw.setdefault("progress", False)
    return replay(ReplayOptions(recording=str(rec), target=srv.url, out=str(out), **kw), echo=lambda s: None).summary


def test_warm_size_is_the_peak_in_a_window_clamped():
    ms = 1_000_000
    assert warm_size([0, 10 * ms, 500 * ms], window_ns=250 * ms, lo=1, hi=100, headroom=1) == 2
    burst = [i * ms for i in range(80)] + [1000 * ms + i * 10 * ms for i in range(10)]
    assert warm_size(burst, window_ns=250 * ms, lo=1, hi=100, headroom=1) == 80
    assert warm_size(burst, window_ns=250 * ms, lo=1, hi=50, headroom=1) == 50
    assert warm_size(burst, window_ns=250 * ms, lo=1, hi=1000) == 160  # default headroom: twice the peak
    assert warm_size([0], window_ns=250 * ms, lo=32, hi=512) == 32
    assert warm_size([], lo=32) == 32


def test_warm_pool_sized_to_the_burst_is_open_before_the_first_request(tmp_path):
    # 60 requests within 120 ms, then a straggler: the pool must hold >= 60 connections before
    # the first request arrives, so the burst never waits on a TCP connect.
    offsets = [i * 0.002 for i in range(60)] + [1.0]
    write_recording(tmp_path / "rec", [chat_row(i, t, completion_tokens=2) for i, t in enumerate(offsets)])
    with ServerThread() as srv:
        s = run(tmp_path / "rec", srv, tmp_path / "out")
        first = min(a.mono_ns for a in srv.arrivals if a.method == "POST")
        before = [c for c in srv.state.connections if c < first]
        posts = [a for a in srv.arrivals if a.method == "POST"]
    assert s["errors"] == 0 and len(posts) == len(offsets)
    assert len(before) >= 60
    assert len(before) <= runner.WARM_MAX + 1  # +1: the reachability probe


def test_explicit_warm_connections(tmp_path):
    offsets = [i * 0.01 for i in range(10)]
    write_recording(tmp_path / "rec", [chat_row(i, t, completion_tokens=2) for i, t in enumerate(offsets)])
    with ServerThread() as srv:
        s = run(tmp_path / "rec", srv, tmp_path / "out", warm_connections=3)
        first = min(a.mono_ns for a in srv.arrivals if a.method == "POST")
        before = [c for c in srv.state.connections if c < first]
    assert s["errors"] == 0
    assert len(before) == 3 + 1  # 3 warm + the probe


def test_gc_off_while_sending_and_restored_after(tmp_path, monkeypatch):
    seen: list[bool] = []
    orig = runner.Replayer._fire

    def spy(self, i):
        seen.append(gc.isenabled())
        return orig(self, i)

    monkeypatch.setattr(runner.Replayer, "_fire", spy)
    offsets = [i * 0.005 for i in range(20)]
    write_recording(tmp_path / "rec", [chat_row(i, t, completion_tokens=2) for i, t in enumerate(offsets)])
    assert gc.isenabled()
    with ServerThread() as srv:
        run(tmp_path / "rec", srv, tmp_path / "out")
        assert seen == [False] * 20
        assert gc.isenabled() and gc.get_freeze_count() == 0
        seen.clear()
        run(tmp_path / "rec", srv, tmp_path / "out2", gc_off=False)
        assert seen == [True] * 20


def test_the_collection_before_sending_does_not_make_the_first_sends_late(tmp_path):
    """The full collection that precedes sending must happen before the start instant is fixed:
    with a large heap it takes longer than the start lead (100 ms), and the first sends were late
    by the difference."""
    import time

    heap = [[] for _ in range(2_000_000)]  # a large heap: a full collection takes ~0.1-0.3 s
    t0 = time.perf_counter()
    gc.collect()
    collect_s = time.perf_counter() - t0
    write_recording(tmp_path / "rec", [chat_row(i, 0.01 * i, completion_tokens=2) for i in range(3)])
    with ServerThread() as srv:
        s = run(tmp_path / "rec", srv, tmp_path / "out")
    del heap
    assert s["errors"] == 0
    assert s["lag_max_ms"] < 30, (s["lag_max_ms"], collect_s)


@pytest.mark.parametrize("flag", ["--warm-connections", "--keep-gc"])
def test_cli_accepts_the_new_flags(flag):
    import argparse

    from shadowreplay.replayer import cli

    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    cli.register(sub)
    args = ap.parse_args(["replay", "rec", "--target", "http://x", "--out", "o"] + ([flag, "7"] if flag == "--warm-connections" else [flag]))
    assert (args.warm_connections == 7) if flag == "--warm-connections" else (args.gc_off is False)


def test_callback_sender_burst_every_request_once_in_order(tmp_path):
    # 300 requests due at the same instant: more than one SEND_BATCH, so the callback sender must
    # hand the loop back and continue; each request still goes out exactly once, in order.
    n = 300
    assert n > runner.SEND_BATCH
    write_recording(tmp_path / "rec", [chat_row(i, 0.0, completion_tokens=2) for i in range(n)])
    with ServerThread() as srv:
        s = run(tmp_path / "rec", srv, tmp_path / "out")
        import duckdb

        rows = duckdb.sql(f"SELECT request_id, sent_at FROM read_parquet('{tmp_path}/out/replay_results/**/*.parquet') "
                          "ORDER BY sent_at, request_id").fetchall()
        posts = [a for a in srv.arrivals if a.method == "POST"]
    assert s["errors"] == 0
    assert len(posts) == n
    assert sorted(r[0] for r in rows) == [f"r{i:05d}" for i in range(n)]
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)  # sent in scheduled (= id) order


def test_warm_size_holds_each_connection_for_the_recorded_response_time():
    ms = 1_000_000
    offsets = [i * 20 * ms for i in range(100)]  # 50/s for 2 s
    # responses of 1.5 s: 75 in flight at the peak; the 250 ms window alone would say 13
    assert warm_size(offsets, [1500 * ms] * 100, lo=1, hi=1000, headroom=1) == 75
    assert warm_size(offsets, None, lo=1, hi=1000, headroom=1) == 13
    assert warm_size(offsets, [None] * 100, lo=1, hi=1000, headroom=1) == 13  # unknown durations: the window
    assert warm_size(offsets, [5 * ms] * 100, lo=1, hi=1000, headroom=1) == 13  # short ones hold the window
    assert warm_size(offsets, [1500 * ms] * 100, lo=1, hi=1000) == 150
    assert warm_size(offsets, [1500 * ms] * 100, lo=1, hi=60) == 60


def test_recorded_e2e_sizes_the_warm_pool_for_long_streams(tmp_path):
    # 100 requests 20 ms apart whose production responses took 1.5 s: 75 were in flight at once,
    # so twice that many connections are open before the first request (the arrival window: 32).
    rows = [dict(chat_row(i, i * 0.02, completion_tokens=2), e2e_ms=1500.0) for i in range(100)]
    write_recording(tmp_path / "rec", rows)
    with ServerThread() as srv:
        s = run(tmp_path / "rec", srv, tmp_path / "out")
        first = min(a.mono_ns for a in srv.arrivals if a.method == "POST")
        before = [c for c in srv.state.connections if c < first]
    assert s["errors"] == 0
    assert 150 + 1 <= len(before) <= 150 + 1 + 16  # + the probe, + at most one top-up of spares


def test_open_files_limit_is_raised_for_the_pool_or_the_pool_is_cut_to_fit():
    code = ("import resource, sys; from shadowreplay.replayer.runner import allow_open_files as f; "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (300, int(sys.argv[1]))); "
            "n = f(1000); print(n, resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    import subprocess
    import sys

    def run_with_hard(hard):
        p = subprocess.run([sys.executable, "-c", code, str(hard)], capture_output=True, text=True, cwd=REPO, timeout=60)
        assert p.returncode == 0, p.stderr
        return tuple(int(x) for x in p.stdout.split())

    assert run_with_hard(4096) == (1000, 1256)  # soft limit raised to fit 1000 + a reserve
    assert run_with_hard(300) == (44, 300)  # hard limit too low: only what fits
