"""Keyed, deterministic, format-preserving substitutes.

`Substituter.substitute(kind, original)` seeds a generator with HMAC-SHA256(key, kind + NUL +
normalized value), so one value gives one substitute under one key in every process, and the
substitute keeps the length in characters, the separators and the class of every character of
the original (full-width digits stay full-width, case is kept, Chinese stays Chinese)."""

from __future__ import annotations

import datetime as _dt
import ipaddress
import re
import unicodedata

from . import spans as D
from .rec_numbers import norm_number
from .charclass import apply_case, ascii_digit, digit_like, fill, is_cjk, is_hangul, is_kana
from .keyedhash import KeyedSHA256
from .names import NAME_PARTICLES
from .names_ja import ja_name, ja_surname_len
from .names_ko import ko_name
from .keyedrandom import KeyedRandom
from .zh_script import simplified, traditional
from .checksums import GB_CHECK_CHARS, GB_WEIGHTS, iban_check_digits, luhn_check_digit
from .gazetteer import (
    CN_GIVEN_CHARS, CN_SUB_SURNAMES, CN_SUB_SURNAMES_2, CN_SURNAMES_2, EN_FIRST_BY_LEN, EN_LAST_BY_LEN, NAME_FIRST,
    TITLES, ja_given,
)

_CN_PROVINCES = (11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52, 53, 54, 61, 62, 63, 64, 65)
_DATE0 = _dt.date(1950, 1, 1).toordinal()
_DATE1 = _dt.date(2005, 12, 31).toordinal()
# the format's prefix stays (what kind of key it was is no secret; the replay sees the same shape)
_SECRET_PREFIXES = ("sk-ant-api03-", "sk-ant-", "sk-proj-", "sk-", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
                    "github_pat_", "xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "sk_live_", "sk_test_", "rk_live_", "rk_test_",
                    "AIza", "hf_", "glpat-", "npm_", "gsk_", "r8_", "SG.")
_NAME_PARTS = re.compile(r"([-'\u2019.])")
_NAME_SEPARATORS = frozenset("-'\u2019.")
_REDRAWS = 16  # redraws before giving up on a value that has nothing to change (no letter, no digit)
_NUMERIC = {D.PHONE, D.CN_MOBILE, D.CN_ID, D.CARD, D.US_SSN, D.ACCOUNT}
_MASKS = frozenset("*•#")  # a partly masked value keeps its masks (only its digits change)
_MASKABLE = {D.CARD, D.US_SSN, D.IBAN, D.ACCOUNT}


def _is_num_char(ch: str) -> bool:
    return ch.isdigit() or ch in "Xx\uff38\uff58"


def normalize(kind: str, value: str) -> str:
    if kind in _NUMERIC:
        return norm_number(value)
    if kind == D.EMAIL:
        return unicodedata.normalize("NFKC", value).lower()
    if kind == D.IBAN:
        return value.replace(" ", "").upper()
    if kind == D.IPV4:
        return "".join(ascii_digit(c) if c.isdigit() else c for c in value)
    if kind == D.IPV6:
        try:
            return ipaddress.IPv6Address(value).compressed
        except ValueError:
            return value.lower()
    # (a Chinese name in either script is the same person: 陳大文 and 陈大文 draw alike)
    return simplified(unicodedata.normalize("NFKC", value))


_ASCII_NUM = frozenset("0123456789Xx")


def _layout(orig: str, new_chars: str) -> str:
    """Pour the normalized substitute back into the original's layout (separators, digit script, x case)."""
    if orig.isascii():
        # ASCII: a digit or X of the substitute goes where the original has one (an x stays x)
        it = iter(new_chars)
        out = [next(it) if ch in _ASCII_NUM else ch for ch in orig]
        if "x" in orig:
            out = [("x" if c == "X" else c) if ch == "x" else c for ch, c in zip(orig, out)]
        return "".join(out)
    out = []
    it = iter(new_chars)
    for ch in orig:
        if _is_num_char(ch):
            c = next(it)
            if c == "X":
                out.append({"X": "X", "x": "x", "\uff38": "\uff38", "\uff58": "\uff58"}.get(ch, "X"))
            else:
                out.append(digit_like(ch, int(c)) if ch.isdigit() else c)
        else:
            out.append(ch)
    return "".join(out)


def _country_code_len(digits: str) -> int:
    from phonenumbers import COUNTRY_CODE_TO_REGION_CODE

    for n in (1, 2, 3):
        if digits[:n].isdigit() and int(digits[:n]) in COUNTRY_CODE_TO_REGION_CODE:
            return n
    return 1


def _rand_digits(rng: KeyedRandom, n: int) -> str:
    return rng.digits(n)


def _masked(orig: str, norm: str, rng: KeyedRandom) -> str:
    """A partly masked value (`**** **** **** 4242`, `XXXX-XXXX-4521`): its digits redrawn in
    their script, everything else (the masks, a country code) kept."""
    return "".join(digit_like(ch, b % 10) if ch.isdigit() else ch for ch, b in zip(orig, rng.bytes(len(orig))))


