"""The one definition of each LLM API (shadowreplay.llmapi), on streams shaped as the servers send
them (vLLM 0.32's chat, completions, Responses and Messages, plus OpenAI/Anthropic reasoning and
tool-call shapes), and the recorder and the replayer agreeing on them."""

from __future__ import annotations

import json
import random

import pytest

from shadowreplay import llmapi
from shadowreplay.llmapi import CHAT, COMPLETION, EMBEDDING, MESSAGES, RESPONSES, Reply, StreamReader
from shadowreplay.replayer.client import Exchange


def sse(events: list, *, named: bool = False, done: bool = False) -> bytes:
    """Events as a server writes them: `event: TYPE` lines when named (Responses, Messages)."""
    out = b""
    for ev in events:
        data = json.dumps(ev, separators=(",", ":"), ensure_ascii=False).encode()
        if named:
            out += b"event: " + ev["type"].encode() + b"\n"
        out += b"data: " + data + b"\n\n"
    return out + (b"data: [DONE]\n\n" if done else b"")


def chunk(delta: dict | None = None, *, text: str | None = None, finish: str | None = None, usage: dict | None = None) -> dict:
    if usage is not None:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [], "usage": usage}
    ch: dict = {"index": 0, "logprobs": None, "finish_reason": finish}
    if delta is not None:
        ch["delta"] = delta
    if text is not None:
        ch["text"] = text
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [ch]}


U_CHAT = {"prompt_tokens": 16, "total_tokens": 21, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 8}}
CHAT_TEXT = sse([chunk({"role": "assistant", "content": ""})] + [chunk({"content": w}) for w in ["a", "b", "c"]]
                + [chunk({}, finish="length"), chunk(usage=U_CHAT)], done=True)
CHAT_REASONING_ONLY = sse([chunk({"role": "assistant", "content": ""})]
                          + [chunk({"reasoning_content": w}) for w in ["hm", "m"]] + [chunk({"reasoning": "ok"})]
                          + [chunk({}, finish="length"), chunk(usage=U_CHAT)], done=True)
# vLLM 0.32 with --tool-call-parser hermes and tool_choice "required": the name, then the arguments
# (OpenAI sends them in fragments; vLLM may send none before finishing at max_tokens)
CHAT_TOOL_ONLY = sse([
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": None, "tool_calls": [{"id": "call_1", "type": "function", "index": 0, "function": {"name": "get_weather"}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'Paris"}'}}]}),
    chunk({}, finish="tool_calls"), chunk(usage=U_CHAT)], done=True)
