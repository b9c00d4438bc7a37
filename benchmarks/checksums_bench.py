"""The scrubber's checksums (anonymize/checksums.py) against python-stdnum's, per call.

    .venv/bin/python benchmarks/checksums_bench.py

They run on every candidate the patterns find (cards, IBANs, Chinese resident IDs), so they stay
hand-written while they are faster; tests/test_anonymize_checksums.py checks that both agree.
Prints the best of 5 runs per call, in microseconds, and the ratio."""

from __future__ import annotations

import timeit

from stdnum import iban, luhn
from stdnum.cn import ric

from shadowreplay.anonymize import checksums as ours

CASES = {
    "Luhn (cards)": (ours.luhn_ok, luhn.is_valid, ["4111111111111111", "5500005555555559", "4111111111111112"]),
    "IBAN": (ours.iban_ok, iban.is_valid, ["DE89370400440532013000", "GB82WEST12345698765432",
                                           "FR1420041010050500013M02606", "DE89370400440532013001"]),
    "GB 11643 (resident ID)": (ours.cn_id_ok, ric.is_valid, ["11010519491231002X", "110105194912310021", "440524188001010014"]),
}


def per_call_us(fn, values: list[str], n: int = 3000) -> float:
    xs = (values * (n // len(values) + 1))[:n]
    return min(timeit.repeat(lambda: [fn(x) for x in xs], number=1, repeat=5)) / n * 1e6


def main() -> None:
    print("| check | shadowreplay us | python-stdnum us | ratio |\n|---|---|---|---|")
    for name, (mine, theirs, values) in CASES.items():
        assert [mine(v) for v in values] == [theirs(v) for v in values], name
        a, b = per_call_us(mine, values), per_call_us(theirs, values)
        print(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.1f}x |")


if __name__ == "__main__":
    main()
