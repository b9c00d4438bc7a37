"""Response-side parsing of the replayer's HTTP client (replayer/client.py Exchange): which SSE
events count as tokens and where usage comes from, however the bytes are split or framed."""

from __future__ import annotations

import json

import pytest

from shadowreplay.replayer.client import Exchange

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
    ex.start_stream()
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



# vLLM-shaped events (one data: line each) for the block-at-once path, with the cases it must get
# right: no output, two output keys in one event, usage as an object or null, token ids.
VLLM_EVENTS = [
    TOKEN_1, TOKEN_2, ROLE_ONLY, USAGE,
    {"choices": [{"index": 0, "delta": {"reasoning_content": "hm", "content": "x"}}], "usage": None},
    {"choices": [{"index": 0, "text": "", "finish_reason": "length"}], "usage": None},
    {"choices": [{"index": 0, "text": "a"}, {"index": 1, "text": "b"}]},
    {"choices": [{"index": 0, "token_ids": [17, 4]}]},
    {"choices": [{"index": 0, "text": "usage: {not json"}], "usage": None},
    {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}},
]


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("space", [b" ", b""])
def test_events_read_at_once_count_as_one_by_one(seed, space):
    """A read holding many whole events goes through a few scans of the whole block; its result
    must be the event-by-event one (Exchange._event) for every mix."""
    import random

    rnd = random.Random(seed)
    events = [rnd.choice(VLLM_EVENTS) for _ in range(rnd.randint(1, 12))]
    block = stream(events, space=space)
    whole = Exchange(0, b"", lambda ex: None)
    whole.start_stream()
    whole.body(block, 5)
    one_by_one = Exchange(1, b"", lambda ex: None)
    one_by_one.start_stream()
    for raw in block.split(b"\n\n")[:-1]:
        one_by_one._event(raw, 5)
    assert whole.token_ns == one_by_one.token_ns
    assert whole.usage == one_by_one.usage


# ---- HTTP/1.1 framing (HttpConnection): chunked bodies split anywhere --------------------------
class _Pool:
    def __init__(self):
        from shadowreplay.replayer.client import SendDue

        self.due = SendDue()
        self.closed = False
        self.released = 0

    def release(self, conn):
        self.released += 1

    def discard(self, conn):
        pass


class _Transport:
    def write(self, data):
        pass

    def abort(self):
        raise AssertionError("the connection was aborted")


def chunked(payload: bytes, rnd) -> bytes:
    out, i = b"", 0
    while i < len(payload):
        k = rnd.randint(1, 40)
        ext = b";name=value" if rnd.random() < 0.2 else b""
        out += f"{min(k, len(payload) - i):X}".encode() + ext + b"\r\n" + payload[i : i + k] + b"\r\n"
        i += k
    trailer = b"x-trailer: 1\r\n" if rnd.random() < 0.3 else b""
    return out + b"0\r\n" + trailer + b"\r\n"


@pytest.mark.parametrize("seed", range(40))
def test_chunked_sse_responses_split_anywhere_on_one_keepalive_connection(seed):
    import random

    from shadowreplay.replayer.client import HttpConnection

    rnd = random.Random(seed)
    pool = _Pool()
    conn = HttpConnection(pool)
    conn.transport = _Transport()
    for k in range(3):  # three responses, one after the other on the same connection
        n_tokens = rnd.randint(0, 6)
        events = [ROLE_ONLY] + [TOKEN_1 if i % 2 else TOKEN_2 for i in range(n_tokens)] + [USAGE]
        payload = stream(events, sep=rnd.choice([b"\n", b"\r\n"]))
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        wire = head + chunked(payload, rnd)
        cuts = sorted(rnd.sample(range(1, len(wire)), min(len(wire) - 1, rnd.randint(0, 30))))
        done: list[Exchange] = []
        ex = Exchange(k, b"req", done.append)
        conn.send(ex)
        for a, b in zip([0, *cuts], [*cuts, len(wire)]):
            conn.data_received(wire[a:b])
        assert done == [ex] and ex.error is None and ex.status == 200
        assert len(ex.token_ns) == n_tokens and ex.usage == USAGE["usage"]
        assert pool.released == k + 1 and conn.ex is None
