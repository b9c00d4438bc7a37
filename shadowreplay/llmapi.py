"""The LLM APIs shadowreplay records and replays, each defined once: one handler per API.

vLLM's OpenAI-compatible server serves five of them: chat completions, completions, embeddings,
the OpenAI Responses API and the Anthropic Messages API. Per API a handler (`ChatApi`,
`CompletionApi`, `EmbeddingApi`, `ResponsesApi`, `MessagesApi`; `api_for_path`, `api_for_kind`)
says:

- how a request is recognised (the path ends in its route) and its `kind`;
- the prompt text of a request body (`prompt_parts`) and its output limit (`output_limit`);
- how a replay pins the output length in the API's own fields (`pin_output`);
- which stream events carry generated output (`event`, and `carries_output`, the same test on
  the event's bytes); where the usage, the finish/stop reason, the model and an in-stream error
  are; what a complete (non-streamed) response says (`reply`);
- which streamed fields hold generated text (`stream_text_paths`, scrubbed as one text per
  stream).

The recorder (recorder/exchange.py), the replayer (replayer/client.py, replayer/body.py,
replayer/rows.py), the scrubber (anonymize/) and the trace import/export use these, so a TTFT or a
token count means the same thing on both sides of a replay-vs-recording comparison.

Parsing is sans-IO: bytes go in (`SseFramer.feed`, `iter_events`), parsed events and a `Reply`
come out. Nothing here reads a socket or a clock.

Definitions (docs/schema.md repeats them for the columns):

- *Output event*: a stream event that carries generated tokens. Chat/completions: choice 0 (any
  choice for the byte test) has non-empty `content`, `reasoning_content`, `reasoning`,
  `refusal` or `text`, a non-empty `tool_calls` list, or non-empty `token_ids`. Responses: a
  `response.*.delta` event with a non-empty string `delta` (output text, reasoning, reasoning
  summary, refusal, function-call arguments), or a `response.output_item.added` of a
  `function_call` item (its name is generated). Messages: a `content_block_delta` whose delta has
  non-empty `text`, `thinking` or `partial_json`, or a `content_block_start` of a `tool_use`
  block (vLLM sends a forced tool call's block without deltas). TTFT is the time to the first
  one; the gaps between them are the ITL.
- *Usage*: chat/completions/embeddings: the `usage` object (the last one seen; a streamed chat
  completion sends it with `stream_options.include_usage`). Responses: `response.usage` of the
  `response.completed`/`response.incomplete`/`response.failed` event (or of the body). Messages:
  `message_start`'s `message.usage`, updated by each `message_delta`'s `usage`. `usage_counts`
  turns any of them into (prompt, completion, cached) tokens.
- *Finish reason*: chat/completions: `finish_reason`; Responses: `incomplete_details.reason`
  when incomplete, else `status`; Messages: `stop_reason`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

# ------------------------------------------------------------------------------ SSE framing


class SseFramer:
    """Complete Server-Sent Events out of a byte stream split anywhere (WHATWG rules: lines end in
    CRLF, LF or CR; a blank line ends an event).

    `feed` returns every event completed so far as one block of bytes, line endings made "\\n",
    ending with a blank line (b"" when none completed); `close` returns what is left (an
    unterminated last event, which servers often send). `iter_events` splits a block."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> bytes:
        if not self._buf and data[-2:] == b"\n\n" and b"\r" not in data:
            return data  # whole events, nothing held back: what a server's every write is
        buf = self._buf + data if self._buf else data
        if b"\r" in buf:  # CRLF or CR line endings (allowed by the SSE spec): made \n
            buf = buf.replace(b"\r\n", b"\n")
            half = buf.endswith(b"\r")  # maybe the first half of a \r\n split across reads
            buf = (buf[:-1] if half else buf).replace(b"\r", b"\n") + (b"\r" if half else b"")
        cut = buf.rfind(b"\n\n")
        if cut < 0:
            self._buf = buf
            return b""
        self._buf = buf[cut + 2 :]
        return buf[: cut + 2]

    def close(self) -> bytes:
        rest, self._buf = self._buf.rstrip(b"\r"), b""
        return rest + b"\n\n" if rest.strip() else b""


