"""Recognizers of addresses: e-mail (an `@` and an RFC-ish local part and domain) and IPv6
(colon groups validated with `ipaddress`), both strong shapes (evidence.py)."""

from __future__ import annotations

import ipaddress
import re

from .evidence import STRONG, Candidate, Doc
from .spans import EMAIL, IPV6, Span

# ---------------------------------------------------------------- e-mail
# Internationalised addresses (zoë@exämple.com) are matched for Latin letters with diacritics
# (U+00C0-U+024F); CJK is left out so that 邮箱zoe@example.com does not swallow the cue word.
_L = "A-Za-z0-9\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_EMAIL_DOMAIN = re.compile(
    "[" + _L + "](?:[" + _L + "\\-]{0,62}[" + _L + "])?(?:\\.[" + _L + "](?:[" + _L + "\\-]{0,62}[" + _L + "])?)*"
    "\\.[A-Za-z]{2,24}(?![" + _L + "\\-])"
)
_LOCAL_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-'"
    + "".join(chr(c) for c in range(0xC0, 0x250) if chr(c).isalpha())
)


def _emails(text: str, out: list[Span], at: str = "@") -> None:
    i = text.find(at)
    while i != -1:
        j = i
        while j > 0 and i - j < 64 and text[j - 1] in _LOCAL_CHARS:
            j -= 1
        while j < i and text[j] in ".'":
            j += 1
        if j < i:
            m = _EMAIL_DOMAIN.match(text, i + 1, i + 256)
            if m:
                out.append(Span(j, m.end(), EMAIL))
                i = text.find(at, m.end())
                continue
        i = text.find(at, i + 1)


# ---------------------------------------------------------------- IPv6
_V6 = re.compile(r":[0-9A-Fa-f]{0,4}:")
_V6_CHARS = frozenset("0123456789abcdefABCDEF:.")


def _ipv6(text: str, out: list[Span]) -> None:
    pos = 0
    n = len(text)
    while True:
        m = _V6.search(text, pos)
        if not m:
            return
        # the whole run of hex digits, colons and dots around the hit (never left of `pos`, so
        # the scan stays linear); a run longer than any IPv6 address is skipped whole
        a = m.start()
        while a > pos and text[a - 1] in _V6_CHARS:
            a -= 1
        b = m.end()
        while b < n and text[b] in _V6_CHARS:
            b += 1
        pos = b
        if b - a > 48:
            continue
        cand = text[a:b].strip(".")
        a = text.find(cand, a)
        b = a + len(cand)
        if cand.endswith(":") and not cand.endswith("::"):
            cand = cand[:-1]
            b -= 1
        if cand.startswith(":") and not cand.startswith("::"):
            cand = cand[1:]
            a += 1
        if cand.count(":") < 2 or (a > 0 and (text[a - 1].isalnum() or text[a - 1] == "_")):
            continue
        if b < n and (text[b].isalnum() or text[b] == "_"):
            continue
        groups = [g for g in cand.split(":") if g]
        if len(groups) < 4 and not any(len(g) >= 3 for g in groups):
            continue  # x[0::2], a[1::3]: slices, not addresses
        try:
            addr = ipaddress.IPv6Address(cand)
        except ValueError:
            continue
        if addr.is_loopback or addr.is_unspecified:
            continue
        out.append(Span(a, b, IPV6))



class Emails:
    name = "e-mail"
    kinds = (EMAIL,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        found: list[Span] = []
        if "@" in doc.text:
            _emails(doc.text, found)
        if not doc.ascii and "\uff20" in doc.text:  # full-width ＠, as Chinese and Japanese IMEs type it
            _emails(doc.text, found, "\uff20")
        text = doc.text
        for s, e, k in found:
            # user:password@host in a URL is no address: the password is (rec_secrets.UrlPasswords)
            if s > 0 and text[s - 1] == ":" and "://" in text[max(0, s - 80) : s].rsplit(" ", 1)[-1]:
                continue
            out.append(Candidate(s, e, k, STRONG))


class IPv6:
    name = "IPv6"
    kinds = (IPV6,)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        if ":" in doc.text:
            found: list[Span] = []
            _ipv6(doc.text, found)
            out.extend(Candidate(s, e, k, STRONG) for s, e, k in found)