COMPLETION_TEXT = sse([{"id": "cmpl-1", "object": "text_completion", "model": "m",
                        "choices": [{"index": 0, "text": w, "finish_reason": "length" if w == "z" else None,
                                     "token_ids": None}]} for w in ["x", "y", "z"]]
                      + [{"id": "cmpl-1", "choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}}],
                      done=True)


def resp(status: str, usage: dict | None, reason: str | None = None) -> dict:
    return {"id": "resp_1", "object": "response", "model": "m", "status": status, "output": [],
            "incomplete_details": {"reason": reason} if reason else None, "usage": usage}


U_RESP = {"input_tokens": 17, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 6,
          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 23}


def responses_stream(middle: list, status="incomplete", reason="max_output_tokens") -> bytes:
    head = [{"type": "response.created", "sequence_number": 0, "response": resp("in_progress", None)},
            {"type": "response.in_progress", "sequence_number": 1, "response": resp("in_progress", None)}]
    tail = [{"type": "response.completed", "sequence_number": 99, "response": resp(status, U_RESP, reason)}]
    return sse(head + middle + tail, named=True)


def rdelta(typ: str, d: str, i: int) -> dict:
    return {"type": f"response.{typ}.delta", "content_index": 0, "delta": d, "item_id": "msg_1", "output_index": 0,
            "sequence_number": i, "logprobs": []}


RESPONSES_TEXT = responses_stream([
    {"type": "response.output_item.added", "output_index": 0, "sequence_number": 2,
     "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}},
    {"type": "response.content_part.added", "content_index": 0, "item_id": "msg_1", "output_index": 0,
     "sequence_number": 3, "part": {"type": "output_text", "text": "", "annotations": []}},
    rdelta("output_text", " Land", 4), rdelta("output_text", " sim", 5), rdelta("output_text", " er", 6),
    {"type": "response.output_text.done", "content_index": 0, "item_id": "msg_1", "output_index": 0,
     "sequence_number": 7, "text": " Land sim er"},
])
RESPONSES_REASONING_ONLY = responses_stream([
    {"type": "response.output_item.added", "output_index": 0, "sequence_number": 2,
     "item": {"id": "rs_1", "type": "reasoning", "summary": []}},
    rdelta("reasoning_text", "think", 3), rdelta("reasoning_summary_text", "so", 4),
], status="completed", reason=None)
RESPONSES_TOOL_ONLY = responses_stream([
    {"type": "response.output_item.added", "output_index": 0, "sequence_number": 2,
     "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "",
              "status": "in_progress"}},
    rdelta("function_call_arguments", '{"city":', 3), rdelta("function_call_arguments", '"Paris"}', 4),
    {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "sequence_number": 5,
     "arguments": '{"city":"Paris"}'},
], status="completed", reason=None)


def messages_stream(blocks: list, stop="max_tokens", usage_end=None) -> bytes:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                                  "model": "m", "stop_reason": None, "stop_sequence": None,
                                                  "usage": {"input_tokens": 9, "output_tokens": 0,
                                                            "cache_read_input_tokens": 3}}}
    end = [{"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": usage_end or {"output_tokens": 6}}, {"type": "message_stop"}]
    return sse([start, {"type": "ping"}] + blocks + end, named=True)


def mdelta(kind: str, key: str, v: str, index: int = 0) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: v}}


MESSAGES_TEXT = messages_stream([
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    mdelta("text_delta", "text", "urer"), mdelta("text_delta", "text", " now"), mdelta("text_delta", "text", " Cl"),
    {"type": "content_block_stop", "index": 0}])
MESSAGES_THINKING_ONLY = messages_stream([
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    mdelta("thinking_delta", "thinking", "let me"), mdelta("thinking_delta", "thinking", " see"),
    mdelta("signature_delta", "signature", "EqQBCgIYAhIM"),
    {"type": "content_block_stop", "index": 0}])
MESSAGES_TOOL_ONLY = messages_stream([
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}},
    mdelta("input_json_delta", "partial_json", ""), mdelta("input_json_delta", "partial_json", '{"city": "Pa'),
    mdelta("input_json_delta", "partial_json", 'ris"}'),
    {"type": "content_block_stop", "index": 0}], stop="tool_use")
# vLLM 0.32, tool_choice any, cut at max_tokens: the tool_use block and no delta at all
MESSAGES_TOOL_VLLM = messages_stream([
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "tool_use", "id": "chatcmpl-tool-1", "name": "get_weather", "input": {}}},
    {"type": "content_block_stop", "index": 0}], usage_end={"input_tokens": 16, "output_tokens": 25})