def event_fields(raw: bytes) -> tuple[bytes | None, bytes | None]:
    """(event name, data) of one event's lines (an item of `iter_events`): the data lines joined
    by "\\n", None when the event has no data field; comments and other fields are skipped."""
    if raw.startswith(b"data: ") and b"\n" not in raw:  # one data line: what servers send
        return None, raw[6:]
    name = data = None
    for line in raw.split(b"\n"):
        if not line or line[:1] == b":":
            continue
        f, sep, v = line.partition(b":")
        if sep and v[:1] == b" ":
            v = v[1:]
        if f == b"data":
            data = v if data is None else data + b"\n" + v
        elif f == b"event":
            name = v
    return name, data


def split_data_line(line: str) -> tuple[str, str] | None:
    """(prefix, value) of a `data:` line given without its line ending: the prefix is the field
    name, its colon and the one optional space (the rule event_fields applies); None for any other
    line. The scrubber rewrites a stream's text line by line with it."""
    if not line.startswith("data:"):
        return None
    n = 6 if line.startswith("data: ") else 5
    return line[:n], line[n:]


def iter_events(block: bytes) -> Iterator[bytes]:
    """The events of a block from `SseFramer` (each one's lines, without the blank line)."""
    for raw in block.split(b"\n\n"):
        if raw.strip(b"\n"):
            yield raw


def has_usage(data: bytes) -> bool:
    """Whether an event's data may hold a usage object (every API names it "usage"): only these
    events need parsing for the usage."""
    return b'"usage"' in data and USAGE_RE.search(data) is not None


def is_done(data: bytes) -> bool:
    """The `[DONE]` sentinel chat/completions streams end with."""
    return data.strip() == b"[DONE]"


# ------------------------------------------------------------------------------ usage


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31 else None


