"""One gRPC call as it passed the proxy, and its conversion to one `requests` row.

Capture (GrpcRecorder's hooks) only appends parsed frames and timestamps; `to_row` runs in the
writer thread: decompression, protobuf scrubbing, header/trailer scrubbing, hashing.

Row conventions (docs/grpc.md): protocol = kind = 'grpc'; `grpc_messages.data` is each message's
payload without the 5-byte prefix, uncompressed, with its strings scrubbed (length prefixes
re-encoded); `ttft_ms` is the time to the first complete response message, `itl_ms` the gaps
between response messages, `chunks` the number of response messages.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import urllib.parse
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .exchange import (
    ERROR_CAP,
    REDACTED,
    SECRET_HEADERS,
    RowOptions,
    add_counts,
    credential,
    header,
    ms_between,
    ts,
)
from .grpc_frames import Frame, parse_status, split_path
from .protobuf_scrub import scrub_message
from .shape import grpc_shape

if TYPE_CHECKING:
    from shadowreplay.anonymize import Scrubber


class _Undecodable(ValueError):
    pass


def decompress(data: bytes, encoding: str | None, limit: int) -> bytes:
    """A compressed gRPC message payload -> its plain bytes (gzip, deflate), at most `limit`."""
    enc = (encoding or "identity").strip().lower()
    try:
        if enc == "gzip":
            out = gzip.GzipFile(fileobj=io.BytesIO(data)).read(limit + 1)
        elif enc == "deflate":
            d = zlib.decompressobj()
            out = d.decompress(data, limit + 1)
        else:
            raise _Undecodable(f"grpc-encoding {enc!r} not supported")
    except _Undecodable:
        raise
    except Exception as e:  # corrupt data: any codec error
        raise _Undecodable(f"grpc-encoding {enc}: {type(e).__name__}") from None
    if len(out) > limit:
        raise _Undecodable(f"decompressed message over {limit} bytes")
    return out


@dataclass
class GrpcExchange:
    request_id: str
    ts_start: float
    client_addr: str | None = None
    method: str | None = None
    scheme: str | None = None
    host: str | None = None
    port: int | None = None
    path: str | None = None
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    request_frames: list[Frame] = field(default_factory=list)
    request_bytes: int = 0
    # response
    status: int | None = None
    ts_response_headers: float | None = None
    ts_first_data: float | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_frames: list[Frame] = field(default_factory=list)
    response_bytes: int = 0
    trailers: list[tuple[str, str]] | None = None
    ts_end: float | None = None
    errors: list[str] = field(default_factory=list)  # proxy-side problems (stream errors, resets)

    # --- writer thread ---
    def to_row(self, scrubber: Scrubber, opts: RowOptions) -> dict[str, Any]:
        pii: dict[str, int] = {}
        errors = list(self.errors)
        service, method = split_path(self.path or "")

        def scrub(text: str) -> tuple[str, dict[str, int]]:
            r = scrubber.scrub_text(text)
            return r.text, r.counts

        def scrub_str(text: str | None) -> str | None:
            if text is None:
                return None
            t, c = scrub(text)
            add_counts(pii, c)
            return t

        row: dict[str, Any] = {
            "request_id": self.request_id,
            "ts_start": ts(self.ts_start),
            "ts_first_byte": ts(self.ts_first_data or self.ts_response_headers),
            "ts_end": ts(self.ts_end),
            "method": self.method,
            "scheme": self.scheme,
            "host": self.host,
            "port": self.port,
            "path": scrub_str(self.path),
            "status": self.status,
            "protocol": "grpc",
            "kind": "grpc",
            "grpc_service": scrub_str(service),
            "grpc_method": scrub_str(method),
            "user_agent": scrub_str(header(self.request_headers, "user-agent")),
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes if self.status is not None else None,
            "source": opts.source,
        }
        cred = credential(self.request_headers)
        row["client_id"] = scrubber.client_id(cred if cred else (self.client_addr or "unknown"))
        row["request_headers"] = self._headers_json(self.request_headers, scrubber, pii)

        # trailers; a trailers-only response (errors, mostly) carries them in its headers
        trailers = self.trailers
        if not trailers and header(self.response_headers, "grpc-status") is not None:
            trailers = [(k, v) for k, v in self.response_headers if k.lower().startswith("grpc-")]
        st = parse_status(self.response_headers, trailers)
        row["grpc_status"] = st.code
        if trailers is not None:
            row["grpc_trailers"] = self._headers_json(trailers, scrubber, pii)
        if st.code not in (None, 0):
            msg = scrub_str(st.message) if st.message and not opts.shape else None
            errors.append(f"grpc {st.name}" + (f": {msg}" if msg else ""))
        elif st.code is None and self.status is not None and self.ts_end is not None and not errors:
            errors.append("grpc: no grpc-status in trailers")

        messages = []
        truncated = False
        for direction, frames, hs in (
            ("request", self.request_frames, self.request_headers),
            ("response", self.response_frames, self.response_headers),
        ):
            encoding = header(hs, "grpc-encoding")
            for f in frames:
                data = None
                if f.data is None:
                    truncated = True
                else:
                    payload = f.data
                    try:
                        if f.compressed:
                            payload = decompress(payload, encoding, opts.stream_cap)
                        r = scrub_message(payload, scrub)
                        add_counts(pii, dict(r.counts))
                        data = r.data
                    except _Undecodable as e:
                        errors.append(f"{direction} message not kept: {e}")
                        truncated = True
                messages.append(
                    {
                        "direction": direction,
                        "t_ms": ms_between(self.ts_start, f.t),
                        "compressed": f.compressed,
                        "size": f.size,
                        "data": data,
                    }
                )
        row["grpc_messages"] = messages
        if truncated:
            row["body_truncated"] = True

        times = [f.t for f in self.response_frames]
        row["chunks"] = len(times)
        row["ttft_ms"] = ms_between(self.ts_start, times[0]) if times else None
        row["itl_ms"] = [round((b - a) * 1000.0, 3) for a, b in zip(times, times[1:])]
        row["e2e_ms"] = ms_between(self.ts_start, self.ts_end)
        row["pii_counts"] = pii or None
        if errors:
            row["error"] = "; ".join(dict.fromkeys(errors))[:ERROR_CAP]
        if opts.shape:
            grpc_shape(row, self.request_headers, trailers)
        return row

    @staticmethod
    def _headers_json(pairs: list[tuple[str, str]], scrubber: Scrubber, pii: dict[str, int]) -> str:
        kept = []
        for k, v in pairs:
            lk = k.lower()
            if lk in SECRET_HEADERS:
                v = REDACTED
            elif lk.endswith("-bin"):
                v = _scrub_bin_header(v, scrubber, pii)
            elif lk == "grpc-message":
                v = urllib.parse.unquote(v)  # percent-encoded on the wire: scrub the real text
            kept.append((k, v))
        hdrs, counts = scrubber.scrub_headers(kept)
        add_counts(pii, counts)
        return json.dumps(hdrs, ensure_ascii=False, sort_keys=True)


def _scrub_bin_header(value: str, scrubber: Scrubber, pii: dict[str, int]) -> str:
    """Binary metadata (`*-bin`, e.g. grpc-status-details-bin: a google.rpc.Status message) is
    base64 protobuf: scrub it as a message and re-encode."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=False)
    except ValueError:
        return REDACTED

    def scrub(text: str) -> tuple[str, dict[str, int]]:
        r = scrubber.scrub_text(text)
        return r.text, r.counts

    r = scrub_message(raw, scrub)
    add_counts(pii, dict(r.counts))
    return base64.b64encode(r.data).decode().rstrip("=")
