"""HttpExchange.to_row with the real scrubber: fields, errors, privacy."""

from __future__ import annotations

import gzip
import json

import pytest

from shadowreplay.anonymize import Scrubber
from shadowreplay import llmapi
from shadowreplay.jsondepth import JSON_DEPTH_CAP, deeper_than
from shadowreplay.recorder.exchange import HttpExchange, RowOptions, credential

KEY = b"unit-test-key-0123456789abcdef"
EMAIL = "maria.gonzalez@example.org"
API_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


@pytest.fixture
def scrubber() -> Scrubber:
    return Scrubber(KEY)


def chat_body(content: str, **kw) -> bytes:
    return json.dumps({"model": "llama", "messages": [{"role": "user", "content": content}], **kw}).encode()


def ex(body: bytes | None, path="/v1/chat/completions", headers=None, **kw) -> HttpExchange:
    h = [("content-type", "application/json"), ("user-agent", "pytest")] + list(headers or [])
    return HttpExchange(
        request_id="r1", ts_start=1000.0, client_addr="10.1.2.3", method="POST", scheme="http",
        host="gw", port=80, path=path, request_headers=h, request_body=body, status=200, **kw
    )


def sse(*payloads: str) -> list[tuple[float, bytes]]:
    return [(1000.1 + i * 0.01, f"data: {p}\n\n".encode()) for i, p in enumerate(payloads)]


def test_streamed_chat_row(scrubber):
    chunks = sse(
        '{"model":"llama","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi "}}]}',
        '{"choices":[{"index":0,"delta":{"content":"there"},"finish_reason":"stop"}]}',
        '{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8}}}',
        "[DONE]",
    )
    e = ex(chat_body("hello", stream=True, max_completion_tokens=7), response_headers=[("content-type", "text/event-stream")],
           streamed=True, chunks=chunks, stream_bytes=sum(len(c) for _, c in chunks), ts_end=1000.2)
    row = e.to_row(scrubber, RowOptions())
    assert row["kind"] == "chat" and row["protocol"] == "http/1.1" and row["stream"] is True
    assert row["max_tokens"] == 7 and row["model"] == "llama"
    assert row["response_text"] == "Hi there" and row["finish_reason"] == "stop"
    assert (row["prompt_tokens"], row["completion_tokens"], row["cached_tokens"]) == (9, 2, 8)
    assert row["ttft_ms"] == pytest.approx(100.0, abs=0.01)
    assert row["itl_ms"] == pytest.approx([10.0], abs=0.01)
    assert row["chunks"] == 3 and row["error"] is None
    assert row["ts_start"] <= row["ts_first_byte"] <= row["ts_end"]
    assert row["e2e_ms"] == pytest.approx(200.0, abs=0.01)
    assert row["prompt_chars"] == 5


def test_prefix_hash_depends_on_first_n_chars_only(scrubber):
    opts = RowOptions(prefix_chars=10)
    a = ex(chat_body("0123456789 tail one")).to_row(scrubber, opts)
    b = ex(chat_body("0123456789 other tail")).to_row(scrubber, opts)
    c = ex(chat_body("X123456789 tail one")).to_row(scrubber, opts)
    assert a["prefix_hash"] == b["prefix_hash"] != c["prefix_hash"]
    assert a["prefix_hash"] == scrubber.keyed_hash("0123456789")


def test_client_id_from_api_key_else_address_and_key_never_stored(scrubber):
    with_key = ex(chat_body("x"), headers=[("authorization", f"Bearer {API_KEY}")]).to_row(scrubber, RowOptions())
    with_xkey = ex(chat_body("x"), headers=[("x-api-key", API_KEY)]).to_row(scrubber, RowOptions())
    no_key = ex(chat_body("x")).to_row(scrubber, RowOptions())
    assert with_key["client_id"] == with_xkey["client_id"] == scrubber.client_id(API_KEY)
    assert no_key["client_id"] == scrubber.client_id("10.1.2.3")
    for row in (with_key, with_xkey):
        assert API_KEY not in json.dumps(row, default=str)
        assert API_KEY[8:20] not in json.dumps(row, default=str)


