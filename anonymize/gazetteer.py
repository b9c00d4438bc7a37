"""Name lists, taken from Faker's locale data (shipped with the faker package, no downloads), and
the English word list the name detector tells names from words with (anonymize/data/)."""

from __future__ import annotations

import functools
import gzip
import importlib
import pkgutil
import re
from pathlib import Path

import faker.providers.person as _person
from faker.providers.address.en import Provider as _EnAddress
from faker.providers.address.en_US import Provider as _UsAddress
from faker.providers.address.zh_CN import Provider as _ZhAddress
from faker.providers.person.en_US import Provider as _En
from faker.providers.person.zh_CN import Provider as _Zh

_COMPOUND_EXTRA = ("欧阳", "司马", "诸葛", "上官", "东方", "皇甫", "令狐", "慕容", "司徒", "夏侯", "尉迟", "长孙", "宇文", "公孙")

# common surnames Faker's list has only in another form (萧/肖, 傅/付, 阎/闫: the simplified
# variants written as often as the listed ones)
_VARIANTS_1 = "肖付闫"
CN_SURNAMES_1: frozenset[str] = frozenset([s for s in _Zh.last_names if len(s) == 1] + list(_VARIANTS_1))
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
    "English Chinese American British French German Japanese Indian None True False Null Nil".split()
)
TITLES: frozenset[str] = frozenset("Mr Mrs Ms Miss Dr Prof Professor Mx Herr Herrn Frau".split())


# ---------------------------------------------------------------- detection lists
# Every Faker locale's first and last names in Latin script (romanized lists included: Japanese,
# Chinese pinyin), so names from anywhere are known, not only English ones.
_LATIN_NAME = re.compile(r"^[A-Z\u00c0-\u00de\u0100-\u024f\u1e00-\u1eff][A-Za-z\u00c0-\u024f\u1e00-\u1eff'\u2019\-]+$")


def _faker_names() -> tuple[frozenset[str], frozenset[str]]:
    first: set[str] = set()
    last: set[str] = set()
    for mod in pkgutil.iter_modules(_person.__path__):
        prov = importlib.import_module(f"{_person.__name__}.{mod.name}").Provider
        # (first_names, first_names_female, middle_names, last_names, male_last_names, ...)
        for attr, into in (("first_name", first), ("first_romanized", first), ("middle_name", first),
                           ("last_name", last), ("last_romanized", last)):
            for name in dir(prov):
                if attr in name:
                    v = getattr(prov, name)
                    if isinstance(v, dict):
                        v = list(v)
                    if isinstance(v, (list, tuple, set, frozenset)):
                        into.update(x for x in v if isinstance(x, str) and _LATIN_NAME.match(x))
    return frozenset(first), frozenset(last)


NAME_FIRST, NAME_LAST = _faker_names()
NAME_FIRST_LOWER: frozenset[str] = frozenset(n.lower() for n in NAME_FIRST)
NAME_LAST_LOWER: frozenset[str] = frozenset(n.lower() for n in NAME_LAST)

def _words(name: str, encoding: str = "ascii") -> frozenset[str]:
    """The lines of a word list shipped in data/ (see data/README.md)."""
    with gzip.open(Path(__file__).with_name("data") / name, "rt", encoding=encoding) as f:
        return frozenset(f.read().split())


def _lines(name: str) -> frozenset[str]:
    """The words of a plain word list in data/, one a line (`#` starts a comment line)."""
    text = (Path(__file__).with_name("data") / name).read_text(encoding="utf-8")
    return frozenset(w.strip() for w in text.splitlines() if w.strip() and not w.startswith("#"))


# nouns that end the name of a thing (`Backus-Naur Form`, `Wolfram Research`)
TERM_HEADS: frozenset[str] = _lines("term_heads.txt")
# lower-case nouns after which a capitalised word names a thing (`the Wayland backend`, `Mac OS`)
THING_NOUNS: frozenset[str] = _lines("thing_nouns.txt")

# Lower-case English words (SCOWL, see anonymize/data/README.md): "will", "grace", "brown" are
# words as well as names, "carla" and "nakamura" are not.
ENGLISH_WORDS: frozenset[str] = _words("english_words.txt.gz")
# Capitalised SCOWL words: proper nouns. Those in no name list are no person's name (Gregorian,
# Manhattan, Xerox); those in one (Carla, Jordan) are judged as names.
ENGLISH_PROPER: frozenset[str] = _words("english_proper_nouns.txt.gz")

