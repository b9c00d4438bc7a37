"""Planted-PII corpus (English and Chinese, adversarial formats): nothing planted survives,
lengths and character classes are kept, substitutes are realistic and valid."""

from __future__ import annotations

import ipaddress
import re
import unicodedata

import pytest

from shadowreplay.anonymize import Scrubber
from shadowreplay.anonymize.detectors import find_spans
from tests.anonymize_helpers import CLEAN, PLANTED, ascii_digits, cn_id_valid, iban_valid, luhn_valid


@pytest.fixture
def scrubber(scrub_key) -> Scrubber:
    return Scrubber(scrub_key)


def _class(ch: str) -> str:
    if ch.isdigit():
        return "fwdigit" if "\uff10" <= ch <= "\uff19" else "digit"
    if "\u4e00" <= ch <= "\u9fff":
        return "cjk"
    if ch.isalpha():
        return "upper" if ch.isupper() else "lower"
    return ch  # separators must stay exactly the same character


def _substitute_of(original_text: str, scrubbed_text: str, value: str) -> str:
    i = original_text.index(value)
    return scrubbed_text[i : i + len(value)]


@pytest.mark.parametrize("kind,value,text", PLANTED, ids=[f"{k}:{v}" for k, v, _ in PLANTED])
def test_planted_value_is_replaced(scrubber, kind, value, text):
    r = scrubber.scrub_text(text)
    assert value not in r.text
    assert len(r.text) == len(text)
    assert r.counts.get(kind, 0) >= 1, r.counts
    # only the value changed: the text around it is intact
    i = text.index(value)
    assert r.text[:i] == text[:i]
    assert r.text[i + len(value) :] == text[i + len(value) :]
    if kind == "person":  # the whole name is replaced, not just a part of it
        sub = r.text[i : i + len(value)]
        if "\u4e00" <= value[0] <= "\u9fff":
            assert sub[0] != value[0] and sub[-1] != value[-1], sub
        else:
            assert all(a != b for a, b in zip(sub.split(), value.split())), sub


@pytest.mark.parametrize("kind,value,text", PLANTED, ids=[f"{k}:{v}" for k, v, _ in PLANTED])
def test_substitute_keeps_character_classes(scrubber, kind, value, text):
    sub = _substitute_of(text, scrubber.scrub_text(text).text, value)
    assert len(sub) == len(value)
    if kind == "cn_id" and value[-1] in "xX":
        assert sub[-1] == value[-1]
    for a, b in zip(value, sub):
        if kind in ("iban", "ipv6", "secret"):  # letters may become digits only where the format allows
            assert (a.isalnum() and b.isalnum()) or a == b
        else:
            assert _class(a) == _class(b), (value, sub)


def test_substitutes_are_realistic(scrubber):
    out = {}
    for kind, value, text in PLANTED:
        out.setdefault(kind, []).append((value, _substitute_of(text, scrubber.scrub_text(text).text, value)))
    for value, sub in out["card"]:
        assert luhn_valid(ascii_digits(sub)), sub
    for value, sub in out["cn_id"]:
        norm = unicodedata.normalize("NFKC", sub)
        assert cn_id_valid(norm), sub
    for value, sub in out["email"]:
        # the at sign is kept as written (a full-width ＠ stays ＠)
        assert re.fullmatch(r"[A-Za-z0-9._%+'\-]+[@\uff20][A-Za-z0-9\-]+(\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}", sub), sub
        assert ("\uff20" in sub) == ("\uff20" in value)
        assert sub.rsplit(".", 1)[1] == value.rsplit(".", 1)[1]  # top-level domain kept
    for value, sub in out["iban"]:
        assert iban_valid(sub) and sub[:2] == value[:2], sub
    for value, sub in out["cn_mobile"]:
        d = ascii_digits(sub)
        assert re.fullmatch(r"(86)?1[3-9]\d{9}", d), sub
    for value, sub in out["ipv4"]:
        ipaddress.IPv4Address(sub)
    for value, sub in out["ipv6"]:
        ipaddress.IPv6Address(sub)
    for value, sub in out["person"]:
        if re.search(r"[\u4e00-\u9fff]", value):
            assert all("\u4e00" <= c <= "\u9fff" for c in sub)
        else:
            assert all(w[:1].isupper() for w in sub.split())
    for value, sub in out["secret"]:
        for prefix in ("sk-proj-", "sk-ant-api03-", "AKIA", "eyJ", "Bearer ", "sk_live_", "rk_test_", "AIza", "hf_", "glpat-",
                       "npm_", "gsk_", "r8_", "SG.", "github_pat_"):
            if value.startswith(prefix):
                assert sub.startswith(prefix)


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_text_is_left_alone(scrubber, text):
    r = scrubber.scrub_text(text)
    assert r.text == text and r.counts == {}


