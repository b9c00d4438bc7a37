"""A minimal HTTP/1.1 client on asyncio protocols, built for open-loop sending.

Why not httpx/aiohttp: a send must be a single synchronous `transport.write()` of bytes built
before the replay starts, so the sender never awaits anything per request and never waits on
response handling. Responses are parsed incrementally in `data_received` (status, headers,
Content-Length or chunked bodies, SSE events for TTFT/ITL/usage). Keep-alive connections are
pooled per target and opened ahead of need, so a send rarely pays for a TCP connect.
"""

from __future__ import annotations

import asyncio
import collections
import json
import ssl
import time
from collections.abc import Callable

from orjson import loads as _loads  # several times faster than json on usage events

from shadowreplay import llmapi

from .routes import Target

MAX_BODY = 4 << 20  # non-streamed bodies kept (for usage) up to this size
_USAGE_RE = llmapi.USAGE_RE


class Exchange:
    """One replayed request and what was measured about it (all times: time.monotonic_ns).

    What counts as an output token event and where the usage is come from the request's API
    (shadowreplay.llmapi, by the request line's path): the same definitions the recorder uses."""

    __slots__ = (
        "idx", "data", "sent_ns", "first_byte_ns", "end_ns", "status", "error", "token_ns",
        "usage", "sse", "_framer", "_body", "done_cb", "resent", "api", "_out",
    )

    def __init__(self, idx: int, data: bytes, done_cb: Callable[[Exchange], None]):
        self.idx = idx
        self.data = data
        self.sent_ns = 0
        self.first_byte_ns = 0
        self.end_ns = 0
        self.status: int | None = None
        self.error: str | None = None
        self.token_ns: list[int] = []
        self.usage: dict | None = None
        self.sse = False
        self._framer: llmapi.SseFramer | None = None
        self._body = bytearray()
        self.api: llmapi.LlmApi | None = None  # set when the response begins
        self.done_cb = done_cb
        self.resent = False

    # --- body handling -------------------------------------------------------------------------
    def start_stream(self) -> None:
        """The response is an event stream: read it as the request's API streams."""
        self.sse = True
        self._framer = llmapi.SseFramer()
        api = llmapi.api_for_request(self.data)
        self.api = api = api if api.streams else llmapi.CHAT  # an unknown route may still stream chunks
        self._out = api.output_test

    def body(self, data: bytes, now: int) -> None:
        if self.sse:
            block = self._framer.feed(data)
            if not block:
                return
            if block.find(b"\n\n") == len(block) - 2:  # one event: what a token-by-token stream reads each time
                self._event(block[:-2], now)
            else:
                self._events(block, now)
        elif len(self._body) < MAX_BODY:
            self._body += data

    def _events(self, block: bytes, now: int) -> None:
        """Several complete events (`block` ends with a blank line), all read at `now`. What vLLM
        sends for chat and completions, one `data:` line per event, is handled in a few C-level
        scans of the whole block (the per-event Python calls were most of the response handling
        when a read holds many events); anything else event by event."""
        nev = block.count(b"\n\n")
        if (block.count(b"\n") == 2 * nev and block.startswith(b"data:")
                and block.count(b"\n\ndata:") == nev - 1):
            hits = self.api.count_output(block)
            if hits:
                self.token_ns += [now] * hits
            if b'"usage"' in block:
                for m in _USAGE_RE.finditer(block):
                    start = block.rfind(b"\n", 0, m.start()) + 1
                    self._usage(block[start + 5 : block.find(b"\n", m.end())])
            return
        for raw in block.split(b"\n\n")[:-1]:
            if raw:
                self._event(raw, now)

    def _usage(self, data: bytes) -> None:
        try:
            ev = _loads(data)
        except ValueError:
            return
        self.usage = self.api.usage_of(ev, self.usage)

    def _event(self, raw: bytes, now: int) -> None:
        # Cheap byte checks first: only events that may carry usage are JSON-decoded, so the
        # per-token cost stays small at high request rates. (The framer made every line ending \n.)
        if raw.startswith(b"data: ") and b"\n" not in raw:
            data = raw[6:]  # one data line: every event vLLM's chat and completions send
        else:
            data = llmapi.event_fields(raw)[1]
            if not data:
                return
        if self._out(data):
            self.token_ns.append(now)
        if b'"usage"' in data and _USAGE_RE.search(data) is not None:
            self._usage(data)

    def finish(self, now: int, error: str | None = None) -> None:
        if self.end_ns:
            return
        self.end_ns = now
        if error and not self.error:
            self.error = error
        if not self.sse and self._body:
            try:
                obj = json.loads(bytes(self._body))
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                api = llmapi.api_for_request(self.data)
                r = llmapi.Reply()
                (api if api is not llmapi.HTTP else llmapi.CHAT).reply(obj, r)
                self.usage = r.usage
        self._body = bytearray()
        self.done_cb(self)


