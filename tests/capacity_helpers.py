"""Helpers for the capacity tests: recordings of steady traffic in conversations, and the
stand-in engine of known capacity (tests/sse_server.py --slots N --service-ms S) as a process."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from tests.replayer_helpers import chat_row, write_recording

from shadowreplay.ports import free_port

HERE = Path(__file__).resolve().parent


def steady_rows(rate: float, seconds: float, *, per_conversation: int = 5, seed: int = 7, tokens: int = 4,
                prompt_words: int = 0) -> list[dict]:
    """`rate` requests a second for `seconds`, each jittered within half a gap; every
    `per_conversation` consecutive requests share one prefix_hash (a conversation)."""
    rng = random.Random(seed)
    rows = []
    for i in range(int(rate * seconds)):
        prompt = None if not prompt_words else " ".join(f"w{(i * 7 + k) % 97}" for k in range(prompt_words))
        r = chat_row(i, i / rate + rng.uniform(0, 0.5 / rate), completion_tokens=tokens, prompt=prompt)
        r["prefix_hash"] = f"conv{i // per_conversation}"
        rows.append(r)
    return rows


def capacity_cli(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    """`shadowreplay capacity ARGS --no-progress` in a process of its own, from the repository."""
    return subprocess.run([sys.executable, "-m", "shadowreplay", "capacity", *map(str, args), "--no-progress"],
                          capture_output=True, text=True, timeout=timeout, cwd=HERE.parent)


def write_steady(root: Path, rate: float, seconds: float, **kw) -> Path:
    write_recording(root, steady_rows(rate, seconds, **kw))
    return root


class StandIn:
    """The known-capacity engine in its own process: `slots` requests served at once, each for
    `service_ms`; capacity = slots / service_ms * 1000 requests per second."""

    def __init__(self, slots: int, service_ms: float, log_arrivals: bool = False):
        self.slots, self.service_ms, self.log_arrivals = slots, service_ms, log_arrivals
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def capacity_rps(self) -> float:
        return self.slots * 1000.0 / self.service_ms

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "StandIn":
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "sse_server.py"), "--port", str(self.port), "--slots", str(self.slots),
             "--service-ms", str(self.service_ms)] + (["--log-arrivals"] if self.log_arrivals else []),
            stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # "listening on ...": printed once the socket is bound
        if "listening" not in line:
            self.proc.kill()
            raise RuntimeError(f"stand-in engine did not start: {line!r}")
        return self

    def take_arrivals(self) -> list[int]:
        """With log_arrivals: the monotonic instants (ns) at which POSTs arrived since the last call."""
        import httpx

        return httpx.get(self.url + "/_test/arrivals", timeout=30).json()

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)


# The machine's timing floor while a sweep runs: a process with nothing to send that waits for an
# instant every 10 ms as the replayer's sender does (a timerfd armed 1 ms ahead, then polling the
# clock: --pacing timerfd --spin-lead 1ms) and measures how late it gets there. On an idle machine
# that is microseconds; on a shared, loaded one it is what no sender can beat (the process is
# descheduled), so a step's send lag is judged against it (benchmarks/replayer_bench.py --floor).
FLOOR = r"""
import json, select, signal, sys, time
from shadowreplay.replayer.pacer import _TimerFd
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
tfd = _TimerFd()
ep = select.epoll()
ep.register(tfd.fd, select.EPOLLIN)
clock = time.monotonic_ns
t = clock() + 10_000_000
lags = []
print("ready", flush=True)
while not stop:
    if clock() < t - 1_000_000:
        tfd.arm(t - 1_000_000)
        ep.poll()
        tfd.drain()
    now = clock()
    while now < t:
        now = clock()
    lags.append((now - t) / 1e6)
    t = max(t + 10_000_000, clock() + 2_000_000)
lags.sort()
print(json.dumps({"p99": lags[int(0.99 * (len(lags) - 1))] if lags else None, "n": len(lags)}), flush=True)
"""


class Floor:
    """Measures the floor (p99 lag at the instant, ms) while the block runs."""

    def __init__(self) -> None:
        self.p99: float | None = None
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Floor":
        self.proc = subprocess.Popen([sys.executable, "-c", FLOOR], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"
        return self

    def __exit__(self, *exc) -> None:
        import json

        assert self.proc is not None
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=30)
        self.p99 = json.loads(out.strip().splitlines()[-1])["p99"]
