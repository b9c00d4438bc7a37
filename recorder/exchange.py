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

from shadowreplay import llmapi
from shadowreplay.jsondepth import JSON_DEPTH_CAP, deeper_than
from shadowreplay.schema import REQUESTS_SCHEMA

from .options import default
from .shape import BLOCK_CHARS, bare_path, header_names, request_columns
from .sse import DecodedTooLarge, StreamDecoder, decode_body, gaps_ms

if TYPE_CHECKING:
    from shadowreplay.anonymize import Scrubber

# Header values never kept, not even scrubbed (credentials).
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "openai-api-key"}
)
REDACTED = "[redacted]"
_COLUMNS = tuple(REQUESTS_SCHEMA.names)
ERROR_CAP = 300  # chars of an error message kept


def proxy_error_kind(error: str, status: int | None) -> str | None:
    """'client' / 'upstream' for a proxy error message that says which side went away."""
    e = error.lower()
    if "client disconnected" in e or "client closed connection" in e or "stream reset by client" in e:
        return "client"
    if "peer closed connection" in e:  # a cut body: the response's (upstream) or the request's (client)
        return "upstream" if status is not None else "client"
    if "server closed connection" in e or "server disconnected" in e or "connection reset" in e:
        return "upstream"
    return None


@dataclass(frozen=True)
class RowOptions:
    """What the writer thread needs to turn an exchange into a row (snapshotted from mitmproxy's
    options, so the writer never reads ctx.options from its own thread)."""

    prefix_chars: int = default("prefix_chars")  # N: prefix_hash covers the first N characters of the prompt
    body_cap: int = default("body_cap")  # bytes of request body / chars of response text kept per row
    stream_cap: int = default("stream_cap")  # raw bytes of one streamed response kept for reassembly
    json_depth_cap: int = JSON_DEPTH_CAP  # a body nested deeper is not parsed (scrubbed as text)
    source: str = "recorder"
    keep: str = default("keep")  # "shape": no text at all, only lengths/structure/hashes (recorder/shape.py)
    shape_block_chars: int = BLOCK_CHARS  # characters per hash_ids block in shape rows

    @property
    def shape(self) -> bool:
        return self.keep == "shape"


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
        api = llmapi.api_for_path(self.path)
        kind = api.kind
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
            p = scrubber.scrub_text(bare_path(self.path) if opts.shape else self.path)
            row["path"] = p.text
            add_counts(pii, p.counts)
        ua = header(self.request_headers, "user-agent")
        if ua is not None and not opts.shape:
            s = scrubber.scrub_text(ua)
            row["user_agent"] = s.text
            add_counts(pii, s.counts)
        cred = credential(self.request_headers)
        row["client_id"] = scrubber.client_id(cred if cred else (self.client_addr or "unknown"))
        if opts.shape:
            row["request_headers"] = header_names(self.request_headers)
        else:
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
            self._request_fields(body, req_ct, api, scrubber, opts, row, errors, pii)

        # response
        first_byte = self.chunks[0][0] if self.chunks else self.ts_response_headers
        end = self.ts_end
        proxy_error = self.error
        resp_ct = (header(self.response_headers, "content-type") or "").lower()
        resp_enc = header(self.response_headers, "content-encoding")
        if self.streamed:
            row["response_bytes"] = self.stream_bytes
            if self.stream_overflow:
                errors.append(f"response stream over {opts.stream_cap} bytes: rest not reassembled")
                row["body_truncated"] = True
            if "text/event-stream" in resp_ct:
                end, complete = self._sse_fields(resp_enc, api, scrubber, opts, row, errors, pii, end)
                if complete and proxy_error and proxy_error_kind(proxy_error, self.status) == "client":
                    # SDKs close the connection once they read the stream's final event, which can
                    # beat the upstream's end of body to the proxy: the exchange was whole.
                    proxy_error, end = None, self.chunks[-1][0]
            else:
                raw = b"".join(c for _, c in self.chunks)
                self._response_body_fields(raw, resp_enc, resp_ct, api, scrubber, opts, row, errors, pii)
            if end is None and self.chunks:
                end = self.chunks[-1][0]
        elif self.response_body is not None:
            row["response_bytes"] = len(self.response_body)
            self._response_body_fields(self.response_body, resp_enc, resp_ct, api, scrubber, opts, row, errors, pii)

        row["ts_first_byte"] = ts(first_byte)
        row["ts_end"] = ts(end)
        row["e2e_ms"] = ms_between(self.ts_start, end)
        if self.status is not None and self.status >= 400 and not proxy_error:
            errors.append(f"http status {self.status}")
        if proxy_error and opts.shape:  # the proxy's message may quote content
            errors.insert(0, "proxy error")
        elif proxy_error:
            e = scrubber.scrub_text(proxy_error[:ERROR_CAP])
            add_counts(pii, e.counts)
            errors.insert(0, e.text)
        if errors:
            row["error"] = "; ".join(errors)[: ERROR_CAP * 2]
        row["pii_counts"] = pii or None
        for name in _COLUMNS:
            row.setdefault(name, None)
        return row

    def _request_fields(self, body, req_ct, api, scrubber, opts, row, errors, pii) -> None:
        if len(body) > opts.body_cap:
            row["body_truncated"] = True
            errors.append(f"request body over cap ({len(body)} > {opts.body_cap} bytes): stored truncated")
        looks_json = (req_ct or "").lower().find("json") >= 0 or body[:1] in (b"{", b"[")
        parsed: Any = None
        if looks_json and deeper_than(body, opts.json_depth_cap):
            errors.append(f"request body: JSON nested deeper than {opts.json_depth_cap} levels: not parsed")
        elif looks_json:
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
            body_api = api if api is not llmapi.HTTP else llmapi.api_for_body(parsed)  # an LLM body on another route
            row["max_tokens"] = body_api.output_limit(parsed)
            text = llmapi.prompt_text(body_api, parsed)
            if text is not None:
                row["prompt_chars"] = len(text)
                row["prefix_hash"] = scrubber.keyed_hash(text[: opts.prefix_chars])
            if opts.shape:
                row.update(request_columns(parsed, body_api, text, scrubber, opts.shape_block_chars))
        if opts.shape:  # no body text, not even scrubbed
            return
        sb = scrubber.scrub_body(body, req_ct)
        add_counts(pii, sb.counts)
        if sb.error and not any(x.startswith("request body") for x in errors):
            errors.append(f"request body: {sb.error}")
        text = sb.text
        if text is not None and len(text) > opts.body_cap:
            text = text[: opts.body_cap]
            row["body_truncated"] = True
        row["request_body"] = text

    def _sse_fields(self, enc, api, scrubber, opts, row, errors, pii, end) -> tuple[float | None, bool]:
        """Fill the stream's columns; return the end time and whether the stream's final event came."""
        try:
            dec = StreamDecoder(enc)
        except ValueError as e:
            errors.append(f"response stream: {e}")
            return end, False
        sapi = api if api.streams else llmapi.CHAT  # an unknown route may still stream chunks
        reader = llmapi.StreamReader(sapi)
        try:
            for t, chunk in self.chunks:
                reader.feed(dec.decode(chunk), t)
        except DecodedTooLarge as e:
            errors.append(f"response stream: {e}")
        except Exception as e:  # corrupt compressed stream
            errors.append(f"response stream: cannot decode content-encoding {enc}: {type(e).__name__}")
        reader.close(self.chunks[-1][0] if self.chunks else (end or self.ts_start))
        if reader.invalid_utf8:
            errors.append("response stream: not UTF-8")
        s = reader.reply
        row["chunks"] = reader.data_events
        row["stream"] = True if row.get("stream") is None else row["stream"]
        if s.model and not row.get("model"):
            row["model"] = scrubber.scrub_text(s.model).text
        self._reply_fields(s, row)
        first = reader.token_times[0] if reader.token_times else reader.first_data_t
        row["ttft_ms"] = ms_between(self.ts_start, first)
        row["itl_ms"] = gaps_ms(reader.token_times)
        if reader.malformed_events:
            errors.append(f"response stream: {reader.malformed_events} malformed events")
        if s.error and opts.shape:
            errors.append("in-stream error")
        elif s.error:
            m = scrubber.scrub_text(s.error[:ERROR_CAP])
            add_counts(pii, m.counts)
            errors.append(f"in-stream error: {m.text}")
        if not s.done and self.status == 200 and not self.error and not self.stream_overflow:
            errors.append(f"response stream ended without {sapi.end_event}")
        self._text_field("".join(s.text), scrubber, opts, row, pii)
        return end, bool(s.done and self.chunks)

    @staticmethod
    def _reply_fields(s: llmapi.Reply, row: dict) -> None:
        row["finish_reason"] = s.finish_reason[:64] if s.finish_reason else None
        row["prompt_tokens"], row["completion_tokens"], row["cached_tokens"] = s.counts()

    @staticmethod
    def _text_field(text: str, scrubber, opts, row, pii) -> None:
        if not text or opts.shape:
            return
        sc = scrubber.scrub_text(text)
        add_counts(pii, sc.counts)
        t = sc.text
        if len(t) > opts.body_cap:
            t = t[: opts.body_cap]
            row["body_truncated"] = True
        row["response_text"] = t

    def _response_body_fields(self, raw, enc, ct, api, scrubber, opts, row, errors, pii) -> None:
        body = raw
        if raw and enc and enc.strip().lower() != "identity":
            try:
                body = decode_body(raw, enc)
            except ValueError as e:
                errors.append(f"response body: {e}")
                return
        if not body:
            return
        if ("json" in ct or body[:1] == b"{") and deeper_than(body, opts.json_depth_cap):
            errors.append(f"response body: JSON nested deeper than {opts.json_depth_cap} levels: not parsed")
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
                self._response_json(obj, api, scrubber, opts, row, errors, pii)
                return
        if api is llmapi.EMBEDDING or opts.shape:
            return
        sb = scrubber.scrub_body(body, ct or None)
        add_counts(pii, sb.counts)
        text = sb.text
        if text is not None and len(text) > opts.body_cap:
            text = text[: opts.body_cap]
            row["body_truncated"] = True
        row["response_text"] = text

    def _response_json(self, obj, api, scrubber, opts, row, errors, pii) -> None:
        r = llmapi.Reply()
        (api if api is not llmapi.HTTP else llmapi.CHAT).reply(obj, r)  # an unknown route may still be OpenAI-shaped
        if api is not llmapi.HTTP or r.usage is not None:
            row["prompt_tokens"], row["completion_tokens"], row["cached_tokens"] = r.counts()
        if not row.get("model") and r.model:
            row["model"] = scrubber.scrub_text(r.model).text
        if r.error is not None and opts.shape:
            errors.append("upstream error")
        elif r.error is not None:
            m = scrubber.scrub_text(r.error[:ERROR_CAP])
            add_counts(pii, m.counts)
            errors.append(f"upstream error: {m.text}")
        if api is llmapi.EMBEDDING:
            return  # vectors are not kept
        if api is not llmapi.HTTP or isinstance(obj.get("choices"), list) and obj["choices"]:
            row["finish_reason"] = r.finish_reason[:64] if r.finish_reason else None
            self._text_field("".join(r.text), scrubber, opts, row, pii)
        elif not opts.shape:
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