# The most frequent tokens of English text (wordfreq, all sources): a capitalised word that is
# neither a known name nor an English word is taken for a name only when it is not among them
# ("Zeliha", "Balabanov" are not; "Kubernetes", "Args", "Nginx" are).
COMMON_TOKENS_N = 100_000


def _common_tokens(n: int) -> frozenset[str]:
    from wordfreq import top_n_list

    return frozenset(top_n_list("en", n))


COMMON_TOKENS: frozenset[str] = _common_tokens(COMMON_TOKENS_N)
# The 2,000 most frequent (made, add, use, company): a sentence that starts with one capitalised
# starts with a word, whatever name lists hold it.
COMMON_WORDS: frozenset[str] = _common_tokens(2_000)


@functools.cache
def german_words() -> frozenset[str]:
    """The 50,000 most frequent German words (wordfreq), lower case, three letters or more, less
    the first names of Faker's German locales (`thomas`, `anna` are frequent in German text): in
    German text every noun is capitalised, so a capital is no evidence of a name there, and
    `Vogel`, `Sommer`, `Bauer` are words that are surnames too. Built on first use (German
    text), so a process that never sees any never pays."""
    from wordfreq import top_n_list

    first: set[str] = set()
    for loc in ("de_DE", "de_AT", "de_CH", "de_LI", "de_LU"):
        try:
            prov = importlib.import_module(f"{_person.__name__}.{loc}").Provider
        except ImportError:
            continue
        for attr in ("first_names", "first_names_male", "first_names_female"):
            first.update(n.lower() for n in getattr(prov, attr, ()))
    return frozenset(w for w in top_n_list("de", 50_000) if len(w) >= 3 and w.isalpha()) - first


@functools.cache
def _zipf(lang: str) -> dict[str, float]:
    """wordfreq's zipf frequency of each word of `lang` at least as frequent as zipf 3.0."""
    import math

    from wordfreq import get_frequency_dict

    return {w: round(math.log10(f) + 9, 2) for w, f in get_frequency_dict(lang).items() if f >= 10**-6}


def _zh_common() -> dict[str, float]:
    """Zipf frequencies (wordfreq) of the Chinese words of two or more characters at least as
    frequent as zipf 3.0: 文明 4.98, 祝贺 4.16, 贺卡 3.3, 卢布 are there; 王芳 2.08, 李强 2.82,
    许立群 are not (jieba tags some of the former as names)."""
    return {w: z for w, z in _zipf("zh").items() if len(w) >= 2}


ZH_ZIPF: dict[str, float] = _zh_common()


@functools.cache
def _zh_text_chars() -> tuple[dict[str, float], float]:
    """How often each character stands in Chinese text (summed wordfreq word frequencies), and
    the sum over all characters."""
    from wordfreq import get_frequency_dict

    text: dict[str, float] = {}
    for w, fr in get_frequency_dict("zh").items():
        for ch in w:
            text[ch] = text.get(ch, 0.0) + fr
    return text, sum(text.values())


