"""Pure tests of the gRPC frame parser and status/trailer parsing."""

from __future__ import annotations

import random

from shadowreplay.recorder.grpc_frames import (
    GrpcFrameParser,
    encode_frame,
    is_grpc_content_type,
    parse_status,
    split_path,
)


def test_frames_split_across_chunks_at_every_offset():
    payloads = [b"", b"a", b"hello world" * 10, bytes(range(256))]
    wire = b"".join(encode_frame(p, compressed=(i == 2)) for i, p in enumerate(payloads))
    for cut in range(len(wire) + 1):
        p = GrpcFrameParser()
        got = p.feed(wire[:cut], 1.0) + p.feed(wire[cut:], 2.0)
        assert [f.data for f in got] == payloads
        assert [f.compressed for f in got] == [False, False, True, False]
        assert [f.size for f in got] == [len(x) for x in payloads]
        assert p.finish() is None
        assert p.bytes_seen == len(wire)


def test_frames_byte_by_byte_timestamps_are_completion_times():
    wire = encode_frame(b"abc") + encode_frame(b"defg")
    p = GrpcFrameParser()
    got = []
    for i, b in enumerate(wire):
        got += p.feed(bytes([b]), float(i))
    assert [f.data for f in got] == [b"abc", b"defg"]
    # a message is complete when its last byte arrives
    assert [f.t for f in got] == [7.0, float(len(wire) - 1)]


def test_frames_random_chunking():
    rng = random.Random(7)
    payloads = [rng.randbytes(rng.randrange(0, 3000)) for _ in range(50)]
    wire = b"".join(encode_frame(x) for x in payloads)
    p = GrpcFrameParser()
    got = []
    pos = 0
    while pos < len(wire):
        n = rng.randrange(1, 2000)
        got += p.feed(wire[pos : pos + n], 0.0)
        pos += n
    assert [f.data for f in got] == payloads


def test_frames_over_keep_limit_are_counted_not_kept():
    p = GrpcFrameParser(max_keep=10)
    got = p.feed(encode_frame(b"x" * 11) + encode_frame(b"small"), 0.0)
    assert [(f.size, f.data) for f in got] == [(11, None), (5, b"small")]


def test_truncated_stream_and_bad_flag():
    p = GrpcFrameParser()
    assert p.feed(encode_frame(b"abcdef")[:8], 0.0) == []
    assert p.pending == 8
    assert "ended inside a message" in p.finish()

    p = GrpcFrameParser()
    assert p.feed(b"\x07\x00\x00\x00\x01x", 0.0) == []
    assert "flag 0x07" in p.error
    assert p.feed(encode_frame(b"later"), 1.0) == []  # stops parsing, never raises
    assert p.finish() == p.error


def test_parse_status_trailers_win_and_message_is_percent_decoded():
    st = parse_status([("content-type", "application/grpc")], {"grpc-status": "5", "grpc-message": "no%20model%20%E2%9C%93"})
    assert (st.code, st.message, st.name) == (5, "no model ✓", "NOT_FOUND")
    assert parse_status(None, []).code is None
    assert parse_status([("grpc-status", "junk")]).code is None
    assert parse_status([("Grpc-Status", "0")]).name == "OK"


def test_split_path_and_content_type():
    assert split_path("/llm.Llm/Generate") == ("llm.Llm", "Generate")
    assert split_path("/vllm.grpc.engine.VllmEngine/Generate") == ("vllm.grpc.engine.VllmEngine", "Generate")
    assert split_path("/v1/chat/completions") == (None, None)
    assert split_path("/") == (None, None)
    assert is_grpc_content_type("application/grpc+proto")
    assert is_grpc_content_type("Application/GRPC")
    assert not is_grpc_content_type("application/json")
    assert not is_grpc_content_type(None)