def usage_counts(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(prompt, completion, cached prompt) tokens of a usage object of any of the APIs.

    OpenAI chat/completions/embeddings: prompt_tokens, completion_tokens,
    prompt_tokens_details.cached_tokens. Responses: input_tokens, output_tokens,
    input_tokens_details.cached_tokens. Anthropic: input_tokens counts only the uncached part,
    so the prompt is input_tokens + cache_read_input_tokens + cache_creation_input_tokens and
    the cached part cache_read_input_tokens."""
    if not isinstance(usage, dict):
        return None, None, None
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        d = usage.get("prompt_tokens_details")
        cached = _int(d.get("cached_tokens")) if isinstance(d, dict) else None
        return _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), cached
    pt = _int(usage.get("input_tokens"))
    ct = _int(usage.get("output_tokens"))
    read = _int(usage.get("cache_read_input_tokens"))
    made = _int(usage.get("cache_creation_input_tokens"))
    if read is not None or made is not None:  # Anthropic
        if pt is not None:
            pt = _int(pt + (read or 0) + (made or 0))
        return pt, ct, read
    d = usage.get("input_tokens_details")
    cached = _int(d.get("cached_tokens")) if isinstance(d, dict) else None
    return pt, ct, cached


def merge_usage(acc: dict | None, usage: Any) -> dict | None:
    """A usage object updated by a later one (Messages streams send it in parts)."""
    if not isinstance(usage, dict):
        return acc
    return usage if acc is None else {**acc, **usage}


# ------------------------------------------------------------------------------ replies


@dataclass
class Reply:
    """What a response said, folded event by event (streams) or from the body (`reply`)."""

    text: list[str] = field(default_factory=list)  # visible output text, in order
    finish_reason: str | None = None
    usage: dict | None = None  # the raw usage object (merged); see usage_counts
    model: str | None = None
    error: str | None = None  # an error object's message
    done: bool = False  # the stream's own end marker was seen ([DONE], message_stop, ...)

    def counts(self) -> tuple[int | None, int | None, int | None]:
        return usage_counts(self.usage)


def _error_message(err: Any) -> str:
    msg = err.get("message") if isinstance(err, dict) else err
    return str(msg)[:500]


def _content_text(content: Any) -> str:
    """Text of a message content: a string, or text parts ([{"type": "text", "text": ...}])."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                t = part.get("text")
                if isinstance(t, str):
                    out.append(t)
                elif part.get("type") == "tool_result":  # Anthropic: the tool's answer
                    out.append(_content_text(part.get("content")))
            elif isinstance(part, str):
                out.append(part)
        return "".join(out)
    return ""


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


def _k(v: Any) -> Any:
    """A stream id part from a parsed value: hashable whatever the JSON held."""
    return v if v is None or isinstance(v, (str, int, float)) else repr(v)[:64]


def _str_or_strs(v: Any) -> list[str] | None:
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    return None


# Chat/completions output keys (choice 0's delta or message, or the choice itself).
_CHAT_TEXT_KEYS = ("content", "reasoning_content", "reasoning", "refusal")
# The same test on an event's bytes: a non-empty string under one of those keys or "text", a
# non-empty tool_calls list, or token ids. A key inside a string value cannot match: its quotes
# are escaped there.
_CHAT_OUT = re.compile(
    rb'"(?:(?:content|reasoning(?:_content)?|refusal|text)"\s*:\s*"(?!")'
    rb'|t(?:ool_calls"\s*:\s*\[\s*\{|oken_ids"\s*:\s*\[\s*\d))'
)
_CONTENT = b'"content":"'


def _chat_output(data: bytes) -> bool:
    """_CHAT_OUT's answer, the usual case first: a non-empty "content" as servers write it (no
    spaces), found by bytes.find; anything else by the pattern."""
    i = data.find(_CONTENT)
    if i >= 0 and data[i + 11 : i + 12] != b'"':
        return True
    return _CHAT_OUT.search(data) is not None


# One match per line that carries output (the match runs on to the end of its line).
_CHAT_LINE = re.compile(rb"(?:" + _CHAT_OUT.pattern + rb")[^\n]*\n")
USAGE_RE = re.compile(rb'"usage"\s*:\s*\{')
_RESP_DELTA_TYPE = re.compile(rb'"type"\s*:\s*"response\.[a-z_.]+\.delta"')
_RESP_DELTA = re.compile(rb'"delta"\s*:\s*"(?!")')
_RESP_END = frozenset(("response.completed", "response.incomplete", "response.failed"))
_RESP_CALL = re.compile(rb'"type"\s*:\s*"function_call"')
_MSG_OUT = re.compile(rb'"(?:text|thinking|partial_json)"\s*:\s*"(?!")')
_MSG_TOOL = re.compile(rb'"type"\s*:\s*"(?:server_)?tool_use"')


class LlmApi:
    """One API: the base says "not an LLM API" (kind 'http'); each subclass fills its part."""

    kind = "http"
    route = ""  # the path ends with it (query and trailing slash ignored)
    default_path = ""  # where an imported trace's requests of this API are sent
    limit_fields: tuple[str, ...] = ()  # request fields that cap the output, in order of precedence
    streams = False  # whether responses can be event streams with output events
    end_event = "[DONE]"  # what a complete stream ends with (Reply.done)

    def matches(self, path: str) -> bool:
        return bool(self.route) and path.split("?", 1)[0].rstrip("/").endswith(self.route)

    # --- requests
    def prompt_parts(self, body: dict) -> list[str] | None:
        """The prompt's text pieces in order, as the model sees them; None when the prompt is not
        text (token ids) or the body has none."""
        return None

    def output_limit(self, body: dict) -> int | None:
        for k in self.limit_fields:
            v = _int(body.get(k))
            if v is not None:
                return v
        return None

    def pin_output(self, body: dict, n: int | None, *, ignore_eos: bool, stream: bool) -> None:
        """Set, in place, what makes a replay generate exactly n tokens (when n > 0) and report
        the usage (streams)."""

    # --- responses
    def event(self, obj: Any, acc: Reply) -> bool:
        """Fold one parsed stream event into acc; True when it carries generated output."""
        return False

    def carries_output(self, data: bytes) -> bool:
        """`event`'s answer from the event's data bytes alone, without parsing JSON (the replayer's
        hot path). Same result on the JSON servers write (tests/test_llmapi.py compares them)."""
        return False

    @property
    def output_test(self) -> Callable[[bytes], Any]:
        """carries_output as one callable with a truthy result (the replayer binds it once per
        response; for chat and completions a plain function, no method call)."""
        return self.carries_output

    def usage_of(self, obj: Any, usage: dict | None) -> dict | None:
        """The usage after one parsed stream event, `usage` being the one before it (what `event`
        folds; the replayer calls it alone on the few events that hold a usage object). Chat,
        completions: the event's `usage`, cumulative, so the last one counts."""
        u = obj.get("usage") if type(obj) is dict else None
        return u if type(u) is dict else usage

    def reply(self, obj: Any, acc: Reply) -> None:
        """Fold a complete (non-streamed) JSON response body into acc."""
        if not isinstance(obj, dict):
            return
        if isinstance(obj.get("model"), str):
            acc.model = obj["model"]
        if obj.get("error") is not None:
            acc.error = _error_message(obj["error"])
        acc.usage = merge_usage(acc.usage, obj.get("usage"))

    def count_output(self, block: bytes) -> int:
        """How many events of a block of one-line `data:` events (SseFramer output) carry output."""
        n = 0
        for raw in block.split(b"\n\n"):
            if raw and self.carries_output(raw):
                n += 1
        return n

    def stream_text_paths(self, chunk: Any) -> list[tuple[tuple, tuple]]:
        """(stream id, path) of every generated-text fragment in one parsed stream event: the
        scrubber joins a stream's fragments, scrubs them as one text and cuts them back."""
        return []


class _OpenAiChoices(LlmApi):
    """Chat completions and completions: OpenAI `choices` in bodies and chunks."""

    streams = True
    limit_fields = ("max_completion_tokens", "max_tokens")

    def pin_output(self, body: dict, n: int | None, *, ignore_eos: bool, stream: bool) -> None:
        if n is not None and n > 0:
            body["max_tokens"] = int(n)
            body["min_tokens"] = int(n)  # vLLM
            if "max_completion_tokens" in body:
                body["max_completion_tokens"] = int(n)
        if ignore_eos:
            body["ignore_eos"] = True  # vLLM
        if stream:
            body["stream"] = True
            so = body.get("stream_options")
            body["stream_options"] = {**(so if isinstance(so, dict) else {}), "include_usage": True}

    @staticmethod
    def _choice(choice: dict, src_key: str) -> tuple[str, bool]:
        """(visible text, carries output) of one choice (a chunk's delta or a body's message)."""
        parts: list[str] = []
        carries = False
        src = choice.get(src_key)
        if isinstance(src, dict):
            for key in _CHAT_TEXT_KEYS:
                v = src.get(key)
                if isinstance(v, str) and v:
                    if key == "content":
                        parts.append(v)
                    carries = True
            tc = src.get("tool_calls")
            if isinstance(tc, list) and tc:
                carries = True
        t = choice.get("text")
        if isinstance(t, str) and t:
            parts.append(t)
            carries = True
        ids = choice.get("token_ids")
        if isinstance(ids, list) and ids:
            carries = True
        return "".join(parts), carries

    def event(self, obj: Any, acc: Reply) -> bool:
        if not isinstance(obj, dict):
            return False
        if isinstance(obj.get("model"), str):
            acc.model = obj["model"]
        if obj.get("error") is not None:
            acc.error = _error_message(obj["error"])
        acc.usage = self.usage_of(obj, acc.usage)
        carries = False
        choices = obj.get("choices")
        if isinstance(choices, list):
            for ch in choices:
                if not isinstance(ch, dict):
                    continue
                if ch.get("index", 0) == 0:
                    txt, carries = self._choice(ch, "delta")
                    if txt:
                        acc.text.append(txt)
                fr = ch.get("finish_reason")
                if isinstance(fr, str) and fr:
                    acc.finish_reason = fr
        return carries

    def carries_output(self, data: bytes) -> bool:
        return _CHAT_OUT.search(data) is not None

    @property
    def output_test(self) -> Callable[[bytes], Any]:
        return _CHAT_OUT.search

    def count_output(self, block: bytes) -> int:
        return len(_CHAT_LINE.findall(block))  # one C-level scan of the whole block

    def reply(self, obj: Any, acc: Reply) -> None:
        super().reply(obj, acc)
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            txt, _ = self._choice(choices[0], "message")
            if txt:
                acc.text.append(txt)
            fr = choices[0].get("finish_reason")
            acc.finish_reason = fr if isinstance(fr, str) else None

    def stream_text_paths(self, chunk: Any) -> list[tuple[tuple, tuple]]:
        out: list[tuple[tuple, tuple]] = []
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if not isinstance(choices, list):
            return out
        for ci, choice in enumerate(choices):
            if not isinstance(choice, dict):
                continue
            idx = _k(choice.get("index", ci))
            if isinstance(choice.get("text"), str):
                out.append((("text", idx), ("choices", ci, "text")))
            delta = choice.get("delta")
            if isinstance(delta, dict):
                for f in _CHAT_TEXT_KEYS:
                    if isinstance(delta.get(f), str):
                        out.append(((f, idx), ("choices", ci, "delta", f)))
                calls = delta.get("tool_calls")
                if isinstance(calls, list):
                    for ti, call in enumerate(calls):
                        fn = call.get("function") if isinstance(call, dict) else None
                        if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                            tidx = _k(call.get("index", ti))
                            out.append((("args", idx, tidx), ("choices", ci, "delta", "tool_calls", ti, "function", "arguments")))
        return out


class ChatApi(_OpenAiChoices):
    kind = "chat"
    route = "/chat/completions"
    default_path = "/v1/chat/completions"

    def carries_output(self, data: bytes) -> bool:
        return _chat_output(data)

    @property
    def output_test(self) -> Callable[[bytes], Any]:
        return _chat_output

    def prompt_parts(self, body: dict) -> list[str] | None:
        msgs = body.get("messages")
        if not isinstance(msgs, list):
            return None
        return [_content_text(m.get("content")) for m in msgs if isinstance(m, dict)]


class CompletionApi(_OpenAiChoices):
    kind = "completion"
    route = "/completions"
    default_path = "/v1/completions"
    limit_fields = ("max_tokens",)

    def matches(self, path: str) -> bool:
        return super().matches(path) and not CHAT.matches(path)

    def prompt_parts(self, body: dict) -> list[str] | None:
        return _str_or_strs(body.get("prompt"))


class EmbeddingApi(LlmApi):
    kind = "embedding"
    route = "/embeddings"
    default_path = "/v1/embeddings"

    def prompt_parts(self, body: dict) -> list[str] | None:
        return _str_or_strs(body.get("input"))


class ResponsesApi(LlmApi):
    """The OpenAI Responses API (POST /v1/responses)."""

    kind = "responses"
    route = "/responses"
    end_event = "response.completed"
    default_path = "/v1/responses"
    limit_fields = ("max_output_tokens",)
    streams = True

    def prompt_parts(self, body: dict) -> list[str] | None:
        parts: list[str] = []
        if isinstance(body.get("instructions"), str):
            parts.append(body["instructions"])
        inp = body.get("input")
        if isinstance(inp, str):
            parts.append(inp)
        elif isinstance(inp, list):
            for item in inp:
                if isinstance(item, str):
                    parts.append(item)
                elif isinstance(item, dict):
                    if "content" in item:  # a message (input_text / output_text parts)
                        parts.append(_content_text(item.get("content")))
                    elif isinstance(item.get("output"), str):  # function_call_output
                        parts.append(item["output"])
        elif not parts:
            return None
        return parts

    def pin_output(self, body: dict, n: int | None, *, ignore_eos: bool, stream: bool) -> None:
        if n is not None and n > 0:
            body["max_output_tokens"] = int(n)
        if ignore_eos:
            body["ignore_eos"] = True  # vLLM's extra field (its Responses API has no min_tokens)
        if stream:
            body["stream"] = True  # usage comes with response.completed

    def usage_of(self, obj: Any, usage: dict | None) -> dict | None:
        if type(obj) is dict and obj.get("type") in _RESP_END:
            r = obj.get("response")
            if isinstance(r, dict):
                return merge_usage(usage, r.get("usage"))
        return usage

    def _response(self, resp: Any, acc: Reply, usage: bool = True) -> None:
        if not isinstance(resp, dict):
            return
        if isinstance(resp.get("model"), str):
            acc.model = resp["model"]
        if resp.get("error") is not None:
            acc.error = _error_message(resp["error"])
        if usage:
            acc.usage = merge_usage(acc.usage, resp.get("usage"))
        inc = resp.get("incomplete_details")
        if isinstance(inc, dict) and isinstance(inc.get("reason"), str):
            acc.finish_reason = inc["reason"]
        elif isinstance(resp.get("status"), str):
            acc.finish_reason = resp["status"]

    def event(self, obj: Any, acc: Reply) -> bool:
        if not isinstance(obj, dict):
            return False
        typ = obj.get("type")
        if not isinstance(typ, str):
            return False
        if typ.endswith(".delta") and typ.startswith("response."):
            d = obj.get("delta")
            if isinstance(d, str) and d:
                if typ == "response.output_text.delta":
                    acc.text.append(d)
                return True
            return False
        if typ == "response.output_item.added":
            item = obj.get("item")
            return isinstance(item, dict) and item.get("type") == "function_call"
        if typ in _RESP_END:
            acc.usage = self.usage_of(obj, acc.usage)
            self._response(obj.get("response"), acc, usage=False)
            acc.done = True
        elif typ == "response.created" and isinstance(obj.get("response"), dict):
            m = obj["response"].get("model")
            if isinstance(m, str):
                acc.model = m
        elif typ == "error":
            acc.error = _error_message(obj)
        return False

    def carries_output(self, data: bytes) -> bool:
        if b'.delta"' in data:
            return _RESP_DELTA_TYPE.search(data) is not None and _RESP_DELTA.search(data) is not None
        return b'"response.output_item.added"' in data and _RESP_CALL.search(data) is not None

    def reply(self, obj: Any, acc: Reply) -> None:
        if not isinstance(obj, dict):
            return
        if obj.get("error") is not None and "output" not in obj:
            acc.error = _error_message(obj["error"])
            return
        self._response(obj, acc)
        out = obj.get("output")
        if isinstance(out, list):
            for item in out:
                if isinstance(item, dict) and item.get("type") == "message":
                    for part in _list(item.get("content")):
                        if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                            acc.text.append(part["text"])

    def stream_text_paths(self, chunk: Any) -> list[tuple[tuple, tuple]]:
        if not isinstance(chunk, dict):
            return []
        typ = chunk.get("type")
        if isinstance(typ, str) and typ.endswith(".delta") and isinstance(chunk.get("delta"), str):
            return [(("resp", typ, _k(chunk.get("item_id")), _k(chunk.get("output_index")), _k(chunk.get("content_index"))),
                     ("delta",))]
        return []


class MessagesApi(LlmApi):
    """The Anthropic Messages API (POST /v1/messages)."""

    kind = "messages"
    route = "/messages"
    end_event = "message_stop"
    default_path = "/v1/messages"
    limit_fields = ("max_tokens",)
    streams = True
    _DELTA_TEXT = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}

    def prompt_parts(self, body: dict) -> list[str] | None:
        msgs = body.get("messages")
        if not isinstance(msgs, list):
            return None
        parts = [_content_text(body.get("system"))] if body.get("system") is not None else []
        return parts + [_content_text(m.get("content")) for m in msgs if isinstance(m, dict)]

    def pin_output(self, body: dict, n: int | None, *, ignore_eos: bool, stream: bool) -> None:
        # vLLM's Messages API (0.32) has no min_tokens or ignore_eos, but passes vllm_xargs to the
        # sampling parameters: a shadow started by `shadow up` holds back stop tokens until
        # vllm_xargs.min_tokens (shadow/vllm_plugins/shadowreplay_pin.py); elsewhere only the cap
        # is pinned, and a message can end early (completion_tokens < expected_completion_tokens).
        # Usage always comes with the stream.
        if n is not None and n > 0:
            body["max_tokens"] = int(n)
            if ignore_eos:
                xargs = body.get("vllm_xargs")
                body["vllm_xargs"] = (dict(xargs) if isinstance(xargs, dict) else {}) | {"min_tokens": int(n)}
        if stream:
            body["stream"] = True

    def event(self, obj: Any, acc: Reply) -> bool:
        if not isinstance(obj, dict):
            return False
        typ = obj.get("type")
        if typ == "content_block_delta":
            d = obj.get("delta")
            if not isinstance(d, dict):
                return False
            carries = False
            for key in ("text", "thinking", "partial_json"):
                v = d.get(key)
                if isinstance(v, str) and v:
                    carries = True
                    if key == "text":
                        acc.text.append(v)
            return carries
        if typ == "content_block_start":
            b = obj.get("content_block")
            if not isinstance(b, dict):
                return False
            if b.get("type") == "tool_use" or b.get("type") == "server_tool_use":
                return True
            v = b.get("text", b.get("thinking"))
            if isinstance(v, str) and v:
                if b.get("type") == "text":
                    acc.text.append(v)
                return True
            return False
        if typ == "message_start":
            m = obj.get("message")
            if isinstance(m, dict):
                if isinstance(m.get("model"), str):
                    acc.model = m["model"]
            acc.usage = self.usage_of(obj, acc.usage)
        elif typ == "message_delta":
            d = obj.get("delta")
            if isinstance(d, dict) and isinstance(d.get("stop_reason"), str):
                acc.finish_reason = d["stop_reason"]
            acc.usage = self.usage_of(obj, acc.usage)
        elif typ == "message_stop":
            acc.done = True
        elif typ == "error":
            acc.error = _error_message(obj.get("error"))
        return False

    def usage_of(self, obj: Any, usage: dict | None) -> dict | None:
        """message_start's message.usage, then each message_delta's usage over it."""
        if type(obj) is dict:
            typ = obj.get("type")
            if typ == "message_start":
                m = obj.get("message")
                return merge_usage(usage, m.get("usage")) if isinstance(m, dict) else usage
            if typ == "message_delta":
                return merge_usage(usage, obj.get("usage"))
        return usage

    def carries_output(self, data: bytes) -> bool:
        if b'"content_block_delta"' in data:
            return _MSG_OUT.search(data) is not None
        return (b'"content_block_start"' in data
                and (_MSG_TOOL.search(data) is not None or _MSG_OUT.search(data) is not None))

    def reply(self, obj: Any, acc: Reply) -> None:
        if not isinstance(obj, dict):
            return
        if obj.get("type") == "error" or (obj.get("error") is not None and "content" not in obj):
            acc.error = _error_message(obj.get("error"))
            return
        if isinstance(obj.get("model"), str):
            acc.model = obj["model"]
        acc.usage = merge_usage(acc.usage, obj.get("usage"))
        if isinstance(obj.get("stop_reason"), str):
            acc.finish_reason = obj["stop_reason"]
        for block in _list(obj.get("content")):
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                acc.text.append(block["text"])

    def stream_text_paths(self, chunk: Any) -> list[tuple[tuple, tuple]]:
        if not isinstance(chunk, dict) or chunk.get("type") != "content_block_delta":
            return []
        d = chunk.get("delta")
        key = self._DELTA_TEXT.get(d.get("type")) if isinstance(d, dict) and isinstance(d.get("type"), str) else None
        if key is None or not isinstance(d.get(key), str):
            return []
        return [(("msg", _k(chunk.get("index")), key), ("delta", key))]


