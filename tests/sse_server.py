"""A small, fast HTTP/1.1 server that answers like vLLM's OpenAI server, for tests and benchmarks.

Real sockets on 127.0.0.1, asyncio, keep-alive, chunked SSE. Routes:
  POST /v1/chat/completions, /v1/completions   (stream or not; usage chunk when
       stream_options.include_usage; text = the prompt's words cycled up to max_tokens)
  POST /v1/embeddings
  GET  /metrics                                 (Prometheus text with vllm:* gauges)
  GET  /_test/arrivals                          with log_arrivals: the monotonic clock (ns) at
       which each POST's head was read since the last call, as a JSON list (benchmarks compare
       when requests arrived with when their sender scheduled them)
  GET  with Upgrade: websocket                  101, then a close frame
  anything else: 404 JSON

An engine of known capacity (`slots=N, service_ms=S`): N requests are served at a time, each
holding its slot for S ms before its tokens stream; the rest queue (vllm:num_requests_waiting),
so the server completes at most N / S requests per millisecond.

Per-request controls (headers):
  x-test-ttft-ms, x-test-itl-ms   delays before the first token / between tokens
  x-test-hold: 1                  after the first token, wait until `release()` is called
  x-test-reset: N                 abort the connection after N streamed events (upstream reset)
  x-test-gzip: 1                  gzip the response (streamed with a sync flush per event)
Every response JSON (and the first stream event) has "echo": {max_tokens, min_tokens, ignore_eos,
model, stream} so tests see what arrived; `requests` records every request received.

In a test:   with SseServer(ttft_ms=5, itl_ms=2) as srv: srv.url ...
Standalone:  python tests/sse_server.py --port 8000 [--ttft-ms 0 --itl-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Received:
    t: float
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class ServerConfig:
    ttft_ms: float = 0.0
    itl_ms: float = 0.0
    default_max_tokens: int = 16
    record: bool = True
    slots: int = 0  # > 0: at most this many requests served at once, the rest wait
    service_ms: float = 0.0  # with slots: how long a request holds its slot before its tokens
    log_arrivals: bool = False  # keep each POST's arrival instant for GET /_test/arrivals


@dataclass
class _State:
    requests: list[Received] = field(default_factory=list)
    running: int = 0
    waiting: int = 0
    served: int = 0
    arrivals: list[int] = field(default_factory=list)


def _prompt_words(body: dict[str, Any]) -> list[str]:
    text = ""
    msgs = body.get("messages")
    if isinstance(msgs, list):
        for m in msgs:
            c = m.get("content") if isinstance(m, dict) else None
            if isinstance(c, str):
                text += " " + c
            elif isinstance(c, list):
                text += " " + " ".join(p.get("text", "") for p in c if isinstance(p, dict))
    p = body.get("prompt")
    if isinstance(p, str):
        text += " " + p
    elif isinstance(p, list):
        text += " " + " ".join(x for x in p if isinstance(x, str))
    words = text.split()
    return words or ["tok"]


class _Handler:
    def __init__(self, cfg: ServerConfig, state: _State, hold: asyncio.Event) -> None:
        self.cfg = cfg
        self.state = state
        self._slots: asyncio.Semaphore | None = None
        self.hold = hold

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if self.cfg.log_arrivals and head.startswith(b"POST "):
                    self.state.arrivals.append(time.monotonic_ns())
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for ln in lines[1:]:
                    if ln:
                        k, _, v = ln.partition(":")
                        headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(n) if n else b""
                if self.cfg.record:
                    self.state.requests.append(Received(time.time(), method, target, headers, body))
                keep = await self.respond(method, target, headers, body, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def respond(self, method, target, headers, body, writer) -> bool:
        path = target.split("?", 1)[0]
        if method == "GET" and headers.get("upgrade", "").lower() == "websocket":
            import base64
            import hashlib

            accept = base64.b64encode(
                hashlib.sha1((headers.get("sec-websocket-key", "") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
            ).decode()
            writer.write(
                b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
                + f"sec-websocket-accept: {accept}\r\n\r\n".encode()
            )
            writer.write(b"\x88\x02\x03\xe8")  # close frame, code 1000
            await writer.drain()
            return False
        if method == "GET" and path == "/_test/arrivals":
            out, self.state.arrivals[:] = list(self.state.arrivals), []
            self._plain(writer, 200, json.dumps(out).encode(), "application/json")
            return True
        if method == "GET" and path == "/metrics":
            text = (
                "# HELP vllm:num_requests_running Running requests.\n# TYPE vllm:num_requests_running gauge\n"
                f'vllm:num_requests_running{{model_name="fake"}} {self.state.running}\n'
                "# TYPE vllm:num_requests_waiting gauge\n"
                f'vllm:num_requests_waiting{{model_name="fake"}} {self.state.waiting}\n'
                "# TYPE vllm:request_success_total counter\n"
                f'vllm:request_success_total{{model_name="fake"}} {self.state.served}\n'
            )
            self._plain(writer, 200, text.encode(), "text/plain; version=0.0.4")
            return True
        if method != "POST" or path not in ("/v1/chat/completions", "/v1/completions", "/v1/embeddings"):
            self._plain(writer, 404, b'{"error": {"message": "not found"}}', "application/json")
            return True
        try:
            req = json.loads(body)
            if not isinstance(req, dict):
                raise ValueError
        except (ValueError, RecursionError):
            self._plain(writer, 400, b'{"error": {"message": "malformed JSON body"}}', "application/json")
            return True
        gz = headers.get("x-test-gzip") == "1"
        if path == "/v1/embeddings":
            inp = req.get("input")
            n = len(inp) if isinstance(inp, list) else 1
            out = {
                "object": "list",
                "model": req.get("model", "fake"),
                "data": [{"object": "embedding", "index": i, "embedding": [0.1, 0.2, 0.3]} for i in range(n)],
                "usage": {"prompt_tokens": 3 * n, "total_tokens": 3 * n},
            }
            self._plain(writer, 200, json.dumps(out).encode(), "application/json", gz)
            return True
        chat = path == "/v1/chat/completions"
        max_tokens = req.get("max_tokens", req.get("max_completion_tokens")) or self.cfg.default_max_tokens
        words = _prompt_words(req)
        toks = [(" " if i else "") + words[i % len(words)] for i in range(int(max_tokens))]
        echo = {k: req.get(k) for k in ("max_tokens", "min_tokens", "ignore_eos", "model", "stream")}
        ttft = float(headers.get("x-test-ttft-ms", self.cfg.ttft_ms)) / 1000
        itl = float(headers.get("x-test-itl-ms", self.cfg.itl_ms)) / 1000
        usage = {
            "prompt_tokens": len(words),
            "completion_tokens": len(toks),
            "total_tokens": len(words) + len(toks),
            "prompt_tokens_details": {"cached_tokens": min(len(words), 2)},
        }
        model = req.get("model", "fake")
        rid = f"cmpl-{self.state.served}"
        if self.cfg.slots:
            return await self._slotted(writer, chat, rid, model, toks, usage, echo, req, headers, itl, gz)
        self.state.running += 1
        try:
            if ttft:
                await asyncio.sleep(ttft)
            if not req.get("stream"):
                if itl:
                    await asyncio.sleep(itl * max(0, len(toks) - 1))
                text = "".join(toks)
                choice = (
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
                    if chat
                    else {"index": 0, "text": text, "finish_reason": "length"}
                )
                out = {
                    "id": rid,
                    "object": "chat.completion" if chat else "text_completion",
                    "model": model,
                    "choices": [choice],
                    "usage": usage,
                    "echo": echo,
                }
                self._plain(writer, 200, json.dumps(out).encode(), "application/json", gz)
                return True
            return await self._stream(writer, chat, rid, model, toks, usage, echo, req, headers, itl, gz)
        finally:
            self.state.running -= 1
            self.state.served += 1

    async def _slotted(self, writer, chat, rid, model, toks, usage, echo, req, headers, itl, gz) -> bool:
        """The known-capacity engine: wait for one of `slots`, hold it `service_ms`, then stream."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.cfg.slots)
        self.state.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.state.waiting -= 1
        self.state.running += 1
        try:
            await asyncio.sleep(self.cfg.service_ms / 1000)
        finally:
            self.state.running -= 1
            self.state.served += 1
            self._slots.release()
        if not req.get("stream"):
            text = "".join(toks)
            out = {"id": rid, "object": "chat.completion" if chat else "text_completion", "model": model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
                               if chat else {"index": 0, "text": text, "finish_reason": "length"}],
                   "usage": usage, "echo": echo}
            self._plain(writer, 200, json.dumps(out).encode(), "application/json", gz)
            return True
        return await self._stream(writer, chat, rid, model, toks, usage, echo, req, headers, itl, gz)

    async def _stream(self, writer, chat, rid, model, toks, usage, echo, req, headers, itl, gz) -> bool:
        reset_after = int(headers["x-test-reset"]) if "x-test-reset" in headers else None
        hold = headers.get("x-test-hold") == "1"
        comp = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS) if gz else None
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
            "cache-control: no-cache\r\ntransfer-encoding: chunked\r\n"
            + ("content-encoding: gzip\r\n" if gz else "")
            + "\r\n"
        )
        writer.write(head.encode())
        obj = "chat.completion.chunk" if chat else "text_completion"
        include_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        sent = 0

        async def send(payload: str) -> None:
            data = f"data: {payload}\n\n".encode()
            if comp is not None:
                data = comp.compress(data) + comp.flush(zlib.Z_SYNC_FLUSH)
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()

        for i, tok in enumerate(toks):
            if i and itl:
                await asyncio.sleep(itl)
            last = i == len(toks) - 1
            if chat:
                delta = {"content": tok}
                if i == 0:
                    delta["role"] = "assistant"
                choice = {"index": 0, "delta": delta, "finish_reason": "length" if last else None}
            else:
                choice = {"index": 0, "text": tok, "finish_reason": "length" if last else None}
            ev = {"id": rid, "object": obj, "model": model, "choices": [choice]}
            if i == 0:
                ev["echo"] = echo
            await send(json.dumps(ev))
            sent += 1
            if reset_after is not None and sent >= reset_after:
                writer.transport.abort()
                return False
            if i == 0 and hold:
                await self.hold.wait()
        if include_usage:
            await send(json.dumps({"id": rid, "object": obj, "model": model, "choices": [], "usage": usage}))
        await send("[DONE]")
        tail = comp.flush() if comp is not None else b""
        if tail:
            writer.write(b"%x\r\n%s\r\n" % (len(tail), tail))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    @staticmethod
    def _plain(writer, status: int, body: bytes, ctype: str, gz: bool = False) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "OK")
        extra = ""
        if gz:
            body = _gzip(body)
            extra = "content-encoding: gzip\r\n"
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode()
            + body
        )


