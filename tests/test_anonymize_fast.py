"""The speed-ups change nothing: substitutes and hashes are pinned to what the scrubber produced
before them (a changed substitute would break the consistency of recordings made under one
key), and each fast path agrees with the general one it short-cuts."""

from __future__ import annotations

import hmac
import json

import pytest

from shadowreplay.anonymize import Scrubber
from shadowreplay.anonymize.keyedhash import KeyedSHA256

PINNED_KEY = b"pinned-test-key"
PINNED_BODY = json.dumps(
    {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": "My name is Alice Smith, mail alice.smith@example.com, call +1 415 555 2671 or 13812345678, "
                "card 4111 1111 1111 1111, 我叫王小明，身份证 11010519491231002X, key sk-abcdefghijklmnop1234, ip 10.1.2.3",
            }
        ],
        "api_key": "hunter2-secret",
    },
    ensure_ascii=False,
).encode()
# produced by the scrubber at commit 7c40818, before the speed-ups; Latin-script names since
# they are substituted word by word (every mention of a name gets one substitute)
PINNED_OUT = (
    '{"model": "m", "messages": [{"role": "user", "content": "My name is Nancy Jared, mail divub.zasac@gudehiw.com, '
    'call +1 478 034 6588 or 14226956767, card 4402 4692 9521 6967, 我叫龚伟强，身份证 63201219560328897X, '
    'key sk-fqcxpvoarsvhhtry5569, ip 34.0.9.0"}], "api_key": "vauucj5-bllupr"}'
)
PINNED_COUNTS = {"secret": 2, "person": 2, "email": 1, "phone": 1, "cn_mobile": 1, "card": 1, "cn_id": 1, "ipv4": 1}


@pytest.mark.parametrize("key_len", [1, 15, 32, 63, 64, 65, 200])
def test_keyed_sha256_is_hmac_sha256(key_len):
    key = bytes((i * 37 + 11) % 256 for i in range(key_len))
    h = KeyedSHA256(key)
    for msg in (b"", b"email\0alice@example.com", "名字\0王小明".encode(), bytes(range(256)) * 5):
        assert h.digest(msg) == hmac.digest(key, msg, "sha256")


def test_substitutes_and_hashes_are_pinned():
    s = Scrubber(PINNED_KEY)
    r = s.scrub_body(PINNED_BODY, "application/json")
    assert r.text == PINNED_OUT
    assert r.counts == PINNED_COUNTS
    assert s.keyed_hash("x") == "d1bd4275cdf81fa3"
    assert s.client_id("Bearer sk-abc") == "c_c1ff3f4c754778bc"
    assert s.mask_text("Hello 123 世界") == "Chknt 376 利林"


# Computed with the hand-written HMAC (two SHA-256 states copied per message), before keyedhash
# moved onto the `hmac` module: keyed substitutes must not change across versions.
HMAC_PINNED_KEY = b"pinned-test-key-0123456789abcdef"
HMAC_PINNED_SUBSTITUTES = {
    ("email", "alice.smith@example.com"): "pozol.lifik@guvasiz.com",
    ("phone", "+1 415 555 0100"): "+1 417 617 4547",
    ("cn_mobile", "13812345678"): "17488233609",
    ("cn_id", "11010519491231002X"): "63141019861112212X",
    ("card", "4111 1111 1111 1111"): "4378 8881 2942 7005",
    ("iban", "DE89370400440532013000"): "DE53601537807944047588",
    ("ipv4", "192.168.12.34"): "133.144.33.96",
    ("ipv6", "2001:db8::8a2e:370:7334"): "7949:cd4::9c6e:160:3260",
    ("secret", "sk-proj-abcdefghijklmnopqrstuvwx"): "sk-proj-icbxuwhkieorfjkddhgiapwf",
    ("us_ssn", "123-45-6789"): "632-13-4801",
    ("person", "Alice Smith"): "Susan Randy",
}


