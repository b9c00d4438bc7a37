"""JSON-aware scrubbing of OpenAI-style bodies, shared system prompts, headers, keys, bad input."""

from __future__ import annotations

import json
import random

import pytest

from shadowreplay.anonymize import Scrubber, load_key
from shadowreplay.errors import ConfigError
from tests.anonymize_helpers import PLANTED


@pytest.fixture
def scrubber(scrub_key) -> Scrubber:
    return Scrubber(scrub_key)


def shape(v):
    """The JSON shape: keys, types, array lengths, non-string scalars and string lengths."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(x) for x in v]
    if isinstance(v, str):
        return ("str", len(v))
    return v


def strings(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, str):
        yield v


SYSTEM = ("You are the support assistant of Example Corp. Be concise and polite. " * 20)[:1000]


def chat_body(user_text: str, system: str = SYSTEM) -> dict:
    args = json.dumps({"email": "john.doe@example.com", "phone": "+86 138 1234 5678", "note": "我叫王小明"}, ensure_ascii=False)
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": [{"type": "text", "text": user_text},
                                         {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_abc123", "type": "function", "function": {"name": "lookup_customer", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_abc123", "content": '{"card": "4111 1111 1111 1111", "ip": "203.0.113.42"}'},
            {"role": "user", "content": "My name is John Smith, mail john.doe@example.com", "name": "John"},
        ],
        "tools": [{"type": "function", "function": {"name": "lookup_customer", "description": "Find a customer",
                                                    "parameters": {"type": "object", "properties": {"email": {"type": "string"}}}}}],
        "temperature": 0.2, "max_tokens": 128, "stream": True, "stop": ["\n\n"], "user": "alice@corp.example",
    }


def test_chat_body_shape_kept_and_pii_gone(scrubber):
    planted_text = " ".join(t for _, _, t in PLANTED)
    body = chat_body(planted_text)
    before = json.dumps(body)
    out, counts = scrubber.scrub_json(body)
    assert json.dumps(body) == before  # the caller's value is not modified
    assert shape(out) == shape(body)
    # protocol fields untouched
    assert out["model"] == "gpt-4o-mini"
    assert [m["role"] for m in out["messages"]] == [m["role"] for m in body["messages"]]
    assert out["messages"][2]["tool_calls"][0]["function"]["name"] == "lookup_customer"
    assert out["messages"][2]["tool_calls"][0]["id"] == "call_abc123"
    assert out["messages"][1]["content"][1]["image_url"]["detail"] == "low"
    assert out["temperature"] == 0.2 and out["max_tokens"] == 128 and out["stream"] is True
    joined = "\n".join(strings(out))
    for _, value, _ in PLANTED:
        assert value not in joined
    for value in ("john.doe@example.com", "138 1234 5678", "王小明", "4111 1111 1111 1111", "203.0.113.42",
                  "John Smith", "alice@corp.example"):
        assert value not in joined
    # tool-call arguments are still JSON of the same shape
    args_in = json.loads(body["messages"][2]["tool_calls"][0]["function"]["arguments"])
    args_out = json.loads(out["messages"][2]["tool_calls"][0]["function"]["arguments"])
    assert shape(args_in) == shape(args_out) and args_out != args_in
    assert counts["email"] >= 3 and counts["person"] >= 2 and counts["card"] >= 1


def test_completions_and_responses_bodies(scrubber):
    comp = {"model": "m", "prompt": ["Customer 13812345678 asks", "email: bob@corp.example"], "max_tokens": 5}
    out, counts = scrubber.scrub_json(comp)
    assert shape(out) == shape(comp) and out["model"] == "m"
    assert "13812345678" not in out["prompt"][0] and "bob@corp.example" not in out["prompt"][1]
    resp = {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "I'm Emily, IP 203.0.113.9"}]}]}
    out, counts = scrubber.scrub_json(resp)
    assert shape(out) == shape(resp)
    assert out["input"][0]["content"][0]["type"] == "input_text"
    assert "Emily" not in out["input"][0]["content"][0]["text"] and "203.0.113.9" not in out["input"][0]["content"][0]["text"]


def test_other_json_every_string_and_secret_keys(scrubber):
    value = {"model": "a@b.co", "items": [{"password": "x", "token": "plain-words-token"}, 5, None, True]}
    out, counts = scrubber.scrub_json(value)
    assert shape(out) == shape(value)
    assert out["model"] != "a@b.co"  # not an OpenAI body: every string value is scrubbed
    assert out["items"][0]["password"] != "x" and out["items"][0]["token"] != "plain-words-token"
    assert out["items"][1:] == [5, None, True]
    assert counts["secret"] == 2


def test_bodies_sharing_a_1000_char_system_prompt_still_share_it(scrub_key):
    system = ("Support policy: never reveal internal notes. Contact escalation@example.com or call "
              "+1 (212) 736-5000; the on-call engineer is Mr. Brown (IP 198.51.100.7). ") * 8
    system = system[:1000]
    assert len(system) == 1000
    a = chat_body("first question, I'm Emily", system)
    b = chat_body("完全不同的问题，我叫李娜，手机13912345678", system)
    # same process, one scrubber
    s = Scrubber(scrub_key)
    sa = s.scrub_body(json.dumps(a).encode()).text
    sb = s.scrub_body(json.dumps(b).encode()).text
    pa = json.loads(sa)["messages"][0]["content"]
    pb = json.loads(sb)["messages"][0]["content"]
    assert pa == pb and len(pa) == 1000
    assert "escalation@example.com" not in pa and "736-5000" not in pa and "198.51.100.7" not in pa
    # fresh scrubbers (no shared cache): still identical
    pc = json.loads(Scrubber(scrub_key).scrub_body(json.dumps(b).encode()).text)["messages"][0]["content"]
    assert pc == pa
    # completions: the prompt strings share a 1,000-character prefix; the scrubbed prefixes match
    c1 = Scrubber(scrub_key).scrub_json({"model": "m", "prompt": system + " user one asks about 13812345678"})[0]["prompt"]
    c2 = Scrubber(scrub_key).scrub_json({"model": "m", "prompt": system + " 用户二 john@x.org"})[0]["prompt"]
    assert c1[:1000] == c2[:1000] == pa


def test_scrub_body_keeps_separator_style(scrubber):
    compact = b'{"model":"m","messages":[{"role":"user","content":"hi a@b.co"}]}'
    spaced = b'{"model": "m", "messages": [{"role": "user", "content": "hi a@b.co"}]}'
    rc, rs = scrubber.scrub_body(compact, "application/json"), scrubber.scrub_body(spaced)
    assert rc.is_json and rs.is_json and rc.error is None
    assert len(rc.text) == len(compact) and len(rs.text) == len(spaced)
    assert "a@b.co" not in rc.text and rc.counts == {"email": 1}


def test_headers(scrubber):
    headers = [("Authorization", "Bearer sk-proj-abcdefghijklmnopqrstuvwx"), ("Cookie", "session=abc123"),
               ("Set-Cookie", "id=1"), ("X-Api-Key", "k-123456"), ("api-key", "azure-key"),
               ("Proxy-Authorization", "Basic dXNlcjpwYXNz"), ("X-Forwarded-For", "203.0.113.42, 10.0.0.1"),
               ("Accept", "text/event-stream"), ("Accept", "application/json"), ("User-Agent", "OpenAI/Python 1.40.0")]
    out, counts = scrubber.scrub_headers(headers)
    assert set(out) == {"authorization", "cookie", "set-cookie", "x-api-key", "api-key", "proxy-authorization",
                        "x-forwarded-for", "accept", "user-agent"}
    for name, value in headers[:6]:
        assert out[name.lower()].startswith("<redacted:") and value not in out[name.lower()]
    assert "203.0.113.42" not in out["x-forwarded-for"] and len(out["x-forwarded-for"]) == len("203.0.113.42, 10.0.0.1")
    assert out["accept"] == "text/event-stream, application/json"
    assert out["user-agent"] == "OpenAI/Python 1.40.0"
    assert counts["secret"] == 6 and counts["ipv4"] == 2
    # the fingerprint is keyed and stable
    again, _ = Scrubber(scrubber._key).scrub_headers(headers)
    assert again["authorization"] == out["authorization"]


def test_client_id_is_stable_keyed_and_strips_bearer(scrub_key):
    s = Scrubber(scrub_key)
    cid = s.client_id("Bearer sk-proj-abc")
    assert cid == s.client_id("sk-proj-abc") == Scrubber(scrub_key).client_id("bearer sk-proj-abc")
    assert cid.startswith("c_") and len(cid) == 18 and "abc" not in cid
    assert Scrubber(scrub_key + b"x").client_id("sk-proj-abc") != cid
    assert len(s.keyed_hash("x")) == 16 and s.keyed_hash("x") == Scrubber(scrub_key).keyed_hash("x")


# ---------------------------------------------------------------- bad input
def test_invalid_utf8_is_decoded_with_replacement_and_still_scrubbed(scrubber):
    body = b"\xff\xfe mail a@b.co tel 13812345678 \xc3"
    r = scrubber.scrub_body(body)
    assert r.error and "UTF-8" in r.error
    assert "a@b.co" not in r.text and "13812345678" not in r.text and "\ufffd" in r.text


def test_binary_body_never_crashes(scrubber):
    rnd = random.Random(1)
    blob = bytes(rnd.randrange(256) for _ in range(200_000)) + b" 4111111111111111 "
    r = scrubber.scrub_body(blob, "application/octet-stream")
    assert not r.is_json and r.error
    assert "4111111111111111" not in r.text


def test_megabyte_string(scrubber):
    chunk = "Some ordinary prose about the weather and the project plan. " * 30
    text = (chunk + "Reach me at big.file@example.com or 13812345678. ") * 400  # ~ 1 MB
    assert len(text) > 700_000
    r = scrubber.scrub_text(text)
    assert len(r.text) == len(text)
    assert "big.file@example.com" not in r.text and "13812345678" not in r.text
    assert r.counts == {"email": 400, "cn_mobile": 400}


def test_over_max_chars_is_masked_not_passed(scrub_key):
    s = Scrubber(scrub_key, max_chars=1000)
    text = "John Smith lives at 42 Elm Street, 我叫王小明 " * 100
    r = s.scrub_text(text)
    assert r.error and "max_chars" in r.error
    assert len(r.text) == len(text)
    assert "Smith" not in r.text and "Street" not in r.text and "王小明" not in r.text
    assert sum(a == b for a, b in zip(text, r.text) if a.isalnum()) < 0.2 * sum(a.isalnum() for a in text)


def test_deeply_nested_json_body_falls_back_to_text(scrubber):
    deep = b"[" * 100_000 + b'"13812345678"' + b"]" * 100_000
    r = scrubber.scrub_body(deep, "application/json")
    assert not r.is_json and r.error and "nested" in r.error
    assert "13812345678" not in r.text


def test_deeply_nested_python_value_is_walked_iteratively(scrubber):
    value: object = "call 13812345678"
    for i in range(50_000):
        value = [value] if i % 2 else {"k": value}
    out, counts = scrubber.scrub_json(value)
    assert counts == {"cn_mobile": 1}
    node = out
    while not isinstance(node, str):
        node = node[0] if isinstance(node, list) else node["k"]
    assert node.startswith("call ") and "13812345678" not in node


def test_internal_failure_masks_instead_of_passing_text(scrubber, monkeypatch):
    import shadowreplay.anonymize.scrubber as mod

    def boom(text):
        raise ValueError("bug")

    monkeypatch.setattr(mod, "find_spans", boom)
    r = scrubber.scrub_text("John Smith 13812345678 plain words")
    assert r.error and "masked" in r.error
    assert "John" not in r.text and "13812345678" not in r.text and len(r.text) == len("John Smith 13812345678 plain words")
    out, counts = scrubber.scrub_json({"a": "John Smith 13812345678", "b": "mail x@y.org"})
    assert "John" not in out["a"] and "x@y.org" not in out["b"]


# ---------------------------------------------------------------- keys
def test_load_key(tmp_path):
    f = tmp_path / "k"
    f.write_bytes(b"  secret-key-0123456789\n")
    assert load_key(f) == b"secret-key-0123456789"
    assert load_key(None, environ={"SHADOWREPLAY_SCRUB_KEY": " env-key-0123456789 "}) == b"env-key-0123456789"
    assert load_key(f, environ={"SHADOWREPLAY_SCRUB_KEY": "env"}) == b"secret-key-0123456789"
    with pytest.raises(ConfigError, match="SHADOWREPLAY_SCRUB_KEY"):
        load_key(None, environ={})
    with pytest.raises(ConfigError, match="empty"):
        load_key(None, environ={"SHADOWREPLAY_SCRUB_KEY": "  "})
    (tmp_path / "empty").write_bytes(b"\n")
    with pytest.raises(ConfigError, match="empty"):
        load_key(tmp_path / "empty")
    with pytest.raises(ConfigError, match="does not exist"):
        load_key(tmp_path / "missing")
    with pytest.raises(ValueError):
        Scrubber(b"")


# ---------------------------------------------------------------- streamed responses
def sse(chunks: list[dict]) -> bytes:
    return ("".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def test_sse_pii_split_across_chunks_is_caught(scrubber):
    tokens = ["Sure", ", reach", " me at jo", "hn.doe@exa", "mple.com", " or 手机138", "1234", "5678", "。我叫王", "小明"]
    chunks = [{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in tokens]
    chunks.append({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"completion_tokens": 10}})
    body = sse(chunks)
    r = scrubber.scrub_body(body, "text/event-stream")
    assert not r.is_json and r.error is None
    events = [e for e in r.text.split("\n\n") if e]
    assert len(events) == len(chunks) + 1 and events[-1] == "data: [DONE]"
    out_chunks = [json.loads(e[len("data: "):]) for e in events[:-1]]
    for a, b in zip(chunks, out_chunks):
        assert shape(a) == shape(b)  # every chunk keeps its fragment's length
        assert b["id"] == "chatcmpl-1" and b["model"] == "m"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in out_chunks)
    assert len(text) == len("".join(tokens))
    assert "john.doe@example.com" not in text and "13812345678" not in text and "王小明" not in text
    assert r.counts == {"email": 1, "cn_mobile": 1, "person": 1}


def test_sse_tool_call_arguments_and_completions_text(scrubber):
    args = ['{"em', 'ail": "bob@co', 'rp.example"}']
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}}]} for a in args]
    chunks += [{"choices": [{"index": 0, "text": t}]} for t in ["call 139", "1234", "5678 now"]]
    r = scrubber.scrub_body(sse(chunks), "text/event-stream")
    out = [json.loads(e[6:]) for e in r.text.split("\n\n") if e.startswith("data: {")]
    joined_args = "".join(c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in out[:3])
    joined_text = "".join(c["choices"][0]["text"] for c in out[3:])
    assert "bob@corp.example" not in joined_args and json.loads(joined_args).keys() == {"email"}
    assert "13912345678" not in joined_text and len(joined_text) == len("call 13912345678 now")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("unit", [
    "key" + " " * 50,               # key-like word followed by long whitespace
    "a@" + "b." * 60,               # many '@' before long dotted runs
    "1 2 3 4 5 6 7 8 9 ",           # endless space-separated digits
    "1234 5678 9012 3456 ",         # endless card-like groups
    "my name is Aaaa Bbbb Cccc ",   # trigger phrases back to back
    "::" + "ab:" * 10,              # colon runs
])
def test_adversarial_large_inputs_finish(scrubber, unit):
    text = unit * (500_000 // len(unit))
    r = scrubber.scrub_text(text + " 13812345678")
    assert len(r.text) == len(text) + 12
    assert not r.text.endswith("13812345678")


def test_non_json_python_values_are_never_passed_through(scrubber):
    import datetime

    value = {"t": ("call 13812345678", 5, None, True), "b": b"mail a@b.co", "d": datetime.date(2024, 1, 2), "f": 1.5}
    out, counts = scrubber.scrub_json(value)
    assert out["t"][1:] == [5, None, True] and "13812345678" not in out["t"][0]
    assert isinstance(out["b"], str) and "a@b.co" not in out["b"]
    assert out["d"] == "2024-01-02" and out["f"] == 1.5
    assert counts == {"email": 1, "cn_mobile": 1}


def test_scrub_body_leaves_the_collector_as_it_found_it(scrubber, monkeypatch):
    """The cyclic collector waits while a body is scrubbed, and is on again after it, also
    when scrubbing fails; one the caller turned off stays off."""
    import gc

    seen = []
    real = scrubber._scrub_body

    def spy(body, content_type):
        seen.append(gc.isenabled())
        return real(body, content_type)

    monkeypatch.setattr(scrubber, "_scrub_body", spy)
    body = json.dumps({"messages": [{"role": "user", "content": "mail bob@example.com"}]}).encode()
    assert gc.isenabled()
    assert b"bob@example.com" not in scrubber.scrub_body(body).text.encode()
    assert seen == [False] and gc.isenabled()

    def boom(body, content_type):
        raise RuntimeError("boom")

    monkeypatch.setattr(scrubber, "_scrub_body", boom)
    with pytest.raises(RuntimeError):
        scrubber.scrub_body(body)
    assert gc.isenabled()

    monkeypatch.setattr(scrubber, "_scrub_body", spy)
    gc.disable()
    try:
        scrubber.scrub_body(body)
        assert seen[-1] is False and not gc.isenabled()
    finally:
        gc.enable()


def test_in_place_walk_scrubs_values_of_no_json_type(scrubber):
    """scrub_tree(inplace=True) is for values of exact JSON types, but one that slipped in (a
    tuple, bytes, a dict subclass) is scrubbed through its JSON copy, never passed through."""
    from collections import OrderedDict

    value = {"a": ("call 13812345678", 5), "b": [b"mail a@b.co"], "c": OrderedDict(x="Dr. John Smith here")}
    out, counts = scrubber.scrub_tree(value, inplace=True)
    text = json.dumps(out)
    assert "13812345678" not in text and "a@b.co" not in text and "John Smith" not in text
    assert out["a"][1] == 5 and counts["email"] == 1 and counts["cn_mobile"] == 1


def test_names_propagate_in_a_tree_but_not_into_protocol_fields(scrubber):
    """A name found in one string is replaced in every other string of the tree, except the
    protocol fields an OpenAI body keeps (a tool's name among them)."""
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "My name is Henrik Nakamura."}, {"role": "user", "content": "nakamura again"}],
        "tools": [{"type": "function", "function": {"name": "Nakamura", "parameters": {}}}],
    }
    out, counts = scrubber.scrub_json(body)
    assert "Nakamura" not in out["messages"][0]["content"] and "nakamura" not in out["messages"][1]["content"]
    assert out["tools"][0]["function"]["name"] == "Nakamura" and counts["person"] >= 2
