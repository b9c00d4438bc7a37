"""Pure tests of the schema-less protobuf scrubber, checked against the real protobuf runtime:
scrubbed bytes must still parse with the message's schema."""

from __future__ import annotations

import random
import re

import pytest

from shadowreplay.recorder.protobuf_scrub import encode_varint, parse_fields, scrub_message
from tests.grpc_llm_server import load_protos

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+", re.ASCII)


def email_scrub(text: str):
    """A deterministic text scrubber for these pure tests: e-mails -> 'x' * same char count."""
    n = 0

    def sub(m):
        nonlocal n
        n += 1
        return "x" * len(m.group(0))

    out = EMAIL.sub(sub, text)
    return out, {"email": n} if n else {}


def multibyte_scrub(text: str):
    """Substitutes keep the character count but not the UTF-8 byte count (like a name scrubber
    replacing 'Bob' with 'Zoë' or 'José' with 'Jack')."""
    out = text.replace("Bob", "Zoë").replace("José", "Jack").replace("bob@example.com", "ñ" * 15)
    return out, ({"name": 1} if out != text else {})


@pytest.fixture(scope="module")
def pb2():
    return load_protos()[0]


def full_request(pb2, **kw):
    return pb2.GenerateRequest(
        prompt=kw.get("prompt", "Hello, write to bob@example.com please"),
        max_tokens=77,
        user=kw.get("user", "Bob"),
        profile=pb2.Profile(name="José", email="bob@example.com", tags=["vip", "bob@example.com"]),
        prompt_token_ids=[1, 300, 70000, 2**31 - 1],
        blob=bytes([0xFF, 0x00, 0x80]) + b"bob@example.com" + bytes([0xFE]),
        temperature=0.25,
        seed=2**63 + 5,
        labels={"team": "bob@example.com", "tier": "gold"},
    )


def test_no_pii_is_byte_identical(pb2):
    msg = pb2.GenerateRequest(prompt="nothing here", max_tokens=3, prompt_token_ids=[5, 6, 7])
    raw = msg.SerializeToString()
    r = scrub_message(raw, email_scrub)
    assert r.data == raw and not r.changed


def test_nested_messages_maps_and_bytes_are_scrubbed_schema_intact(pb2):
    msg = full_request(pb2)
    raw = msg.SerializeToString()
    r = scrub_message(raw, email_scrub)
    assert b"bob@example.com" not in r.data
    out = pb2.GenerateRequest.FromString(r.data)
    assert out.prompt == "Hello, write to " + "x" * 15 + " please"
    assert out.profile.email == "x" * 15
    assert list(out.profile.tags) == ["vip", "x" * 15]
    assert out.profile.name == "José"
    assert dict(out.labels) == {"team": "x" * 15, "tier": "gold"}
    assert out.blob == bytes([0xFF, 0x00, 0x80]) + b"x" * 15 + bytes([0xFE])  # bytes: same length
    # numbers untouched, packed varints included
    assert list(out.prompt_token_ids) == [1, 300, 70000, 2**31 - 1]
    assert (out.max_tokens, out.temperature, out.seed) == (77, 0.25, 2**63 + 5)
    assert r.counts["email"] == 5


def test_multibyte_substitutes_reencode_lengths_up_the_tree(pb2):
    msg = full_request(pb2)
    raw = msg.SerializeToString()
    r = scrub_message(raw, multibyte_scrub)
    assert len(r.data) != len(raw)  # byte lengths changed ...
    out = pb2.GenerateRequest.FromString(r.data)  # ... and it still parses
    assert out.user == "Zoë" and len(out.user) == len("Bob")
    assert out.profile.name == "Jack" and len(out.profile.name) == len("José")
    assert out.profile.email == "ñ" * 15
    assert out.prompt == "Hello, write to " + "ñ" * 15 + " please"
    assert list(out.prompt_token_ids) == [1, 300, 70000, 2**31 - 1]
    assert dict(out.labels) == {"team": "ñ" * 15, "tier": "gold"}
    # the untouched fields survive exactly
    assert (out.max_tokens, out.temperature, out.seed) == (77, 0.25, 2**63 + 5)


def test_long_strings_cross_varint_length_boundaries(pb2):
    # 127 -> 128 bytes needs a two-byte length prefix
    prompt = "Bob" + "a" * 124
    out_raw = scrub_message(pb2.GenerateRequest(prompt=prompt, user="x").SerializeToString(), multibyte_scrub).data
    out = pb2.GenerateRequest.FromString(out_raw)
    assert out.prompt == "Zoë" + "a" * 124 and len(out.prompt.encode()) == 128


def test_deep_nesting_is_bounded(pb2):
    # 200 levels of nested field 1: recursion stops at MAX_DEPTH and the rest is scrubbed as bytes
    inner = b"\x0a\x0fbob@example.com"
    for _ in range(200):
        inner = b"\x0a" + encode_varint(len(inner)) + inner
    r = scrub_message(inner, email_scrub)
    assert b"bob@example.com" not in r.data
    assert len(r.data) == len(inner)


def test_garbage_never_raises():
    rng = random.Random(1)
    samples = [b"", b"\x00", b"\xff" * 20, b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"\x0b\x0c"]
    samples += [rng.randbytes(rng.randrange(1, 400)) for _ in range(2000)]
    for s in samples:
        r = scrub_message(s, email_scrub)
        assert isinstance(r.data, bytes)
        assert len(r.data) == len(s)  # email_scrub keeps byte length for ASCII


def test_truncated_message_is_scrubbed_as_bytes(pb2):
    raw = full_request(pb2).SerializeToString()
    cut = raw[: raw.index(b"bob@example.com") + 15]  # ends inside the prompt field
    assert parse_fields(cut) is None
    r = scrub_message(cut, email_scrub)
    assert b"bob@example.com" not in r.data and len(r.data) == len(cut)


def test_printable_text_that_parses_as_a_message_is_scrubbed_as_text(pb2):
    # This plain text also parses as a message {1: "contact j", 12: "example.com....."}, with the
    # e-mail split across two fields: walked as a message it would leak; read as text it cannot.
    text = "\n\tcontact jb@example.com" + "." * 53
    assert parse_fields(text.encode()) is not None
    msg = pb2.CountRequest(text=text)
    out = pb2.CountRequest.FromString(scrub_message(msg.SerializeToString(), email_scrub).data)
    assert "jb@example.com" not in out.text and len(out.text) == len(text)


def test_scrubber_failure_drops_text_not_leaks():
    def broken(text):
        raise RuntimeError("bug")

    raw = b"\x0a\x0fbob@example.com"
    r = scrub_message(raw, broken)
    assert b"bob" not in r.data and r.counts["scrub_error"] >= 1