# (api, stream, output events, visible text, finish, (prompt, completion, cached))
STREAMS = {
    "chat": (CHAT, CHAT_TEXT, 3, "abc", "length", (16, 5, 8)),
    "chat-reasoning-only": (CHAT, CHAT_REASONING_ONLY, 3, "", "length", (16, 5, 8)),
    "chat-tool-only": (CHAT, CHAT_TOOL_ONLY, 3, "", "tool_calls", (16, 5, 8)),
    "completion": (COMPLETION, COMPLETION_TEXT, 3, "xyz", "length", (2, 3, None)),
    "responses": (RESPONSES, RESPONSES_TEXT, 3, " Land sim er", "max_output_tokens", (17, 6, 4)),
    "responses-reasoning-only": (RESPONSES, RESPONSES_REASONING_ONLY, 2, "", "completed", (17, 6, 4)),
    "responses-tool-only": (RESPONSES, RESPONSES_TOOL_ONLY, 3, "", "completed", (17, 6, 4)),
    "messages": (MESSAGES, MESSAGES_TEXT, 3, "urer now Cl", "max_tokens", (12, 6, 3)),
    "messages-thinking-only": (MESSAGES, MESSAGES_THINKING_ONLY, 2, "", "max_tokens", (12, 6, 3)),
    "messages-tool-only": (MESSAGES, MESSAGES_TOOL_ONLY, 3, "", "tool_use", (12, 6, 3)),
    "messages-tool-vllm": (MESSAGES, MESSAGES_TOOL_VLLM, 1, "", "max_tokens", (19, 25, 3)),
}
PATHS = {"chat": "/v1/chat/completions", "completion": "/v1/completions", "responses": "/v1/responses",
         "messages": "/v1/messages"}


def read(api, data: bytes, cuts: list[int] = ()) -> StreamReader:
    """The recorder's reading: each piece at t = its index."""
    r = StreamReader(api)
    prev = 0
    for i, c in enumerate(list(cuts) + [len(data)]):
        r.feed(data[prev:c], float(i))
        prev = c
    r.close(float(len(cuts) + 1))
    return r


def replay_read(api, data: bytes, cuts: list[int] = ()) -> Exchange:
    """The replayer's reading of the same bytes (its HTTP client), piece i read at time i."""
    ex = Exchange(0, f"POST {PATHS[api.kind]} HTTP/1.1\r\nHost: x\r\n\r\n{{}}".encode(), lambda e: None)
    ex.start_stream()
    prev = 0
    for i, c in enumerate(list(cuts) + [len(data)]):
        ex.body(data[prev:c], i)
        prev = c
    ex.finish(len(cuts) + 1)
    return ex


@pytest.mark.parametrize("name", list(STREAMS))
def test_each_api_stream_output_text_finish_and_usage(name):
    api, data, n_out, text, finish, counts = STREAMS[name]
    r = read(api, data)
    assert len(r.token_times) == n_out
    assert "".join(r.reply.text) == text
    assert r.reply.finish_reason == finish
    assert r.reply.counts() == counts
    assert r.reply.done and r.malformed_events == 0 and r.reply.error is None


def _per_event(api, data: bytes) -> list[tuple[bool, bool]]:
    """For each data event: (the recorder's parsed answer, the replayer's byte answer)."""
    out = []
    for raw in llmapi.iter_events(data):
        _, d = llmapi.event_fields(raw)
        if d is None or llmapi.is_done(d):
            continue
        out.append((api.event(json.loads(d), Reply()), api.carries_output(d)))
    return out


@pytest.mark.parametrize("name", list(STREAMS))
def test_byte_test_and_parsed_test_agree_event_by_event(name):
    api, data, *_ = STREAMS[name]
    answers = _per_event(api, data)
    assert [p for p, _ in answers] == [b for _, b in answers]
    # spaced JSON (other servers, other JSON writers) gives the same answers
    spaced = b"".join(
        (b"data: " + json.dumps(json.loads(d), indent=None, separators=(", ", ": ")).encode() + b"\n\n")
        for raw in llmapi.iter_events(data) for _, d in [llmapi.event_fields(raw)] if d and not llmapi.is_done(d))
    assert _per_event(api, spaced) == answers


@pytest.mark.parametrize("name", list(STREAMS))
@pytest.mark.parametrize("seed", range(5))
def test_recorder_and_replayer_agree_on_the_first_output_event(name, seed):
    """The differential test: the same byte stream, split the same way, read by the recorder
    (recorder/exchange.py's StreamReader, parsing every event) and by the replayer's client
    (byte tests, whole-block scans): the same first output event, the same output events, the
    same usage."""
    api, data, n_out, *_ = STREAMS[name]
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), k=rng.randint(0, 30))) if seed else []
    rec = read(api, data, cuts)
    rep = replay_read(api, data, cuts)
    assert [int(t) for t in rec.token_times] == rep.token_ns
    assert rec.token_times and rec.token_times[0] == rep.token_ns[0]
    assert llmapi.usage_counts(rep.usage) == rec.reply.counts()
    assert len(rep.token_ns) == n_out


