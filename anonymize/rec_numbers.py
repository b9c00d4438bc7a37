"""Recognizers of numbers: phones, Chinese mobiles and resident ids, payment cards, US SSNs,
IBANs, IPv4 addresses, bank account numbers (evidence.py's model).

Every digit run is one candidate start (found with `bytes.find` on a translated copy for
ASCII text); its shape is matched with one regex at that position and classified
(`classify_number`): a validator that passes (Luhn, mod 97, GB 11643, `phonenumbers`) makes a
strong candidate. What fails or is too weak to stand alone is a candidate that needs its
context word (data/context-card.txt, context-iban.txt, context-ssn.txt, context-account.txt,
context-phone.txt): a card-shaped number whose check digit is wrong, an IBAN whose check digits
fail, nine bare digits after "SSN", a 12-digit Maestro number, a national phone number after a
phone word, a run of digits after "account number", a partly masked value (`**** **** ****
4242`, `***-**-6789`)."""

from __future__ import annotations

import re
from itertools import accumulate

import phonenumbers

from .charclass import ASCII_LETTERS
from .checksums import IBAN_LENGTHS, cn_id_shaped, iban_ok, luhn_ok
from .evidence import FAIL, FOUND, NONE, PASS, STRONG, WEAK, Candidate, Doc, context
from .spans import ACCOUNT, CARD, CN_ID, CN_MOBILE, IBAN, IPV4, PHONE, US_SSN

# Separators allowed inside a number: ASCII/full-width/ideographic spaces, all kinds of dashes,
# dots, parentheses, slashes. `\d` is Unicode-aware, so full-width digits are digits here.
_SEP = r"[ \u00a0\u3000\-\u2010-\u2015\u2212\ufe63\uff0d.()\uff08\uff09/]"
_NUM = re.compile(r"(?:[+\uff0b][ ]?|\(|\uff08)?\d(?:" + _SEP + r"{0,2}\d)*(?:[Xx\uff38\uff58](?![A-Za-z]))?")
_ANY_DIGIT = re.compile(r"\d")
_NUM_PREFIX = frozenset("+\uff0b(\uff08")
_ALNUM_ASCII = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
# bytes.translate table: ASCII digits -> b"0", everything else -> b" " (finding digits with
# bytes.find is an order of magnitude faster than a regex scan)
_DIGIT_CLASS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_SPACE_CHARS = frozenset(" \u00a0\u3000")
_DASH_CHARS = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d")
_CARD_SEPS = _SPACE_CHARS | _DASH_CHARS
_TRUNK0_REGIONS = ("GB", "DE", "FR", "IT", "ES", "NL", "AU", "IN", "JP", "BR", "CN")
_IPV4_SKIP = ("127.", "0.0.0.0", "255.255.255.255")
_DATE = re.compile(
    r"(?:(?:19|20)\d\d([-/.])(?:0?[1-9]|1[0-2])\1(?:0?[1-9]|[12]\d|3[01])|(?:0?[1-9]|[12]\d|3[01])([-/.])(?:0?[1-9]|1[0-2])\2(?:19|20)\d\d"
    r"|(?:0?[1-9]|1[0-2])([-/.])(?:0?[1-9]|[12]\d|3[01])\3(?:19|20)\d\d)(?!\d)"
)
_SSN = re.compile(r"\d{3}-\d{2}-\d{4}")  # dashed only: bare 9-digit runs are too common


# A number glued to an ASCII word is part of that word ("v2", "abc123", hashes), except after
# these cue words, where what follows is the value: Tel13812345678, ID110105199001011234.
_GLUE_CUES = frozenset(
    "tel phone mobile mob cell cellphone fax whatsapp wechat id idno idcard card cardno acct account iban "
    "ssn no num number passport sfz".split()
)


def _after_cue_word(text: str, s: int) -> bool:
    """The ASCII letters right before position s form a whole word that is a _GLUE_CUES cue."""
    a = s
    while a > 0 and s - a < 10 and text[a - 1] in ASCII_LETTERS:
        a -= 1
    if a == s or (a > 0 and _is_wordish(text[a - 1])):
        return False
    return text[a:s].lower() in _GLUE_CUES


