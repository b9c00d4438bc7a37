"""The orjson path of scrub_body writes byte for byte what the json path writes (same text,
counts, count order, flags), including where it has to hand over to json: floats json formats
differently, integers beyond 64 bits, NaN, lone surrogates, keys with commas or colons, deep
nesting, and every separator style."""

from __future__ import annotations

import json
import random

import pytest

from shadowreplay.anonymize import Scrubber, fastjson
from tests.anonymize_helpers import CLEAN, PLANTED


SEPARATORS = [(", ", ": "), (",", ":"), (",", ": "), (", ", ":")]


def _both(scrub_key, bodies, monkeypatch):
    """Scrub each body with orjson and with json alone (fastjson refusing every body)."""
    fast = Scrubber(scrub_key)
    fast_out = [fast.scrub_body(b, "application/json") for b in bodies]
    slow = Scrubber(scrub_key)
    with monkeypatch.context() as m:
        m.setattr(fastjson, "loads", lambda data: (False, None))
        slow_out = [slow.scrub_body(b, "application/json") for b in bodies]
    for body, a, b in zip(bodies, fast_out, slow_out):
        assert (a.text, list(a.counts.items()), a.is_json, a.error) == (b.text, list(b.counts.items()), b.is_json, b.error), body[:200]
    return fast_out


def _bodies(seed: int, n: int) -> list[bytes]:
    r = random.Random(seed)
    pieces = [t for _, _, t in PLANTED] + CLEAN + ["", "q\"x\\y", "a, b: c", "{\"k\": [1, 2]}", "tab\there\nnl", "\x00\x01\x1f\x7f", "\u2028\u2029", "é中😀"]
    floats = [0.7, 1.0, 100.0, -0.0, 1e-05, 1e16, 1.5e300, 0.1, 123456.789, 2.5e-07]
    out = []
    history: list[dict] = [{"role": "system", "content": r.choice(pieces)}]
    for i in range(n):
        history.append({"role": r.choice(["user", "assistant"]), "content": r.choice(pieces)})
        kind = r.randrange(8)
        if kind == 0:
            body: object = {"model": "m", "messages": history[:], "temperature": r.choice(floats)}
        elif kind == 1:
            body = {"model": "m", "messages": history[:], "n": r.choice([1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 10**30])}
        elif kind == 2:
            body = {"model": "m", "messages": [{"role": "assistant", "content": None, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "Alice Smith", "arguments": json.dumps({"phone": r.choice(pieces)})}}]}]}
        elif kind == 3:
            body = {r.choice(["a,b", "k:v", "plain", "x\"y", "é"]): r.choice(pieces), "api_key": r.choice(pieces) or "x"}
        elif kind == 4:
            body = [r.choice(pieces), r.choice(floats), None, True, False, {"stop": [r.choice(pieces)]}]
        elif kind == 5:
            body = r.choice([r.choice(pieces), 42, None, 1.5])
        elif kind == 6:
            body = {"prompt": r.choice(pieces)}
            for _ in range(r.choice([3, 200, 300])):
                body = {"x": [body]}
        else:
            body = {"input": [{"role": "user", "content": [{"type": "input_text", "text": r.choice(pieces)}]}], "metadata": {"k": r.choice(pieces)}}
        out.append(json.dumps(body, ensure_ascii=r.random() < 0.3, separators=r.choice(SEPARATORS)).encode())
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_orjson_path_is_byte_identical_to_json_path(scrub_key, seed, monkeypatch):
    out = _both(scrub_key, _bodies(seed, 400), monkeypatch)
    assert sum(r.is_json for r in out) == len(out)


def test_edge_bodies_identical(scrub_key, monkeypatch):
    bodies = [
        b'{"a": NaN, "b": "13812345678"}', b'{"a": 1E400}', b'{"a": 18446744073709551616, "t": "13812345678"}',
        b'{"a":"\\ud800 13812345678"}', b'{"a": "x"} trailing', b"", b"null", b"[]", b"{}", b'"13812345678"', b"-0",
        b"[" * 300 + b"]" * 300, b"[" * 1100 + b"]" * 1100, b'{"a": "\xff\xfe 13812345678"}', b'\xef\xbb\xbf{"a": 1}',
        b'  {"k" : "v" ,"m":[1 ,2]}  ', b'{\n  "messages": [\n    {"role": "user", "content": "call 13812345678"}\n  ]\n}',
        b'{"a": "\\u002c\\u003a , :", "b,": 1}', b'{"a": 1e-05, "b": 0.00001, "c": 1E+2}',
    ]
    _both(scrub_key, bodies, monkeypatch)


def test_string_escapes_match_json():
    """Every code point below U+3000 and a sample above: orjson escapes a string as json does."""
    enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    cps = list(range(0x3000)) + list(range(0xE000, 0x10000, 7)) + list(range(0x10000, 0x110000, 997))
    chars = [chr(c) for c in cps if not 0xD800 <= c <= 0xDFFF]
    assert fastjson.orjson.dumps(chars).decode() == enc.encode(chars)


def test_plain_floats_are_formatted_as_repr():
    r = random.Random(3)
    vals = [r.uniform(-1e6, 1e6) for _ in range(20000)] + [r.random() * 10.0 ** r.randrange(-4, 16) for _ in range(20000)]
    vals = [v for v in vals if fastjson.plain_floats([v])]
    assert len(vals) > 30000
    assert fastjson.orjson.dumps(vals).decode() == json.dumps(vals, separators=(",", ":"))
    assert not fastjson.plain_floats([1e-05]) and not fastjson.plain_floats([1e16]) and not fastjson.plain_floats([float("inf")])
    assert not fastjson.plain_floats([float("nan")]) and fastjson.plain_floats([0.7, 100.0, -0.0])


def test_body_separators_as_read_from_the_decoded_text():
    """The JSON fast path reads a body's separators from its head bytes: the same answer as
    from the whole decoded text, wherever the first separator stands and however wide the
    characters before it are (a character cut at the end of a slice)."""
    from shadowreplay.anonymize.scrubber import _body_separators, _separators

    bodies = []
    for pad in ("", "x" * 300, "中" * 300, "\U0001f600" * 300, "中" * 1500, "x" * 5000, "é" * 2100):
        for seps in ((",", ":"), (", ", ": "), (", ", ":"), (",", ": ")):
            value = {"p": pad, "a": [1, 2], "b": {"c": "d"}}
            bodies.append(json.dumps(value, ensure_ascii=False, separators=seps).encode())
    for body in bodies:
        assert _body_separators(body) == _separators(body.decode()), body[:40]