def test_event_by_event_is_what_a_block_read_gives():
    """A read holding many events at once (the replayer's block scan) counts as event by event."""
    for name, (api, data, n_out, *_) in STREAMS.items():
        one = replay_read(api, data)
        each = replay_read(api, data, [i + 2 for i in range(len(data)) if data[i : i + 2] == b"\n\n"][:-1])
        assert len(one.token_ns) == len(each.token_ns) == n_out, name
        assert one.usage == each.usage, name


def test_non_streamed_replies():
    r = Reply()
    CHAT.reply({"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi",
                                                                     "tool_calls": None}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1}}, r)
    assert ("".join(r.text), r.finish_reason, r.counts()) == ("hi", "stop", (3, 1, None))
    r = Reply()
    RESPONSES.reply({"id": "resp_1", "object": "response", "model": "m", "status": "incomplete",
                     "incomplete_details": {"reason": "max_output_tokens"},
                     "output": [{"type": "reasoning", "summary": []},
                                {"type": "message", "content": [{"type": "output_text", "text": "rance"}]},
                                {"type": "function_call", "name": "f", "arguments": "{}"}],
                     "usage": U_RESP}, r)
    assert ("".join(r.text), r.finish_reason, r.counts(), r.model) == ("rance", "max_output_tokens", (17, 6, 4), "m")
    r = Reply()
    MESSAGES.reply({"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
                    "content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "Go"},
                                {"type": "tool_use", "name": "f", "input": {}}],
                    "usage": {"input_tokens": 23, "output_tokens": 6, "cache_creation_input_tokens": 2}}, r)
    assert ("".join(r.text), r.finish_reason, r.counts()) == ("Go", "tool_use", (25, 6, None))
    r = Reply()
    MESSAGES.reply({"type": "error", "error": {"type": "BadRequestError", "message": "no such tool"}}, r)
    assert r.error == "no such tool" and r.usage is None
    r = Reply()
    EMBEDDING.reply({"data": [{"embedding": [0.1]}], "usage": {"prompt_tokens": 3, "total_tokens": 3}}, r)
    assert r.counts() == (3, None, None)


def test_in_stream_errors_are_reported():
    r = read(RESPONSES, sse([{"type": "error", "code": "server_error", "message": "boom", "sequence_number": 1}], named=True))
    assert r.reply.error == "boom" and not r.token_times and not r.reply.done
    r = read(MESSAGES, sse([{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}], named=True))
    assert r.reply.error == "Overloaded"


def test_usage_counts_of_each_shape():
    assert llmapi.usage_counts(U_CHAT) == (16, 5, 8)
    assert llmapi.usage_counts(U_RESP) == (17, 6, 4)
    assert llmapi.usage_counts({"input_tokens": 9, "output_tokens": 6}) == (9, 6, None)
    assert llmapi.usage_counts({"input_tokens": 9, "cache_read_input_tokens": 100, "output_tokens": 1}) == (109, 1, 100)
    assert llmapi.usage_counts(None) == (None, None, None)
    assert llmapi.usage_counts({"prompt_tokens": "x", "completion_tokens": True}) == (None, None, None)
    # a Messages stream's usage comes in parts: message_delta's fields update message_start's
    assert llmapi.merge_usage({"input_tokens": 9, "output_tokens": 0}, {"output_tokens": 6}) == {"input_tokens": 9, "output_tokens": 6}