def _is_wordish(ch: str) -> bool:
    """A character that glues to a number (so the number is part of a word): ASCII/full-width
    letters and digits. CJK characters do not glue: 手机13812345678 is a number after a word."""
    return ch in _ALNUM_ASCII or ch.isdigit() or "\uff21" <= ch <= "\uff3a" or "\uff41" <= ch <= "\uff5a"


# ASCII: keep digits, X and x (as X), drop the rest (bytes.translate: one C pass)
_NORM_TABLE = bytes.maketrans(b"x", b"X")
_NORM_DROP = bytes(i for i in range(128) if not (48 <= i <= 57 or i in (88, 120)))


def norm_number(raw: str) -> str:
    """ASCII digits (and a trailing X) of a number candidate."""
    if raw.isascii():
        return raw.encode("ascii").translate(_NORM_TABLE, _NORM_DROP).decode("ascii")
    out = []
    for ch in raw:
        if ch.isdigit():
            out.append(ch if ch <= "9" else str(int(ch)))
        elif ch in "Xx\uff38\uff58":
            out.append("X")
    return "".join(out)


_CLASSIFY_MEMO: dict[str, str | None] = {}


def classify_number(raw: str) -> str | None:
    if raw in _CLASSIFY_MEMO:
        return _CLASSIFY_MEMO[raw]
    kind = _classify_number_uncached(raw)
    if len(_CLASSIFY_MEMO) >= 50_000:
        _CLASSIFY_MEMO.clear()
    _CLASSIFY_MEMO[raw] = kind
    return kind


def _classify_number_uncached(raw: str) -> str | None:
    digits = norm_number(raw)
    n = len(digits)
    if n < 4:
        return None
    plus = raw[0] in "+\uff0b"
    seps = {ch for ch in (raw[1:] if plus else raw) if not ch.isdigit() and ch not in "Xx\uff38\uff58"}
    has_x = digits.endswith("X")
    if has_x:
        if n == 18 and seps <= _SPACE_CHARS and cn_id_shaped(digits):
            return CN_ID
        # a phone number with its extension glued on: 555-123-4567x565 (the x of the match)
        return _classify_number_uncached(raw[:-1]) if n > 8 and raw[-1] in "Xx" else None
    if not plus and _DATE.match(raw):  # 2015-12-22 04, 22.12.2015: a date (and time), no phone
        return None
    if "." in seps:
        parts = raw.split(".")
        if len(parts) == 4 and seps == {"."} and all(1 <= len(p) <= 3 and p.isdigit() for p in parts):
            norm = ".".join(str(int(p)) for p in parts)
            if all(int(p) <= 255 for p in parts) and not norm.startswith(_IPV4_SKIP):
                return IPV4
            return None
        # dotted phone numbers (415.555.2671); decimals and versions are not numbers we want
        if not (seps <= {".", " "} and n >= 9 and all(len(p) >= 2 for p in re.split(r"[. ]", raw))):
            return None
    if n < 7:
        return None
    if n == 9 and _SSN.fullmatch(raw) and not raw.startswith(("000", "666", "9")) and raw[4:6] != "00" and raw[7:] != "0000":
        return US_SSN
    if n == 18 and seps <= _SPACE_CHARS and cn_id_shaped(digits):
        return CN_ID
    if 13 <= n <= 19 and seps <= _CARD_SEPS and not plus and digits[0] != "0" and luhn_ok(digits):
        return CARD
    mob = digits
    if plus:
        mob = mob[2:] if mob.startswith("86") else ""
    elif mob.startswith("0086"):
        mob = mob[4:]
    elif n == 13 and mob.startswith("86"):
        mob = mob[2:]
    if len(mob) == 11 and mob[0] == "1" and mob[1] in "3456789":
        return CN_MOBILE
    if n > 15:
        return None
    try:
        if plus or digits.startswith("00"):
            num = phonenumbers.parse("+" + (digits[2:] if not plus else digits), None)
            if phonenumbers.is_valid_number(num):
                return PHONE
            # a `+` and a number of a possible length for its country, written in groups (+47 498
            # 21 311, +44 079 1161 4374 with the trunk 0 kept): a phone, whatever its range says
            return PHONE if plus and n >= 8 and phonenumbers.is_possible_number(num) and _grouped_after_plus(raw) else None
        if n < 9:
            return None
        # national formats: North American 10 digits, or a trunk 0 elsewhere
        if digits[0] == "0":
            regions = _TRUNK0_REGIONS
        elif n == 10 or (n == 11 and digits[0] == "1"):
            regions = ("US", "CA")
        else:
            regions = ()
        # National numbers without a trunk 0 (612 345 678 in Spain, 312 345 6789 in Italy): only
        # when written as a phone is, in groups, since bare 9-10 digit runs are ids of every kind.
        if _grouped_like_phone(raw):
            regions = (*regions, *_NO_TRUNK_REGIONS)
        for region in regions:
            if phonenumbers.is_valid_number(phonenumbers.parse(digits, region)):
                return PHONE
    except phonenumbers.NumberParseException:
        return None
    return None