HTTP = LlmApi()
CHAT = ChatApi()
COMPLETION = CompletionApi()
EMBEDDING = EmbeddingApi()
RESPONSES = ResponsesApi()
MESSAGES = MessagesApi()
# In the order paths are tried (chat before completions: /chat/completions ends in /completions).
APIS: tuple[LlmApi, ...] = (CHAT, COMPLETION, EMBEDDING, RESPONSES, MESSAGES)
_BY_KIND = {a.kind: a for a in APIS}
# Kinds whose requests generate tokens: replayed with their output length pinned.
GENERATIVE_KINDS = tuple(a.kind for a in APIS if a.streams)


def api_for_path(path: str | None) -> LlmApi:
    """The API a request path belongs to; HTTP (kind 'http') when none."""
    if path:
        for a in APIS:
            if a.matches(path):
                return a
    return HTTP


def api_for_kind(kind: str | None) -> LlmApi:
    return _BY_KIND.get(kind or "", HTTP)


def api_for_body(body: dict) -> LlmApi:
    """The API of a request body without a path (trace files): Anthropic bodies are told from
    chat ones by their required max_tokens with no OpenAI-only field; Responses by `input`
    without `messages`."""
    if "messages" in body:
        if "max_tokens" in body and ("system" in body or "anthropic_version" in body or "stop_sequences" in body):
            return MESSAGES
        return CHAT
    if "prompt" in body:
        return COMPLETION
    if "input" in body and ("max_output_tokens" in body or "instructions" in body or isinstance(body.get("input"), list)
                            and any(isinstance(x, dict) for x in body["input"])):
        return RESPONSES
    return HTTP