@functools.cache
def zh_given_scores() -> dict[str, float]:
    """How much more often each character stands in a Chinese given name than in text: the log
    ratio of its share of the characters of given names (ngender's counts over a large name list)
    to its share of the characters of Chinese text (wordfreq's word frequencies). 鹏 6.1, 芳 6.2,
    泽 2.6; 部 -4.4, 质 -2.7 (a word, not a name, ends there). Built on first use (half a second),
    so a process that never sees Chinese text never pays for it."""
    import csv
    import importlib.resources
    import math

    names: dict[str, int] = {}
    with importlib.resources.files("ngender").joinpath("charfreq.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            names[row["char"]] = int(row["male"]) + int(row["female"])
    text, n_text = _zh_text_chars()
    n_names = sum(names.values())
    return {c: round(math.log((names.get(c, 0) + 1) / n_names) - math.log((text.get(c, 0.0) + 1e-7) / n_text), 2)
            for c in names.keys() | text.keys() if "\u4e00" <= c <= "\u9fff"}


@functools.cache
def zh_surname_scores() -> dict[str, float]:
    """The same for surnames: the log ratio of a surname's share of people (Faker zh_CN's
    weights, which follow the census) to its first character's share of Chinese text. 王 5.3,
    李 6.1, 贺 4.3; 高 1.9, 母 -1.1, 巴 -1.2 (common in words, rare as surnames)."""
    import math

    weights = dict(_Zh.last_names)
    total = sum(weights.values())
    text, n_text = _zh_text_chars()
    rare = min(weights.values()) / 2  # the surnames added to Faker's list
    return {s: round(math.log(weights.get(s, rare) / total) - math.log((text.get(s[0], 0.0) + 1e-7) / n_text), 2)
            for s in CN_SURNAMES_1 | CN_SURNAMES_2}


# Chinese place names (Faker's zh_CN cities, provinces without their 省/市, districts,
# countries; the Chinese names of three characters or more of GeoNames' cities of 200,000
# people or more, built by scripts/build-zh-places): jieba tags some of them as person names
# (莫斯科, 伊拉克, 钟山, 克拉科夫).
ZH_PLACES: frozenset[str] = frozenset(
    list(_ZhAddress.cities) + list(_ZhAddress.districts) + list(_ZhAddress.countries)
    + [p[:-1] if p[-1] in "省市" else p for p in _ZhAddress.provinces]
) | _words("zh_world_places.txt.gz", "utf-8")

# Capitalised words that are in the name lists but are, in running text, mostly something else:
# months, days, places, languages, products and tools. A run made only of these is not a person.
NOT_PERSON_WORDS: frozenset[str] = frozenset(
    """January February March April May June July August September October November December
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday Christmas Easter Halloween
    America American Americans Europe European Asia Asian Africa African Australia Australian
    China Chinese Japan Japanese India Indian Korea Korean France French Germany German Italy Italian
    Spain Spanish Portugal Portuguese Russia Russian Brazil Brazilian Canada Canadian Mexico Mexican
    England English Britain British Ireland Irish Scotland Scottish Wales Welsh Israel Jordan Georgia
    Egypt Turkey Greece Greek Sweden Swedish Norway Norwegian Denmark Danish Finland Finnish Poland Polish
    Holland Dutch Belgium Austria Swiss Switzerland Paris London Berlin Madrid Rome Vienna Moscow Tokyo
    Beijing Shanghai Sydney Melbourne Toronto Chicago Boston Houston Dallas Austin Denver Phoenix Seattle
    Atlanta Miami Orlando Vegas Francisco Angeles Diego Jose York Jersey Washington Virginia Carolina
    Florida Texas California Arizona Nevada Oregon Montana Dakota Indiana Kentucky Tennessee Alabama
    Louisiana Arkansas Missouri Kansas Nebraska Iowa Minnesota Wisconsin Michigan Ohio Pennsylvania
    Maryland Delaware Vermont Maine Alaska Hawaii Idaho Utah Wyoming Colorado Oklahoma Mississippi
    Manhattan Brooklyn Queens Bronx Hollywood Silicon Victoria Florence Venice Milan Naples Geneva
    Lincoln Jackson Madison Charlotte Columbus Cleveland Nashville Memphis Portland Raleigh Richmond
    Python Java Julia Ruby Rust Swift Kotlin Scala Perl Haskell Pascal Ada Dart Elixir Erlang Lua Go
    Linux Windows Ubuntu Debian Docker Kubernetes Django Flask React Angular Vue Node Apple Google
    Amazon Microsoft Meta Tesla Nvidia Intel Oracle Adobe Netflix Uber Airbnb Spotify Twitter Facebook
    Claude Gemini Llama Mistral Qwen Gemma Phi Falcon Vicuna Alpaca Siri Alexa Cortana Copilot
    Jenkins Kafka Selenium Celery Apache Tomcat Jetty Jira Heroku Slack
    Chrome Firefox Safari Opera Outlook Bamboo Grafana Kibana Prometheus Sentry Ansible Puppet Vagrant
    Consul Nomad Vault Helm Istio Envoy Jest Mocha Karma Gradle Maven Bazel Webpack Babel Pandas Keras
    Hadoop Hive Flink Airflow Dagster Jupyter Postman Figma Notion Trello Asana Redis Nginx
    Mac Wayland Travis Ninja Xcode Homebrew Github Gitlab Bitbucket Codecov Dependabot Readthedocs Pyodide Cygwin
    God Jesus Christ Lord Allah Buddha Bible Mars Venus Jupiter Saturn Mercury Pluto Earth Moon Sun
    Sir Madam Madame Dear Hi Hello Hey Thanks Regards Sincerely Cheers Best Mr Mrs Ms Miss Dr Prof Mx
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Mon Tue Wed Thu Fri Sat Sun""".split()
)

# Countries (Faker's English list, a parenthesis dropped: "Bouvet Island") and the US states: a
# run that is one of them is a place (Costa Rica, San Marino), and a one-word one counts as a
# name only beside another name (Montenegro, Kenya), as NOT_PERSON_WORDS do.
PLACES_EN: frozenset[str] = frozenset(
    re.sub(r"\s*\(.*?\)", "", c).strip() for c in _EnAddress.countries
) | frozenset(_UsAddress.states) | frozenset(("North Macedonia", "Czechia", "Eswatini"))


def _demonyms(places: frozenset[str]) -> frozenset[str]:
    """The adjectives and nouns English makes of one-word place names (Austria -> Austrian,
    Kenya -> Kenyan, Czechia -> Czech, Nepal -> Nepali), where SCOWL has them as proper nouns."""
    out = set()
    for p in places:
        if " " in p:
            continue
        for d in (p + "n", p[:-1] + "an", p[:-1] + "ian", p + "ian", p + "ese", p[:-1] + "ese", p + "i",
                  p[:-2] if p.endswith("ia") else ""):
            if d in ENGLISH_PROPER and d not in NAME_FIRST:  # (not Roman, a given name too)
                out.add(d)
    return frozenset(out)


NOT_PERSON_WORDS = NOT_PERSON_WORDS | frozenset(p for p in PLACES_EN if " " not in p) | _demonyms(PLACES_EN)


# ---------------------------------------------------------------- Japanese and Korean names
# Built on first use (Japanese or Korean text), so a process that never sees any never pays.


def _data_lines(name: str) -> list[str]:
    import importlib.resources

    text = importlib.resources.files(__package__).joinpath("data", name).read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def ja_zipf(word: str) -> float:
    """How common `word` is in Japanese text (wordfreq's zipf; 0 when rarer than zipf 3)."""
    return _zipf("ja").get(word, 0.0)


def ko_zipf(word: str) -> float:
    """How common `word` is in Korean text (wordfreq's zipf, by its morphemes; 0 when rarer)."""
    return _zipf("ko").get(word, 0.0)


@functools.cache
def ja_surnames() -> frozenset[str]:
    """Japanese surnames in kanji: Faker ja_JP's and the common ones in data/ja_surnames.txt."""
    from faker.providers.person.ja_JP import Provider as _Ja

    return frozenset([p[0] for p in _Ja.last_name_pairs] + _data_lines("ja_surnames.txt"))


@functools.cache
def ja_given() -> frozenset[str]:
    """Japanese given names (kanji or kana): Faker ja_JP's and data/ja_given.txt."""
    from faker.providers.person.ja_JP import Provider as _Ja

    pairs = list(_Ja.first_name_female_pairs) + list(_Ja.first_name_male_pairs)
    return frozenset([p[0] for p in pairs] + [p[1] for p in pairs] + _data_lines("ja_given.txt"))


@functools.cache
def ja_foreign_given() -> frozenset[str]:
    """Given names of other countries in katakana (data/ja_foreign_given.txt)."""
    return frozenset(_data_lines("ja_foreign_given.txt"))


@functools.cache
def ja_places() -> frozenset[str]:
    """Countries and prefectures as Japanese writes them (Faker ja_JP), with the short forms of
    common countries: never a person before a title (イスラエル首相)."""
    from faker.providers.address.ja_JP import Provider as _JaAddress

    short = "アメリカ イギリス ドイツ フランス ロシア イタリア スペイン カナダ オランダ スイス 中国 韓国 北朝鮮 米国 英国".split()
    return frozenset(list(_JaAddress.countries) + list(_JaAddress.prefectures) + short)


# Korean surnames: Faker ko_KR's (the most common 44) are enough alone; the others only beside
# an honorific or a cue (several are common syllables: 도, 방, 공).
KO_SURNAMES_RARE = frozenset("현 원 천 방 공 함 변 염 여 추 석 선 설 길 표 채 맹 탁 봉 왕 금 옥 육 마 도 소 기 예 용 인 편 국".split())
KO_SURNAMES_2 = frozenset("남궁 황보 제갈 선우 독고 사공 서문".split())


@functools.cache
def ko_surnames() -> frozenset[str]:
    from faker.providers.person.ko_KR import Provider as _Ko

    return frozenset(_Ko.last_names)


@functools.cache
def ko_foreign_given() -> frozenset[str]:
    """Western given names in Hangul (data/ko_foreign_given.txt), less those that are common
    Korean words on their own (장, 수, 팀, 조)."""
    return frozenset(w for w in _data_lines("ko_foreign_given.txt") if ko_zipf(w) < 5.0)


@functools.cache
def ko_given() -> frozenset[str]:
    """Korean given names: Faker ko_KR's and data/ko_given.txt."""
    from faker.providers.person.ko_KR import Provider as _Ko

    return frozenset(list(_Ko.first_names) + _data_lines("ko_given.txt"))


@functools.cache
def ko_given_syllables() -> frozenset[str]:
    """The syllables of the listed Korean given names."""
    return frozenset(c for n in ko_given() for c in n)
