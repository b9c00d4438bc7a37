"""The official `openai` and `anthropic` SDKs as clients, through the real recorder (mitmdump + the
addon), against real vLLM on the CPU: chat, completions, Responses and Messages, streamed and not,
with tool definitions and tool calls; then a replay of that recording into the shared tiny_vllm
with its prefix cache emptied."""

from __future__ import annotations

import signal
import statistics
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import free_port
from tests.recorder_helpers import Proxy, engine_apart, read_requests, rows_by_header

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

EMAIL = "lena.kowalski@example.net"
PHONE = "+1 415 555 0142"
API_KEY = "sk-proj-q8Zr2Lx9Vb4Nc7Tm1Kp6Hw3Jd5Fs0Gy"  # what the SDKs send as the credential
PII = (EMAIL, PHONE, API_KEY, "kowalski")
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city", "parameters": WEATHER}}]
RESP_TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather of a city", "parameters": WEATHER}]
MSG_TOOLS = [{"name": "get_weather", "description": "Weather of a city", "input_schema": WEATHER}]


class Seen:
    """What the SDK observed for one call: when its request went out (httpx's request hook, so the
    SDK's own preparation is not counted), its first output event, its usage."""

    current: "Seen | None" = None

    def __init__(self) -> None:
        self.t0 = time.time()
        self.first: float | None = None
        Seen.current = self
        self.prompt: int | None = None
        self.completion: int | None = None
        self.streamed = False
        self.finish: str | None = None  # the stop reason the SDK saw, where the call may end either way

    def output(self) -> None:
        if self.first is None:
            self.first = time.time()

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first is None else (self.first - self.t0) * 1000


def on_request(request) -> None:
    if Seen.current is not None:
        Seen.current.t0 = time.time()


def h(tid: str) -> dict:
    return {"x-test-id": tid}


