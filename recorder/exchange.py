"""The raw HTTP exchange captured by the proxy, and its conversion to one `requests` row.

Capture (in mitmproxy's hooks) only copies references to bytes and timestamps into an
`HttpExchange`; `to_row` runs later in the writer (a child process or a thread): decoding, SSE reassembly, JSON parsing,
hashing and scrubbing. Any object with `to_row(scrubber, opts) -> dict` can be submitted to the
recorder (the gRPC recorder submits its own exchange type).

Nothing raw leaves this module: every string that goes into the row passes the scrubber first,
or is a keyed hash, a number, or a fixed vocabulary word.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from shadowreplay.schema import REQUESTS_SCHEMA

from .sse import DecodedTooLarge, SseParser, StreamDecoder, choice_text, decode_body, gaps_ms, summarize_openai_stream

if TYPE_CHECKING:
    from shadowreplay.anonymize import Scrubber

# Header values never kept, not even scrubbed (credentials).
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "openai-api-key"}
)
REDACTED = "[redacted]"
_COLUMNS = tuple(REQUESTS_SCHEMA.names)
ERROR_CAP = 300  # chars of an error message kept


@dataclass(frozen=True)
class RowOptions:
    """What the writer thread needs to turn an exchange into a row (snapshotted from mitmproxy's
    options, so the writer never reads ctx.options from its own thread)."""

    prefix_chars: int = 1000  # N: prefix_hash covers the first N characters of the prompt
    body_cap: int = 1 << 20  # bytes of request body / chars of response text kept per row
    stream_cap: int = 16 << 20  # raw bytes of one streamed response kept for reassembly
    source: str = "recorder"


@runtime_checkable
class Exchange(Protocol):
    """Anything the recorder can queue: converted to a row (schema.REQUESTS_SCHEMA column names)
    in the writer. With the writer process (the default) it must also pickle, and its class must
    be importable there: plain dataclasses of bytes, str and numbers (no mitmproxy objects)."""

    def to_row(self, scrubber: Scrubber, opts: RowOptions) -> dict[str, Any]: ...


def ts(t: float | None) -> dt.datetime | None:
    """Epoch seconds -> aware UTC datetime (microseconds), as the schema's timestamp columns want."""
    if t is None:
        return None
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def ms_between(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    return round((b - a) * 1000.0, 3)


def classify(path: str) -> str:
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith("/chat/completions"):
        return "chat"
    if p.endswith("/completions"):
        return "completion"
    if p.endswith("/embeddings"):
        return "embedding"
    return "http"


def protocol_of(http_version: str) -> str:
    return "h2" if http_version.upper().startswith("HTTP/2") else "http/1.1"


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    name = name.lower()
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def credential(headers: list[tuple[str, str]]) -> str | None:
    """The API key a request carries (Authorization bearer, x-api-key, api-key), if any."""
    auth = header(headers, "authorization")
    if auth:
        scheme, _, rest = auth.strip().partition(" ")
        return rest.strip() if scheme.lower() in ("bearer", "basic", "token") and rest.strip() else auth.strip()
    for h in ("x-api-key", "api-key", "openai-api-key"):
        v = header(headers, h)
        if v:
            return v.strip()
    return None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image_url", ...}]
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
        return "".join(out)
    return ""


def prompt_text(kind: str, body: dict[str, Any]) -> str | None:
    """The prompt as the model sees its text: chat message contents concatenated in order,
    the completion prompt(s), or the embedding input(s). None when there is no text prompt
    (token-id prompts)."""
    if kind == "chat" or "messages" in body:
        msgs = body.get("messages")
        if not isinstance(msgs, list):
            return None
        return "".join(_content_text(m.get("content")) for m in msgs if isinstance(m, dict))
    key = "input" if kind == "embedding" else "prompt"
    v = body.get(key, body.get("prompt") if key == "input" else None)
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return "".join(v)
    return None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31 else None


def add_counts(total: dict[str, int], counts: dict[str, int] | None) -> None:
    for k, v in (counts or {}).items():
        total[k] = total.get(k, 0) + int(v)


@dataclass
class HttpExchange:
    """One HTTP request/response as it passed the proxy. Bytes are references to what mitmproxy
    already holds; nothing is parsed or copied here."""

    request_id: str
    ts_start: float  # first byte of the request reached the proxy
    ts_request_end: float | None = None  # request fully received by the proxy
    client_addr: str | None = None  # client IP (no port)
    method: str | None = None
    scheme: str | None = None
    host: str | None = None
    port: int | None = None
    path: str | None = None
    http_version: str = "HTTP/1.1"
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    request_body: bytes | None = None
    # response
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    ts_response_headers: float | None = None
    ts_end: float | None = None
    response_body: bytes | None = None  # buffered body (not streamed)
    streamed: bool = False
    chunks: list[tuple[float, bytes]] = field(default_factory=list)  # streamed (arrival, bytes)
    stream_bytes: int = 0  # total streamed bytes seen (kept or not)
    stream_overflow: bool = False  # stream_cap reached: later chunks counted, not kept
    # problems the proxy saw
    error: str | None = None
    websocket: bool = False

    # --- capture side (event loop): keep it O(1) ---
    def observe(self, t: float, chunk: bytes, cap: int) -> None:
        self.stream_bytes += len(chunk)
        if self.stream_bytes <= cap:
            self.chunks.append((t, chunk))
        else:
            self.stream_overflow = True

    # --- writer thread ---
    def to_row(self, scrubber: Scrubber, opts: RowOptions) -> dict[str, Any]:
        errors: list[str] = []
        pii: dict[str, int] = {}
        kind = classify(self.path or "")
        req_ct = header(self.request_headers, "content-type")
        row: dict[str, Any] = {
            "request_id": self.request_id,
            "ts_start": ts(self.ts_start),
            "method": self.method,
            "scheme": self.scheme,
            "host": self.host,
            "port": self.port,
            "status": self.status,
            "protocol": protocol_of(self.http_version),
            "kind": kind,
            "source": opts.source,
        }
        if self.path is not None:
            p = scrubber.scrub_text(self.path)
            row["path"] = p.text
            add_counts(pii, p.counts)
        ua = header(self.request_headers, "user-agent")
        if ua is not None:
            s = scrubber.scrub_text(ua)
            row["user_agent"] = s.text
            add_counts(pii, s.counts)
        cred = credential(self.request_headers)
        row["client_id"] = scrubber.client_id(cred if cred else (self.client_addr or "unknown"))
        hdrs, counts = scrubber.scrub_headers(self.request_headers)
        for k in hdrs:  # the scrubber fingerprints credentials; make sure none slips through as text
            if k in SECRET_HEADERS and not hdrs[k].startswith("<redacted"):
                hdrs[k] = REDACTED
        row["request_headers"] = json.dumps(hdrs, ensure_ascii=False, sort_keys=True)
        add_counts(pii, counts)

        if self.websocket:
            errors.append("websocket upgrade: messages not recorded")

        # request body
        body = self.request_body
        row["request_bytes"] = len(body) if body is not None else None
        if body:
            enc = header(self.request_headers, "content-encoding")
            if enc and enc.strip().lower() != "identity":
                try:
                    body = decode_body(body, enc)
                except ValueError as e:
                    errors.append(f"request body: {e}")
                    body = None
        if body:
            self._request_fields(body, req_ct, kind, scrubber, opts, row, errors, pii)

        # response
        first_byte = self.chunks[0][0] if self.chunks else self.ts_response_headers
        end = self.ts_end
        resp_ct = (header(self.response_headers, "content-type") or "").lower()
        resp_enc = header(self.response_headers, "content-encoding")
        if self.streamed:
            row["response_bytes"] = self.stream_bytes
            if self.stream_overflow:
                errors.append(f"response stream over {opts.stream_cap} bytes: rest not reassembled")
                row["body_truncated"] = True
            if "text/event-stream" in resp_ct:
                end = self._sse_fields(resp_enc, kind, scrubber, opts, row, errors, pii, end)
            else:
                raw = b"".join(c for _, c in self.chunks)
                self._response_body_fields(raw, resp_enc, resp_ct, kind, scrubber, opts, row, errors, pii)
            if end is None and self.chunks:
                end = self.chunks[-1][0]
        elif self.response_body is not None:
            row["response_bytes"] = len(self.response_body)
            self._response_body_fields(self.response_body, resp_enc, resp_ct, kind, scrubber, opts, row, errors, pii)

        row["ts_first_byte"] = ts(first_byte)
        row["ts_end"] = ts(end)
        row["e2e_ms"] = ms_between(self.ts_start, end)
        if self.status is not None and self.status >= 400 and not self.error:
            errors.append(f"http status {self.status}")
        if self.error:
            e = scrubber.scrub_text(self.error[:ERROR_CAP])
            add_counts(pii, e.counts)
            errors.insert(0, e.text)
        if errors:
            row["error"] = "; ".join(errors)[: ERROR_CAP * 2]
        row["pii_counts"] = pii or None
        for name in _COLUMNS:
            row.setdefault(name, None)
        return row

    def _request_fields(self, body, req_ct, kind, scrubber, opts, row, errors, pii) -> None:
        if len(body) > opts.body_cap:
            row["body_truncated"] = True
            errors.append(f"request body over cap ({len(body)} > {opts.body_cap} bytes): stored truncated")
        looks_json = (req_ct or "").lower().find("json") >= 0 or body[:1] in (b"{", b"[")
        parsed: Any = None
        if looks_json:
            try:
                parsed = json.loads(body)
            except UnicodeDecodeError:
                errors.append("request body: not UTF-8")
            except ValueError as e:
                errors.append(f"request body: malformed JSON ({getattr(e, 'msg', 'parse error')} at char {getattr(e, 'pos', '?')})")
        if isinstance(parsed, dict):
            if isinstance(parsed.get("model"), str):
                m = scrubber.scrub_text(parsed["model"])
                row["model"] = m.text
            st = parsed.get("stream")
            row["stream"] = bool(st) if isinstance(st, bool) else False
            row["max_tokens"] = _int(parsed.get("max_tokens", parsed.get("max_completion_tokens")))
            text = prompt_text(kind, parsed)
            if text is not None:
                row["prompt_chars"] = len(text)
                row["prefix_hash"] = scrubber.keyed_hash(text[: opts.prefix_chars])
        sb = scrubber.scrub_body(body, req_ct)
        add_counts(pii, sb.counts)
        if sb.error and not any(x.startswith("request body") for x in errors):
            errors.append(f"request body: {sb.error}")
        text = sb.text
        if text is not None and len(text) > opts.body_cap:
            text = text[: opts.body_cap]
            row["body_truncated"] = True
        row["request_body"] = text

    def _sse_fields(self, enc, kind, scrubber, opts, row, errors, pii, end) -> float | None:
        try:
            dec = StreamDecoder(enc)
        except ValueError as e:
            errors.append(f"response stream: {e}")
            return end
        parser = SseParser()
        events = []
        try:
            for t, chunk in self.chunks:
                events.extend(parser.feed(dec.decode(chunk), t))
        except DecodedTooLarge as e:
            errors.append(f"response stream: {e}")
        except Exception as e:  # corrupt compressed stream
            errors.append(f"response stream: cannot decode content-encoding {enc}: {type(e).__name__}")
        last_t = self.chunks[-1][0] if self.chunks else (end or self.ts_start)
        events.extend(parser.close(last_t))
        if parser.invalid_utf8:
            errors.append("response stream: not UTF-8")
        s = summarize_openai_stream(events)
        row["chunks"] = s.data_events
        row["stream"] = True if row.get("stream") is None else row["stream"]
        if s.model and not row.get("model"):
            row["model"] = scrubber.scrub_text(s.model).text
        row["finish_reason"] = s.finish_reason
        row["prompt_tokens"] = _int(s.prompt_tokens)
        row["completion_tokens"] = _int(s.completion_tokens)
        row["cached_tokens"] = _int(s.cached_tokens)
        first = s.token_times[0] if s.token_times else s.first_data_t
        row["ttft_ms"] = ms_between(self.ts_start, first)
        row["itl_ms"] = gaps_ms(s.token_times)
        if s.malformed_events:
            errors.append(f"response stream: {s.malformed_events} malformed events")
        if s.error_message:
            m = scrubber.scrub_text(s.error_message[:ERROR_CAP])
            add_counts(pii, m.counts)
            errors.append(f"in-stream error: {m.text}")
        if not s.done and self.status == 200 and not self.error and not self.stream_overflow:
            errors.append("response stream ended without [DONE]")
        if s.text:
            sc = scrubber.scrub_text(s.text)
            add_counts(pii, sc.counts)
            text = sc.text
            if len(text) > opts.body_cap:
                text = text[: opts.body_cap]
                row["body_truncated"] = True
            row["response_text"] = text
        return end

    def _response_body_fields(self, raw, enc, ct, kind, scrubber, opts, row, errors, pii) -> None:
        body = raw
        if raw and enc and enc.strip().lower() != "identity":
            try:
                body = decode_body(raw, enc)
            except ValueError as e:
                errors.append(f"response body: {e}")
                return
        if not body:
            return
        if "json" in ct or body[:1] == b"{":
            try:
                obj = json.loads(body)
            except UnicodeDecodeError:
                errors.append("response body: not UTF-8")
                return
            except ValueError:
                if "json" in ct:
                    errors.append("response body: malformed JSON")
                obj = None
            if isinstance(obj, dict):
                self._response_json(obj, kind, scrubber, opts, row, errors, pii)
                return
        if kind == "embedding":
            return
        sb = scrubber.scrub_body(body, ct or None)
        add_counts(pii, sb.counts)
        text = sb.text
        if text is not None and len(text) > opts.body_cap:
            text = text[: opts.body_cap]
            row["body_truncated"] = True
        row["response_text"] = text

    def _response_json(self, obj, kind, scrubber, opts, row, errors, pii) -> None:
        u = obj.get("usage")
        if isinstance(u, dict):
            row["prompt_tokens"] = _int(u.get("prompt_tokens"))
            row["completion_tokens"] = _int(u.get("completion_tokens"))
            d = u.get("prompt_tokens_details")
            if isinstance(d, dict):
                row["cached_tokens"] = _int(d.get("cached_tokens"))
        if not row.get("model") and isinstance(obj.get("model"), str):
            row["model"] = scrubber.scrub_text(obj["model"]).text
        err = obj.get("error")
        if err is not None:
            msg = err.get("message") if isinstance(err, dict) else err
            m = scrubber.scrub_text(str(msg)[:ERROR_CAP])
            add_counts(pii, m.counts)
            errors.append(f"upstream error: {m.text}")
        if kind == "embedding":
            return  # vectors are not kept
        choices = obj.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            text, _ = choice_text(choices[0], streamed=False)
            fr = choices[0].get("finish_reason")
            row["finish_reason"] = fr if isinstance(fr, str) else None
            if text:
                sc = scrubber.scrub_text(text)
                add_counts(pii, sc.counts)
                t = sc.text
                if len(t) > opts.body_cap:
                    t = t[: opts.body_cap]
                    row["body_truncated"] = True
                row["response_text"] = t
        elif kind == "http":
            sj, counts = scrubber.scrub_json(obj)
            add_counts(pii, counts)
            t = json.dumps(sj, ensure_ascii=False)
            if len(t) > opts.body_cap:
                t = t[: opts.body_cap]
                row["body_truncated"] = True
            row["response_text"] = t


def fallback_row(exchange: Any, opts: RowOptions, exc: BaseException) -> dict[str, Any] | None:
    """A minimal row for an exchange whose conversion failed (a bug): keeps the count and timing
    honest without any content. None when the exchange has no identity to record."""
    rid = getattr(exchange, "request_id", None)
    t0 = getattr(exchange, "ts_start", None)
    if rid is None or t0 is None:
        return None
    return {
        "request_id": rid,
        "ts_start": ts(t0),
        "source": opts.source,
        "error": f"recorder could not convert this exchange ({type(exc).__name__})",
    }
