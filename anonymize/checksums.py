"""Checksums used both to validate detections and to make valid substitutes."""

from __future__ import annotations

import datetime as _dt

GB_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
GB_CHECK_CHARS = "10X98765432"
# GB/T 2260 province-level codes, the first two digits of a resident ID (83: Taiwan residents'
# permits, which share the format).
CN_PROVINCES = frozenset(
    "11 12 13 14 15 21 22 23 31 32 33 34 35 36 37 41 42 43 44 45 46 50 51 52 53 54 61 62 63 64 65 71 81 82 83".split()
)
# IBAN length per country (SWIFT IBAN registry, and the countries that use the format without
# being registered): a 2-letter, 2-digit token of another length is no IBAN, whatever mod 97 says.
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27, "BR": 29,
    "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
    "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "SO": 23, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
    "AO": 25, "BF": 28, "BJ": 28, "CF": 27, "CG": 27, "CI": 28, "CM": 27, "CV": 25, "DZ": 26, "GA": 27, "GQ": 27,
    "GW": 25, "HN": 28, "IR": 26, "KM": 27, "MA": 28, "MG": 27, "ML": 28, "MZ": 25, "NE": 28, "SN": 28, "TD": 27,
    "TG": 28,
}


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


def cn_id_shaped(id18: str) -> bool:
    """A resident ID's shape whatever its check character: a province code, a birth date that has
    happened, three sequence digits and 0-9 or X. A typo in the check digit is still someone's
    ID number; an 18-digit run with a valid province and a past birth date is rarely anything else."""
    if len(id18) != 18 or not id18[:17].isdigit() or id18[:2] not in CN_PROVINCES:
        return False
    if not (id18[17].isdigit() or id18[17] in "Xx"):
        return False
    b = id18[6:14]
    return valid_birth_date(b) and b <= _dt.date.today().strftime("%Y%m%d")


def iban_mod97(iban: str) -> int:
    """ISO 13616 remainder of an IBAN (letters as 10..35, first four characters moved to the end)."""
    s = iban[4:] + iban[:4]
    n = 0
    for ch in s:
        n = (n * (100 if ch.isalpha() else 10) + int(ch, 36)) % 97
    return n


def iban_ok(iban: str) -> bool:
    """ISO 13616: a known country, its length, and mod 97 = 1 (letters of either case)."""
    iban = iban.upper()
    return IBAN_LENGTHS.get(iban[:2]) == len(iban) and iban[2:4].isdigit() and iban_mod97(iban) == 1


def iban_check_digits(country: str, bban: str) -> str:
    return f"{98 - iban_mod97(country + '00' + bban):02d}"
