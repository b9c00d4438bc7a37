"""Sharded replay (`replay --shard K/N --start-at`, `replay --shards N`): shards keep one schedule.

The end-to-end tests run the real command (`shadowreplay replay --shards N`, N shard processes and
their result writers) against a local server in this process that stamps every request's arrival
on the wall clock; each request carries its recording index in X-Request-Tag."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from shadowreplay.errors import ConfigError
from shadowreplay.replayer.launch import shard_argv
from shadowreplay.replayer.shard import Shard, clock_state, parse_shard, parse_start_at
from tests.analysis_helpers import run_cli, run_json
from tests.replayer_helpers import ServerThread, chat_row, wait_for, write_recording

T0 = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.timezone.utc)
# Arrival at the server vs the scheduled instant: never before it (the clock is the same one), and
# at most the request's own measured send lag plus this much (socket, the server's event loop in
# this process, a shared 2-core machine).
ARRIVAL_SLACK_MS = 50.0


def _offsets(n: int) -> list[float]:
    """Recorded offsets (s): steady 10 ms gaps, with a burst of 20 requests 1 ms apart in the middle."""
    out, t = [], 0.0
    for i in range(n):
        out.append(round(t, 6))
        t += 0.001 if n // 2 <= i < n // 2 + 20 else 0.01
    return out


def _shadowreplay(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "shadowreplay", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _results(out: Path) -> list[tuple]:
    con = duckdb.connect()
    return con.execute(
        "SELECT request_id, epoch_us(scheduled_at), send_lag_ms, filename FROM "
        "read_parquet($g, filename = true) ORDER BY scheduled_at",
        {"g": f"{out}/replay_results/**/*.parquet"}).fetchall()


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 4])
def test_local_shards_keep_one_schedule(tmp_path, capsys, n):
    offsets = _offsets(160)
    write_recording(tmp_path / "rec", [chat_row(i, t) for i, t in enumerate(offsets)])
    out = tmp_path / "out"
    with ServerThread() as srv:
        p = _shadowreplay("replay", tmp_path / "rec", "--target", srv.url, "--out", out, "--shards", n,
                          "--no-metrics", "--allow-recorded-host")
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        posts = [a for a in srv.arrivals if a.method == "POST"]
    combined = json.loads((out / "shards.json").read_text())
    start_at = parse_start_at(combined["start_at"])
    # every request arrives exactly once
    tags = sorted(int(a.headers["x-request-tag"].removeprefix("tag-")) for a in posts)
    assert tags == list(range(len(offsets)))
    # one results dataset: every shard's files in OUT/replay_results/, the shard in the file name
    rows = _results(out)
    assert sorted(r[0] for r in rows) == [f"r{i:05d}" for i in range(len(offsets))]
    for rid, _, _, fname in rows:
        k = int(rid[1:]) % n
        assert f"-shard-{k}-of-{n}-" in fname
    # the union of the schedules is the recording's: scheduled_at - start_at = recorded offset (µs)
    sched = {rid: us for rid, us, _, _ in rows}
    lag = {rid: lag for rid, _, lag, _ in rows}
    for i, off in enumerate(offsets):
        assert sched[f"r{i:05d}"] - start_at // 1000 == round(off * 1e6)
    # each arrival within the tolerance of its scheduled instant
    for a in posts:
        i = int(a.headers["x-request-tag"].removeprefix("tag-"))
        late_ms = (a.wall_ns - start_at) / 1e6 - offsets[i] * 1000
        assert -0.5 <= late_ms <= lag[f"r{i:05d}"] + ARRIVAL_SLACK_MS, (i, late_ms)
    # the combined summary: per-shard send lag and the start figures, printed and in shards.json
    assert combined["shards_found"] == n and combined["sent"] == len(offsets) and combined["errors"] == 0
    for k, s in enumerate(combined["shards"]):
        assert s["shard"] == f"shard-{k}-of-{n}" and s["requests"] == len(range(k, len(offsets), n))
        assert s["lag_p99_ms"] is not None and s["first_send_lag_ms"] >= 0 and s["ready_ahead_ms"] > 0
        assert f"shard-{k}-of-{n}: {s['requests']}/{s['requests']} sent" in stdout
    assert "start spread across shards" in stdout and combined["start_spread_ms"] >= 0
    m = json.loads((out / "manifests" / f"shard-1-of-{n}.json").read_text())
    assert m["shard"]["count"] == n and m["clock"]["available"] in (True, False)
    assert m["start"]["first_send_after_start_at_ms"] >= offsets[1] * 1000
    assert not (out / "manifest.json").exists()
    # the same summary from the manifests alone (as after a Kubernetes Job)
    assert run_json(capsys, "shards", out) == combined
    # analyze and compare read the shards as one run (and find the recording via the manifests)
    assert run_json(capsys, "analyze", out)["requests"] == len(offsets)
    res = run_json(capsys, "compare", out, out)
    assert res["a"]["runs"] == 1


@pytest.mark.slow
def test_sigterm_stops_every_shard_and_keeps_the_results(tmp_path):
    offsets = [i * 0.02 for i in range(1000)]  # 20 s of traffic
    write_recording(tmp_path / "rec", [chat_row(i, t) for i, t in enumerate(offsets)])
    out = tmp_path / "out"
    with ServerThread() as srv:
        p = _shadowreplay("replay", tmp_path / "rec", "--target", srv.url, "--out", out, "--shards", 2,
                          "--no-metrics", "--allow-recorded-host")
        wait_for(lambda: sum(a.method == "POST" for a in srv.arrivals) >= 50, timeout=60, what="50 requests")
        p.send_signal(signal.SIGTERM)
        stdout, stderr = p.communicate(timeout=60)
        posts = sum(a.method == "POST" for a in srv.arrivals)
    assert p.returncode == 143, stderr
    assert "interrupted (SIGTERM)" in stderr
    assert 50 <= posts < len(offsets)
    assert len(_results(out)) == posts  # every request that went out has its row
    for k in range(2):
        m = json.loads((out / "manifests" / f"shard-{k}-of-2.json").read_text())
        assert m["summary"]["interrupted_by"] == "SIGTERM"
    assert "sharded replay: 2 of 2 shards" in stdout


@pytest.mark.parametrize("value, why", [
    ("4/4", "0 to 3"), ("-1/2", "0 to 1"), ("1/0", "at least 1"), ("x", "is not K/N"), ("1", "is not K/N"),
])
def test_bad_shard_values(tmp_path, capsys, value, why):
    write_recording(tmp_path / "rec", [chat_row(0, 0.0)])
    start = str(time.time() + 60)
    rc, out, err = run_cli(capsys, "replay", tmp_path / "rec", "--target", "http://127.0.0.1:9", "--out",
                           tmp_path / "o", f"--shard={value}", "--start-at", start)
    assert rc == 2 and why in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(ConfigError):
        parse_shard(value)


def test_shard_needs_a_common_start_and_a_future_one(tmp_path, capsys):
    write_recording(tmp_path / "rec", [chat_row(0, 0.0)])
    base = ("replay", tmp_path / "rec", "--target", "http://127.0.0.1:9", "--out", tmp_path / "o")
    rc, _, err = run_cli(capsys, *base, "--shard", "1/2")
    assert rc == 2 and "needs --start-at" in err
    rc, _, err = run_cli(capsys, *base, "--shard", "0/2", "--start-at", "2026-01-01T00:00:00Z")
    assert rc == 2 and "in the past" in err
    rc, _, err = run_cli(capsys, *base, "--shards", "2", "--start-at", str(time.time() - 5))
    assert rc == 2 and "in the past" in err
    rc, _, err = run_cli(capsys, *base, "--shards", "0")
    assert rc == 2 and "at least 1" in err
    rc, _, err = run_cli(capsys, *base, "--shard", "0/2", "--start-at", "tomorrow")
    assert rc == 2 and "not a time" in err
    assert not (tmp_path / "o").exists()  # nothing written, nothing sent


def test_shards_summary_of_a_folder_without_shards(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "shards", tmp_path)
    assert rc == 2 and "no shard manifests" in err


def test_one_shard_needs_no_start_and_dry_run_shows_the_share(tmp_path, capsys):
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.1) for i in range(10)])
    base = ("replay", tmp_path / "rec", "--target", "http://127.0.0.1:9", "--out", tmp_path / "o", "--dry-run")
    rc, out, err = run_cli(capsys, *base, "--shard", "0/1")
    assert rc == 0, err
    assert "dry run: 10 requests" in out
    rc, out, err = run_cli(capsys, *base, "--shard", "1/3", "--start-at", str(time.time() + 60))
    assert rc == 0, err
    assert "dry run: 3 requests" in out  # indices 1, 4, 7


def test_start_at_forms():
    assert parse_start_at("2026-12-01T10:00:00Z") == parse_start_at("1796119200")
    assert parse_start_at("2026-12-01T10:00:00.5+00:00") == 1796119200_500_000_000
    assert parse_start_at("2026-12-01T11:00:00+01:00") == parse_start_at("2026-12-01T10:00:00")
    assert parse_start_at("1796119200.25") == 1796119200_250_000_000
    for bad in ("90s", "+5m", "soon", ""):
        with pytest.raises(ConfigError):
            parse_start_at(bad)


def test_split_is_balanced_and_covers_every_request():
    for n in (1, 2, 3, 4, 7):
        parts = [list(Shard(k, n).indices(100)) for k in range(n)]
        assert sorted(i for p in parts for i in p) == list(range(100))
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_shard_argv_replaces_the_parents_flags():
    argv = ["replay", "rec", "--shards", "3", "--target", "http://x", "--start-at=1796119200", "--out", "o", "--no-progress"]
    got = shard_argv(argv, Shard(2, 3), 1796119200_000_000_000)
    assert got[:6] == ["replay", "rec", "--target", "http://x", "--out", "o"]
    assert got[6:] == ["--shard", "2/3", "--start-at", "2026-12-01T10:00:00.000000+00:00", "--no-progress", "--progress-json"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adjtimex is Linux's")
def test_clock_state_reads_the_kernel():
    c = clock_state()
    assert c["available"] is True
    assert isinstance(c["synchronized"], bool) and c["state"].startswith("TIME_")
    assert c["esterror_us"] >= 0 and c["maxerror_us"] >= c["esterror_us"]
    # unsynchronized clocks have STA_UNSYNC set or report TIME_ERROR
    assert c["synchronized"] == (c["state"] != "TIME_ERROR" and not c["status"] & 0x40)


def _empty_plan():
    from shadowreplay.replayer.plan import Plan

    return Plan(targets=[], route_names=[], offsets_ns=[], target_idx=[], http=[], grpc=[], skip=[], request_id=[],
                kind=[], model=[], client_id=[], prompt_chars=[], expected_completion_tokens=[])


def test_start_at_is_converted_once_to_the_monotonic_clock():
    import asyncio

    from shadowreplay.replayer.runner import Replayer, RunConfig

    # 2 s of lead: the full collection before the start takes a few hundred ms late in a long
    # pytest process (its heap holds every earlier test's objects)
    start = time.time_ns() + 2_000_000_000
    oc = asyncio.run(Replayer(_empty_plan(), RunConfig(start_wall_ns=start, progress=False)).run())
    assert oc.start_mono_ns + oc.wall_minus_mono_ns == start
    assert 0 < start - oc.fixed_wall_ns <= 2_000_000_000


def test_a_shard_not_ready_before_the_start_is_an_error():
    import asyncio

    from shadowreplay.replayer.runner import Replayer, RunConfig

    with pytest.raises(ConfigError, match="not ready before --start-at"):
        asyncio.run(Replayer(_empty_plan(), RunConfig(start_wall_ns=time.time_ns() + 5_000_000, progress=False)).run())