class SendDue:
    """The sender's next send instant, checked by every response callback.

    In a burst the loop can have hundreds of ready sockets in one epoll batch; the timerfd's
    callback then waits behind all of their callbacks. A response callback that sees a send
    already due runs the sender first (one clock read and a compare per callback)."""

    __slots__ = ("ns", "fire")

    NEVER = 1 << 62

    def __init__(self) -> None:
        self.ns = SendDue.NEVER
        self.fire: Callable[[], None] | None = None


class HttpConnection(asyncio.Protocol):
    """One keep-alive connection; carries one exchange at a time."""

    def __init__(self, pool: Pool):
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.ex: Exchange | None = None
        self.closed = False
        self.idle_since = 0  # when it last went idle (monotonic ns; kept only with an idle expiry)
        self.was_idle = False  # the exchange in progress was sent on a connection that had been idle
        self._reset()

    def _reset(self) -> None:
        self.state = 0  # 0 head, 1 length body, 2 chunk size, 3 chunk data, 4 chunk end, 5 until close
        self.head = b""
        self.remaining = 0
        self.keep_alive = True

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.pool.discard(self)
        ex = self.ex
        if ex is not None:
            self.ex = None
            now = time.monotonic_ns()
            if self.state == 5:
                ex.finish(now)
            elif self.was_idle and not ex.first_byte_ns and not ex.resent and not ex.end_ns and not self.pool.closed:
                # The target closed an idle keep-alive connection as the request went out on it
                # (vLLM/uvicorn close after 5 s idle): nothing was answered, so send it once more.
                self.pool.resend(ex)
            else:
                ex.finish(now, f"connection closed by target ({exc or 'EOF'})")

    def send(self, ex: Exchange, was_idle: bool = False) -> None:
        self.ex = ex
        self.was_idle = was_idle
        self._reset()
        ex.sent_ns = time.monotonic_ns()
        self.transport.write(ex.data)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        ex = self.ex
        if ex is None:  # unsolicited bytes: the connection is unusable
            self.abort()
            return
        now = time.monotonic_ns()
        if not ex.first_byte_ns:
            ex.first_byte_ns = now
        due = self.pool.due
        if now >= due.ns:
            due.fire()
        while data and self.ex is not None:
            data = self._feed(ex, data, now)

    def _feed(self, ex: Exchange, data: bytes, now: int) -> bytes:
        st = self.state
        if st == 0:
            buf = self.head + data
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > 65536:
                    self._fail(ex, now, "response headers too large")
                    return b""
                self.head = buf
                return b""
            self._headers(ex, buf[:end])
            if self.ex is None:
                return b""
            return buf[end + 4 :]
        if st == 1:
            take = data[: self.remaining]
            ex.body(take, now)
            self.remaining -= len(take)
            if self.remaining == 0:
                self._complete(ex, now)
            return data[len(take) :]
        if st == 2:
            # Every complete chunk in the buffer is taken here, and their payloads go to the
            # exchange as one piece: a read usually holds one or more whole chunks.
            buf = self.head + data if self.head else data
            pos = 0
            n = len(buf)
            parts = []
            while True:
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    self.head = buf[pos:]
                    rest = b""
                    break
                try:
                    size = int(buf[pos:end].split(b";")[0], 16)
                except ValueError:
                    self._fail(ex, now, "bad chunked encoding from target")
                    return b""
                start = end + 2
                if size == 0:
                    self.head = b""
                    self.state = 4
                    rest = buf[start:]
                    break
                if start + size + 2 <= n:  # the whole chunk and its CRLF
                    parts.append(buf[start : start + size])
                    pos = start + size + 2
                    continue
                self.head = b""  # a chunk that continues in the next read
                self.state = 3
                self.remaining = size
                rest = buf[start:]
                break
            if parts:
                ex.body(parts[0] if len(parts) == 1 else b"".join(parts), now)
                if self.ex is None:
                    return b""
            return rest
        if st == 3:
            take = data[: self.remaining]
            ex.body(take, now)
            self.remaining -= len(take)
            if self.remaining == 0:
                self.state = 6  # CRLF after chunk data
            return data[len(take) :]
        if st == 6:
            buf = self.head + data
            if len(buf) < 2:
                self.head = buf
                return b""
            self.head = b""
            self.state = 2
            return buf[2:]
        if st == 4:  # trailers after the last chunk, ended by an empty line
            buf = self.head + data
            if buf.startswith(b"\r\n"):
                self.head = b""
                self._complete(ex, now)
                return buf[2:]
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.head = buf
                return b""
            self.head = b""
            self._complete(ex, now)
            return buf[end + 4 :]
        ex.body(data, now)  # 5: until close
        return b""

    def _headers(self, ex: Exchange, head: bytes) -> None:
        lines = head.split(b"\r\n")
        try:
            ex.status = int(lines[0].split(b" ", 2)[1])
        except (IndexError, ValueError):
            self._fail(ex, time.monotonic_ns(), "malformed response from target")
            return
        length = None
        chunked = False
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            v = v.strip()
            if k == b"content-length":
                try:
                    length = int(v)
                except ValueError:
                    pass
            elif k == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
            elif k == b"content-type" and v.lower().startswith(b"text/event-stream"):
                ex.start_stream()
            elif k == b"connection" and v.lower() == b"close":
                self.keep_alive = False
        self.head = b""
        if ex.status in (204, 304) or (100 <= ex.status < 200):
            if ex.status < 200:  # interim response: wait for the real one
                self.state = 0
                return
            self._complete(ex, time.monotonic_ns())
        elif chunked:
            self.state = 2
        elif length is not None:
            self.state = 1
            self.remaining = length
            if length == 0:
                self._complete(ex, time.monotonic_ns())
        else:
            self.state = 5
            self.keep_alive = False

    def _complete(self, ex: Exchange, now: int) -> None:
        self.ex = None
        self._reset()
        ex.finish(now)
        if self.keep_alive and not self.closed:
            self.pool.release(self)
        else:
            self.abort()

    def _fail(self, ex: Exchange, now: int, why: str) -> None:
        self.ex = None
        ex.finish(now, why)
        self.abort()


