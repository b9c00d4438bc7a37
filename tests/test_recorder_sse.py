"""Content decoding of recorded streams (recorder.sse) and the event streams read from it (llmapi)."""

from __future__ import annotations

import json
import random
import zlib

import pytest

from shadowreplay.llmapi import CHAT, COMPLETION, SseFramer, StreamReader, event_fields, iter_events
from shadowreplay.recorder.sse import StreamDecoder, decode_body, gaps_ms


def _chat_stream(words: list[str], usage: bool = True) -> bytes:
    out = []
    for i, w in enumerate(words):
        delta = {"content": w}
        if i == 0:
            delta["role"] = "assistant"
        fr = "stop" if i == len(words) - 1 else None
        out.append({"model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": fr}]})
    if usage:
        out.append(
            {
                "choices": [],
                "usage": {"prompt_tokens": 11, "completion_tokens": len(words), "prompt_tokens_details": {"cached_tokens": 4}},
            }
        )
    return b"".join(f"data: {json.dumps(o)}\n\n".encode() for o in out) + b"data: [DONE]\n\n"


def _events(data: bytes, cuts: list[int]) -> list[tuple[bytes | None, bytes | None]]:
    """(event name, data) of every event, the bytes split at `cuts`."""
    f = SseFramer()
    out = []
    prev = 0
    for c in sorted(cuts) + [len(data)]:
        out += [event_fields(raw) for raw in iter_events(f.feed(data[prev:c]))]
        prev = c
    return out + [event_fields(raw) for raw in iter_events(f.close())]


def _read(parts: list[tuple[float, bytes]], api=CHAT) -> StreamReader:
    r = StreamReader(api)
    for t, p in parts:
        r.feed(p, t)
    r.close(99.0)
    return r


def test_events_are_the_same_for_any_chunking():
    data = _chat_stream(["Hel", "lo", " wörld"])
    whole = [d for _, d in _events(data, [])]
    rng = random.Random(7)
    for _ in range(200):
        cuts = rng.sample(range(1, len(data)), k=rng.randint(1, 12))
        assert [d for _, d in _events(data, cuts)] == whole
    assert len(whole) == 5 and whole[-1] == b"[DONE]"


def test_crlf_cr_comments_multiline_and_event_names():
    f = SseFramer()
    assert f.feed(b": keep-alive\r\nevent: x\r\ndata: a\r\ndata: b\r") == b""
    block = f.feed(b"\n\r\ndata: c\r\rdata:d")  # CRLF split across chunks
    assert [event_fields(r) for r in iter_events(block)] == [(b"x", b"a\nb"), (None, b"c")]
    assert [event_fields(r) for r in iter_events(f.close())] == [(None, b"d")]


def test_event_time_is_the_chunk_that_completed_it():
    r = _read([(1.0, b'data: {"choices":[{"index":0,"text":'), (2.5, b' "x"}]}\n\n')])
    assert r.token_times == [2.5] and r.first_data_t == 2.5


def test_invalid_utf8_is_flagged_not_raised():
    r = _read([(1.0, b'data: {"choices":[{"index":0,"text":"\xff\xfe ok"}]}\n\n')])
    assert r.invalid_utf8 and "".join(r.reply.text).endswith(" ok")


def test_summary_chat_text_usage_finish_and_token_times():
    data = _chat_stream(["Hel", "lo", " there"])
    # one event per chunk, at t = 10, 11, 12, ...
    r = _read([(10.0 + i, part + b"\n\n") for i, part in enumerate(data.split(b"\n\n")[:-1])])
    s = r.reply
    assert "".join(s.text) == "Hello there"
    assert s.finish_reason == "stop"
    assert s.counts() == (11, 3, 4)
    assert s.done and r.data_events == 4  # 3 tokens + usage chunk, [DONE] excluded
    assert r.token_times == [10.0, 11.0, 12.0]
    assert gaps_ms(r.token_times) == [1000.0, 1000.0]


def test_summary_completion_and_role_only_first_chunk():
    r = _read([
        (1.0, b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'),
        (2.0, b'data: {"choices":[{"index":0,"text":"abc","finish_reason":"length"}]}\n\n'),
        (3.0, b"data: not json\n\n"),
    ], COMPLETION)
    s = r.reply
    assert "".join(s.text) == "abc" and r.token_times == [2.0] and r.first_data_t == 1.0
    assert r.malformed_events == 1 and not s.done and s.finish_reason == "length"


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_stream_decoder_keeps_chunk_boundaries(enc):
    data = _chat_stream(["a", "b", "c"])
    parts = data.split(b"\n\n")[:-1]
    if enc == "gzip":
        c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        comp = [c.compress(x + b"\n\n") + c.flush(zlib.Z_SYNC_FLUSH) for x in parts]
    elif enc == "deflate":
        c = zlib.compressobj()
        comp = [c.compress(x + b"\n\n") + c.flush(zlib.Z_SYNC_FLUSH) for x in parts]
    elif enc == "br":
        import brotli

        c = brotli.Compressor()
        comp = [c.process(x + b"\n\n") + c.flush() for x in parts]
    else:
        from backports import zstd

        c = zstd.ZstdCompressor()
        comp = [c.compress(x + b"\n\n", mode=zstd.ZstdCompressor.FLUSH_BLOCK) for x in parts]
    d = StreamDecoder(enc)
    r = _read([(float(i), d.decode(chunk)) for i, chunk in enumerate(comp)])
    assert r.token_times == [0.0, 1.0, 2.0] and r.last_data_t == 3.0  # the usage event
    assert "".join(r.reply.text) == "abc"


def test_decode_body_errors_do_not_echo_the_body():
    with pytest.raises(ValueError) as ei:
        decode_body(b"secret-payload-not-gzip", "gzip")
    assert "secret" not in str(ei.value)
    with pytest.raises(ValueError):
        decode_body(b"x", "rot13")


def _bomb(enc: str, size: int) -> bytes:
    """`size` zero bytes compressed: a few kB that decode to megabytes."""
    zeros = bytes(size)
    if enc == "gzip":
        return zlib.compress(zeros, 9, wbits=16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.compress(zeros, 9)
    if enc == "br":
        import brotli

        return brotli.compress(zeros)
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        from backports import zstd
    return zstd.compress(zeros)


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br", "zstd"])
def test_decompression_bombs_stop_at_the_limit(enc):
    import tracemalloc

    from shadowreplay.recorder.sse import DecodedTooLarge

    bomb = _bomb(enc, 64 << 20)
    assert len(bomb) < 300_000
    tracemalloc.start()
    with pytest.raises(DecodedTooLarge, match=f"decoded {enc} body over 1048576 bytes"):
        decode_body(bomb, enc, limit=1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20  # the whole 64 MiB never existed in memory
    # under the limit, the same body decodes
    assert decode_body(_bomb(enc, 1000), enc, limit=1 << 20) == bytes(1000)
    # a stream decoded chunk by chunk stops at the limit too
    d = StreamDecoder(enc, limit=1 << 20)
    with pytest.raises(DecodedTooLarge):
        for i in range(0, len(bomb), 1000):
            d.decode(bomb[i : i + 1000])
    assert d.produced <= (1 << 20) + 1 if enc != "br" else d.produced < 4 << 20  # brotli: one buffer step over