_REQUEST_API: dict[bytes, LlmApi] = {}


def api_for_request(data: bytes) -> LlmApi:
    """The API of a complete HTTP/1.1 request (its request line's path), memoized per line."""
    line = data[: data.find(b"\r\n", 0, 8192)]
    api = _REQUEST_API.get(line)
    if api is None:
        parts = line.split(b" ")
        api = api_for_path(parts[1].decode("latin-1")) if len(parts) == 3 else HTTP
        if len(_REQUEST_API) < 4096:
            _REQUEST_API[line] = api
    return api


def prompt_text(api: LlmApi, body: Any, sep: str = "") -> str | None:
    """The prompt's text pieces joined by sep; None when the body has no text prompt."""
    if not isinstance(body, dict):
        return None
    parts = api.prompt_parts(body)
    return None if parts is None else sep.join(parts)


# ------------------------------------------------------------------------------ protocol vs content

# In LLM API bodies these keys hold protocol values (model names, roles, enum values, ids), not
# user content: the scrubber passes them through unchanged.
PROTOCOL_KEYS = frozenset(
    "model role type object tool_choice finish_reason id tool_call_id call_id system_fingerprint service_tier "
    "reasoning_effort encoding_format detail format status response_format previous_response_id truncation "
    "modalities voice stop_reason item_id tool_use_id phase effort".split()
)
# A JSON object with one of these keys at the top is an LLM API body (request, response or
# stream event), whose PROTOCOL_KEYS are kept.
BODY_MARKERS = frozenset(("messages", "prompt", "input", "choices", "output", "stop_reason", "content_block",
                          "sequence_number"))
