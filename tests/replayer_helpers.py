"""A small, fast OpenAI-style HTTP/1.1 server for the replayer's tests and benchmark.

It speaks just enough of /v1/completions and /v1/chat/completions (streaming SSE with chunked
transfer encoding like vLLM/uvicorn, or plain JSON), answers GET /metrics and GET /v1/models, and
records for every request the arrival instant (CLOCK_MONOTONIC and wall clock, taken when the
first bytes of the request arrive), method, path, headers and body.

Run in a thread (`ServerThread`) for tests, or as a process for the benchmark:
    python tests/replayer_helpers.py --port 0 --arrivals FILE
which prints `PORT <n>` and, on SIGTERM/SIGINT, writes one JSON line per request to FILE.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Arrival:
    mono_ns: int
    wall_ns: int
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    conn: int = 0  # which connection it came on (index into the server's connections)


@dataclass
class ServerConfig:
    tokens_cap: int = 8  # most tokens streamed per request (max_tokens is honoured up to this)
    token_delay_s: float = 0.0  # sleep between streamed tokens
    metrics: bool = True
    keep_bodies: bool = True
    drop_first: int = 0  # close the connection instead of answering the first N POSTs (a keep-alive close race)


@dataclass
class _State:
    cfg: ServerConfig
    arrivals: list[Arrival] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)  # CLOCK_MONOTONIC of each accepted connection
    dropped: int = 0


class _Conn(asyncio.Protocol):
    def __init__(self, state: _State):
        self.state = state
        self.buf = bytearray()
        self.first_ns = 0
        self.first_wall = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport):
        self.transport = transport
        self.conn = len(self.state.connections)
        self.state.connections.append(time.monotonic_ns())

    def data_received(self, data: bytes):
        if not self.buf:
            self.first_ns = time.monotonic_ns()
            self.first_wall = time.time_ns()
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            method, path, _ = head[0].split(" ", 2)
            headers = {}
            for line in head[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            n = int(headers.get("content-length", "0"))
            if len(self.buf) < end + 4 + n:
                return
            body = bytes(self.buf[end + 4 : end + 4 + n])
            del self.buf[: end + 4 + n]
            arr = Arrival(self.first_ns, self.first_wall, method, path, headers,
                          body if self.state.cfg.keep_bodies else b"", self.conn)
            self.state.arrivals.append(arr)
            if method == "POST" and self.state.dropped < self.state.cfg.drop_first:
                self.state.dropped += 1
                self.transport.close()
                return
            if self.buf:
                self.first_ns = time.monotonic_ns()
                self.first_wall = time.time_ns()
            asyncio.get_running_loop().create_task(self._respond(method, path, body))

    async def _respond(self, method: str, path: str, body: bytes):
        t = self.transport
        if t is None or t.is_closing():
            return
        cfg = self.state.cfg
        if method == "GET" and path == "/metrics" and cfg.metrics:
            text = (
                "# TYPE vllm:num_requests_running gauge\n"
                "vllm:num_requests_running{model_name=\"m\"} 0\n"
                "vllm:num_requests_waiting{model_name=\"m\"} 0\n"
            ).encode()
            t.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n\r\n" % len(text) + text)
            return
        if method == "GET" and path == "/v1/models":
            text = b'{"object":"list","data":[{"id":"m","object":"model"}]}'
            t.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(text) + text)
            return
        if method != "POST" or not path.startswith("/v1/"):
            t.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            return
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            t.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            return
        n = int(req.get("max_tokens") or req.get("max_completion_tokens") or 4)
        n = max(1, min(n, cfg.tokens_cap))
        chat = "chat" in path
        usage = {"prompt_tokens": 7, "completion_tokens": n, "total_tokens": 7 + n,
                 "prompt_tokens_details": {"cached_tokens": 3}}
        if not req.get("stream"):
            if chat:
                out = {"id": "x", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "tok " * n}, "finish_reason": "length"}],
                    "usage": usage}
            else:
                out = {"id": "x", "object": "text_completion",
                       "choices": [{"index": 0, "text": "tok " * n, "finish_reason": "length"}], "usage": usage}
            data = json.dumps(out).encode()
            t.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(data) + data)
            return
        t.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")

        def chunk(obj) -> bytes:
            payload = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
            return b"%x\r\n%s\r\n" % (len(payload), payload)

        for i in range(n):
            if cfg.token_delay_s and i:
                await asyncio.sleep(cfg.token_delay_s)
            if t.is_closing():
                return
            if chat:
                ev = {"id": "x", "object": "chat.completion.chunk",
                      "choices": [{"index": 0, "delta": {"content": "tok "}, "finish_reason": None}], "usage": None}
            else:
                ev = {"id": "x", "object": "text_completion",
                      "choices": [{"index": 0, "text": "tok ", "finish_reason": None}], "usage": None}
            t.write(chunk(ev))
        if (req.get("stream_options") or {}).get("include_usage"):
            t.write(chunk({"id": "x", "choices": [], "usage": usage}))
        t.write(chunk(b"[DONE]") + b"0\r\n\r\n")


class ServerThread:
    """Runs the server on 127.0.0.1:0 in a daemon thread; `.arrivals` lists what came in."""

    def __init__(self, cfg: ServerConfig | None = None):
        self.state = _State(cfg or ServerConfig())
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def arrivals(self) -> list[Arrival]:
        return self.state.arrivals

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self):
        asyncio.set_event_loop(self.loop)
        srv = self.loop.run_until_complete(
            self.loop.create_server(lambda: _Conn(self.state), "127.0.0.1", 0, backlog=4096))
        self.port = srv.sockets[0].getsockname()[1]
        self._srv = srv
        self._ready.set()
        self.loop.run_forever()
        srv.close()
        self.loop.run_until_complete(srv.wait_closed())
        self.loop.close()

    def __enter__(self):
        # The replayer under test runs in this process too: hand the GIL over quickly so the
        # server's arrival stamps are not held back by up to the default 5 ms switch interval.
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(0.0002)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        sys.setswitchinterval(self._switch)


def wait_for(cond, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--arrivals", required=True)
    ap.add_argument("--tokens-cap", type=int, default=2)
    ap.add_argument("--token-delay", type=float, default=0.0, help="seconds between streamed tokens")
    args = ap.parse_args()
    state = _State(ServerConfig(tokens_cap=args.tokens_cap, token_delay_s=args.token_delay, keep_bodies=False))
    loop = asyncio.new_event_loop()
    srv = loop.run_until_complete(loop.create_server(lambda: _Conn(state), "127.0.0.1", args.port, backlog=4096))
    print("PORT", srv.sockets[0].getsockname()[1], flush=True)
    stop = loop.create_future()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, lambda: stop.done() or stop.set_result(None))
    loop.run_until_complete(stop)
    with open(args.arrivals, "w") as f:
        for a in state.arrivals:
            f.write(json.dumps({"mono_ns": a.mono_ns, "method": a.method, "path": a.path}) + "\n")
    srv.close()
    sys.exit(0)


if __name__ == "__main__":
    main()


# ---- recordings for the replayer tests ---------------------------------------------------------
T0 = None


def chat_row(i: int, t_s: float, *, client: str = "c0", model: str = "prod-model", stream: bool = True,
             completion_tokens: int | None = 4, prompt: str | None = None, kind: str = "chat",
             host: str = "api.prod.example", port: int = 443) -> dict:
    import datetime as dt

    t0 = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.timezone.utc)
    prompt = prompt if prompt is not None else f"request number {i}"
    if kind == "chat":
        body = {"model": model, "messages": [{"role": "user", "content": prompt}], "stream": stream, "max_tokens": 256}
        path = "/v1/chat/completions"
    else:
        body = {"model": model, "prompt": prompt, "stream": stream, "max_tokens": 256}
        path = "/v1/completions"
    return dict(
        request_id=f"r{i:05d}", ts_start=t0 + dt.timedelta(seconds=t_s), method="POST", scheme="https",
        host=host, port=port, path=path, kind=kind, client_id=client, model=model, stream=stream,
        prompt_chars=len(prompt), completion_tokens=completion_tokens, request_body=json.dumps(body),
        request_headers=json.dumps({"Authorization": "Bearer [REDACTED-KEY]", "api-key": "[REDACTED]",
                                    "X-Request-Tag": f"tag-{i}", "Content-Type": "application/json"}),
        protocol="http/1.1", status=200,
    )


def write_recording(root, rows) -> None:
    from shadowreplay.dataset import write_rows

    write_rows(root, "requests", rows)