def test_requests_recognised_prompt_and_limits():
    assert [llmapi.api_for_path(p).kind for p in ("/v1/chat/completions", "/openai/v1/completions?x=1", "/v1/embeddings",
                                                   "/v1/responses", "/v1/messages/", "/v1/messages/count_tokens", "/v1/models")] == [
        "chat", "completion", "embedding", "responses", "messages", "http", "http"]
    body = {"model": "m", "instructions": "Be brief.", "max_output_tokens": 40,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                      {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]}
    assert RESPONSES.prompt_parts(body) == ["Be brief.", "Weather?", "sunny"] and RESPONSES.output_limit(body) == 40
    assert RESPONSES.prompt_parts({"input": "hi"}) == ["hi"] and RESPONSES.prompt_parts({}) is None
    body = {"model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "Sys."}],
            "messages": [{"role": "user", "content": "Weather?"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]}]}
    assert MESSAGES.prompt_parts(body) == ["Sys.", "Weather?", "", "sunny"] and MESSAGES.output_limit(body) == 64
    assert llmapi.api_for_body(body) is MESSAGES
    assert llmapi.api_for_body({"messages": [], "max_tokens": 5}) is CHAT
    assert llmapi.api_for_body({"input": "x", "max_output_tokens": 5}) is RESPONSES
    assert llmapi.api_for_body({"input": "x"}) is llmapi.HTTP  # an embedding body: no output to pin
    assert CHAT.output_limit({"max_tokens": 5, "max_completion_tokens": 7}) == 7
    assert llmapi.prompt_text(CHAT, {"messages": [{"content": "a"}, {"content": [{"type": "text", "text": "b"}]}]}, "\n") == "a\nb"


def test_pin_output_in_each_api_own_fields():
    b = {"messages": [], "max_completion_tokens": 3, "stream": True, "stream_options": {"continuous_usage_stats": True}}
    CHAT.pin_output(b, 12, ignore_eos=True, stream=True)
    assert b["max_tokens"] == b["min_tokens"] == b["max_completion_tokens"] == 12 and b["ignore_eos"] is True
    assert b["stream_options"] == {"continuous_usage_stats": True, "include_usage": True}
    b = {"input": "x", "max_output_tokens": 3}
    RESPONSES.pin_output(b, 12, ignore_eos=True, stream=False)
    assert b == {"input": "x", "max_output_tokens": 12, "ignore_eos": True}
    b = {"messages": [], "max_tokens": 3, "vllm_xargs": {"x": 1}}
    MESSAGES.pin_output(b, 12, ignore_eos=True, stream=True)
    # vLLM's Messages API has no min_tokens/ignore_eos: the shadow's processor reads vllm_xargs
    assert b == {"messages": [], "max_tokens": 12, "vllm_xargs": {"x": 1, "min_tokens": 12}, "stream": True}
    b = {"messages": [], "max_tokens": 3}
    MESSAGES.pin_output(b, 12, ignore_eos=False, stream=False)
    assert b == {"messages": [], "max_tokens": 12}
    b = {"messages": [], "max_tokens": 3}
    MESSAGES.pin_output(b, None, ignore_eos=True, stream=False)
    assert b == {"messages": [], "max_tokens": 3}  # no recorded count: as recorded


def test_framer_any_line_ending_any_split():
    data = MESSAGES_TEXT
    want = [llmapi.event_fields(r) for r in llmapi.iter_events(data)]
    for sep in (b"\r\n", b"\r"):
        other = data.replace(b"\n", sep)
        for cut in range(1, len(other), 37):
            f = llmapi.SseFramer()
            got = [llmapi.event_fields(r) for r in llmapi.iter_events(f.feed(other[:cut]) + f.feed(other[cut:]) + f.close())]
            assert got == want


# ---- the recorder's rows and the scrubber on the new APIs ------------------------------------

