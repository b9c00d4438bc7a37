"""Checksums used both to validate detections and to make valid substitutes."""

from __future__ import annotations

import datetime as _dt

GB_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
GB_CHECK_CHARS = "10X98765432"


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i & 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def luhn_check_digit(body: str) -> str:
    """The digit that makes body + digit Luhn-valid."""
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = ord(ch) - 48
        if not i & 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def gb11643_check(first17: str) -> str:
    return GB_CHECK_CHARS[sum(int(c) * w for c, w in zip(first17, GB_WEIGHTS)) % 11]


def valid_birth_date(yyyymmdd: str) -> bool:
    try:
        d = _dt.date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:8]))
    except ValueError:
        return False
    return 1900 <= d.year <= 2099


def cn_id_ok(id18: str) -> bool:
    """GB 11643-1999: 17 digits, a check character (0-9 or X), and a valid birth date."""
    if len(id18) != 18 or not id18[:17].isdigit() or id18[0] == "0":
        return False
    return gb11643_check(id18[:17]) == id18[17].upper() and valid_birth_date(id18[6:14])


def iban_mod97(iban: str) -> int:
    """ISO 13616 remainder of an IBAN (letters as 10..35, first four characters moved to the end)."""
    s = iban[4:] + iban[:4]
    n = 0
    for ch in s:
        n = (n * (100 if ch.isalpha() else 10) + int(ch, 36)) % 97
    return n


def iban_ok(iban: str) -> bool:
    return 15 <= len(iban) <= 34 and iban[:2].isalpha() and iban[2:4].isdigit() and iban_mod97(iban) == 1


def iban_check_digits(country: str, bban: str) -> str:
    return f"{98 - iban_mod97(country + '00' + bban):02d}"
