"""Detectors: rules and checksums only. `find_spans(text)` returns non-overlapping
(start, end, kind) spans in the original string; nothing is normalised in place, so positions
are always positions of the original text. Each detector starts from a cheap scan (a literal,
a character that must be there) and only runs validators on the few candidates it finds."""

from __future__ import annotations

import ipaddress
import math
import re
from itertools import accumulate

import phonenumbers

from .checksums import cn_id_shaped, iban_ok, luhn_ok
from .charclass import ASCII_LETTERS
from .names import find_names, json_name_values, listed_beside, lower_same_length, mentions, name_words, table_name_values


from .spans import CARD, CN_ID, CN_MOBILE, EMAIL, IBAN, IPV4, IPV6, KINDS, PERSON, PHONE, SECRET, US_SSN, Span

__all__ = ["CARD", "CN_ID", "CN_MOBILE", "EMAIL", "IBAN", "IPV4", "IPV6", "KINDS", "PERSON", "PHONE", "SECRET",
           "US_SSN", "Span", "find_spans"]

# ---------------------------------------------------------------- numbers
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


def _norm_number(raw: str) -> str:
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


def _classify_number(raw: str) -> str | None:
    if raw in _CLASSIFY_MEMO:
        return _CLASSIFY_MEMO[raw]
    kind = _classify_number_uncached(raw)
    if len(_CLASSIFY_MEMO) >= 50_000:
        _CLASSIFY_MEMO.clear()
    _CLASSIFY_MEMO[raw] = kind
    return kind


def _classify_number_uncached(raw: str) -> str | None:
    digits = _norm_number(raw)
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


def _numbers(text: str, out: list[Span]) -> None:
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
        if raw[0] in "(\uff08" and raw.count(raw[0]) > raw.count(")" if raw[0] == "(" else "\uff09"):
            raw, s = raw[1:], s + 1
        kind = _classify_number(raw) or _short_card(text, s, raw) or _cued_phone(text, s, raw)
        if kind:
            end = s + len(raw)
            if kind in (PHONE, CN_MOBILE) and raw[-1] in "Xx":  # the extension's digits go with it
                x = _EXT_DIGITS.match(text, end)
                if x:
                    end = covered = x.end()
            out.append(Span(s, end, kind))
            continue
        toks = _split_tokens(raw)
        if len(toks) >= 2:
            _number_pieces(raw, s, toks, out)


# the word before a 12-digit card number (Maestro's shortest): without one, a Luhn-valid run of
# 12 digits is as likely an order number (one in ten of them passes)
_CARD_CUE = re.compile(r"(?i:card|carte|tarjeta|karte|cartão|carta|kaart|kort)|卡")


def _short_card(text: str, s: int, raw: str) -> str | None:
    """A Maestro number of 12 digits (50, 56-69, its prefixes), Luhn-valid, with a card word in
    the 40 characters before it."""
    if len(raw) != 12 or not raw.isdigit() or raw[0] not in "56" or raw[:2] in ("51", "52", "53", "54", "55") or not luhn_ok(raw):
        return None
    return CARD if _CARD_CUE.search(text, max(0, s - 40), s) is not None else None


# a phone word right before a number, with at most a colon, "is", "at", "no." between: there a
# number written as a phone is written is one in any region's national format (560 1234 in Aruba,
# 02 123 456 in Bulgaria), which without the word could be any id
_PHONE_CUE_BEFORE = re.compile(
    r"(?i:\b(?:phone|tel|telephone|mobile|cell|cellphone|fax|whatsapp|call|sms|hotline|téléphone|tél|portable|teléfono|"
    r"telefone|telefono|cellulare|celular|móvil|movil|telefon|handy|telefoon|mobiel|komórka|điện thoại|sđt|телефон|тел)\b"
    r"|電話|电话|手机|手機|携帯|전화|휴대폰|핸드폰)"
    r"(?:[ \t:：#=.\-]|\b(?:number|no|nr|is|at|on|me|us|num)\b|番号|号码|號碼|번호)*$"
)


def _cued_phone(text: str, s: int, raw: str) -> str | None:
    """A number of 6-15 digits in at most six groups (8 (912) 345-67-89, 2 2123456, 96 123456)
    right after a phone word."""
    digits = _norm_number(raw)
    if not 6 <= len(digits) <= 15 or digits.endswith("X") or _DATE.match(raw):
        return None
    if len(re.split(r"[ \u00a0\-./()\u2010-\u2015]+", raw.strip("()"))) > 6:
        return None
    return PHONE if _PHONE_CUE_BEFORE.search(text, max(0, s - 40), s) is not None else None


def _number_pieces(raw: str, s: int, toks: list[tuple[int, int]], out: list[Span]) -> None:
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
            kind = _classify_number(raw[a:b])
            if kind:
                out.append(Span(s + a, s + b, kind))
                i += k
                break
        else:
            i += 1


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


# ---------------------------------------------------------------- IBAN
_IBAN = re.compile(r"[A-Za-z]{2}\d{2}(?:[ ]?[A-Za-z0-9]{4}){2,7}(?:[ ]?[A-Za-z0-9]{1,4})?(?![A-Za-z0-9])")