def _row(path: str, body: dict, stream: bytes | None = None, reply: dict | None = None) -> dict:
    from shadowreplay.anonymize import Scrubber
    from shadowreplay.recorder.exchange import HttpExchange, RowOptions

    kw: dict = {}
    if stream is not None:
        pieces = [raw + b"\n\n" for raw in stream.split(b"\n\n") if raw]
        kw = dict(response_headers=[("content-type", "text/event-stream")], streamed=True,
                  chunks=[(1000.1 + i * 0.01, p) for i, p in enumerate(pieces)], stream_bytes=len(stream),
                  ts_end=1000.1 + len(pieces) * 0.01)
    else:
        kw = dict(response_headers=[("content-type", "application/json")], response_body=json.dumps(reply).encode(),
                  ts_end=1000.3, ts_response_headers=1000.3)
    e = HttpExchange(request_id="r1", ts_start=1000.0, client_addr="10.0.0.1", method="POST", scheme="http", host="gw",
                     port=80, path=path, request_headers=[("content-type", "application/json")],
                     request_body=json.dumps(body).encode(), status=200, **kw)
    return e.to_row(Scrubber(b"unit-test-key-0123456789abcdef"), RowOptions())


EMAIL = "maria.gonzalez@example.org"


def test_recorded_responses_row_scrubs_an_email_split_across_deltas():
    parts = ["write to ", "maria.gon", "zalez@exa", "mple.org ", "today"]
    stream = responses_stream([rdelta("output_text", p, i + 2) for i, p in enumerate(parts)])
    tools = [{"type": "function", "name": "get_weather", "description": "d", "parameters": {"type": "object"}}]
    row = _row("/v1/responses", {"model": "m", "input": f"mail {EMAIL}", "instructions": "Be brief.",
                                 "max_output_tokens": 6, "stream": True, "tools": tools}, stream)
    assert row["kind"] == "responses" and row["error"] is None and row["stream"] is True
    assert row["max_tokens"] == 6 and row["prompt_chars"] == len("Be brief.") + len(f"mail {EMAIL}")
    assert (row["prompt_tokens"], row["completion_tokens"], row["cached_tokens"]) == (17, 6, 4)
    assert row["finish_reason"] == "max_output_tokens"
    assert row["ttft_ms"] == pytest.approx(120.0, abs=0.01) and len(row["itl_ms"]) == 4  # the 3rd event: the 1st delta
    assert EMAIL not in row["request_body"] and EMAIL not in (row["response_text"] or "")
    assert "maria" not in row["response_text"] and row["response_text"].startswith("write to ")
    assert json.loads(row["request_body"])["tools"][0]["name"] == "get_weather"  # a tool name is protocol