def test_pii_scrubbed_in_body_and_response(scrubber):
    body = chat_body(f"mail me at {EMAIL}")
    resp = json.dumps({"choices": [{"index": 0, "message": {"content": f"sure, {EMAIL}"}, "finish_reason": "stop"}]}).encode()
    row = ex(body, response_headers=[("content-type", "application/json")], response_body=resp).to_row(scrubber, RowOptions())
    dump = json.dumps(row, default=str)
    assert EMAIL not in dump
    assert row["pii_counts"]["email"] >= 2
    assert row["response_text"].startswith("sure, ") and row["prompt_chars"] == len(f"mail me at {EMAIL}")


def test_malformed_json_non_utf8_gzip_and_cap(scrubber):
    r = ex(b'{"model": "x", "messages": [').to_row(scrubber, RowOptions())
    assert "malformed JSON" in r["error"] and r["request_body"] is not None
    r = ex(b'{"model": "\xff\xfe"}').to_row(scrubber, RowOptions())
    assert "not UTF-8" in r["error"]
    gz = gzip.compress(chat_body(f"zip {EMAIL}"))
    r = ex(gz, headers=[("content-encoding", "gzip")]).to_row(scrubber, RowOptions())
    assert r["error"] is None and r["model"] == "llama" and EMAIL not in r["request_body"] and "zip" in r["request_body"]
    r = ex(b"\x1f\x8bnot really gzip", headers=[("content-encoding", "gzip")]).to_row(scrubber, RowOptions())
    assert "cannot decode content-encoding gzip" in r["error"]
    big = chat_body("word " * 500)
    r = ex(big).to_row(scrubber, RowOptions(body_cap=100))
    assert r["body_truncated"] is True and "over cap" in r["error"] and len(r["request_body"]) == 100
    assert r["prompt_chars"] == len("word " * 500)  # metadata still from the whole body


def test_proxy_error_and_incomplete_stream(scrubber):
    chunks = sse('{"choices":[{"index":0,"delta":{"content":"par"}}]}')
    e = ex(chat_body("x", stream=True), response_headers=[("content-type", "text/event-stream")], streamed=True,
           chunks=chunks, stream_bytes=10, error="proxy: Client disconnected.", ts_end=1000.5)
    r = e.to_row(scrubber, RowOptions())
    assert r["error"].startswith("proxy: Client disconnected") and r["response_text"] == "par"
    e = ex(chat_body("x", stream=True), response_headers=[("content-type", "text/event-stream")], streamed=True,
           chunks=chunks, stream_bytes=10, ts_end=1000.5)
    assert "without [DONE]" in e.to_row(scrubber, RowOptions())["error"]


def test_client_gone_after_the_streams_final_event_is_no_error(scrubber):
    # The official SDKs close as soon as they read [DONE] / message_stop, which can reach the
    # proxy before the upstream's end of body does.
    chunks = sse('{"choices":[{"index":0,"delta":{"content":"all"},"finish_reason":"stop"}]}', "[DONE]")
    e = ex(chat_body("x", stream=True), response_headers=[("content-type", "text/event-stream")], streamed=True,
           chunks=chunks, stream_bytes=20, error="proxy: Client disconnected.", ts_end=1003.0)
    r = e.to_row(scrubber, RowOptions())
    assert r["error"] is None and r["response_text"] == "all" and r["finish_reason"] == "stop"
    assert r["e2e_ms"] == pytest.approx(110, abs=0.5)  # ends at the last event, not at the disconnect
    upstream = ex(chat_body("x", stream=True), response_headers=[("content-type", "text/event-stream")],
                  streamed=True, chunks=chunks, stream_bytes=20, error="proxy: server closed connection", ts_end=1003.0)
    assert upstream.to_row(scrubber, RowOptions())["error"].startswith("proxy: server closed")


