"""Numbers a context word declares (issue 38): after "credit card", "IBAN", "bank account",
"SSN" and their equivalents in other languages (anonymize/data/context-*.txt), a card number
whose Luhn digit is wrong, an IBAN whose check digits fail, bare digits and partly masked values
are replaced; without the word the same digits stay."""

from __future__ import annotations

import pytest

from shadowreplay.anonymize import Scrubber
from shadowreplay.anonymize.detectors import find_spans

BAD_LUHN = "4111 1111 1111 1112"
BAD_IBAN = "DE89370400440532013001"

DECLARED = [
    (f"my credit card {BAD_LUHN} thanks", BAD_LUHN, "card"),
    ("card number: 4111111111111112", "4111111111111112", "card"),
    (f"tarjeta de crédito {BAD_LUHN}", BAD_LUHN, "card"),
    ("Kreditkarte 4111-1111-1111-1112", "4111-1111-1111-1112", "card"),
    ("numéro de carte 4111111111111112", "4111111111111112", "card"),
    ("número do cartão 4111111111111112", "4111111111111112", "card"),
    ("信用卡号4111111111111112", "4111111111111112", "card"),
    ("カード番号 4111111111111112", "4111111111111112", "card"),
    ("카드번호 4111111111111112", "4111111111111112", "card"),
    (f"номер карты {BAD_LUHN}", BAD_LUHN, "card"),
    (f"my IBAN is {BAD_IBAN}", BAD_IBAN, "iban"),
    (f"IBAN: {BAD_IBAN}", BAD_IBAN, "iban"),
    (f"Konto {BAD_IBAN}", BAD_IBAN, "iban"),
    ("bank account 12345678 at the branch", "12345678", "account"),
    ("mi número de cuenta es 0049 1500 05 1234567892", "0049 1500 05 1234567892", "account"),
    ("SSN 123456789", "123456789", "us_ssn"),
    ("social security number: 078051120", "078051120", "phone"),  # (also a phone number's shape: replaced as one)
    # partly masked
    ("card ending **** **** **** 4242", "**** **** **** 4242", "card"),
    ("cartão 4111 11** **** 1111", "4111 11** **** 1111", "card"),
    ("SSN ***-**-6789", "***-**-6789", "us_ssn"),
    ("IBAN DE89 **** **** **** **** 00", "DE89 **** **** **** **** 00", "iban"),
    ("account number XXXX-XXXX-4521", "XXXX-XXXX-4521", "account"),
]

# the same digits with no word to declare them
UNDECLARED = [
    f"order {BAD_LUHN.replace(' ', '')} shipped",
    f"ref {BAD_IBAN} ok",
    "build 123456789 passed",
    "see **** **** **** 4242 above",
    "tracking 12345678",
]


@pytest.mark.parametrize("text,value,kind", DECLARED, ids=[t[:30] for t, _, _ in DECLARED])
def test_declared_number_replaced(text, value, kind):
    spans = [(text[s:e], k) for s, e, k in find_spans(text)]
    assert (value, kind) in spans, spans
    r = Scrubber(b"numbers-key").scrub_text(text)
    assert value not in r.text and len(r.text) == len(text)
    i = text.index(value)
    new = r.text[i : i + len(value)]
    # masks and separators stay where they were; digits stay digits
    assert [c for c in new if not c.isalnum()] == [c for c in value if not c.isalnum()]
    assert all(a.isdigit() == b.isdigit() for a, b in zip(new, value))


@pytest.mark.parametrize("text", UNDECLARED)
def test_undeclared_number_kept(text):
    assert find_spans(text) == []


def test_a_substitute_is_deterministic():
    text = f"credit card {BAD_LUHN}"
    assert Scrubber(b"k").scrub_text(text).text == Scrubber(b"k").scrub_text(text).text != Scrubber(b"k2").scrub_text(text).text
