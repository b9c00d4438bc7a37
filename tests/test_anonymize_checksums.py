"""The scrubber's own checksums (anonymize/checksums.py) agree with python-stdnum's on many random
numbers, valid and not. They stay hand-written because they run on every candidate the patterns
find: about 3.5-4x (Luhn), 3-4.5x (IBAN) and 7-8x (GB 11643) faster than stdnum's
(benchmarks/checksums_bench.py)."""

from __future__ import annotations

import random
import string

import pytest

stdnum = pytest.importorskip("stdnum")
from stdnum import iban as std_iban  # noqa: E402
from stdnum import luhn as std_luhn  # noqa: E402
from stdnum.cn import ric as std_ric  # noqa: E402

from shadowreplay.anonymize import checksums  # noqa: E402

N = 20_000


def test_luhn_agrees_with_stdnum():
    rng = random.Random(1)
    valid = 0
    for _ in range(N):
        body = "".join(rng.choice(string.digits) for _ in range(rng.randint(11, 18)))
        good = body + checksums.luhn_check_digit(body)
        assert std_luhn.is_valid(good)
        assert checksums.luhn_check_digit(body) == std_luhn.calc_check_digit(body)
        other = body + rng.choice(string.digits)
        assert checksums.luhn_ok(other) == std_luhn.is_valid(other), other
        valid += checksums.luhn_ok(other)
    assert N * 0.05 < valid < N * 0.15  # about one in ten random tails is valid: both sides were tested


def test_gb11643_agrees_with_stdnum():
    rng = random.Random(2)
    for _ in range(N):
        first17 = rng.choice(sorted(checksums.CN_PROVINCES)) + "".join(rng.choice(string.digits) for _ in range(15))
        check = checksums.gb11643_check(first17)
        assert check == std_ric.calc_check_digit(first17 + "0")
        wrong = rng.choice([c for c in "0123456789X" if c != check])
        assert std_ric.calc_check_digit(first17 + wrong) != wrong


def _std_iban_ok(x: str) -> bool:
    try:
        std_iban.validate(x, check_country=False)  # mod 97 and the country's length and BBAN format
        return True
    except stdnum.exceptions.ValidationError:
        return False


def test_iban_agrees_with_stdnum():
    import stdnum.exceptions  # noqa: F401

    rng = random.Random(3)
    flipped = 0
    for _ in range(N // 4):
        cc = rng.choice(["DE", "AT", "FI", "SE", "DK", "CH", "PL"])  # BBAN formats that take any digits
        bban = "".join(rng.choice(string.digits) for _ in range(checksums.IBAN_LENGTHS[cc] - 4))
        check = checksums.iban_check_digits(cc, bban)
        assert std_iban.calc_check_digits(cc + "00" + bban) == check
        good = cc + check + bban
        assert checksums.iban_ok(good) and checksums.iban_ok(good.lower()) and _std_iban_ok(good), good
        i = rng.randrange(4, len(good))  # one digit of the BBAN changed: mod 97 catches every such typo
        typo = good[:i] + str((int(good[i]) + rng.randint(1, 9)) % 10) + good[i + 1:]
        assert checksums.iban_ok(typo) == _std_iban_ok(typo) == False, typo  # noqa: E712
        flipped += 1
    assert flipped == N // 4
