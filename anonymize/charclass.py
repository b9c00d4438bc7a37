"""Class-preserving character substitution: digits stay digits (in their own script, so full-width
stays full-width), letters keep their case, CJK stays CJK, everything else is kept."""

from __future__ import annotations

import re
import unicodedata

from .gazetteer import CN_GIVEN_CHARS

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
ASCII_LETTERS = frozenset(_UPPER + _LOWER)
_CONS_L = "bcdfghjklmnprstvwz"
_VOW_L = "aeiou"
_HEX_L = "abcdef"


def latin_letters(upper: bool) -> str:
    """A regular-expression class body of the upper-case (or lower-case) letters of the Latin
    blocks beyond ASCII: Latin-1, Extended-A and -B (Polish ł, Romanian ș) and Extended
    Additional (Vietnamese ễ, ạ), as ranges. By the letters' own case: in Extended-A and -B
    capitals and small letters alternate."""
    test = str.isupper if upper else str.islower
    chars = [c for c in map(chr, [*range(0xC0, 0x250), *range(0x1E00, 0x1F00)]) if c.isalpha() and test(c)]
    out = []
    i = 0
    while i < len(chars):
        j = i
        while j + 1 < len(chars) and ord(chars[j + 1]) == ord(chars[j]) + 1:
            j += 1
        out.append(chars[i] if i == j else chars[i] + "-" + chars[j])
        i = j + 1
    return "".join(out)


def is_cjk(ch: str) -> bool:
    """A CJK ideograph: the unified block, extension A, and the supplementary ideographic planes
    (extensions B and on, where rare characters of names live). Compared as strings, which is
    faster than through ord() on the scrubber's hot path."""
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\U00020000" <= ch <= "\U0002ffff"


def is_hangul(ch: str) -> bool:
    """A Hangul syllable (Korean)."""
    return "\uac00" <= ch <= "\ud7a3"


def is_kana(ch: str) -> bool:
    """A hiragana or katakana letter (Japanese), the prolonged sound mark included."""
    return "\u3041" <= ch <= "\u30fa" or ch == "\u30fc"


def unspaced_name_char(ch: str) -> bool:
    """A character of a script that writes names without spaces around them (Chinese, Japanese,
    Korean, where particles glue to a name): a mention of such a name is looked for anywhere."""
    return is_cjk(ch) or is_hangul(ch) or is_kana(ch) or ch == "\u3005"


_IDEOGRAPH_RUN = re.compile("[\u4e00-\u9fff\u3400-\u4dbf]+")


def outweighs_ideographs(text: str, script_run: re.Pattern, share: float = 0.25) -> bool:
    """Are the characters of `text` that `script_run` matches (kana, Hangul) at least `share` of
    them and its CJK ideographs together: is the text Japanese or Korean rather than Chinese
    that quotes a word of either?"""
    own = sum(map(len, script_run.findall(text)))
    ideographs = sum(map(len, _IDEOGRAPH_RUN.findall(text)))
    return own >= share * (own + ideographs)


def digit_like(ch: str, d: int) -> str:
    """Digit `d` written in the same digit script as `ch` (ASCII, full-width, ...)."""
    if "0" <= ch <= "9":
        return chr(48 + d)
    try:
        return chr(ord(ch) - unicodedata.decimal(ch) + d)
    except (TypeError, ValueError):
        return chr(48 + d)


def ascii_digit(ch: str) -> str:
    if "0" <= ch <= "9":
        return ch
    return chr(48 + unicodedata.decimal(ch))


def letter_like(ch: str, new_ascii: str) -> str:
    """`new_ascii` (a letter) with the case and width of `ch`."""
    o = ord(ch)
    if 0xFF21 <= o <= 0xFF3A or 0xFF41 <= o <= 0xFF5A:  # full-width Latin
        base = new_ascii.upper() if o <= 0xFF3A else new_ascii.lower()
        return chr(ord(base) - 0x20 + 0xFF00)
    return new_ascii.upper() if ch.isupper() else new_ascii.lower()


_D10 = "0123456789"
HIRAGANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわ"
KATAKANA = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワ"
_CV_UPPER = (_CONS_L.upper(), _VOW_L.upper())
_CV_LOWER = (_CONS_L, _VOW_L)


def fill(orig: str, rng, *, pronounceable: bool = False, hex_letters: bool = False) -> str:
    """Replace every letter/digit of `orig` by a random one of the same class; keep the rest."""
    out = []
    append = out.append
    vowel_next = 0
    for ch, b in zip(orig, rng.bytes(len(orig))):
        o = ord(ch)
        if 48 <= o <= 57:
            append(_D10[b % 10])
        elif 97 <= o <= 122 or 65 <= o <= 90:
            lower = o >= 97
            if hex_letters:
                new = _HEX_L[b % 6]
            elif pronounceable:
                pool = _CV_LOWER[vowel_next]
                new = pool[b % len(pool)]
                vowel_next ^= 1
            else:
                new = _LOWER[b % 26]
            append(new if lower else new.upper())
        elif o < 128:
            append(ch)
            vowel_next = 0
        elif ch.isdigit():
            append(digit_like(ch, b % 10))
        elif ch.isalpha():
            if is_cjk(ch):
                append(CN_GIVEN_CHARS[(b * 257 + rng.randrange(256)) % len(CN_GIVEN_CHARS)])
                continue
            if is_hangul(ch):  # Hangul stays Hangul, kana stays kana of the same kind
                append(chr(0xAC00 + (b * 256 + rng.randrange(256)) % 11172))
                continue
            if "\u3041" <= ch <= "\u3093":
                append(HIRAGANA[b % len(HIRAGANA)])
                continue
            if "\u30a1" <= ch <= "\u30f3":
                append(KATAKANA[b % len(KATAKANA)])
                continue
            new = _HEX_L[b % 6] if hex_letters else _LOWER[b % 26]
            if 0xFF21 <= o <= 0xFF5A:
                append(letter_like(ch, new))
            else:
                append(new.upper() if ch.isupper() else new)
        else:
            append(ch)
            vowel_next = 0
    return "".join(out)


def apply_case(template: str, word: str) -> str:
    """`word` with the capitalisation pattern of `template` (same length)."""
    if template.isupper():
        return word.upper()
    if template.islower():
        return word.lower()
    return "".join(w.upper() if t.isupper() else w.lower() for t, w in zip(template, word))