_EXT_DIGITS = re.compile(r"\d{1,6}(?!\d)")
_NO_TRUNK_REGIONS = ("ES", "IT", "PT", "PL", "CZ", "DK", "NO", "GR", "IN", "MX", "BR", "SG", "HK")


def _grouped_like_phone(raw: str) -> bool:
    """Digits in 2-5 groups of 2-4 (after an optional parenthesised area code)."""
    groups = re.split(r"[ \u00a0\-./()\u2010-\u2015]+", raw.strip("()"))
    return 2 <= len(groups) <= 5 and all(2 <= len(g) <= 5 and g.isdigit() for g in groups)


def _grouped_after_plus(raw: str) -> bool:
    """`+` and the country code, then digits in 1-5 more groups of 1-8 (+39 0366 9434948)."""
    groups = re.split(r"[ \u00a0\-./()\u2010-\u2015]+", raw[1:].strip(" ()"))
    return 3 <= len(groups) <= 6 and all(1 <= len(g) <= 8 and g.isdigit() for g in groups)


def _split_tokens(raw: str) -> list[tuple[int, int]]:
    """Positions of the whitespace-separated pieces of a number candidate."""
    return [(m.start(), m.end()) for m in re.finditer(r"[^ \u00a0\u3000]+", raw)]


def _digit_positions(text: str):
    """Start of every digit run, in order (fast path for ASCII text)."""
    if text.isascii():
        d = text.encode("ascii").translate(_DIGIT_CLASS)
        p = d.find(b"0")
        while p != -1:
            yield p
            q = d.find(b" ", p)
            if q == -1:
                return
            p = d.find(b"0", q)
    else:
        pos = 0
        search = _ANY_DIGIT.search
        while True:
            m = search(text, pos)
            if not m:
                return
            p = m.start()
            yield p
            pos = p + 1
            while pos < len(text) and text[pos].isdigit():
                pos += 1