def _gzip(body: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(body) + c.flush()


class SseServer:
    """Runs the server on its own event loop in a daemon thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **cfg: Any) -> None:
        self.host = host
        self.port = port
        self.cfg = ServerConfig(**cfg)
        self.state = _State()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._hold: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[Received]:
        return self.state.requests

    def start(self) -> "SseServer":
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._hold = asyncio.Event()
            handler = _Handler(self.cfg, self.state, self._hold)
            self._server = loop.run_until_complete(asyncio.start_server(handler.handle, self.host, self.port))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            self._server.close()
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

        self._thread = threading.Thread(target=run, name="sse-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def release(self) -> None:
        """Lets held streams (x-test-hold: 1) continue."""
        assert self._loop is not None and self._hold is not None
        self._loop.call_soon_threadsafe(self._hold.set)

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> "SseServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


async def serve_forever(host: str, port: int, cfg: ServerConfig) -> None:
    handler = _Handler(cfg, _State(), asyncio.Event())
    server = await asyncio.start_server(handler.handle, host, port, backlog=1024)
    print(f"listening on http://{host}:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ttft-ms", type=float, default=0.0)
    ap.add_argument("--itl-ms", type=float, default=0.0)
    ap.add_argument("--slots", type=int, default=0, help="an engine of known capacity: requests served at once")
    ap.add_argument("--service-ms", type=float, default=0.0, help="with --slots: time a request holds its slot")
    ap.add_argument("--log-arrivals", action="store_true", help="serve GET /_test/arrivals (see above)")
    a = ap.parse_args()
    cfg = ServerConfig(ttft_ms=a.ttft_ms, itl_ms=a.itl_ms, record=False, slots=a.slots, service_ms=a.service_ms,
                       log_arrivals=a.log_arrivals)
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(serve_forever(a.host, a.port, cfg))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