def test_embedding_vectors_not_kept(scrubber):
    body = json.dumps({"model": "e", "input": ["a b", "c"]}).encode()
    resp = json.dumps({"data": [{"embedding": [0.5] * 4}], "usage": {"prompt_tokens": 3}}).encode()
    r = ex(body, path="/v1/embeddings", response_headers=[("content-type", "application/json")], response_body=resp).to_row(
        scrubber, RowOptions()
    )
    assert r["kind"] == "embedding" and r["response_text"] is None and r["prompt_tokens"] == 3 and r["prompt_chars"] == 4


def test_helpers():
    kind = lambda p: llmapi.api_for_path(p).kind  # noqa: E731
    assert kind("/v1/chat/completions?x=1") == "chat"
    assert kind("/v1/completions") == "completion"
    assert kind("/v1/embeddings") == "embedding"
    assert kind("/v1/responses/") == "responses" and kind("/v1/messages?beta=true") == "messages"
    assert kind("/v1/responses/resp_1") == "http" and kind("/v1/messages/count_tokens") == "http"
    assert kind("/health") == "http"
    assert credential([("Authorization", "Bearer abc")]) == "abc"
    assert credential([("X-Api-Key", "k")]) == "k"
    assert credential([]) is None
    msgs = {"messages": [{"content": "a"}, {"content": [{"type": "text", "text": "b"}, {"type": "image_url"}]}]}
    assert llmapi.prompt_text(llmapi.CHAT, msgs) == "ab"
    assert llmapi.prompt_text(llmapi.COMPLETION, {"prompt": [1, 2, 3]}) is None


def test_a_gzip_bomb_request_body_is_recorded_as_an_error(scrubber):
    bomb = gzip.compress(bytes(80 << 20), 9)  # 80 MiB of zeros in ~80 kB
    r = ex(bomb, headers=[("content-encoding", "gzip")]).to_row(scrubber, RowOptions())
    assert "request body: decoded gzip body over" in r["error"]
    assert r["request_body"] is None and r["request_bytes"] == len(bomb)


@pytest.mark.parametrize("depth", [JSON_DEPTH_CAP + 1, 5000, 300_000])
def test_json_nested_over_the_cap_is_not_parsed_and_the_row_says_so(scrubber, depth):
    nest = "[" * depth + json.dumps({"email": EMAIL}) + "]" * depth
    body = chat_body("hi " + EMAIL)[:-1] + b', "x": ' + nest.encode() + b"}"
    deep_reply = ("[" * depth + '"' + EMAIL + '"' + "]" * depth).encode()
    e = ex(body, response_headers=[("content-type", "application/json")], response_body=deep_reply, ts_end=1000.2)
    row = e.to_row(scrubber, RowOptions())
    assert f"request body: JSON nested deeper than {JSON_DEPTH_CAP} levels: not parsed" in row["error"]
    assert f"response body: JSON nested deeper than {JSON_DEPTH_CAP} levels: not parsed" in row["error"]
    assert row["kind"] == "chat" and row["model"] is None  # not parsed: nothing taken from it
    assert row["request_body"] and EMAIL not in row["request_body"]  # kept, scrubbed as text
    assert EMAIL not in json.dumps({k: v for k, v in row.items() if isinstance(v, str)})


def test_json_at_the_cap_is_parsed(scrubber):
    nest = "[" * (JSON_DEPTH_CAP - 1) + "1" + "]" * (JSON_DEPTH_CAP - 1)  # the body's object is one level
    body = chat_body("hi")[:-1] + b', "x": ' + nest.encode() + b"}"
    row = ex(body).to_row(scrubber, RowOptions())
    assert row["error"] is None and row["model"] == "llama"


@pytest.mark.parametrize("text,depth", [
    (b'{"a": "[[[[[[[[[[", "b": [1, {"c": []}]}', 4),  # brackets inside strings do not count
    (b'{"a": "\\"[[[[[[[[[[\\"", "b": []}', 2),  # nor after escaped quotes
    (b"[" * 10 + b"]" * 10 + b"[[[]]]", 10),  # depth, not the number of brackets
])
def test_deeper_than_counts_nesting_only(text, depth):
    assert not deeper_than(text, depth) and deeper_than(text, depth - 1)