def _numbers(doc: Doc, out: list[Candidate]) -> None:
    text = doc.text
    covered = 0
    n = len(text)
    for p in _digit_positions(text):
        if p < covered:
            continue
        # a run of 1-3 digits with no digit shortly after it ("30 years") is no candidate
        e = p + 1
        while e < n and e - p < 4 and text[e].isdigit():
            e += 1
        if e - p < 4 and not any(c.isdigit() for c in text[e : e + 3]) and not (
                p >= 2 and text[p - 1] in ASCII_LETTERS and text[p - 2] in ASCII_LETTERS):
            covered = e
            continue
        # IBAN: two capital letters right before the digits
        if p >= 2 and text[p - 2] in ASCII_LETTERS and text[p - 1] in ASCII_LETTERS and (p == 2 or not _is_wordish(text[p - 3])):
            m = _IBAN.match(text, p - 2)
            if m and _iban_at(text, m, out):
                covered = out[-1].end
                continue
        s = p
        if s > 0 and text[s - 1] in _NUM_PREFIX:
            s -= 1
        elif s > 1 and text[s - 1] == " " and text[s - 2] in "+\uff0b":
            s -= 2
        if s > 0 and _is_wordish(text[s - 1]) and not _after_cue_word(text, s):
            covered = p + 1
            while covered < len(text) and text[covered].isdigit():
                covered += 1
            continue
        m = _NUM.match(text, s)
        if not m:
            covered = p + 1
            continue
        covered = m.end()
        raw = m.group()
        if len(raw) < 4:
            continue
        if _not_a_value(text, s, m.end(), raw):
            continue
        if raw[0] in "(\uff08" and raw.count(raw[0]) > raw.count(")" if raw[0] == "(" else "\uff09"):
            raw, s = raw[1:], s + 1
        kind = classify_number(raw)
        shape, check = STRONG, PASS
        if kind == IPV4 and _ipv4_is_numbering(text, s, s + len(raw)):
            out.append(Candidate(s, s + len(raw), IPV4, STRONG, FAIL, "ip"))  # (replaced after "IP", "host", ...)
            continue
        if kind is None:
            kind = _short_card(doc, s, raw) or _cued_phone(doc, s, raw)
            shape, check = WEAK, NONE
        if kind:
            end = s + len(raw)
            if kind in (PHONE, CN_MOBILE) and raw[-1] in "Xx":  # the extension's digits go with it
                x = _EXT_DIGITS.match(text, end)
                if x:
                    end = covered = x.end()
            out.append(Candidate(s, end, kind, shape, check, FOUND if shape is WEAK else ""))
            continue
        _declared_numbers(raw, s, out)
        toks = _split_tokens(raw)
        if len(toks) >= 2:
            _number_pieces(raw, s, toks, out)


_ZIP4 = re.compile(r"\d{5}-\d{4}")
_NOT_IP_BEFORE = re.compile(r"(?i:\b(?:section|sections|sec|§|chapter|clause|step|steps|item|rule|part|paragraph|version|versions|ver|release|v|"
                            r"rfc\s*\d+|workflow|appendix|table|figure|fig|note|notes"
                            r"|(?:updat|upgrad|bump|downgrad)[a-z]*[ \t]+(?:[\w-]+[ \t]+)?to)\.?[ \t]*)$")


def _not_a_value(text: str, s: int, e: int, raw: str) -> bool:
    """Digits that are part of something else: glued to a word after them (`0123456789ABCDEF`),
    an identifier's number after a dash (`CVE-2021-44228`, `GHSA-...`, `PEP-8`), the ten digits in order
    (`0123456789`), a US ZIP+4 code (`02110-1301`)."""
    if e < len(text) and (text[e] in ASCII_LETTERS or text[e] == "_") and raw[-1] not in "Xx":
        return True
    if s >= 2 and text[s - 1] == "-" and text[s - 2] in ASCII_LETTERS and not _after_cue_word(text, s - 1):
        return True
    if len(raw) >= 10 and raw.startswith("0123456789") and raw.isdigit():  # the digits listed, in code
        return True
    groups = _DIGIT_RUN.findall(raw)
    if len(groups) > 1 and all(g in _COUNTING and (len(g) >= 9 or g is groups[-1]) for g in groups):
        return True  # 123456789 123456789 1234: a ruler
    if raw.isdigit() and _quantity_key_before(text, s):  # "memoryLimit": 4345298944
        return True
    if raw.isdigit() and int(raw) in _POWERS_OF_TWO:  # 2147483647, 4294967296: limits of integer types
        return True
    if raw.isdigit() and s > 0 and text[s - 1] == "/" and _in_url_path(text, s):
        return True  # an id in a URL's path (https://codereview.chromium.org/2159683002)
    return _ZIP4.fullmatch(raw) is not None


_COUNTING = "1234567890" * 4
_POWERS_OF_TWO = frozenset(x for k in range(20, 65) for x in (2**k - 1, 2**k, 2**(k - 1) - 1))
_DIGIT_RUN = re.compile(r"\d+")
_KEY_BEFORE = re.compile(r"""["']?([A-Za-z][A-Za-z0-9_.-]{1,40})["']?[ \t]*[:=][ \t]*["']?$""")
_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# words of a key whose value is a quantity, a time or an identifier, not a phone number
_QUANTITY_WORDS = frozenset(
    "memory mem size bytes limit count total length len timeout duration ms ns us sec secs seconds millis time "
    "timestamp ts offset seq pid uid gid inode checksum hash crc free used available heap rss max min sum capacity "
    "elapsed epoch nonce serial version build revision".split())


