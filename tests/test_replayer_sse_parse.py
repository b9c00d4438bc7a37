"""Response-side parsing of the replayer's HTTP client (replayer/client.py Exchange): which SSE
events count as tokens and where usage comes from, however the bytes are split or framed."""

from __future__ import annotations

import json

import pytest

from replayer.client import Exchange

TOKEN_1 = {"choices": [{"index": 0, "text": "hello", "finish_reason": None}], "usage": None}
TOKEN_2 = {"choices": [{"index": 0, "delta": {"content": " world"}}], "usage": None}
ROLE_ONLY = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}], "usage": None}
USAGE = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def stream(events: list, *, sep: bytes = b"\n", space: bytes = b" ", split_lines: bool = False) -> bytes:
    out = b""
    for ev in events:
        if isinstance(ev, bytes):  # raw line(s), e.g. a comment
            out += ev + sep + sep
            continue
        text = json.dumps(ev, separators=(",", ":")).encode()
        if split_lines:  # one event's JSON over several data: lines (joined with \n by the reader)
            text = text.replace(b",", b",\n", 1)
            out += sep.join(b"data:" + space + line for line in text.split(b"\n")) + sep + sep
        else:
            out += b"data:" + space + text + sep + sep
    return out + b"data:" + space + b"[DONE]" + sep + sep


def feed(data: bytes, chunk: int | None) -> Exchange:
    done: list[Exchange] = []
    ex = Exchange(0, b"", done.append)
    ex.sse = True
    pieces = [data] if chunk is None else [data[i : i + chunk] for i in range(0, len(data), chunk)]
    for t, p in enumerate(pieces, start=1):
        ex.body(p, t)
    ex.finish(10_000)
    assert done == [ex]
    return ex


@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
@pytest.mark.parametrize("framing", [
    {}, {"sep": b"\r\n"}, {"sep": b"\r"}, {"space": b""}, {"split_lines": True}, {"sep": b"\r\n", "split_lines": True},
])
def test_tokens_and_usage_whatever_the_framing_and_splits(chunk, framing):
    ex = feed(stream([ROLE_ONLY, TOKEN_1, b": keep-alive comment", TOKEN_2, USAGE], **framing), chunk)
    assert len(ex.token_ns) == 2  # the role-only event and the comment carry no output
    assert ex.usage == USAGE["usage"] and ex.error is None
    assert ex.token_ns == sorted(ex.token_ns)


def test_usage_null_and_done_only():
    ex = feed(stream([TOKEN_1]), None)
    assert ex.usage is None and len(ex.token_ns) == 1


def test_bad_usage_json_is_ignored():
    ex = feed(b'data: {"usage": {"prompt_tokens": 5,\n\n' + stream([TOKEN_1]), None)
    assert ex.usage is None and len(ex.token_ns) == 1


def test_non_streamed_body_usage_at_finish():
    done: list[Exchange] = []
    ex = Exchange(0, b"", done.append)
    body = json.dumps({"choices": [{"text": "x"}], "usage": USAGE["usage"]}).encode()
    ex.body(body[:10], 1)
    ex.body(body[10:], 2)
    ex.finish(3)
    assert ex.usage == USAGE["usage"] and ex.token_ns == [] and done == [ex]
