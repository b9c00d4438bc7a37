"""shadowreplay.writer_pipe with real child processes (tests/writer_pipe_child.py): many messages
round-trip in order with either codec, the ready handshake is bounded, a child killed mid-run
keeps what it wrote and the parent neither hangs nor misses it, a clean close writes everything."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from shadowreplay.writer_pipe import MARSHAL, PICKLE, READY, ChildError, ChildProcess, ParentLink, describe_exit, frame

CHILD = Path(__file__).with_name("writer_pipe_child.py")
CODECS = {"pickle": PICKLE, "marshal": MARSHAL}


def child(codec: str = "pickle") -> ChildProcess:
    return ChildProcess("the test child writer", [str(CHILD), codec], CODECS[codec])


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def wait_for(cond, timeout: float = 20.0, what: str = "a condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("codec", ["pickle", "marshal"])
def test_many_messages_round_trip_in_order_and_a_clean_close_writes_everything(tmp_path, codec):
    out = tmp_path / "out.txt"
    c = child(codec)
    c.start({"out": str(out), "start": "ok"}, timeout=30)
    n = 20_000
    big = "x" * 100_000  # above the size Connection sends in two writes
    for i in range(n):
        assert c.send(("line", f"m{i}" if i != 7 else big))
    assert c.send(("flush",)) and c.recv() == ("flushed", n)
    assert len(lines(out)) == n  # on disk when the child says so
    for i in range(n, n + 500):  # no flush: the close must write these
        assert c.send(("line", f"m{i}"))
    assert c.finish(30) == 0
    got = lines(out)
    assert got == [f"m{i}" if i != 7 else big for i in range(n + 500)]
    assert c.recv() is None  # its output has ended
    c.close()


def test_a_child_that_never_gets_ready_times_out_and_is_stopped(tmp_path):
    c = child()
    t0 = time.monotonic()
    with pytest.raises(ChildError, match="did not start within 1 s"):
        c.start({"out": str(tmp_path / "o"), "start": "hang", "pad": "y" * (1 << 20)}, timeout=1)  # > the pipe
    assert time.monotonic() - t0 < 15
    assert c.returncode == -signal.SIGKILL and pid_gone(c.pid)


def test_a_child_that_dies_at_start_gives_one_line_with_its_exit_code(tmp_path):
    c = child()
    with pytest.raises(ChildError) as e:
        c.start({"out": str(tmp_path / "o"), "start": "fail"}, timeout=30)
    assert str(e.value) == "the test child writer exited with code 3 before it was ready"


def test_a_child_that_exits_without_answering_is_a_child_error():
    c = ChildProcess("the test child writer", ["-c", "import sys; sys.exit(5)"], PICKLE)
    with pytest.raises(ChildError, match="^the test child writer exited with code 5 before it was ready$"):
        c.start({"pad": "y" * (1 << 20)}, timeout=30)  # never read: the config's sender must not hang


def test_a_child_killed_mid_run_keeps_what_it_wrote_and_the_parent_does_not_hang(tmp_path):
    out = tmp_path / "out.txt"
    c = child()
    c.start({"out": str(out), "start": "ok"}, timeout=30)
    for i in range(1000):
        assert c.send(("line", f"m{i}"))
    assert c.send(("flush",)) and c.recv() == ("flushed", 1000)
    os.kill(c.pid, signal.SIGKILL)
    result: dict = {}

    def keep_sending() -> None:  # a feeder thread: it must find out, not block forever
        i = 0
        while c.send(("line", "after " * 100)):
            i += 1
        result["sent_after"] = i
        result["reply"] = c.recv()
        result["code"] = c.wait(10)

    t = threading.Thread(target=keep_sending, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "the parent hung on a dead child"
    assert result["reply"] is None and result["code"] == -signal.SIGKILL
    assert describe_exit(result["code"]) == "was killed by SIGKILL"
    assert lines(out)[:1000] == [f"m{i}" for i in range(1000)]  # what it had written is still there
    c.close()


def test_the_asyncio_side_posts_without_blocking_and_sees_the_end(tmp_path):
    out = tmp_path / "out.txt"
    n = 5000

    async def main() -> tuple[list, bool, int | None, float]:
        c = child("marshal")
        await asyncio.to_thread(c.start, {"out": str(out), "start": "ok"}, 30)
        replies: list = []
        ended = asyncio.Event()
        await c.attach(replies.append, ended.set)
        t0 = time.perf_counter()
        for i in range(n):  # ~500 KB: more than the pipe holds, so the transport buffers
            c.post(MARSHAL.dumps(("line", f"m{i:05d}" + "z" * 90)))
        post_s = time.perf_counter() - t0
        c.post(MARSHAL.dumps(("flush",)))
        await asyncio.wait_for(asyncio.shield(wait_until(lambda: replies)), 30)
        c.close_input()
        await asyncio.wait_for(ended.wait(), 30)
        code = await asyncio.to_thread(c.wait, 30)
        c.close()
        return replies, ended.is_set(), code, post_s

    async def wait_until(cond):
        while not cond():
            await asyncio.sleep(0.01)

    replies, ended, code, post_s = asyncio.run(main())
    assert replies == [("flushed", n)] and ended and code == 0
    assert lines(out) == [f"m{i:05d}" + "z" * 90 for i in range(n)]
    assert post_s < 5  # never waited for the child (it is far slower than a buffer append)


def test_frames_read_back_with_connection_recv_bytes_and_a_cut_one_is_the_end():
    r, w = os.pipe()
    msgs = [b"", b"a", b"b" * 16_385, b"c" * 70_000]
    data = b"".join(frame(m) for m in msgs) + frame(b"cut short")[:-3]

    def write() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(data)

    t = threading.Thread(target=write)
    t.start()
    null = os.open(os.devnull, os.O_WRONLY)
    link = ParentLink(MARSHAL, in_fd=r, out_fd=null)
    os.close(null)
    assert [link.recv_bytes() for _ in msgs] == msgs
    assert link.recv_bytes() is None  # truncated: treated as the end of input
    t.join()
    os.close(r)


def test_the_ready_message_and_frame_match_the_library():
    r, w = os.pipe()
    a, b = Connection(r, writable=False), Connection(w, readable=False)
    b.send_bytes(PICKLE.dumps(READY))
    os.write(w, frame(MARSHAL.dumps(("rows", b"\x00" * 20_000))))
    assert PICKLE.loads(a.recv_bytes()) == READY
    assert MARSHAL.loads(a.recv_bytes()) == ("rows", b"\x00" * 20_000)
    a.close()
    b.close()