_URL_BEFORE = re.compile(r"(?:https?://|www\.)[^\s\"'<>]*/$")
_PHONE_URL = ("wa.me/", "whatsapp", "tel", "phone", "call", "sms")


def _in_url_path(text: str, s: int) -> bool:
    """text[s] starts a segment of a web address's path (not a `wa.me/` or `tel` link's)."""
    m = _URL_BEFORE.search(text, max(0, s - 200), s)
    return m is not None and not any(w in m.group().lower() for w in _PHONE_URL)


def _quantity_key_before(text: str, s: int) -> bool:
    """A key or field name right before the value (`"memoryLimit": `, `total_memory=`) whose
    words say a quantity, a time or an identifier: its digits are no phone number."""
    m = _KEY_BEFORE.search(text, max(0, s - 48), s)
    if m is None:
        return False
    return any(w.lower() in _QUANTITY_WORDS for w in _KEY_WORD.findall(m.group(1)))


def _ipv4_is_numbering(text: str, s: int, e: int) -> bool:
    """A dotted quad that numbers a section or a version (`5.2.1.1.`, `section 19.6.1.2`,
    `version 1.2.3.4`): a full stop right after it, or a numbering word before it."""
    if e < len(text) and text[e] == "." and (e + 1 == len(text) or not text[e + 1].isdigit()):
        return True
    if s > 0 and text[s - 1] in "<>=~^!":  # a version in a requirement: py4j<0.10.9.10
        return True
    return _NOT_IP_BEFORE.search(text, max(0, s - 24), s) is not None


_GROUPS = re.compile(r"[ \u00a0\-./()\u2010-\u2015]+")


def _declared_numbers(raw: str, s: int, out: list[Candidate]) -> None:
    """What no validator passes but a context word may declare: a card-shaped number (15 or 16
    digits, or 13-19 in groups of four) whose check digit is wrong, nine digits of an SSN in
    any grouping, 6-20 digits of a bank account."""
    digits = norm_number(raw)
    n = len(digits)
    if n < 6 or digits.endswith("X") or raw[0] in "+\uff0b" or _DATE.match(raw):
        return
    seps = {ch for ch in raw if not ch.isdigit()}
    groups = _GROUPS.split(raw.strip("()"))
    if seps <= _CARD_SEPS and digits[0] != "0" and (n in (15, 16) or (13 <= n <= 19 and all(len(g) == 4 for g in groups[:-1]))):
        out.append(Candidate(s, s + len(raw), CARD, STRONG, PASS if luhn_ok(digits) else FAIL, "card"))
    if n == 9 and len(groups) <= 3:
        out.append(Candidate(s, s + len(raw), US_SSN, WEAK, NONE, "ssn"))
    if 6 <= n <= 20 and len(groups) <= 6:
        out.append(Candidate(s, s + len(raw), ACCOUNT, WEAK, NONE, "account"))


def _short_card(doc: Doc, s: int, raw: str) -> str | None:
    """A Maestro number of 12 digits (50, 56-69, its prefixes), Luhn-valid, after a card word
    (without one, a Luhn-valid run of 12 digits is as likely an order number: one in ten pass)."""
    if len(raw) != 12 or not raw.isdigit() or raw[0] not in "56" or raw[:2] in ("51", "52", "53", "54", "55") or not luhn_ok(raw):
        return None
    return CARD if context("card").before(doc, s) else None


def _cued_phone(doc: Doc, s: int, raw: str) -> str | None:
    """A number of 6-15 digits in at most six groups (8 (912) 345-67-89, 2 2123456, 96 123456)
    right after a phone word: there a number written as a phone is written is one in any
    region's national format (560 1234 in Aruba, 02 123 456 in Bulgaria), which without the
    word could be any id."""
    digits = norm_number(raw)
    if not 6 <= len(digits) <= 15 or digits.endswith("X") or _DATE.match(raw):
        return None
    if len(_GROUPS.split(raw.strip("()"))) > 6:
        return None
    return PHONE if context("phone").before(doc, s) else None


