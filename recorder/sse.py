"""Pure, incremental parsing of Server-Sent Events and of OpenAI-style streamed completions.

Bytes go in with the time they reached the proxy; events and a summary come out. Nothing here
does I/O; the recorder's writer thread runs it after the stream has passed through.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SseEvent:
    t: float  # arrival time (epoch seconds) of the chunk that completed the event
    data: str  # the data lines joined by "\n" ("" when the event had none)
    event: str | None = None


class SseParser:
    """Feeds raw bytes (any split) and returns complete events, per the WHATWG SSE rules
    (lines end in CRLF, LF or CR; a blank line dispatches; `:` starts a comment)."""

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[str] = []
        self._event: str | None = None
        self._has_data = False
        self.invalid_utf8 = False
        self._pending_cr = False

    def feed(self, chunk: bytes, t: float) -> list[SseEvent]:
        out: list[SseEvent] = []
        if not chunk:
            return out
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split across chunks
        self._pending_cr = False
        buf = self._buf + chunk
        if b"\r" not in buf:  # fast path: LF-only streams (vLLM, OpenAI)
            lines = buf.split(b"\n")
            self._buf = lines.pop()
            for ln in lines:
                self._line(ln, t, out)
            return out
        start = 0
        n = len(buf)
        i = 0
        while i < n:
            c = buf[i]
            if c == 0x0A or c == 0x0D:
                self._line(buf[start:i], t, out)
                if c == 0x0D:
                    if i + 1 < n:
                        if buf[i + 1] == 0x0A:
                            i += 1
                    else:
                        self._pending_cr = True
                start = i + 1
            i += 1
        self._buf = buf[start:]
        return out

    def close(self, t: float) -> list[SseEvent]:
        """End of stream: an unterminated last event is dispatched too (servers often omit it)."""
        out: list[SseEvent] = []
        if self._buf:
            self._line(self._buf, t, out)
            self._buf = b""
        self._line(b"", t, out)
        return out

    def _line(self, raw: bytes, t: float, out: list[SseEvent]) -> None:
        if not raw:
            if self._has_data or self._event is not None:
                out.append(SseEvent(t, "\n".join(self._data), self._event))
            self._data = []
            self._event = None
            self._has_data = False
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.invalid_utf8 = True
            line = raw.decode("utf-8", "replace")
        if line.startswith(":"):
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value


# A decompressed body (or stream) larger than this is refused: a few kB of gzip, brotli or zstd can
# expand to gigabytes inside the writer (a decompression bomb).
MAX_DECODED = 64 << 20


class DecodedTooLarge(ValueError):
    pass


class StreamDecoder:
    """Incremental content-encoding decoder (gzip, deflate, br, zstd) for streamed bodies, so the
    recorder keeps per-chunk timing even for compressed event streams. Never produces much more
    than `limit` bytes in all, whatever the compression ratio: past it, `decode` raises
    DecodedTooLarge, having produced at most one byte more (gzip, deflate, zstd) or one output
    buffer more (brotli grows its buffer in steps)."""

    def __init__(self, encoding: str | None, limit: int = MAX_DECODED) -> None:
        enc = (encoding or "identity").strip().lower()
        self.encoding = enc
        self.limit = limit
        self.produced = 0
        if enc in ("identity", ""):
            self._d = None
        elif enc in ("gzip", "x-gzip"):
            self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._d = zlib.decompressobj()
        elif enc == "br":
            import brotli

            self._d = brotli.Decompressor()
        elif enc == "zstd":
            try:
                from compression import zstd  # type: ignore[import-not-found]
            except ImportError:
                from backports import zstd  # type: ignore[no-redef]
            self._d = zstd.ZstdDecompressor()
        else:
            raise ValueError(f"unsupported content-encoding {enc!r}")

    def decode(self, data: bytes) -> bytes:
        if self._d is None or not data:
            return data
        out = bytearray()
        if self.encoding == "br":
            out += self._d.process(data, output_buffer_limit=self._room(out))
            while not self._d.can_accept_more_data() and self._room(out) > 1:
                out += self._d.process(b"", output_buffer_limit=self._room(out))
        elif self.encoding == "zstd":
            if getattr(self._d, "eof", False):
                return b""
            out += self._d.decompress(data, max_length=self._room(out))
            while not self._d.eof and not self._d.needs_input and self._room(out) > 1:
                out += self._d.decompress(b"", max_length=self._room(out))
        else:
            out += self._d.decompress(data, self._room(out))
            while self._d.unconsumed_tail and self._room(out) > 1:
                out += self._d.decompress(self._d.unconsumed_tail, self._room(out))
        self.produced += len(out)
        if self.produced > self.limit:
            raise DecodedTooLarge(f"decoded {self.encoding} body over {self.limit} bytes (a decompression bomb?): not decoded")
        return bytes(out)

    def _room(self, out: bytearray) -> int:
        """How much the next call may produce: what is left of the limit, plus one byte to see
        that the limit was passed."""
        return max(1, self.limit - self.produced - len(out) + 1)


def decode_body(data: bytes, encoding: str | None, limit: int = MAX_DECODED) -> bytes:
    """Decodes a complete body; raises ValueError (without any of the body in the message)."""
    try:
        d = StreamDecoder(encoding, limit)
        return d.decode(data)
    except ValueError:
        raise
    except Exception as e:
        raise ValueError(f"cannot decode content-encoding {encoding}: {type(e).__name__}") from None


@dataclass
class StreamSummary:
    """What an OpenAI-style stream (chat or completion) said, with timing."""

    text: str = ""
    data_events: int = 0  # events with a data field, [DONE] excluded
    first_data_t: float | None = None
    last_data_t: float | None = None
    token_times: list[float] = field(default_factory=list)  # arrival of events carrying output
    model: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    done: bool = False  # saw "data: [DONE]"
    malformed_events: int = 0
    error_message: str | None = None  # an in-stream {"error": ...} object's message


def _usage(summary: StreamSummary, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    if isinstance(usage.get("prompt_tokens"), int):
        summary.prompt_tokens = usage["prompt_tokens"]
    if isinstance(usage.get("completion_tokens"), int):
        summary.completion_tokens = usage["completion_tokens"]
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        summary.cached_tokens = details["cached_tokens"]


def choice_text(choice: dict[str, Any], streamed: bool) -> tuple[str, bool]:
    """(text of one choice, whether it carries generated output) for chat or completion choices."""
    parts: list[str] = []
    carries = False
    src = choice.get("delta" if streamed else "message")
    if isinstance(src, dict):
        for key in ("content", "reasoning_content", "reasoning"):
            v = src.get(key)
            if isinstance(v, str) and v:
                if key == "content":
                    parts.append(v)
                carries = True
        if src.get("tool_calls"):
            carries = True
    t = choice.get("text")
    if isinstance(t, str) and t:
        parts.append(t)
        carries = True
    return "".join(parts), carries


def summarize_openai_stream(events: Iterable[SseEvent]) -> StreamSummary:
    s = StreamSummary()
    texts: list[str] = []
    for ev in events:
        if not ev.data and ev.event is None:
            continue
        data = ev.data.strip()
        if data == "[DONE]":
            s.done = True
            continue
        if not data:
            continue
        s.data_events += 1
        if s.first_data_t is None:
            s.first_data_t = ev.t
        s.last_data_t = ev.t
        try:
            obj = json.loads(data)
        except ValueError:
            s.malformed_events += 1
            continue
        if not isinstance(obj, dict):
            s.malformed_events += 1
            continue
        if isinstance(obj.get("model"), str):
            s.model = obj["model"]
        err = obj.get("error")
        if err is not None:
            msg = err.get("message") if isinstance(err, dict) else err
            s.error_message = str(msg)[:500]
        _usage(s, obj.get("usage"))
        carries = False
        choices = obj.get("choices")
        if isinstance(choices, list):
            for ch in choices:
                if not isinstance(ch, dict):
                    continue
                if ch.get("index", 0) == 0:
                    txt, c = choice_text(ch, streamed=True)
                    if txt:
                        texts.append(txt)
                    carries = carries or c
                fr = ch.get("finish_reason")
                if isinstance(fr, str) and fr:
                    s.finish_reason = fr
        if carries:
            s.token_times.append(ev.t)
    s.text = "".join(texts)
    return s


def gaps_ms(times: list[float]) -> list[float]:
    return [round((b - a) * 1000.0, 3) for a, b in zip(times, times[1:])]
