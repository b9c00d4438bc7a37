"""The registry of recognizers and `find_spans`, the one entry point of detection.

`find_spans(text)` returns non-overlapping (start, end, kind) spans of the original string;
nothing is normalised in place, so positions are always positions of the original text. Every
recognizer (evidence.Recognizer: rec_contact.py, rec_secrets.py, rec_numbers.py, and the
person names of names.py behind `Names`) proposes candidates from a cheap scan, and
evidence.decide keeps those whose evidence reaches the threshold. Where two spans overlap, the
one that starts first wins, the longer one at the same start. A new kind is a recognizer
module (plus its context words in data/) and one line in `RECOGNIZERS`."""

from __future__ import annotations

import re

from .evidence import STRONG, Candidate, Doc, Recognizer, decide
from .names import find_names, json_name_values, listed_beside, lower_same_length, mentions, name_words, table_name_values
from .rec_contact import Emails, IPv6
from .rec_numbers import Numbers
from .rec_secrets import CommandPasswords, ConfigSecrets, DeclaredSecrets, KeyFormats, LoginPairs, UrlPasswords, email_pairs
from .spans import ACCOUNT, CARD, CN_ID, CN_MOBILE, EMAIL, IBAN, IPV4, IPV6, KINDS, PERSON, PHONE, SECRET, US_SSN, Span

__all__ = ["ACCOUNT", "CARD", "CN_ID", "CN_MOBILE", "EMAIL", "IBAN", "IPV4", "IPV6", "KINDS", "PERSON", "PHONE", "RECOGNIZERS",
           "SECRET", "US_SSN", "Span", "find_spans"]

_ASCII_LETTER = re.compile(r"[A-Za-z]")


def _other_mentions(text: str, spans: list[Span], n_before: int) -> None:
    """Mentions of the names in spans[n_before:], within the string each was found in (a NUL
    separates the strings of a batch: a name found in one is not looked for in another here;
    the scrubber does that for a whole body)."""
    found = spans[n_before:]
    if "\x00" not in text:
        mentions(text, {w for sp in found for w in name_words(text[sp.start : sp.end])}, spans)
        return
    by_segment: dict[int, set[str]] = {}
    for sp in found:
        seg_start = text.rfind("\x00", 0, sp.start) + 1
        by_segment.setdefault(seg_start, set()).update(name_words(text[sp.start : sp.end]))
    for start, words in by_segment.items():
        end = text.find("\x00", start)
        end = len(text) if end < 0 else end
        seg: list[Span] = []
        mentions(text[start:end], words, seg)
        spans.extend(Span(a + start, b + start, k) for a, b, k in seg)




class Names:
    """Person names in every script (names.py, names_zh/ja/ko.py): strong candidates, then every
    other mention of a name found, in the same string."""

    name = "person names"
    kinds = (PERSON,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        text = doc.text
        spans: list[Span] = []
        find_names(text, doc.lo, doc.ascii, doc.letters, spans)
        if '":' in text or '" :' in text:  # JSON written out: the values of its name keys
            json_name_values(text, spans)
        if "\n" in text:  # a table with a name column
            table_name_values(text, doc.lo, spans)
        if spans:
            listed_beside(text, list(spans), spans)  # Bob, beside Alice in a list
            _other_mentions(text, spans, 0)  # every other mention of a name found here is the person too
        out.extend(Candidate(s, e, k, STRONG) for s, e, k in spans)


# The registry: every recognizer, in the order they run (the order decides nothing: overlaps
# are resolved by position). Secrets come before numbers so that a PIN or a password of digits
# wins over a phone or card read of the same digits at the same start.
RECOGNIZERS: tuple[Recognizer, ...] = (
    Emails(), KeyFormats(), UrlPasswords(), CommandPasswords(), ConfigSecrets(), DeclaredSecrets(), LoginPairs(), Numbers(), IPv6(), Names(),
)
_EMAILS = RECOGNIZERS[0]


def find_spans(text: str) -> list[Span]:
    lo = lower_same_length(text)  # (a few characters lower-case to two: positions kept exact)
    ascii_text = text.isascii()
    # every secret prefix, key word and English name trigger has an ASCII letter; a Chinese text
    # often has none (checked on the lower-cased text: a Kelvin sign lower-cases to "k")
    doc = Doc(text, lo, ascii_text, ascii_text or _ASCII_LETTER.search(lo) is not None)
    cands: list[Candidate] = []
    for r in RECOGNIZERS:
        r.candidates(doc, cands)
    spans: list[Span] = []
    decide(doc, cands, spans)
    if "@" in text and spans:  # credential pairs: `name@mail.example / X`
        pairs: list[Candidate] = []
        email_pairs(doc, spans, pairs)
        decide(doc, pairs, spans)
    if not spans:
        return spans
    spans.sort(key=lambda s: (s.start, s.start - s.end))
    kept = [spans[0]]
    for sp in spans[1:]:
        if sp.start >= kept[-1].end:
            kept.append(sp)
    return kept