def test_keyed_outputs_pinned_across_the_hmac_change():
    s = Scrubber(HMAC_PINNED_KEY)
    for (kind, value), want in HMAC_PINNED_SUBSTITUTES.items():
        assert s.substitute(kind, value) == want, kind
    assert s.keyed_hash("hello world") == "e1a55938b05009bc"
    assert s.client_id("Bearer sk-abc123") == "c_01b65221653e7c31"
    assert s.scrub_text("Contact alice.smith@example.com or call +1 415 555 0100; card 4111 1111 1111 1111.").text == (
        "Contact pozol.lifik@guvasiz.com or call +1 417 617 4547; card 4378 8881 2942 7005.")
    assert s.mask_text("Secret Text 123 abc") == "Ozoimn Ugiy 378 ljk"
    assert Scrubber(b"k" * 100).keyed_hash("long key") == "33e31c1dfbe3d241"  # a key longer than a block


def _random_bodies(seed: int, n: int) -> list[bytes]:
    """Multi-turn chat bodies (each repeats the history, like real traffic) and other JSON, built
    from the planted corpus, clean text, short strings and separators of both styles."""
    import random

    from tests.anonymize_helpers import CLEAN, PLANTED

    r = random.Random(seed)
    pieces = [t for _, _, t in PLANTED] + CLEAN + ["ok", "", "42", "a\\b \"q\"", "x" * 70, "tab\there"]
    out: list[bytes] = []
    messages: list[dict] = [{"role": "system", "content": r.choice(pieces) * 3}]
    for i in range(n):
        if r.random() < 0.2:
            messages = messages[:1]
        content = " ".join(r.choice(pieces) for _ in range(r.randrange(1, 4)))
        messages.append({"role": "user", "content": content if r.random() < 0.8 else [{"type": "text", "text": content}]})
        if r.random() < 0.7:
            body: object = {"model": "m", "messages": list(messages), "temperature": 0.5, "stop": [r.choice(pieces)]}
        else:
            body = {"data": [r.choice(pieces), {"password": r.choice(pieces) or "x", "nested": [r.choice(pieces)]}], "n": i}
        seps = (", ", ": ") if r.random() < 0.5 else (",", ":")
        out.append(json.dumps(body, ensure_ascii=r.random() < 0.3, separators=seps).encode())
        messages.append({"role": "assistant", "content": r.choice(pieces)})
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cached_and_uncached_scrubbing_agree(scrub_key, seed):
    """Whole-string caching (short strings included) and batching the strings of a body into one
    scan are shortcuts only: a scrubber that has seen many bodies gives, body for body, the same
    text and counts as one that scans every string on its own."""
    bodies = _random_bodies(seed, 150)
    cached = Scrubber(scrub_key)
    for body in bodies:
        fresh = Scrubber(scrub_key)
        fresh.disable_text_cache()
        a = cached.scrub_body(body, "application/json")
        b = fresh.scrub_body(body, "application/json")
        assert (a.text, a.counts, a.is_json, a.error) == (b.text, b.counts, b.is_json, b.error)
        one_by_one = Scrubber(scrub_key)
        value = json.loads(body)
        _, counts = one_by_one.scrub_json(value)
        assert counts == a.counts
    assert cached.stats.cache_hits > 0


def test_non_ascii_text_skips_english_detectors_only_without_ascii_letters(scrub_key):
    """Secrets and English names are only looked for in a non-ASCII text with an ASCII letter in
    its lower-cased form: a Kelvin sign lower-cases to "k", so "\u212aey: ..." is still a key."""
    s = Scrubber(scrub_key)
    r = s.scrub_text("你好 \u212aey: abcdEFGH1234xyz 我叫王小明")
    assert r.counts == {"secret": 1, "person": 1}
    assert "abcdEFGH1234xyz" not in r.text and len(r.text) == len("你好 \u212aey: abcdEFGH1234xyz 我叫王小明")
    assert s.scrub_text("密码：hunter22，电话13812345678").counts == {"secret": 1, "cn_mobile": 1}
