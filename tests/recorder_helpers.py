"""Helpers for recorder tests: run a real mitmdump with the recorder addon, read what it wrote."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from shadowreplay import ports
from tests.sse_server import SseServer

REPO = Path(__file__).resolve().parent.parent
ADDON = REPO / "recorder" / "record_addon.py"


@pytest.fixture
def server():
    """The local SSE test upstream (tests/sse_server.py), one per test."""
    with SseServer() as s:
        yield s


def chat(content: str, model: str = "m", **kw) -> dict:
    """A chat completions request body with one user message."""
    return {"model": model, "messages": [{"role": "user", "content": content}], **kw}


def wait_for(cond: Callable[[], Any], timeout: float = 20.0, interval: float = 0.02, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def port_open(host: str, port: int) -> bool:
    return ports.listening(port, host)


def mitmdump_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "mitmdump"
    # `python -m mitmproxy.tools.main` runs nothing (the module has no main guard): call mitmdump()
    fallback = [sys.executable, "-c", "import sys; from mitmproxy.tools.main import mitmdump; sys.exit(mitmdump())"]
    return [str(exe)] if exe.exists() else fallback


class Proxy:
    """mitmdump --mode reverse:UPSTREAM -s record_addon.py --set shadowreplay_* (a real process)."""

    def __init__(self, upstream: str, out: Path, key_file: Path | None, port: int, **sets: Any) -> None:
        self.upstream = upstream
        self.out = Path(out)
        self.key_file = key_file
        self.port = port
        # the same defaults as `shadowreplay record`
        self.sets = {"flow_detail": 0, "connection_strategy": "lazy", **sets}
        self.proc: subprocess.Popen | None = None
        self.log_path = self.out.parent / f"mitmdump-{port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        cmd = mitmdump_cmd() + [
            "--mode",
            f"reverse:{self.upstream}",
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(self.port),
            "-s",
            str(ADDON),
            "--set",
            f"shadowreplay_out={self.out}",
        ]
        if self.key_file is not None:
            cmd += ["--set", f"shadowreplay_key_file={self.key_file}"]
        for k, v in self.sets.items():
            cmd += ["--set", f"{k}={v}"]
        return cmd

    def start(self, wait: bool = True) -> "Proxy":
        env = dict(os.environ)
        env.pop("SHADOWREPLAY_SCRUB_KEY", None)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        if wait:
            # ready = listening and the recorder's writer has started (it writes the status file)
            wait_for(
                lambda: self._check_alive() and port_open("127.0.0.1", self.port) and (self.out / "recorder_status.json").exists(),
                timeout=30,
                what="mitmdump with the recorder to listen",
            )
        return self

    def _check_alive(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"mitmdump exited with {self.proc.returncode}: {self.log()}")
        return True

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def __enter__(self) -> "Proxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop()


def read_requests(out: Path) -> list[dict[str, Any]]:
    import duckdb

    glob = str(out / "requests" / "**" / "*.parquet")
    con = duckdb.connect()
    try:
        cur = con.execute(f"SELECT * FROM read_parquet('{glob}', hive_partitioning=true, union_by_name=true)")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()


def rows_by_header(rows: list[dict], name: str = "x-test-id") -> dict[str, dict]:
    import json

    out = {}
    for r in rows:
        h = json.loads(r["request_headers"] or "{}")
        if name in h:
            out[h[name]] = r
    return out


def _threads_of_session(sid: int) -> list[int]:
    tids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if os.getsid(int(p)) == sid:
                tids += [int(t) for t in os.listdir(f"/proc/{p}/task")]
        except OSError:  # gone meanwhile
            continue
    return tids


def _affinities(tids: list[int]) -> dict[int, set[int]]:
    out = {}
    for tid in tids:
        try:
            out[tid] = os.sched_getaffinity(tid)
        except OSError:  # a thread that ended meanwhile
            pass
    return out


def _pin(tids: list[int], cpus: set[int], before: dict[int, set[int]] | None = None) -> None:
    """Each thread on `cpus`; with `before`, back on the CPUs it had (new ones on `cpus`)."""
    for tid in tids:
        try:
            os.sched_setaffinity(tid, (before or {}).get(tid, cpus))
        except OSError:  # a thread that ended meanwhile
            pass


@contextmanager
def engine_apart(engine_pid: int | None):
    """Runs the block with the shadow engine (every process of the session `engine_pid` leads)
    on the first half of this machine's CPUs and this test process, with the proxies it starts
    in the block, on the other half; then gives every thread back the CPUs it had.

    For the checks that compare the client's timings with the proxy's: in production the proxy
    and the engine run on different hosts. On a 2-CPU machine a vLLM for the CPU keeps a core
    busy while it serves (its worker polls for a second after each step) and the kernel shares
    CPU time between sessions first (autogroups), so a mitmdump sharing those cores now and then
    waits 50-100 ms for a CPU between two packets: a hop that is not the recorder's."""
    cpus = sorted(os.sched_getaffinity(0))
    if engine_pid is None or len(cpus) < 2:
        yield
        return
    half = len(cpus) // 2
    sid = os.getsid(engine_pid)
    assert sid != os.getsid(0), "the engine must run in a session of its own"
    engine = _threads_of_session(sid)
    own = [int(t) for t in os.listdir("/proc/self/task")]
    engine_before, own_before = _affinities(engine), _affinities(own)
    _pin(engine, set(cpus[:half]))
    _pin(own, set(cpus[half:]))
    try:
        yield
    finally:
        _pin([int(t) for t in os.listdir("/proc/self/task")], set(cpus), own_before)
        _pin(_threads_of_session(sid), engine_before.get(engine_pid, set(cpus)), engine_before)
