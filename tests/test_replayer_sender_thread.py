"""The sender thread (replayer/sender_thread.py): pacing and stopping on its own thread, writes that
keep the GIL, and whole replays sent from it against a real local server."""

from __future__ import annotations

import asyncio
import ctypes
import errno
import json
import os
import subprocess
import sys
import threading
import time

import duckdb
import pytest

from replayer import sender_thread
from replayer.replay import ReplayOptions, replay
from shadowreplay.errors import ConfigError
from tests.replayer_helpers import ServerThread, chat_row, write_recording

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(sender_thread.unavailable() is not None, reason="no sender thread on this platform")


def test_sends_each_index_in_order_at_or_after_its_instant_on_another_thread():
    offsets = [0, 2_000_000, 2_000_000, 5_000_000, 30_000_000]
    seen: list[tuple[int, int, int, int]] = []  # (i, scheduled, now, thread id)

    async def main():
        loop = asyncio.get_running_loop()
        start = time.monotonic_ns() + 20_000_000
        st = sender_thread.SenderThread(offsets, start, lambda i, t: seen.append((i, t, time.monotonic_ns(), threading.get_ident())), loop)
        await st.start()
        st.join()
        return start, st.next

    start, nxt = asyncio.run(main())
    assert [s[0] for s in seen] == [0, 1, 2, 3, 4] and nxt == 5
    assert all(t == start + off and now >= t for (_, t, now, _), off in zip(seen, offsets))
    assert {s[3] for s in seen} != {threading.get_ident()}


def test_stop_ends_a_long_wait_at_once():
    sent: list[int] = []

    async def main():
        loop = asyncio.get_running_loop()
        st = sender_thread.SenderThread([0, 60_000_000_000], time.monotonic_ns(), lambda i, t: sent.append(i), loop)
        fut = st.start()
        while not sent:
            await asyncio.sleep(0.001)
        t0 = time.monotonic()
        st.stop()
        await asyncio.wait_for(fut, 5)
        st.join()
        return time.monotonic() - t0, st.next

    took, nxt = asyncio.run(main())
    assert sent == [0] and nxt == 1 and took < 2


def test_an_error_in_the_thread_reaches_the_awaiting_loop():
    def boom(i, t):
        raise RuntimeError(f"send {i} failed")

    async def main():
        st = sender_thread.SenderThread([0], time.monotonic_ns(), boom, asyncio.get_running_loop())
        try:
            await st.start()
        finally:
            st.join()

    with pytest.raises(RuntimeError, match="send 0 failed"):
        asyncio.run(main())


def test_raw_write_reports_bytes_written_and_errno():
    r, w = os.pipe()
    try:
        assert sender_thread.raw_write(w, b"hello") == 5 and os.read(r, 5) == b"hello"
        os.set_blocking(w, False)
        total = 0
        while (n := sender_thread.raw_write(w, b"x" * 65536)) > 0:
            total += n
        assert total > 0 and n == -errno.EAGAIN  # a full non-blocking pipe: no exception, -EAGAIN
    finally:
        os.close(r)
        os.close(w)
    assert sender_thread.raw_write(w, b"x") == -errno.EBADF


def test_shortened_slice_is_what_the_kernel_reports():
    got: list = []

    def probe():
        ok = sender_thread.shorten_slice(250_000)
        attr = sender_thread._SchedAttr()
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.syscall(sender_thread._SCHED_SETATTR + 1, 0, ctypes.byref(attr), ctypes.sizeof(attr), 0)  # sched_getattr
        got.append((ok, rc, attr.runtime, attr.policy))

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    ok, rc, runtime, policy = got[0]
    if not ok:
        pytest.skip("this kernel has no custom slices for SCHED_OTHER")
    assert rc == 0 and runtime == 250_000 and policy == 0  # still SCHED_OTHER: no privilege needed


# ---- Pool.send_from_thread ----------------------------------------------------------------------
class _SocketTransport:  # what the loop thread writes with, for connections built by hand
    def __init__(self, sock):
        self.sock = sock

    def write(self, data):
        self.sock.sendall(data)

    def abort(self):
        pass


def _pool_and_conn():
    import socket

    from replayer.client import HttpConnection, Pool
    from replayer.routes import parse_target

    pool = Pool(parse_target("http://127.0.0.1:9"), spare=0)
    pool.loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    conn = HttpConnection(pool)
    conn.transport = _SocketTransport(ours)
    conn.fd = ours.fileno()
    return pool, conn, ours, theirs


def test_thread_writes_on_an_idle_connection_and_skips_closed_ones():
    from replayer.client import Exchange

    async def main():
        pool, conn, ours, theirs = _pool_and_conn()
        closed = type(conn)(pool)
        closed.closed = True
        pool.idle.extend([conn, closed])  # the most recently released (closed) is tried first
        ex = Exchange(7, b"POST / HTTP/1.1\r\n\r\n", lambda e: None)
        assert pool.send_from_thread(ex, sender_thread.raw_write)
        got = theirs.recv(100)
        ours.close(), theirs.close()
        return pool, conn, ex, got

    pool, conn, ex, got = asyncio.run(main())
    assert got == b"POST / HTTP/1.1\r\n\r\n" and conn.ex is ex and conn.was_idle and ex.sent_ns > 0
    assert not pool.idle and pool.handoff == 0


