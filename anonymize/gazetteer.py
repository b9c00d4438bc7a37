"""Name lists, taken from Faker's locale data (shipped with the faker package, no downloads)."""

from __future__ import annotations

from faker.providers.person.en_US import Provider as _En
from faker.providers.person.zh_CN import Provider as _Zh

_COMPOUND_EXTRA = ("欧阳", "司马", "诸葛", "上官", "东方", "皇甫", "令狐", "慕容", "司徒", "夏侯", "尉迟", "长孙", "宇文", "公孙")

CN_SURNAMES_1: frozenset[str] = frozenset(s for s in _Zh.last_names if len(s) == 1)
CN_SURNAMES_2: frozenset[str] = frozenset([s for s in _Zh.last_names if len(s) == 2] + list(_COMPOUND_EXTRA))
# The most common single-character surnames, used for substitutes (Faker's list is frequency ordered).
CN_SUB_SURNAMES: tuple[str, ...] = tuple(s for s in list(_Zh.last_names)[:120] if len(s) == 1)
CN_SUB_SURNAMES_2: tuple[str, ...] = tuple(sorted(CN_SURNAMES_2))
CN_GIVEN_CHARS: tuple[str, ...] = tuple(sorted({c for n in _Zh.first_names for c in n}))

EN_FIRST: frozenset[str] = frozenset(
    list(_En.first_names_male) + list(_En.first_names_female) + list(getattr(_En, "first_names", ()))
)
EN_LAST: frozenset[str] = frozenset(_En.last_names)


def _by_len(names) -> dict[int, tuple[str, ...]]:
    out: dict[int, list[str]] = {}
    for n in sorted(names):
        if n.isalpha() and n.isascii():
            out.setdefault(len(n), []).append(n)
    return {k: tuple(v) for k, v in out.items()}


EN_FIRST_BY_LEN = _by_len(EN_FIRST)
EN_LAST_BY_LEN = _by_len(EN_LAST)

# Words after "Dear" / "I am" that are not names.
EN_NOT_NAMES: frozenset[str] = frozenset(
    "Sir Madam Madame Customer Customers Team All Friend Friends Colleague Colleagues Hiring Manager User "
    "Users Valued Member Members Reader Readers Everyone Mr Mrs Ms Miss Dr Prof Professor Sirs Client "
    "The A An This That Not Sorry So Very Just Here There Happy Glad Going Trying Working Looking Writing "
    "Interested Using Unable Able Sure Afraid Also Still Now Currently Really An Assistant AI Claude ChatGPT "
    "English Chinese American British French German Japanese Indian".split()
)
TITLES: frozenset[str] = frozenset("Mr Mrs Ms Miss Dr Prof Professor Mx".split())
