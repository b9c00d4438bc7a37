"""`--keep shape` rows (recorder/shape.py via HttpExchange.to_row): no text, right lengths and
structure, prefix-block hash ids that are shared exactly as the prompts' prefixes are."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from shadowreplay.anonymize import Scrubber
from shadowreplay.recorder import shape
from shadowreplay.recorder.exchange import HttpExchange, RowOptions
from shadowreplay.schema import REQUESTS_SCHEMA

KEY = b"shape-test-key-0123456789abcdef"
SHAPE = RowOptions(keep="shape")
EMAIL = "eleanor.whitfield@example.org"
NAME = "Eleanor Whitfield-Barnes"
SYSTEM = "You are the support assistant of Acme Rockets. Answer briefly and politely. " * 4


def chat(user: str, system: str = SYSTEM, **kw) -> dict:
    return {"model": "llama", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}], **kw}


def ex(body: dict | bytes, path="/v1/chat/completions?user=" + EMAIL, **kw) -> HttpExchange:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    h = [("content-type", "application/json"), ("user-agent", f"app/1.0 ({EMAIL})"), ("x-customer", NAME),
         ("authorization", "Bearer sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c")]
    return HttpExchange(request_id="r1", ts_start=1000.0, client_addr="10.1.2.3", method="POST", scheme="http",
                        host="gw", port=80, path=path, request_headers=h, request_body=raw, status=200, **kw)


def sse(*payloads: str) -> list[tuple[float, bytes]]:
    return [(1000.1 + i * 0.01, f"data: {p}\n\n".encode()) for i, p in enumerate(payloads)]


def streamed(body: dict, reply: str = f"Sure {NAME}, I wrote to {EMAIL}.") -> HttpExchange:
    chunks = sse(
        json.dumps({"model": "llama", "choices": [{"index": 0, "delta": {"content": reply}}]}),
        '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
        '{"choices":[],"usage":{"prompt_tokens":41,"completion_tokens":12}}',
        "[DONE]",
    )
    return ex(body, response_headers=[("content-type", "text/event-stream")], streamed=True, chunks=chunks,
              stream_bytes=sum(len(c) for _, c in chunks), ts_end=1000.2)


def all_text(row: dict) -> str:
    """Every value of a row as one string (what a file could reveal)."""
    return json.dumps({k: v for k, v in row.items()}, default=str, ensure_ascii=False)


def test_shape_row_keeps_no_text_and_right_lengths():
    user = f"My name is {NAME}, mail {EMAIL}. Why is my rocket order 7781 late?"
    body = chat(user, stream=True, max_tokens=64)
    row = streamed(body).to_row(Scrubber(KEY), SHAPE)
    text = all_text(row)
    for planted in (NAME, "Eleanor", "Whitfield", EMAIL, "rocket order", "Acme", "support assistant", "Sure", "sk-live",
                    "app/1.0", "wrote to"):
        assert planted not in text, planted
    assert row["request_body"] is None and row["response_text"] is None and row["user_agent"] is None
    assert row["path"] == "/v1/chat/completions"
    assert json.loads(row["request_headers"]) == {"authorization": "", "content-type": "application/json",
                                                  "user-agent": "", "x-customer": ""}
    assert row["prompt_chars"] == len(SYSTEM) + len(user)
    assert (row["prompt_tokens"], row["completion_tokens"], row["max_tokens"]) == (41, 12, 64)
    assert row["stream"] is True and row["finish_reason"] == "stop" and row["ttft_ms"] == pytest.approx(100.0, abs=0.01)
    assert row["error"] is None and row["pii_counts"] is None
    assert len(row["hash_ids"]) == -(-row["prompt_chars"] // shape.BLOCK_CHARS)
    assert row["hash_block_chars"] == shape.BLOCK_CHARS
    assert row["language"] == "en" and row["content_type"] == "text"
    ms = json.loads(row["message_shape"])
    assert ms == {"messages": [{"role": "system", "chars": len(SYSTEM), "parts": ["text"]},
                               {"role": "user", "chars": len(user), "parts": ["text"]}]}
    # the row fits the schema's types
    pa.Table.from_pylist([row], schema=REQUESTS_SCHEMA)


def test_text_mode_unchanged_has_no_shape_columns():
    row = streamed(chat("hello")).to_row(Scrubber(KEY), RowOptions())
    assert row["request_body"] is not None and row["response_text"]
    assert row["hash_ids"] is None and row["message_shape"] is None and row["language"] is None


def test_structure_roles_parts_and_keyed_tool_names():
    body = {"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "lookup_eleanor", "arguments": json.dumps({"name": NAME})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"customer": NAME, "email": EMAIL})},
        {"role": "Eleanor", "content": "x"},
    ], "tools": [{"type": "function", "function": {"name": "lookup_eleanor", "parameters": {}}}]}
    row = ex(body).to_row(Scrubber(KEY), SHAPE)
    assert "lookup_eleanor" not in all_text(row) and NAME not in all_text(row) and "Eleanor" not in all_text(row)
    ms = json.loads(row["message_shape"])
    roles = [m["role"] for m in ms["messages"]]
    assert roles == ["user", "assistant", "tool", "other"]
    assert ms["messages"][0]["parts"] == ["text", "image_url"]
    tool = ms["messages"][1]["tool_calls"][0]
    assert tool.startswith("t_") and ms["tools"] == [tool]  # the same name gives the same keyed id
    other = ex(body).to_row(Scrubber(b"another-key-0123456789abcdefgh"), SHAPE)
    assert json.loads(other["message_shape"])["tools"] != [tool]


def test_equal_prefixes_equal_leading_ids_only():
    s = Scrubber(KEY)
    a = shape.block_hash_ids(s, SYSTEM + "first question about order 1")
    b = shape.block_hash_ids(s, SYSTEM + "second, different question")
    shared = len(SYSTEM) // shape.BLOCK_CHARS  # full blocks inside the common prefix
    assert a[:shared] == b[:shared]
    assert not set(a[shared:]) & set(b[shared:])
    assert len(set(a)) == len(a)  # a repeated block text at another position gets another id
    c = shape.block_hash_ids(s, "x" + SYSTEM)  # shifted: nothing shared
    assert not set(c) & set(a)
    assert all(0 <= h < 1 << 63 for h in a + b + c)


def test_different_keys_different_hashes():
    text = SYSTEM + "question"
    a = shape.block_hash_ids(Scrubber(KEY), text)
    b = shape.block_hash_ids(Scrubber(b"another-key-0123456789abcdefgh"), text)
    assert len(a) == len(b) and not set(a) & set(b)
    assert shape.block_hash_ids(Scrubber(KEY), text) == a  # deterministic under one key


@pytest.mark.parametrize("text,lang,ctype", [
    ("Please tell me what the weather is like in the city today.", "en", "text"),
    ("Bonjour, pourriez-vous m'aider avec ma commande numéro douze?", "latin", "text"),
    ("请问我的订单什么时候发货？谢谢你的帮助。", "zh", "text"),
    ("注文はいつ届きますか？ありがとうございます。", "ja", "text"),
    ("Здравствуйте, где мой заказ?", "ru", "text"),
    ('{"customer": "x", "items": [1, 2, 3]}', "latin", "json"),
    ("def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n", None, "code"),
    ("function f(a) {\n  const b = a + 1;\n  return b;\n}\n", None, "code"),
])
def test_language_and_content_type(text, lang, ctype):
    if lang is not None:  # code: its language is whatever its identifiers are
        assert shape.language(text) == lang
    assert shape.content_type(text) == ctype


def test_errors_quote_no_content():
    body = chat(f"hi {NAME}")
    e = ex(body, response_body=json.dumps({"error": {"message": f"user {NAME} ({EMAIL}) is blocked"}}).encode(),
           response_headers=[("content-type", "application/json")])
    e.status = 400
    e.error = f"proxy: client {EMAIL} disconnected"
    row = e.to_row(Scrubber(KEY), SHAPE)
    assert NAME not in all_text(row) and EMAIL not in all_text(row) and "blocked" not in all_text(row)
    assert row["error"].startswith("proxy error") and "upstream error" in row["error"]


def test_completion_prompt_lists():
    body = {"model": "m", "prompt": ["alpha beta", "gamma"], "max_tokens": 3}
    row = ex(body, path="/v1/completions").to_row(Scrubber(KEY), SHAPE)
    assert json.loads(row["message_shape"]) == {"prompt": [10, 5]}
    assert row["prompt_chars"] == 15 and len(row["hash_ids"]) == 1 and "alpha" not in all_text(row)


def test_grpc_rows_keep_sizes_and_times_only(scrub_key):
    from shadowreplay.recorder.grpc_exchange import GrpcExchange
    from shadowreplay.recorder.grpc_frames import GrpcFrameParser, encode_frame

    p = GrpcFrameParser()
    req = p.feed(encode_frame(f"prompt: write to {EMAIL} about {NAME}".encode(), False), 1000.01)
    resp = GrpcFrameParser().feed(encode_frame(b"reply text for Eleanor", False), 1000.05)
    ex = GrpcExchange(request_id="g1", ts_start=1000.0, method="POST", scheme="http", host="llm", port=50051,
                      path="/llm.Llm/Generate?user=" + EMAIL,
                      request_headers=[("content-type", "application/grpc"), ("user-agent", f"grpc ({EMAIL})"),
                                       ("x-customer", NAME)],
                      status=200, ts_response_headers=1000.005, response_headers=[("content-type", "application/grpc")],
                      ts_end=1000.2, request_frames=req, response_frames=resp,
                      trailers=[("grpc-status", "5"), ("grpc-message", f"user {NAME} not found")])
    row = ex.to_row(Scrubber(scrub_key), SHAPE)
    text = all_text(row)
    assert EMAIL not in text and "Eleanor" not in text and "not found" not in text and "reply text" not in text
    assert [m["data"] for m in row["grpc_messages"]] == [None, None]
    assert [m["size"] for m in row["grpc_messages"]] == [len(f"prompt: write to {EMAIL} about {NAME}"), 22]
    assert json.loads(row["grpc_trailers"]) == {"grpc-message": "", "grpc-status": "5"}
    assert row["error"] == "grpc NOT_FOUND" and row["grpc_status"] == 5 and row["path"] == "/llm.Llm/Generate"


def test_cli_keep_flag_reaches_mitmdump():
    import argparse

    from shadowreplay.recorder import cli

    ap = argparse.ArgumentParser()
    cli.register(ap.add_subparsers())
    base = ["record", "--upstream", "http://127.0.0.1:1", "--out", "/tmp/x"]
    assert "shadowreplay_keep=shape" in cli.build_command(ap.parse_args([*base, "--keep", "shape"]))
    assert "shadowreplay_keep=text" in cli.build_command(ap.parse_args(base))
    with pytest.raises(SystemExit):
        ap.parse_args([*base, "--keep", "nothing"])