def _number_pieces(raw: str, s: int, toks: list[tuple[int, int]], out: list[Candidate]) -> None:
    """A candidate that is not one entity may hold several ("13812345678 13912345678"): try runs
    of up to 6 whitespace-separated pieces, longest first. Runs shorter than 7 or longer than 40
    characters (without the spaces between pieces) hold no entity and are skipped cheaply."""
    pre = [0, *accumulate(b - a for a, b in toks)]
    nt = len(toks)
    i = 0
    while i < nt:
        hi = min(nt, i + 6)
        if pre[hi] - pre[i] < 7:
            i += 1
            continue
        for k in range(hi - i, 0, -1):  # k pieces, longest first
            if not 7 <= pre[i + k] - pre[i] <= 40:
                continue
            a, b = toks[i][0], toks[i + k - 1][1]
            kind = classify_number(raw[a:b])
            if kind:
                out.append(Candidate(s + a, s + b, kind, STRONG, PASS))
                i += k
                break
        else:
            i += 1


# ---------------------------------------------------------------- IBAN
_IBAN = re.compile(r"[A-Za-z]{2}\d{2}(?:[ ]?[A-Za-z0-9]{4}){2,7}(?:[ ]?[A-Za-z0-9]{1,4})?(?![A-Za-z0-9])")


def _iban_at(text: str, m: re.Match, out: list[Candidate]) -> bool:
    """An IBAN at m (cut back at a space until its check digits pass): True. One of its
    country's length whose check digits fail is a candidate that needs the word "IBAN"."""
    raw = m.group()
    while True:
        compact = raw.replace(" ", "")
        if iban_ok(compact):
            out.append(Candidate(m.start(), m.start() + len(raw), IBAN, STRONG, PASS))
            return True
        if IBAN_LENGTHS.get(compact[:2].upper()) == len(compact):
            out.append(Candidate(m.start(), m.start() + len(raw), IBAN, STRONG, FAIL, "iban"))
            return False
        cut = raw.rfind(" ")
        if cut < 10:
            return False
        raw = raw[:cut]



# ---------------------------------------------------------------- masked values
# a value partly written as masks (`**** **** **** 4242`, `XXXX-XXXX-XXXX-4242`, `***-**-6789`,
# `4111 11** **** 1111`, `DE89 **** **** **** 3000 00`): at least four mask characters and two digits
_MASKED = re.compile(
    r"(?<![\w*•#])(?:[A-Za-z]{2}\d{2}[ \-]?)?(?=[\d*•#Xx \-]{8,40})(?:[\d*•#]|[Xx](?=[Xx\d \-*]))+(?:[ \-]+(?:[\d*•#]|[Xx](?=[Xx\d \-*]|$))+){0,7}(?![\w*•#])"
)
_MASK_CHARS = frozenset("*•#Xx")


def _masked(doc: Doc, out: list[Candidate]) -> None:
    text = doc.text
    if not ("*" in text or "•" in text or "#" in text or "XXXX" in text or "xxxx" in text):
        return
    for m in _MASKED.finditer(text):
        v = m.group()
        masks = sum(c in _MASK_CHARS for c in v)
        digits = sum(c.isdigit() for c in v)
        if masks < 4 or digits < 2 or masks + digits < 8:
            continue
        s, e = m.span()
        for kind, ctx in ((IBAN, "iban"), (CARD, "card"), (US_SSN, "ssn"), (ACCOUNT, "account")):
            if kind == IBAN and not (v[:2].upper() in IBAN_LENGTHS and v[2:4].isdigit()):
                continue
            out.append(Candidate(s, e, kind, WEAK, NONE, ctx))


class Numbers:
    """Phones, cn mobiles and ids, cards, SSNs, IBANs, IPv4, accounts: the digit-run scan."""

    name = "numbers"
    kinds = (PHONE, CN_MOBILE, CN_ID, CARD, US_SSN, IBAN, IPV4, ACCOUNT)

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        _numbers(doc, out)
        _masked(doc, out)