class Substituter:
    def __init__(self, key: bytes, cache_size: int = 65536):
        self._key = key
        self._hmac = KeyedSHA256(key)
        self._cache: dict[tuple[str, str], str] = {}
        self._cache_size = cache_size
        self._by_kind = {k: getattr(self, "_sub_" + k) for k in D.KINDS}

    def rng(self, kind: str, norm: str) -> KeyedRandom:
        digest = self._hmac.digest(kind.encode() + b"\0" + norm.encode("utf-8", "surrogatepass"))
        return KeyedRandom(digest)

    def substitute(self, kind: str, orig: str) -> str:
        ck = (kind, orig)
        hit = self._cache.get(ck)
        if hit is not None:
            return hit
        norm = normalize(kind, orig)
        rng = self.rng(kind, norm)
        draw = _masked if kind in _MASKABLE and (not _MASKS.isdisjoint(orig) or "XXXX" in orig.upper()) else self._by_kind[kind]
        new = draw(orig, norm, rng)
        # Never hand back the original (a common name drawn onto itself, a phone whose random
        # digits came out the same): redraw from the same keyed stream, so the result stays
        # deterministic; equal means equal after normalization and case folding.
        for attempt in range(_REDRAWS):
            if normalize(kind, new).casefold() != norm.casefold():
                break
            new = draw(orig, norm, rng) if attempt < _REDRAWS // 2 else fill(orig, rng)
        self._remember(ck, new)
        return new

    def _remember(self, key: tuple[str, str], new: str) -> None:
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = new

    # ------------------------------------------------------------ kinds
    def _sub_email(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        at = max(orig.rfind("@"), orig.rfind("\uff20"))  # ＠ (full-width) stays ＠
        local, domain = orig[:at], orig[at + 1 :]
        labels = domain.split(".")
        new_labels = [fill(lb, rng, pronounceable=True) for lb in labels[:-1]] + [labels[-1]]
        return fill(local, rng, pronounceable=True) + orig[at] + ".".join(new_labels)

    def _sub_card(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        body = norm[0] + _rand_digits(rng, len(norm) - 2)
        return _layout(orig, body + luhn_check_digit(body))

    def _sub_cn_id(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        want_x = norm.endswith("X")
        region = f"{rng.choice(_CN_PROVINCES):02d}{rng.randrange(1, 21):02d}{rng.randrange(1, 31):02d}"
        birth = _dt.date.fromordinal(rng.randrange(_DATE0, _DATE1 + 1)).strftime("%Y%m%d")
        first14 = region + birth
        base = sum(int(c) * w for c, w in zip(first14, GB_WEIGHTS))
        for _ in range(1000):  # an X check character comes up 1 time in 11
            seq = rng.randrange(1000)
            total = base + (seq // 100) * GB_WEIGHTS[14] + (seq // 10 % 10) * GB_WEIGHTS[15] + (seq % 10) * GB_WEIGHTS[16]
            check = GB_CHECK_CHARS[total % 11]
            if (check == "X") == want_x:
                return _layout(orig, f"{first14}{seq:03d}{check}")
        raise RuntimeError("could not draw a GB 11643 substitute")  # unreachable in practice

    def _sub_cn_mobile(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        prefix = norm[: len(norm) - 11]  # 86 / 0086 country code, kept
        return _layout(orig, prefix + "1" + rng.choice("3456789") + _rand_digits(rng, 9))

    def _sub_phone(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        xi = next((i for i, ch in enumerate(orig) if ch in "Xx\uff38\uff58"), -1)
        if xi > 0:  # an extension glued on (555-123-4567x565): the number, then new extension digits
            main = orig[:xi]
            ext = "".join(digit_like(c, rng.randrange(10)) if c.isdigit() else c for c in orig[xi + 1:])
            return self._sub_phone(main, norm_number(main), rng) + orig[xi] + ext
        keep = 0
        stripped = orig.lstrip()
        intl = stripped[:1] in "+\uff0b"
        if intl or norm.startswith("00"):
            lead = 0 if intl else 2
            keep = lead + _country_code_len(norm[lead:])
        keep += 1  # first national digit (trunk 0 or area-code lead) keeps the number plausible
        return _layout(orig, norm[:keep] + _rand_digits(rng, len(norm) - keep))

    def _sub_account(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        return _layout(orig, _rand_digits(rng, len(norm)))

    def _sub_us_ssn(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        area = rng.randrange(1, 900)
        if area == 666:
            area = 667
        return _layout(orig, f"{area:03d}{rng.randrange(1, 100):02d}{rng.randrange(1, 10000):04d}")

    def _sub_iban(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        country = norm[:2]
        bban = "".join(str(rng.randrange(10)) if c.isdigit() else rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for c in norm[4:])
        new = country + iban_check_digits(country, bban) + bban
        it = iter(new)
        # the original's spaces and letter case (an IBAN typed in lower case stays lower case)
        return "".join(ch if ch == " " else (next(it).lower() if ch.islower() else next(it)) for ch in orig)

    def _sub_ipv4(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        parts = orig.split(".")
        out = []
        for i, p in enumerate(parts):
            n = len(p)
            if n == 1:
                v = rng.randrange(1 if i == 0 else 0, 10)
            elif n == 2:
                v = rng.randrange(10, 100)
            else:
                v = rng.randrange(100, 224 if i == 0 else 255)
                if i == 0 and v == 127:
                    v = 128
            out.append("".join(digit_like(c, int(d)) for c, d in zip(p, f"{v:0{n}d}")))
        return ".".join(out)

    def _sub_ipv6(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        return fill(orig, rng, hex_letters=True)

    def _sub_secret(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        for p in ("Bearer", "bearer", "BEARER"):
            if orig.startswith(p):
                head = orig[: len(p)]
                rest = orig[len(p) :]
                sp = len(rest) - len(rest.lstrip())
                return head + rest[:sp] + fill(rest[sp:], rng)
        for p in _SECRET_PREFIXES:
            if orig.startswith(p):
                return p + fill(orig[len(p) :], rng)
        if orig.startswith("eyJ") and orig.count(".") == 2:
            return ".".join(("eyJ" + fill(part[3:], rng)) if part.startswith("eyJ") else fill(part, rng) for part in orig.split("."))
        if "\\n" in orig:  # a key's lines joined by escaped line breaks (JSON in a string): they stay
            return "\\n".join(fill(part, rng) for part in orig.split("\\n"))
        return fill(orig, rng)

    def _sub_person(self, orig: str, norm: str, rng: KeyedRandom) -> str:
        if any(is_hangul(c) for c in orig):
            return ko_name(orig, self._part_rng)
        if any(is_kana(c) or c == "\u3005" for c in orig) or (is_cjk(orig[0]) and (ja_surname_len(orig) >= 2 or orig in ja_given())):
            return ja_name(orig, self._part_rng)
        if any(is_cjk(c) for c in orig):
            return self._cn_name(orig, rng)
        out = []
        words = orig.split(" ")
        if words[0].rstrip(".") in TITLES:  # "Mr. Brown": the title is kept
            out.append(words[0])
            words = words[1:]
        for w in words:
            # ("" between repeated spaces; van, de, bin stay: no one is known by them)
            out.append(self.name_word(w) if w and w not in NAME_PARTICLES else w)
        return " ".join(out)

    def name_word(self, word: str) -> str:
        """One word of a Latin-script name, keyed by the word alone, so every mention of "Lena"
        gets the same substitute whether it stands alone or in "Lena Andersson". Drawn from
        the first names when the word is a known first name, else from the surnames; the parts
        of "O'Brien-Sullivan" one by one."""
        hit = self._cache.get(("name_word", word))
        if hit is not None:
            return hit
        parts = _NAME_PARTS.split(word)
        out = []
        for p in parts:
            if len(p) < 2 or not p.isalpha():
                out.append(p if p in _NAME_SEPARATORS else fill(p, self.rng("name_part", p.casefold()), pronounceable=True))
                continue
            key = p.casefold()
            cap = p[:1].upper() + p[1:].lower()
            pool = (EN_FIRST_BY_LEN if cap in NAME_FIRST else EN_LAST_BY_LEN).get(len(p))
            prng = self.rng("name_word", key)
            if pool and len(pool) >= 4:
                choice = prng.choice(pool)
                if choice.casefold() == key:
                    choice = pool[(pool.index(choice) + 1) % len(pool)]
                out.append(apply_case(p, choice))
            else:
                out.append(fill(p, prng, pronounceable=True))
        new = "".join(out)
        self._remember(("name_word", word), new)
        return new

    def _part_rng(self, kind: str, part: str) -> KeyedRandom:
        """The generator for one part of a name (a surname, a given name), keyed by the part alone."""
        return self.rng(kind, unicodedata.normalize("NFKC", part))

    def _cn_name(self, orig: str, rng: KeyedRandom) -> str:
        """A Chinese name of the same length and script (陳大文: traditional characters)."""
        simple = simplified(orig)
        out = []
        i = 0
        if simple[:2] in CN_SURNAMES_2:
            out.append(rng.choice(CN_SUB_SURNAMES_2))
            i = 2
        elif orig and is_cjk(orig[0]):
            out.append(rng.choice(CN_SUB_SURNAMES))
            i = 1
        for ch in orig[i:]:
            out.append(rng.choice(CN_GIVEN_CHARS) if is_cjk(ch) and ch != "某" else ch)  # 李某 stays X某
        return "".join(out) if simple is orig else traditional("".join(out))

    def mask(self, text: str) -> str:
        """Keyed, class-preserving placeholder for a whole text (the safe fallback)."""
        digest = self._hmac.digest(b"mask\0" + text.encode("utf-8", "surrogatepass"))
        return fill(text, KeyedRandom(digest))
