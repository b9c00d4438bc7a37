"""GrpcExchange.to_row with the real Scrubber (no proxy): the row conventions and the bad cases
that are hard to provoke through a real client (odd codecs, truncated streams, binary metadata)."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import pytest

from shadowreplay.anonymize import Scrubber
from shadowreplay.recorder.exchange import RowOptions
from shadowreplay.recorder.grpc_exchange import GrpcExchange
from shadowreplay.recorder.grpc_frames import GrpcFrameParser, encode_frame
from shadowreplay.recorder.h2c import H2_PREFACE, starts_like_h2c
from shadowreplay.dataset import rows_to_table
from shadowreplay.schema import REQUESTS
from tests.grpc_llm_server import load_protos

T0 = 1_790_000_000.0


@pytest.fixture(scope="module")
def pb2():
    return load_protos()[0]


@pytest.fixture
def scrubber(scrub_key):
    return Scrubber(scrub_key)


def frames(*payloads: bytes, compressed=False, t=T0 + 0.01, step=0.01):
    p = GrpcFrameParser()
    out = []
    for i, x in enumerate(payloads):
        out += p.feed(encode_frame(x, compressed), t + i * step)
    return out


def exchange(**kw) -> GrpcExchange:
    base = dict(
        request_id="r1", ts_start=T0, client_addr="10.0.0.7", method="POST", scheme="http",
        host="llm.internal", port=50051, path="/llm.Llm/Generate",
        request_headers=[("content-type", "application/grpc"), ("authorization", "Bearer sk-secret-123"),
                         ("user-agent", "grpc-python/1.85")],
        status=200, ts_response_headers=T0 + 0.005, response_headers=[("content-type", "application/grpc")],
        ts_end=T0 + 0.2,
    )  # fmt: skip
    base.update(kw)
    return GrpcExchange(**base)


def test_row_fits_schema_and_hides_credentials(pb2, scrubber):
    req = pb2.GenerateRequest(prompt="contact me at eve.x@example.com", max_tokens=2).SerializeToString()
    resps = [pb2.GenerateResponse(text="a", index=i).SerializeToString() for i in range(3)]
    ex = exchange(
        request_frames=frames(req, t=T0 + 0.001),
        response_frames=frames(*resps, t=T0 + 0.05, step=0.02),
        trailers=[("grpc-status", "0"), ("grpc-message", "")],
    )
    row = ex.to_row(scrubber, RowOptions())
    rows_to_table([row], REQUESTS)  # every value fits the Arrow schema
    assert row["ttft_ms"] == pytest.approx(50, abs=0.01) and row["itl_ms"] == pytest.approx([20, 20], abs=0.01)
    assert row["e2e_ms"] == pytest.approx(200, abs=0.01) and row["chunks"] == 3
    assert (row["grpc_service"], row["grpc_method"], row["grpc_status"]) == ("llm.Llm", "Generate", 0)
    assert row["client_id"] == scrubber.client_id("sk-secret-123")
    assert "sk-secret-123" not in json.dumps(row, default=str)
    assert "eve.x@example.com" not in repr(row)
    assert row.get("error") is None
    assert [m["t_ms"] for m in row["grpc_messages"]] == pytest.approx([1, 50, 70, 90], abs=0.01)


def test_trailers_only_error_response(scrubber):
    ex = exchange(
        response_headers=[("content-type", "application/grpc"), ("grpc-status", "5"),
                          ("grpc-message", "user%20ann.lee@example.com%20not%20found")],
    )  # fmt: skip
    row = ex.to_row(scrubber, RowOptions())
    assert row["grpc_status"] == 5 and row["error"].startswith("grpc NOT_FOUND: user ")
    t = json.loads(row["grpc_trailers"])
    assert t["grpc-status"] == "5" and t["grpc-message"].endswith(" not found")
    assert "ann.lee@example.com" not in row["error"] + row["grpc_trailers"]
    assert row["ttft_ms"] is None and row["itl_ms"] == []


def test_missing_status_and_truncated_stream_are_errors(scrubber):
    row = exchange(trailers=[], errors=["response: gRPC stream ended inside a message (9 bytes of it seen)"]).to_row(
        scrubber, RowOptions()
    )
    assert row["grpc_status"] is None and "ended inside a message" in row["error"]
    row = exchange(trailers=[]).to_row(scrubber, RowOptions())
    assert row["error"] == "grpc: no grpc-status in trailers"


def test_compressed_messages(pb2, scrubber):
    msg = pb2.CountRequest(text="mail bo.b@example.com please").SerializeToString()
    for enc, data in (("gzip", gzip.compress(msg)), ("deflate", zlib.compress(msg))):
        ex = exchange(
            request_headers=[("content-type", "application/grpc"), ("grpc-encoding", enc)],
            request_frames=frames(data, compressed=True),
            trailers=[("grpc-status", "0")],
        )
        m = ex.to_row(scrubber, RowOptions())["grpc_messages"][0]
        assert m["compressed"] and m["size"] == len(data)
        out = pb2.CountRequest.FromString(m["data"])
        assert len(out.text) == len("mail bo.b@example.com please") and "bo.b@example.com" not in out.text


def test_unknown_codec_or_corrupt_payload_is_not_kept(scrubber):
    secret = b"\x0a\x11carol@example.com"
    for enc, data in (("snappy", secret), ("gzip", b"not gzip " + secret)):
        ex = exchange(
            request_headers=[("content-type", "application/grpc"), ("grpc-encoding", enc)],
            request_frames=frames(data, compressed=True),
            trailers=[("grpc-status", "0")],
        )
        row = ex.to_row(scrubber, RowOptions())
        assert row["grpc_messages"][0]["data"] is None and row["body_truncated"] is True
        assert "not kept" in row["error"] and b"carol" not in repr(row).encode()


def test_gzip_bomb_is_bounded(scrubber):
    bomb = gzip.compress(b"\x00" * (5 << 20))
    ex = exchange(
        request_headers=[("content-type", "application/grpc"), ("grpc-encoding", "gzip")],
        request_frames=frames(bomb, compressed=True),
        trailers=[("grpc-status", "0")],
    )
    row = ex.to_row(scrubber, RowOptions(stream_cap=1 << 20))
    assert row["grpc_messages"][0]["data"] is None and "over" in row["error"]


def test_binary_metadata_is_scrubbed_as_protobuf(scrubber):
    # google.rpc.Status {code=5, message="..."} as grpc-status-details-bin
    status = b"\x08\x05\x12\x1cno account for dan@example.org"
    b64 = base64.b64encode(status).decode().rstrip("=")
    row = exchange(trailers=[("grpc-status", "5"), ("grpc-status-details-bin", b64)]).to_row(scrubber, RowOptions())
    v = json.loads(row["grpc_trailers"])["grpc-status-details-bin"]
    raw = base64.b64decode(v + "=" * (-len(v) % 4))
    assert raw[:4] == status[:4] and len(raw) == len(status) and b"dan@example.org" not in raw


def test_over_keep_limit_message_counted_not_kept(scrubber):
    p = GrpcFrameParser(max_keep=4)
    fr = p.feed(encode_frame(b"\x0a\x05hello"), T0 + 0.01)
    row = exchange(request_frames=fr, trailers=[("grpc-status", "0")]).to_row(scrubber, RowOptions())
    m = row["grpc_messages"][0]
    assert m["data"] is None and m["size"] == 7 and row["body_truncated"] is True


def test_h2c_preface_detection():
    assert starts_like_h2c(H2_PREFACE + b"\x00\x00") is True
    assert starts_like_h2c(b"PRI * HT") is None  # wait for more bytes
    assert starts_like_h2c(b"P") is None
    assert starts_like_h2c(b"POST / HTTP/1.1\r\n") is False
    assert starts_like_h2c(b"\x16\x03\x01") is False  # TLS ClientHello