# "name" is a tool or function name (kept) inside objects under these keys; elsewhere (a chat
# message's "name") it may be a person's name and is scrubbed.
TOOL_NAME_PARENTS = frozenset(("function", "tools", "tool_choice", "item", "content_block"))


def stream_text_paths(chunk: Any) -> list[tuple[tuple, tuple]]:
    """Generated-text fragments of a stream event of any API (the scrubber does not know which
    API a stream belongs to; the shapes do not overlap)."""
    if not isinstance(chunk, dict):
        return []
    if "choices" in chunk:
        return CHAT.stream_text_paths(chunk)
    typ = chunk.get("type")
    if typ == "content_block_delta":
        return MESSAGES.stream_text_paths(chunk)
    if isinstance(typ, str) and typ.startswith("response."):
        return RESPONSES.stream_text_paths(chunk)
    return []


# ------------------------------------------------------------------------------ a whole stream


class StreamReader:
    """One response event stream, read with the time each piece arrived: output event times,
    the folded Reply, and what was wrong with it. Feed decoded bytes in order."""

    def __init__(self, api: LlmApi) -> None:
        self.api = api
        self.reply = Reply()
        self.data_events = 0  # events with data, [DONE] excluded
        self.first_data_t: float | None = None
        self.last_data_t: float | None = None
        self.token_times: list[float] = []  # arrival of the output events
        self.malformed_events = 0  # data that is not a JSON object
        self.invalid_utf8 = False
        self._framer = SseFramer()

    def feed(self, data: bytes, t: float) -> None:
        block = self._framer.feed(data)
        if block:
            self._block(block, t)

    def close(self, t: float) -> None:
        block = self._framer.close()
        if block:
            self._block(block, t)

    def _block(self, block: bytes, t: float) -> None:
        import json

        api = self.api
        for raw in iter_events(block):
            _, data = event_fields(raw)
            if data is None:
                continue
            if is_done(data):
                self.reply.done = True
                continue
            if not data.strip():
                continue
            self.data_events += 1
            if self.first_data_t is None:
                self.first_data_t = t
            self.last_data_t = t
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                self.invalid_utf8 = True
                text = data.decode("utf-8", "replace")
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):
                self.malformed_events += 1
                continue
            if not isinstance(obj, dict):
                self.malformed_events += 1
                continue
            if api.event(obj, self.reply):
                self.token_times.append(t)