def openai_calls(oc, model: str) -> dict[str, Seen]:
    seen: dict[str, Seen] = {}
    user = f"Please mail the forecast to {EMAIL} or call {PHONE}."
    history = [  # a tool call and its result, earlier in the conversation
        {"role": "user", "content": user},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"},
        {"role": "user", "content": "And tomorrow?"},
    ]
    pin = {"min_tokens": 6, "ignore_eos": True}  # vLLM's own fields, so the count is known

    s = seen["chat"] = Seen()
    r = oc.chat.completions.create(model=model, messages=[{"role": "user", "content": user}], max_tokens=6,
                                   extra_body=pin, extra_headers=h("chat"))
    s.prompt, s.completion = r.usage.prompt_tokens, r.usage.completion_tokens

    s = seen["chat-stream-tools"] = Seen()
    s.streamed = True
    for c in oc.chat.completions.create(model=model, messages=history, tools=CHAT_TOOLS, tool_choice="auto",
                                        max_tokens=8, stream=True, stream_options={"include_usage": True},
                                        extra_body={"min_tokens": 8, "ignore_eos": True}, extra_headers=h("chat-stream-tools")):
        if c.choices and (c.choices[0].delta.content or c.choices[0].delta.tool_calls):
            s.output()
        if c.usage:
            s.prompt, s.completion = c.usage.prompt_tokens, c.usage.completion_tokens

    # tool_choice "required": vLLM forces a call (structured output); the stream carries only it
    s = seen["chat-stream-tool-call"] = Seen()
    s.streamed = True
    for c in oc.chat.completions.create(model=model, messages=[{"role": "user", "content": user}], tools=CHAT_TOOLS,
                                        tool_choice="required", max_tokens=48, stream=True,
                                        stream_options={"include_usage": True}, extra_headers=h("chat-stream-tool-call")):
        if c.choices and c.choices[0].delta.tool_calls:
            s.output()
        if c.usage:
            s.prompt, s.completion = c.usage.prompt_tokens, c.usage.completion_tokens

    s = seen["completion"] = Seen()
    r = oc.completions.create(model=model, prompt=f"Dear {EMAIL},", max_tokens=5, extra_body={"min_tokens": 5, "ignore_eos": True},
                              extra_headers=h("completion"))
    s.prompt, s.completion = r.usage.prompt_tokens, r.usage.completion_tokens

    s = seen["completion-stream"] = Seen()
    s.streamed = True
    for c in oc.completions.create(model=model, prompt=f"Call {PHONE} about", max_tokens=7, stream=True,
                                   stream_options={"include_usage": True}, extra_body={"min_tokens": 7, "ignore_eos": True},
                                   extra_headers=h("completion-stream")):
        if c.choices and c.choices[0].text:
            s.output()
        if c.usage:
            s.prompt, s.completion = c.usage.prompt_tokens, c.usage.completion_tokens

    resp_input = [
        {"role": "user", "content": [{"type": "input_text", "text": user}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21 C"},
    ]
    s = seen["responses"] = Seen()
    r = oc.responses.create(model=model, instructions="Answer briefly.", input=user, max_output_tokens=6,
                            extra_body={"ignore_eos": True}, extra_headers=h("responses"))
    s.prompt, s.completion = r.usage.input_tokens, r.usage.output_tokens

    s = seen["responses-stream-tools"] = Seen()
    s.streamed = True
    for ev in oc.responses.create(model=model, input=resp_input, tools=RESP_TOOLS, max_output_tokens=9, stream=True,
                                  extra_body={"ignore_eos": True}, extra_headers=h("responses-stream-tools")):
        if ev.type.endswith(".delta") and getattr(ev, "delta", None):
            s.output()
        if ev.type == "response.completed":
            s.prompt, s.completion = ev.response.usage.input_tokens, ev.response.usage.output_tokens

    # a forced tool call: the stream carries function-call argument deltas only
    s = seen["responses-stream-tool-call"] = Seen()
    s.streamed = True
    for ev in oc.responses.create(model=model, input=user, tools=RESP_TOOLS, tool_choice="required", max_output_tokens=48,
                                  stream=True, extra_headers=h("responses-stream-tool-call")):
        if ev.type.endswith(".delta") and getattr(ev, "delta", None):
            s.output()
        if ev.type == "response.completed":
            s.prompt, s.completion = ev.response.usage.input_tokens, ev.response.usage.output_tokens
    return seen


def anthropic_calls(ac, model: str) -> dict[str, Seen]:
    seen: dict[str, Seen] = {}
    user = f"Please mail the forecast to {EMAIL} or call {PHONE}."
    # temperature 0: the recorded calls take one path (their stop_reason is asserted); the replay is
    # held to the recorded length by the shadow's pin processor (vLLM's Messages API has no min_tokens)
    s = seen["messages"] = Seen()
    r = ac.messages.create(model=model, system="Answer briefly.", max_tokens=6, extra_body={"temperature": 0},
                           messages=[{"role": "user", "content": user}], extra_headers=h("messages"))
    s.prompt, s.completion = r.usage.input_tokens, r.usage.output_tokens
    assert r.stop_reason == "max_tokens"

    history = [
        {"role": "user", "content": user},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny, 21 C"}]},
    ]
    s = seen["messages-stream-tools"] = Seen()
    s.streamed = True
    with ac.messages.stream(model=model, max_tokens=7, extra_body={"temperature": 0}, messages=history, tools=MSG_TOOLS,
                            extra_headers=h("messages-stream-tools")) as st:
        for ev in st:
            if ev.type == "content_block_delta" and getattr(ev.delta, "text", None):
                s.output()
            if ev.type == "message_start":
                s.prompt = ev.message.usage.input_tokens
            if ev.type == "message_delta":
                s.completion = ev.usage.output_tokens
        assert st.get_final_message().stop_reason == "max_tokens"

    # tool_choice any: a forced tool call; vLLM sends the tool_use block without deltas. The call
    # ends at max_tokens or, when the model closes the arguments' JSON first, with tool_use: the
    # row must say what the SDK saw (temperature 0, so the replay takes the same path).
    s = seen["messages-stream-tool-call"] = Seen()
    s.streamed = True
    for ev in ac.messages.create(model=model, max_tokens=48, messages=[{"role": "user", "content": user}], tools=MSG_TOOLS,
                                 tool_choice={"type": "any"}, stream=True, extra_body={"temperature": 0},
                                 extra_headers=h("messages-stream-tool-call")):
        if ev.type == "content_block_start" and ev.content_block.type == "tool_use":
            s.output()
        if ev.type == "message_start":
            s.prompt = ev.message.usage.input_tokens
        if ev.type == "message_delta":
            s.completion = ev.usage.output_tokens
            s.finish = ev.delta.stop_reason
    assert s.finish in ("max_tokens", "tool_use"), s.finish
    return seen


def all_bytes(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in root.rglob("*") if p.is_file()]


def test_sdk_clients_recorded_through_mitmdump_then_replayed(tmp_path, tiny_vllm, key_file):
    import anthropic
    import openai

    from shadowreplay.replayer.replay import ReplayOptions, replay
    from shadowreplay.shadow.tiny_model import MODEL_NAME

    srv, _ = tiny_vllm
    out = tmp_path / "rec"
    with engine_apart(srv.pid), Proxy(srv.url, out, key_file, free_port()) as proxy:
        hooks = {"request": [on_request]}

        def clients(base: str):
            return (openai.OpenAI(base_url=base + "/v1", api_key=API_KEY, max_retries=0,
                                  http_client=openai.DefaultHttpxClient(timeout=300, event_hooks=hooks)),
                    anthropic.Anthropic(base_url=base, api_key=API_KEY, max_retries=0,
                                        http_client=anthropic.DefaultHttpxClient(timeout=300, event_hooks=hooks)))

        # The same calls straight to vLLM first (not recorded): the SDKs build their response
        # models on first use (up to 140 ms here), which is not the hop being measured.
        oc, ac = clients(srv.url)
        openai_calls(oc, MODEL_NAME), anthropic_calls(ac, MODEL_NAME)
        oc.close(), ac.close()
        oc, ac = clients(proxy.url)
        # A warm connection, so the first call pays no connect; the model list is not traffic
        # and the recorder leaves it out by default (recorder/selection.py).
        oc.models.list(extra_headers=h("warm"))
        seen = openai_calls(oc, MODEL_NAME)
        seen |= anthropic_calls(ac, MODEL_NAME)
        oc.close(), ac.close()
        assert proxy.stop(signal.SIGTERM) == 0, proxy.log()

    rows = read_requests(out)
    by = rows_by_header(rows)
    assert len(rows) == len(seen) and set(by) == set(seen)  # one row per call, none for the model list
    kinds = {"chat": "chat", "completion": "completion", "responses": "responses", "messages": "messages"}
    hops = []
    for tid, s in seen.items():
        row = by[tid]
        assert row["error"] is None and row["status"] == 200, (tid, row["error"])
        assert row["kind"] == kinds[tid.split("-")[0]], tid
        assert row["model"] == MODEL_NAME and row["prompt_chars"] > 0, tid
        assert (row["prompt_tokens"], row["completion_tokens"]) == (s.prompt, s.completion), tid
        if s.finish is not None:
            assert row["finish_reason"] == s.finish, (tid, row["finish_reason"], s.finish)
        else:
            assert row["finish_reason"] in ("length", "max_output_tokens", "max_tokens"), (tid, row["finish_reason"])
        assert row["stream"] is s.streamed, tid
        if s.streamed:
            assert s.ttft_ms is not None and row["ttft_ms"] is not None, tid
            hops.append(s.ttft_ms - row["ttft_ms"])
        else:
            assert row["ttft_ms"] is None, tid
    # The SDK sees the request leave before and the first output event arrive after the proxy
    # does (docs/schema.md): never less, and close. The SDKs' own parsing makes it a little wider
    # than with a bare httpx client.
    print(f"SDK TTFT - recorded TTFT (ms): {[round(x, 2) for x in hops]}")
    assert min(hops) > -1 and statistics.median(hops) < 25, hops
    # no planted PII in any file the recorder wrote, nor in mitmdump's log
    for p, data in all_bytes(out) + [(proxy.log_path, proxy.log_path.read_bytes())]:
        for secret in PII:
            assert secret.encode() not in data, (p, secret)

    # ---- the replay, into the same engine with its prefix cache emptied (standing in for a shadow)
    res_dir = tmp_path / "replay"
    srv.reset_prefix_cache()
    res = replay(ReplayOptions(recording=str(out), target=srv.url, out=str(res_dir), where="kind <> 'http'",
                               timeout_s=300, progress=False, no_metrics=True, allow_recorded_host=True),
                 echo=lambda s: None)
    assert res.summary["sent"] == len(seen) and res.summary["errors"] == 0, res.summary
    got = duckdb.connect().execute(
        f"SELECT request_id, kind, status, error, completion_tokens, expected_completion_tokens, ttft_ms, prompt_tokens "
        f"FROM read_parquet('{res_dir}/replay_results/**/*.parquet')").fetchall()
    rec_by_id = {r["request_id"]: r for r in rows}
    assert len(got) == len(seen)
    for rid, kind, status, error, ct, expected, ttft, pt in got:
        rec = rec_by_id[rid]
        tid = next(t for t, r in by.items() if r["request_id"] == rid)
        assert status == 200 and error is None, (tid, error)
        assert kind == rec["kind"] and expected == rec["completion_tokens"], tid
        assert ct == expected, (tid, ct, expected)  # every request got its recorded completion tokens
        assert pt is not None and pt > 0, tid
        if rec["stream"]:
            assert ttft is not None and ttft > 0, tid  # measured with the recorder's definition
        else:
            assert ttft is None, tid