class Pool:
    """Keep-alive connections to one target.

    A send takes an idle connection; when none is idle the exchange waits in a FIFO queue for the
    next connection that becomes free (a response completed, or a new connection opened). At most
    `max_opening` connects run at once: a burst of thousands of sends must not turn into
    thousands of simultaneous TCP handshakes (SYN-queue drops then cost 1 s retransmits).
    Spare connections are opened in the background so idle ones are usually there.

    Servers close keep-alive connections that stay idle (vLLM/uvicorn after 5 s); the loop sees
    the close and drops the connection, except when the request goes out as the close comes in.
    Such a request, closed unanswered on a connection that had been idle, is sent once more
    (counted in `resent`). With `idle_expiry_s`, connections idle for longer are not reused."""

    def __init__(self, target: Target, spare: int = 16, max_opening: int = 32, due: SendDue | None = None,
                 idle_expiry_s: float | None = None):
        self.target = target
        self.idle_expiry_ns = int(idle_expiry_s * 1e9) if idle_expiry_s else 0  # 0: no expiry
        self.resent = 0
        self.due = due or SendDue()
        self.spare = spare
        self.max_opening = max_opening
        self.idle: collections.deque[HttpConnection] = collections.deque()
        self.waiting: collections.deque[Exchange] = collections.deque()
        self.opening = 0
        self.all: set[HttpConnection] = set()
        self.ssl = ssl.create_default_context() if target.scheme == "https" else None
        self.closed = False
        self.last_error: str | None = None

    async def open(self) -> HttpConnection:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: HttpConnection(self), self.target.host, self.target.port, ssl=self.ssl)
        self.all.add(conn)
        return conn

    async def _open_one(self) -> None:
        """One connect that _open_more counted in `opening` already (when it created this task:
        counting here, when the task first runs, let several _open_more calls in one loop
        iteration each start a full set of connects)."""
        try:
            conn = await self.open()
        except (OSError, ssl.SSLError) as e:
            self.opening -= 1
            self.last_error = f"connect: {getattr(e, 'strerror', None) or e}"
            # No live connection and the target refuses new ones: it is down. The queue fails now
            # (each request with this error), not when its timeout expires; the connects still
            # running may succeed and serve whatever comes next.
            if not self.all:
                now = time.monotonic_ns()
                while self.waiting:
                    ex = self.waiting.popleft()
                    ex.sent_ns = ex.sent_ns or now
                    ex.finish(now, self.last_error)
            elif self.waiting:
                self._open_more()
            return
        self.opening -= 1
        if self.closed:
            conn.abort()
        else:
            self.release(conn)
            if self.waiting:
                self._open_more()

    def _open_more(self) -> None:
        if self.closed:
            return
        want = max(self.spare - len(self.idle), len(self.waiting)) - self.opening
        loop = asyncio.get_running_loop()
        for _ in range(max(0, min(want, self.max_opening - self.opening))):
            self.opening += 1
            loop.create_task(self._open_one())

    async def warm(self, n: int) -> int:
        """Opens n idle connections before the replay starts, at most `max_opening` at a time
        (so a large warm-up does not overflow the target's accept queue). Returns how many opened."""
        opened = 0
        while opened < n:
            k = min(self.max_opening, n - opened)
            results = await asyncio.gather(*(self.open() for _ in range(k)), return_exceptions=True)
            ok = [r for r in results if isinstance(r, HttpConnection)]
            if self.idle_expiry_ns:
                now = time.monotonic_ns()
                for c in ok:
                    c.idle_since = now
            self.idle.extend(ok)
            opened += len(ok)
            if len(ok) < k:  # the target refuses more: keep what we have
                if not ok and isinstance(results[0], BaseException):
                    self.last_error = f"connect: {getattr(results[0], 'strerror', None) or results[0]}"
                break
        return opened

    def send(self, ex: Exchange) -> None:
        """Sends now on an idle connection, or queues the exchange for the next free one."""
        expiry = self.idle_expiry_ns
        while self.idle:
            c = self.idle.pop()  # most recently used first: it is the least likely to be closed
            if c.closed:
                continue
            if expiry and time.monotonic_ns() - c.idle_since > expiry:
                c.abort()
                continue
            c.send(ex, True)
            if len(self.idle) < self.spare // 2:
                self._open_more()
            return
        self.waiting.append(ex)
        self._open_more()

    def resend(self, ex: Exchange) -> None:
        ex.resent = True
        self.resent += 1
        self.send(ex)

    def release(self, conn: HttpConnection) -> None:
        if self.closed or conn.closed:
            conn.abort()
            return
        while self.waiting:
            ex = self.waiting.popleft()
            if not ex.end_ns:  # not timed out while queued
                conn.send(ex)
                return
        if self.idle_expiry_ns:
            conn.idle_since = time.monotonic_ns()
        self.idle.append(conn)

    def discard(self, conn: HttpConnection) -> None:
        self.all.discard(conn)
        try:
            self.idle.remove(conn)
        except ValueError:
            pass
        if self.waiting and not self.closed:
            self._open_more()

    def close(self) -> None:
        self.closed = True
        for c in list(self.all):
            c.abort()
        self.idle.clear()


async def probe(target: Target, timeout: float = 5.0) -> str | None:
    """None when a TCP (and TLS) connection to the target opens, else why not (one line)."""
    ctx = ssl.create_default_context() if target.scheme == "https" else None
    try:
        _, w = await asyncio.wait_for(asyncio.open_connection(target.host, target.port, ssl=ctx), timeout)
    except (OSError, asyncio.TimeoutError, ssl.SSLError) as e:
        return f"cannot reach target {target.url}: {e.__class__.__name__}: {e}".rstrip(": ")
    w.close()
    return None
