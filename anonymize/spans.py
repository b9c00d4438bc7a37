"""What a detector reports: a span of the original text and its kind (entity type)."""

from __future__ import annotations

from typing import NamedTuple


class Span(NamedTuple):
    start: int
    end: int
    kind: str


# Kinds (entity types) reported in counts.
EMAIL, PHONE, CN_MOBILE, CN_ID, CARD, IBAN, IPV4, IPV6, SECRET, PERSON, US_SSN, ACCOUNT = (
    "email", "phone", "cn_mobile", "cn_id", "card", "iban", "ipv4", "ipv6", "secret", "person", "us_ssn", "account",
)
KINDS = (EMAIL, PHONE, CN_MOBILE, CN_ID, CARD, IBAN, IPV4, IPV6, SECRET, PERSON, US_SSN, ACCOUNT)