def test_recorded_messages_rows_streamed_and_not():
    body = {"model": "m", "max_tokens": 6, "system": "Be brief.", "stream": True,
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": f"I am {EMAIL}"}]}
    row = _row("/v1/messages", body, MESSAGES_TOOL_ONLY)
    assert row["kind"] == "messages" and row["error"] is None
    assert row["finish_reason"] == "tool_use" and (row["prompt_tokens"], row["completion_tokens"]) == (12, 6)
    assert row["ttft_ms"] == pytest.approx(120.0, abs=0.01)  # the 3rd event (after message_start, ping): the tool_use block
    assert row["prompt_chars"] == len("Be brief.") + len(f"I am {EMAIL}") and EMAIL not in row["request_body"]
    assert json.loads(row["request_body"])["tools"][0]["name"] == "get_weather"
    body["stream"] = False
    row = _row("/v1/messages", body, reply={"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                            "content": [{"type": "text", "text": f"hi {EMAIL}"}],
                                            "stop_reason": "max_tokens", "usage": {"input_tokens": 23, "output_tokens": 6}})
    assert row["kind"] == "messages" and row["stream"] is False and row["ttft_ms"] is None
    assert (row["prompt_tokens"], row["completion_tokens"], row["finish_reason"]) == (23, 6, "max_tokens")
    assert row["response_text"].startswith("hi ") and EMAIL not in row["response_text"]


def test_scrubbed_stream_bodies_keep_their_protocol_and_lose_the_pii():
    from shadowreplay.anonymize import Scrubber

    s = Scrubber(b"unit-test-key-0123456789abcdef")
    parts = ["mail maria.gon", "zalez@exa", "mple.org"]
    for data in (
        messages_stream([mdelta("text_delta", "text", p) for p in parts]),
        responses_stream([rdelta("output_text", p, i) for i, p in enumerate(parts)]),
        sse([chunk({"content": p}) for p in parts], done=True),
    ):
        out = s.scrub_body(data, "text/event-stream")
        assert EMAIL not in out.text and "maria" not in out.text and out.counts.get("email") == 1, out.text
        assert len(out.text) == len(data.decode())  # substitutes keep every chunk's length
        # the scrubbed stream reads as the original did: same events, same output events
        api = MESSAGES if b"message_start" in data else RESPONSES if b"response.created" in data else CHAT
        assert len(read(api, out.text.encode()).token_times) == len(read(api, data).token_times) == 3


def test_odd_json_never_raises():
    """Values of any JSON type where the APIs expect others: no exception anywhere (the recorder
    and the replayer read whatever a server or client sent)."""
    rng = random.Random(3)
    leaves = [None, True, 0, -1, 2.5, "", "x", "response.output_text.delta", "content_block_delta", "tool_use",
              "text_delta", "message_start", "message_delta", "response.completed"]
    keys = ["type", "delta", "text", "content", "choices", "index", "usage", "message", "response", "item",
            "content_block", "tool_calls", "function", "arguments", "messages", "input", "prompt", "system",
            "instructions", "output", "stop_reason", "incomplete_details", "status", "model", "error",
            "max_tokens", "max_output_tokens", "token_ids", "reasoning_content", "partial_json", "thinking"]

    def value(depth: int):
        r = rng.random()
        if depth > 3 or r < 0.4:
            return rng.choice(leaves)
        if r < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 4))}

    for _ in range(3000):
        obj = value(0)
        data = json.dumps(obj).encode()
        for api in llmapi.APIS:
            api.event(obj, Reply())
            api.reply(obj, Reply())
            api.carries_output(data)
            api.stream_text_paths(obj)
            if isinstance(obj, dict):
                api.prompt_parts(obj)
                api.output_limit(obj)
                api.pin_output(dict(obj), 3, ignore_eos=True, stream=True)
        llmapi.stream_text_paths(obj)
        llmapi.usage_counts(obj)
        if isinstance(obj, dict):
            llmapi.api_for_body(obj)


def test_a_cut_stream_is_reported_with_its_api_end_event():
    body = {"model": "m", "max_tokens": 6, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    cut = MESSAGES_TEXT[: MESSAGES_TEXT.index(b"event: message_delta")]
    row = _row("/v1/messages", body, cut)
    assert row["error"] == "response stream ended without message_stop" and row["ttft_ms"] is not None
    cut = RESPONSES_TEXT[: RESPONSES_TEXT.index(b"event: response.completed")]
    row = _row("/v1/responses", {"model": "m", "input": "x", "stream": True}, cut)
    assert row["error"] == "response stream ended without response.completed" and row["completion_tokens"] is None


def test_chat_output_test_agrees_with_its_pattern():
    """The chat output test finds a non-empty "content" with bytes.find before trying the pattern:
    the same answer as the pattern alone, on random event bytes."""
    import random

    rnd = random.Random(3)
    pieces = [b'"content":"', b'"content":""', b'"content": "x', b'\\"content\\":\\"', b'"reasoning":"r', b'"text":"', b'"tool_calls":[{',
              b'"token_ids":[1', b'{"delta":{', b'}', b'"', b"x", b" ", b":", b'"role":"assistant"', b'"usage":{']
    for _ in range(20000):
        data = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 6)))
        assert bool(CHAT.output_test(data)) == (llmapi._CHAT_OUT.search(data) is not None), data
        assert CHAT.carries_output(data) == (llmapi._CHAT_OUT.search(data) is not None), data