def test_same_value_same_substitute_across_formats_and_contexts(scrubber):
    a = scrubber.scrub_text("手机13812345678").text[2:]
    b = scrubber.scrub_text("call 13812345678 now").text[5:16]
    assert a == b
    # the normalized value seeds the generator: the dashed form gets the same digits
    c = scrubber.scrub_text("tel 138-1234-5678").text[4:]
    assert ascii_digits(c) == ascii_digits(a)


def test_other_key_gives_other_substitutes(scrub_key):
    text = " ".join(t for _, _, t in PLANTED)
    a = Scrubber(scrub_key).scrub_text(text).text
    b = Scrubber(scrub_key).scrub_text(text).text
    c = Scrubber(scrub_key + b"-other").scrub_text(text).text
    assert a == b
    assert a != c
    # most individual substitutes differ, not just one
    diff = sum(1 for _, v, t in PLANTED if _substitute_of(t, Scrubber(scrub_key).scrub_text(t).text, v)
               != _substitute_of(t, Scrubber(scrub_key + b"-other").scrub_text(t).text, v))
    assert diff >= len(PLANTED) - 2


def test_counts_add_up(scrubber):
    r = scrubber.scrub_text("a@b.co and c@d.org, 13812345678, 13912345678 and 4111111111111111")
    assert r.counts == {"email": 2, "cn_mobile": 2, "card": 1}


def test_titles_are_kept_and_surnames_replaced(scrubber):
    for text, title in [("Please ask Mr. Brown.", "Mr. "), ("Dear Dr Watson,", "Dr "), ("Dear Mrs. Anna Smith", "Mrs. ")]:
        out = scrubber.scrub_text(text).text
        assert len(out) == len(text) and title in out
        for word in text.replace(",", " ").replace(".", " ").split():
            if word not in ("Please", "ask", "Mr", "Dear", "Dr", "Mrs"):
                assert word not in out, (text, out)


def _national_examples() -> list[tuple[str, str]]:
    import phonenumbers as pn
    from phonenumbers import PhoneNumberFormat, PhoneNumberType

    out = []
    for region in sorted(pn.SUPPORTED_REGIONS):
        for typ in (PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE):
            ex = pn.example_number_for_type(region, typ)
            if ex is not None:
                out.append((region, pn.format_number(ex, PhoneNumberFormat.NATIONAL)))
    return out


@pytest.mark.parametrize("form", ["Call me at {} tomorrow.", "My phone number is {}.", "Tel: {}", "电话：{}", "Telefon {}"])
def test_every_regions_national_phone_after_a_phone_word(form):
    """libphonenumber's example numbers of every region in national format (8 (912) 345-67-89,
    02 123 456, 560 1234), right after a phone word: every one of six digits or more is found."""
    missed = []
    examples = [(r, v) for r, v in _national_examples() if sum(c.isdigit() for c in v) >= 6]
    assert len(examples) > 400
    for region, value in examples:
        text = form.format(value)
        i = text.index(value)
        spans = find_spans(text)
        if not all(any(sp.start <= i + k < sp.end for sp in spans) for k, c in enumerate(value) if c.isdigit()):
            missed.append((region, value))
    assert missed == []


@pytest.mark.parametrize("text", ["the order number is 12345678", "Call me at 10:30 tomorrow", "call 2024-05-01 at noon",
                                  "Tel: 2024", "phone v2.3.1 is out", "invoice 2 345 678 is paid"])
def test_numbers_that_are_no_phones(text):
    assert [sp for sp in find_spans(text) if sp.kind == "phone"] == []


@pytest.mark.parametrize("text,body", [
    # with headers and an END line; cut short and followed by prose; in code, lines joined by \n escapes
    ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17\n\nMIIEpAIBAAKCAQEA1c7+9z5P\nxY9zAB12C3+/w==\n"
     "-----END RSA PRIVATE KEY-----\nthanks", ["4,ENCRYPTED", "MIIEpAIBAAKCAQEA1c7+9z5P", "xY9zAB12C3+/w=="]),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5v\nQyNTUxOQAAACDk\nThanks for the help, it fails.",
     ["b3BlbnNzaC1rZXktdjEAAAAABG5v", "QyNTUxOQAAACDk"]),
    ('key = "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\nAbCdEf"', ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "AbCdEf"]),
])
def test_private_key_bodies_go_and_what_is_around_them_stays(scrubber, text, body):
    out = scrubber.scrub_text(text).text
    assert len(out) == len(text) and not any(b in out for b in body), out
    assert "PRIVATE KEY-----" in out and out.count("\\n") == text.count("\\n") and out.count("\n") == text.count("\n")
    if "Thanks" in text or "thanks" in text:
        assert out.endswith(text[text.lower().rindex("thanks"):])