def test_a_request_passed_to_the_loop_is_not_overtaken():
    from replayer.client import Exchange

    async def main():
        pool, conn, ours, theirs = _pool_and_conn()
        ex1 = Exchange(1, b"one", lambda e: None)
        ex2 = Exchange(2, b"two", lambda e: None)
        first = pool.send_from_thread(ex1, sender_thread.raw_write)  # no idle connection: to the loop
        pool.idle.append(conn)  # a connection comes free before the loop has queued ex1
        second = pool.send_from_thread(ex2, sender_thread.raw_write)  # must not go ahead of ex1
        handoff = pool.handoff
        pool.take_handoff(ex1)
        pool.take_handoff(ex2)
        got = theirs.recv(100)
        pool.close()
        ours.close(), theirs.close()
        return first, second, handoff, got, pool.handoff, conn.ex

    first, second, handoff, got, left, on_conn = asyncio.run(main())
    assert (first, second, handoff) == (False, False, 2)
    assert got == b"one" and on_conn.idx == 1 and left == 0


# ---- whole replays ------------------------------------------------------------------------------
def run(rec, srv, out, **kw) -> dict:
    kw.setdefault("no_metrics", True)
    kw.setdefault("progress", False)
    return replay(ReplayOptions(recording=str(rec), target=srv.url, out=str(out), **kw), echo=lambda s: None).summary


@pytest.mark.parametrize("sender", ["thread", "loop"])
def test_burst_on_too_few_connections_goes_out_once_in_order(tmp_path, sender):
    # 150 requests due at once on 2 warm connections: most wait for a connection (the sender
    # thread hands them to the loop), yet each goes out exactly once and in scheduled order.
    n = 150
    write_recording(tmp_path / "rec", [chat_row(i, 0.0, completion_tokens=2) for i in range(n)])
    with ServerThread() as srv:
        s = run(tmp_path / "rec", srv, tmp_path / "out", warm_connections=2, sender=sender)
        posts = [a for a in srv.arrivals if a.method == "POST"]
    assert s["sender"] == sender and s["errors"] == 0 and s["sent"] == n
    assert sorted(json.loads(a.body)["messages"][0]["content"] for a in posts) == sorted(f"request number {i}" for i in range(n))
    rows = duckdb.sql(f"SELECT request_id FROM read_parquet('{tmp_path}/out/replay_results/**/*.parquet') "
                      "ORDER BY sent_at, request_id").fetchall()
    assert [r[0] for r in rows] == [f"r{i:05d}" for i in range(n)]  # written in scheduled order


def test_a_body_larger_than_the_socket_buffer_arrives_whole(tmp_path):
    # The sender thread's write is non-blocking: what the socket buffer cannot take is written
    # by the loop thread after it.
    big = "long prompt " * (1 << 20)  # 12 MiB
    write_recording(tmp_path / "rec", [chat_row(0, 0.0, prompt=big, completion_tokens=2), chat_row(1, 0.01)])
    with ServerThread() as srv:
        s = run(tmp_path / "rec", srv, tmp_path / "out", timeout_s=20)
        posts = sorted((a for a in srv.arrivals if a.method == "POST"), key=lambda a: a.mono_ns)
    assert s["sender"] == "thread" and s["errors"] == 0
    assert len(posts) == 2 and json.loads(posts[0].body)["messages"][0]["content"] == big


def test_auto_uses_the_loop_where_the_thread_cannot_send(tmp_path):
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.01) for i in range(5)])
    with ServerThread() as srv:
        assert run(tmp_path / "rec", srv, tmp_path / "a")["sender"] == "thread"
        assert run(tmp_path / "rec", srv, tmp_path / "b", max_in_flight=100)["sender"] == "loop"
        assert run(tmp_path / "rec", srv, tmp_path / "c", pacing="spin")["sender"] == "loop"
        with pytest.raises(ConfigError, match="--sender thread cannot be used here: --max-in-flight"):
            run(tmp_path / "rec", srv, tmp_path / "d", max_in_flight=100, sender="thread")


def test_cli_sender_thread_with_a_cap_is_a_clear_error(tmp_path):
    write_recording(tmp_path / "rec", [chat_row(0, 0.0)])
    with ServerThread() as srv:
        p = subprocess.run([sys.executable, "-m", "shadowreplay", "replay", str(tmp_path / "rec"), "--target", srv.url,
                            "--out", str(tmp_path / "o"), "--no-metrics", "--sender", "thread", "--max-in-flight", "4"],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
        posts = [a for a in srv.arrivals if a.method == "POST"]
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--sender thread cannot be used here: --max-in-flight" in p.stderr and not posts