def _iban_at(text: str, m: re.Match, out: list[Span]) -> bool:
    raw = m.group()
    while True:
        if iban_ok(raw.replace(" ", "")):
            out.append(Span(m.start(), m.start() + len(raw), IBAN))
            return True
        cut = raw.rfind(" ")
        if cut < 10:
            return False
        raw = raw[:cut]


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


# ---------------------------------------------------------------- secrets
# Known key formats. Each is found by a literal with str.find (fast), then its full pattern is
# matched at that position only: (literal, search the lower-cased text?, a character the text
# must contain for it to matter, the pattern).
_SK = re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}")  # OpenAI, Anthropic
_AWS = re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")
_GITHUB = re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}")
_STRIPE = re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}")  # secret and restricted keys
_SECRET_FIND = (
    ("sk-", True, "-", _SK),
    ("AKIA", False, "", _AWS),
    ("ASIA", False, "", _AWS),
    ("eyJ", False, "", re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),  # JWT
    ("ghp_", True, "_", _GITHUB), ("gho_", True, "_", _GITHUB), ("ghs_", True, "_", _GITHUB),
    ("ghu_", True, "_", _GITHUB), ("ghr_", True, "_", _GITHUB),
    ("github_pat_", False, "_", re.compile(r"github_pat_[A-Za-z0-9_]{40,}")),
    ("xox", True, "-", re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}")),  # Slack
    ("bearer", True, "", re.compile(r"(?:Bearer|bearer|BEARER)[ \t]{1,4}[A-Za-z0-9._~+/=\-]{8,}")),
    ("AIza", False, "", re.compile(r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),  # Google (Gemini) API keys
    ("sk_", False, "_", _STRIPE), ("rk_", False, "_", _STRIPE),
    ("hf_", False, "_", re.compile(r"hf_[A-Za-z0-9]{30,}")),  # Hugging Face
    ("glpat-", False, "-", re.compile(r"glpat-[A-Za-z0-9_\-]{20,}")),  # GitLab
    ("npm_", False, "_", re.compile(r"npm_[A-Za-z0-9]{36}")),
    ("gsk_", False, "_", re.compile(r"gsk_[A-Za-z0-9]{40,}")),  # Groq
    ("r8_", False, "_", re.compile(r"r8_[A-Za-z0-9]{30,}")),  # Replicate
    ("SG.", False, ".", re.compile(r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),  # SendGrid
    # a PEM or PGP private key: the lines of its body, base64 or a header (Proc-Type: ...,
    # Version: ...), the BEGIN and END lines kept; also when cut short before its END line
    ("-----BEGIN ", False, "-", re.compile(r"-----BEGIN [A-Z0-9 ]{0,20}PRIVATE KEY(?: BLOCK)?-----[ \t]*(?:\r?\n|\\n)"
                                             r"((?:(?:[A-Za-z][A-Za-z\-]*:[ \t][^\r\n\\]*|[A-Za-z0-9+/=]*)(?:\r?\n|\\n))*"
                                             r"[A-Za-z0-9+/=]{4,})(?=[ \t]*(?:\r?\n|\\n|$|[\"'`]))")),
)
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,15}://[^\s:/@\x00\"'<>]{1,64}:([^\s/@\x00\"'<>]{4,128})@")
_KV_WORDS = ("key", "secret", "token", "pass", "pwd")
# what must follow a key-like word for the next value to be a credential
_KV_TAIL = re.compile(r"[A-Za-z0-9_\-]{0,20}[\"']?[ \t]{0,8}(?:[:=]|[ \t]is[ \t])[ \t]{0,8}[\"']?([^\s\x00\"',;{}<>()\[\]]{4,})")
# after 密码/验证码...: a value after a colon or `=` runs to the next space or Chinese punctuation;
# after 是/为 it is what a user types, ASCII or full-width letters and digits (密码是 hunter22,
# 验证码为１２３４５６), not the words of a sentence (密码是什么, 密码为了, 验证码为您的手机号后四位)
# (in either script: 密碼, 驗證碼為)
_KV_CN = re.compile(r"(密码|密碼|口令|密钥|密鑰|令牌|验证码|驗證碼)[ \t\u3000]{0,8}(?:[:：=][ \t\u3000]{0,8}([^\s\x00，。；、！？\"'”“]{4,})"
                    r"|(?:是|为|為)[ \t\u3000]{0,8}([!-~\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]{4,}))")
_PASSWORD_WORDS = ("pass", "pwd")
_KEYWORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


_BARE_PASSWORD = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:password|passwd|passcode|pwd)[ \t]+([^\s\x00\"',;{}<>()\[\]:=]{4,})")
_CREDENTIAL_PARTS = frozenset(
    "key keys apikey secret secrets token tokens pass password passwd passphrase passcode pwd credential credentials".split()
)
_IDENT_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_CODE_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _credential_name(ident: str) -> bool:
    """api_key, apiKey, SECRET_KEY, access-token, password: a credential's name. tokenizer,
    monkey, keyboard, passenger: not (the key word is not a whole part of the name)."""
    return any(part.lower() in _CREDENTIAL_PARTS for part in _IDENT_PARTS.findall(ident))


def _is_code(text: str, m: re.Match) -> bool:
    """The value is an expression, not a literal: a call (BertTokenizer.from_pretrained(...)),
    an attribute path (os.environ.get), a variable or constant name."""
    v = m.group(1)
    if m.end(1) < len(text) and text[m.end(1)] == "(":
        return True
    if _CODE_VALUE.fullmatch(v) and not v.startswith("eyJ"):
        return True
    # snake_case names and SCREAMING_SNAKE constants (password_env: DB_PASSWORD) are references
    return v.isidentifier() and "_" in v and (v.lower() == v or v.upper() == v) and not any(c.isdigit() for c in v)


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _secret_value_ok(word: str, value: str) -> bool:
    if any(p in word.lower() for p in _PASSWORD_WORDS):
        return True
    if len(value) < 8:
        return False
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return (has_digit or mixed) and _entropy(value) >= 3.0


def _secrets(text: str, lo: str, out: list[Span]) -> None:
    has = {"-": "-" in text, "_": "_" in text, ".": "." in text, "": True}
    for kw, in_lower, needs, pat in _SECRET_FIND:
        if not has[needs]:  # cheap gate: sk-/xox- need a dash, gh?_ an underscore
            continue
        hay = lo if in_lower else text
        p = hay.find(kw)
        while p != -1:
            if p == 0 or text[p - 1] not in _KEYWORD_CHARS:
                m = pat.match(text, p)
                if m:
                    out.append(Span(m.start(pat.groups), m.end(pat.groups), SECRET))
            p = hay.find(kw, p + 1)
    if "://" in text and "@" in text:
        for m in _URL_PASSWORD.finditer(text):  # postgres://admin:S3cretPass!@db: the password
            if _secret_value_ok("", m.group(1)):
                out.append(Span(m.start(1), m.end(1), SECRET))
    if "pass" in lo or "pwd" in lo:
        for m in _BARE_PASSWORD.finditer(text):  # "password hunter2", "pwd Tr0ub4dor"
            if any(c.isdigit() or not c.isalnum() for c in m.group(1)):
                out.append(Span(m.start(1), m.end(1), SECRET))
    if not (":" in text or "=" in text or " is " in lo):  # every key/value form needs one
        return
    for kw in _KV_WORDS:
        p = lo.find(kw)
        while p != -1:
            m = _KV_TAIL.match(text, p + len(kw))
            if m:
                a = p
                while a > 0 and p - a < 30 and text[a - 1] in _KEYWORD_CHARS:
                    a -= 1
                ident = text[a : m.start(1)].split("=")[0].split(":")[0].strip(" \t\"'")
                if (_credential_name(ident) or _credential_name(ident.lower())) and _secret_value_ok(lo[a : m.start(1)], m.group(1)) and not _is_code(text, m):
                    out.append(Span(m.start(1), m.end(1), SECRET))
            p = lo.find(kw, p + 1)


def _secrets_cn(text: str, out: list[Span]) -> None:
    for m in _KV_CN.finditer(text):
        g = 2 if m.group(2) is not None else 3
        end = m.end(g)
        while end - m.start(g) > 4 and text[end - 1] in ".,!?;:":  # (the sentence's full stop)
            end -= 1
        out.append(Span(m.start(g), end, SECRET))


# ---------------------------------------------------------------- all together
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


def find_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    lo = lower_same_length(text)  # (a few characters lower-case to two: positions kept exact)
    ascii_text = text.isascii()
    # every secret prefix, key word and English name trigger has an ASCII letter; a Chinese text
    # often has none (checked on the lower-cased text: a Kelvin sign lower-cases to "k")
    letters = ascii_text or _ASCII_LETTER.search(lo) is not None
    if "@" in text:
        _emails(text, spans)
    if not ascii_text and "\uff20" in text:  # full-width ＠, as Chinese and Japanese IMEs type it
        _emails(text, spans, "\uff20")
    if letters:
        _secrets(text, lo, spans)
    _numbers(text, spans)
    if ":" in text:
        _ipv6(text, spans)
    n_before = len(spans)
    find_names(text, lo, ascii_text, letters, spans)
    if '":' in text or '" :' in text:  # JSON written out: the values of its name keys
        json_name_values(text, spans)
    if "\n" in text:  # a table with a name column
        table_name_values(text, lo, spans)
    if len(spans) > n_before:
        listed_beside(text, spans[n_before:], spans)  # Bob, beside Alice in a list
        _other_mentions(text, spans, n_before)  # every other mention of a name found here is the person too
    if not ascii_text:
        _secrets_cn(text, spans)
    if not spans:
        return spans
    spans.sort(key=lambda s: (s.start, s.start - s.end))
    kept = [spans[0]]
    for sp in spans[1:]:
        if sp.start >= kept[-1].end:
            kept.append(sp)
    return kept
