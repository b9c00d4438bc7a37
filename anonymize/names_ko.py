"""Korean person names in Hangul.

Korean writes a word and its particles together (김민수가, 김민수씨는), so a name is the start of
a run of Hangul syllables, the rest a particle, an honorific or both. A run's start is a name:

* beside an honorific or title (김민수 씨, 박지영 고객님, 이서연님, 박정희 대통령) or after a cue
  (이름: 정하늘, 제 이름은 이서연입니다): a surname (a rare one too) and one or two syllables,
  or a given name alone (민수 씨), when the run is no common word (아저씨, 하느님, 사장님) and
  the rest after the surname no common ending (하지만);
* a common surname with a title glued on or after it (김장관, 이씨는, 최 영사);
* on its own: a common surname and a listed given name (김민수가 왔다), a listed given name
  alone with a particle (현우는, 지영이가), or a common surname and two given-name syllables
  that make no word, with a particle (한승원이), when none of it is a common word.
"""

from __future__ import annotations

import functools
import re

from .charclass import outweighs_ideographs
from .gazetteer import KO_SURNAMES_2, KO_SURNAMES_RARE, ko_foreign_given, ko_given, ko_given_syllables, ko_surnames, ko_zipf
from .spans import PERSON, Span

HANGUL_RUN = re.compile("[\uac00-\ud7a3]+")

# what follows a name in its run (longest first when matched): particles, the copula, honorifics
_PARTICLES = (
    "에게서 께서는 께서 에게 한테 이랑 이에요 입니다 이었다 이라고 라고 이다 이고 이며 이나 으로 처럼 보다 부터 까지 조차 마저 "
    "예요 이가 이는 이를 이의 이도 이와 은 는 이 가 을 를 의 께 와 과 도 만 랑 야 아 로 나 여 "
    "에게는 한테는 에서는 으로는 에서 에는 에도 로는 로서 와의 과의 이란 란 이었던 였던 였다 이자 에 등"
).split()
_TITLES = (  # after a name, a word of their own (박정희 대통령) or glued to a surname (김장관)
    "고객님 선생님 교수님 박사님 과장님 부장님 차장님 대리님 사장님 대표님 회장님 원장님 팀장님 실장님 이사님 "
    "주임님 간호사님 기사님 작가님 감독님 변호사님 의원님 장관님 선생 교수 박사 과장 부장 차장 대리 사장 대표 "
    "회장 원장 팀장 실장 이사 주임 기자 의원 변호사 간호사 작가 감독 촬영감독 선수 대통령 장관 차관 총리 수상 영사 "
    "대사 의장 위원장 총장 총재 시장 지사 도지사 판사 검사 교사 시인 화가 신부 목사 스님 여사 선배 후배 코치 "
    "장군 일병 이병 상병 병장 하사 중사 상사 소위 중위 대위 소령 중령 대령 준장 소장 중장 대장 경사 경위 경감 경정 "
    "형사 반장 별감 대감 영감 정승 판서 대군 공주 왕자 국왕 황제 후보 당선자 이사장 수석 비서관 행정관 대변인 "
    "사령관 주교 추기경 수녀 전도사 화백 배우 가수 대표이사 상무 전무 부사장 부회장 씨네 할머니 할아버지 아저씨 아주머니 "
    "아버지 어머니 아빠 엄마 부인 남편 아내 아들 누나 오빠 언니 동생"
).split()
_HONORIFICS = _TITLES + "씨 님 군 양 고객 환자 학생".split()
_HONORIFICS.sort(key=len, reverse=True)
_SURNAME_TITLES = tuple(sorted(_TITLES + ["씨"], key=len, reverse=True))  # 이씨는, 김장관, 탁선생
# glued to the name, only these are honorifics (김민수씨, 이서연님); the others are words
# on their own (민수 선생님) or ends of common words (정수기, 이사장)
_GLUED = ("고객님", "선생님", "교수님", "과장님", "부장님", "팀장님", "대표님", "씨", "님")
_CUE = re.compile(  # where a name after a cue starts (이름: 정하늘, 제 이름은 이서연입니다)
    r"(?:이름|성명|성함|담당자|고객명|환자명|수신인|발신인|보호자|작성자|신청인|예약자|수령인|받는 사람|보내는 사람)"
    r"(?:은|는|이|:|：)?[ \t]*[:：]?[ \t]*(?=[\uac00-\ud7a3])"
)
_I_AM = re.compile(r"(?:저는|나는|제가)[ \t]+(?=[\uac00-\ud7a3])")
_COPULA = ("입니다", "이에요", "예요", "이야", "야", "라고", "이라고", "이고")
_EXTRA_GIVEN = frozenset("범찬용형효헌근택솔별율란화향애덕만문무배복분산섭송신안양언열오완왕요운위의이임장전제조찬천초충치탁표필해협홍황흥겸림률슬빛담")
_COMMON_START = 4.5  # 지정자, 한정자: a common word (지정) before a given-name syllable is no surname


def _given_like(s: str) -> bool:
    syl = ko_given_syllables()
    return all(c in syl or c in _EXTRA_GIVEN for c in s)


def _given_loose(s: str) -> bool:
    """Could `s` be an unlisted given name: none of its syllables an ending or a particle's
    (차림으로, 이르렀다, 장병들), and its last no suffix of a Sino-Korean noun (성리학, 구치소)?"""
    return not any(c in _NEVER_GIVEN for c in s) and s[-1] not in _NOT_GIVEN_END


_NEVER_GIVEN = frozenset("으을를는었였겠렀했됐졌웠봤습읍니께됩합갔왔났같듯려며들겼켰쳤셨텼뤄뤘냈랬잖죠요까데게고라다에있없찮되히")
_NOT_GIVEN_END = frozenset("학소부구국회당실교계막식금관청장군간방집총대서문통단로류기하해적년점명함움세새감과측쪽동강책곡극차복날댁네발판")


def _adnominal(stem: str) -> bool:
    """Does `stem` read as a common word with an adnominal ending (소중한, 새로운, 다정한)?"""
    return len(stem) >= 3 and stem[-1] in _ADNOMINAL_ENDS and ko_zipf(stem[:-1]) >= 3.5


_ADNOMINAL_ENDS = frozenset("한은는던운된인할울운론")


def _surname_len(stem: str, rare: bool) -> int:
    if stem[:2] in KO_SURNAMES_2:
        return 2
    if stem[0] in ko_surnames() or (rare and stem[0] in KO_SURNAMES_RARE):
        return 1
    return 0


def _word(s: str, common: float = 4.0) -> bool:
    return ko_zipf(s) >= common and s not in ko_given()


_ENDING = 4.5  # a given part this common (as a morpheme: 지만 6.3) is a word's ending


def _rest_ok(rest: str) -> bool:
    """What follows a name in its run: nothing, a particle, an honorific (and a particle)."""
    if not rest or rest in _PARTICLE_SET:
        return True
    for h in _HONORIFICS_BY_FIRST.get(rest[0], ()):
        if rest.startswith(h):
            rest = rest[len(h):]
            return not rest or rest in _PARTICLE_SET
    return False


_PARTICLE_SET = frozenset(_PARTICLES)
_HONORIFICS_BY_FIRST: dict[str, list[str]] = {}
for _h in _HONORIFICS:  # (longest first, as _HONORIFICS is sorted)
    _HONORIFICS_BY_FIRST.setdefault(_h[0], []).append(_h)
_HONORIFIC_T = tuple(_HONORIFICS)


def _with_context(run: str, glued_only: bool) -> int:
    """The length of the name at the start of `run` (one with an honorific or cue beside it), or 0."""
    for k in (4, 3, 2):
        if k > len(run):
            continue
        stem, rest = run[:k], run[k:]
        if glued_only and not rest.startswith(_GLUED):
            continue
        if not rest and stem[-1] in _PARTICLE_SET and (stem[:-1] in ko_given() or stem[:-2] in ko_given()):
            continue  # (현우는 아버지: 현우 and a particle)
        s = _surname_len(stem, rare=True)
        if _word(stem) and not (s and k - s == 2 and _given_like(stem[s:])):  # (박정희 대통령: a famous name is frequent)
            continue
        if not _rest_ok(rest) or any(_word(run[:j]) for j in range(k + 1, len(run) + 1)):
            continue  # (하느님께: 하느 and an honorific, but 하느님 is a word)
        if (s and 1 <= k - s <= 2 and not _adnominal(stem) and not (k - s == 2 and _word(stem[s:], _ENDING))
                and not (len(run) - s >= 2 and _word(run[s:], _ENDING))):
            return k  # (not 하지만: 지만 is an ending)
        if k == 2 and (stem in ko_given() or (not s and _given_like(stem))):
            return k
    return 0


def _alone(run: str) -> int:
    """The length of a full name (common surname, listed given name) at the start of `run`, or 0."""
    if _word(run):
        return 0
    for k in (4, 3):
        if k > len(run):
            continue
        stem, rest = run[:k], run[k:]
        s = _surname_len(stem, rare=False)
        if (s and k - s == 2 and stem[s:] in ko_given() and _rest_ok(rest) and not _word(stem)
                and ko_zipf(stem[: s + 1]) < _COMMON_START):
            return k
    return 0


def _surname_titled(run: str, text: str, end: int) -> int:
    """1 where `run` is a common surname with a title glued to it (김장관, 이씨는) or is a
    surname alone before a title (최 영사), else 0."""
    if run[0] not in ko_surnames() or run[0] in _TITLE_PREFIXES or (len(run) > 1 and _word(run)):
        return 0
    if len(run) == 1:
        return 1 if _honorific_next(text, end) else 0
    rest = run[1:]
    if not rest.startswith(_SURNAME_TITLES):
        return 0
    for t in _SURNAME_TITLES:
        if rest.startswith(t):
            after = rest[len(t):]
            return 1 if (not after or after in _PARTICLE_SET) and not _word(run[: 1 + len(t)]) else 0
    return 0


def _given_alone(run: str) -> int:
    """The length of a listed given name alone at the start of `run`, with a particle (or the
    -이 of a name that ends in a consonant) after it and no common word (현우는, 지영이가)."""
    stem = run[:2]
    if stem not in ko_given() and not (_given_like(stem) and ko_zipf(stem) < _UNLISTED_ALONE and stem[0] not in _surname_firsts()
                                       and stem[1] not in _NOT_ALONE_END and stem[0] not in _NUMBERS):
        return 0  # (an unlisted given name: not 보아서, 가기, 만원이, 세배를)
    if ko_zipf(stem) >= _GIVEN_ALONE:
        return 0
    rest = run[2:]
    if rest.startswith("이") and rest[1:] in _PARTICLE_SET:
        rest = rest[1:]
    return 2 if rest in _PARTICLE_SET and not _word(run) else 0


_GIVEN_ALONE = 3.5  # a given name alone at least this common (보람, 은혜) is a word
_UNLISTED_ALONE = 1.0  # an unlisted one (세호는, 승주의) no text uses as a word
_NOT_ALONE_END = frozenset("어기다서해보고게면라명개년배번살층월시분초권잔병달")  # a verb's ending, a counter
_NUMBERS = frozenset("삼육칠팔십백천만억열")
# syllables that before a title say which one, not whose (전 장관: the former minister,
# 여선생: a woman teacher, 고 선생: the late teacher)
_TITLE_PREFIXES = frozenset("전현여남각부총구고")


def _unlisted_full(run: str) -> int:
    """The length of a full name at the start of `run` whose given name is in no list: a common
    surname and two given-name syllables that make no word, a particle after them (한승원이,
    정우성의)."""
    if len(run) < 4 or run[0] not in ko_surnames():
        return 0
    stem, rest = run[:3], run[3:]
    if rest not in _PARTICLE_SET or not _given_loose(stem[1:]) or ko_zipf(stem[1:]) >= _UNLISTED_GIVEN:
        return 0
    return 3 if not _word(stem) and not _word(run) and ko_zipf(stem[:2]) < _UNLISTED_GIVEN else 0


_UNLISTED_GIVEN = 4.0


@functools.cache
def _surname_firsts() -> frozenset[str]:
    """The first syllables of every surname, the rare and two-syllable ones included."""
    return frozenset(ko_surnames() | KO_SURNAMES_RARE | {x[0] for x in KO_SURNAMES_2})


def _honorific_next(text: str, end: int) -> bool:
    """Does an honorific word stand after the run ending at `end` (one space between)?"""
    if not text.startswith(" ", end):
        return False
    m = HANGUL_RUN.match(text, end + 1)
    return m is not None and m.group().startswith(_HONORIFIC_T) and _rest_ok(m.group())


def is_korean(text: str) -> bool:
    """Is `text` Korean rather than Chinese with some Hangul in it: at least a quarter of its
    Hangul and hanja are Hangul?"""
    return outweighs_ideographs(text, HANGUL_RUN)


def _unlisted_titled(run: str) -> int:
    """A name in no list before a title (미야자와 수상, 고르바초프 대통령, 이순신 장군): a word of
    two or more syllables that no text uses as a common word, no ending or an institution's
    suffix in it (성균관대 교수, 담당 교수)."""
    if (len(run) < 2 or ko_zipf(run) >= _UNLISTED_TITLED or _word(run[:2], _ENDING) or not _given_loose(run)
            or run[-1] in _ADNOMINAL_ENDS or run[-1] in "가의은는을를이" or ko_zipf(run[-2:]) >= _ENDING):
        return 0  # (잃은, 내가, 칼국수와: a word with its ending or particle)
    return len(run) if run[-1] not in _INSTITUTION_END else 0


_UNLISTED_TITLED = 3.0
_INSTITUTION_END = frozenset("대부청원사회당처실과국단")


def _foreign_alone(run: str) -> int:
    """The length of a transliterated foreign name at the start of `run` (고르바초프는,
    코페르니쿠스의): three or more syllables, one of them a consonant Korean writes with an added
    ㅡ (스, 트, 프: no Korean word has a cluster), no common word, a particle or nothing after."""
    if len(run) < 3 or not any(c in _CLUSTER_SYLLABLES for c in run) or any(x in run for x in _NATIVE_S):
        return 0
    k = len(run)
    for p in _PARTICLES_LONGEST:
        if run.endswith(p) and len(run) - len(p) >= 2:
            k = len(run) - len(p)
            break
    stem = run[:k]
    if (k < 3 or k == len(run) or not any(c in _CLUSTER_SYLLABLES for c in stem) or ko_zipf(stem) >= _FOREIGN_ALONE or _word(stem)
            or stem[-1] in _FOREIGN_NOT_END or _compound_of_words(stem)):
        return 0
    return k


def _compound_of_words(stem: str) -> bool:
    """Does `stem` start or end with a common word of two or more syllables (스크린쿼터,
    가스회사측, 녹화테이프): a compound, not one foreign name?"""
    for j in range(2, len(stem) - 1):
        bar = _FOREIGN_PART_2 if j == 2 else _FOREIGN_PART
        if ko_zipf(stem[:j]) >= bar or ko_zipf(stem[-j:]) >= bar:
            return True
    return False


_FOREIGN_PART = 3.5
_FOREIGN_PART_2 = 4.5  # (two syllables are often a word by chance: 고르 in 고르바초프)
_FOREIGN_NOT_END = frozenset("고지며록림하게서들측지내")  # (싹트고, 빠트리지: a verb; 스키장들, 가스회사측)


_CLUSTER_SYLLABLES = frozenset("스트프츠즈브")
_NATIVE_S = ("스러", "스럽", "스레", "스런", "스스로", "스름")  # 자랑스럽게, 스스로: Korean words
_PARTICLES_LONGEST = sorted(_PARTICLES, key=len, reverse=True)
_FOREIGN_ALONE = 3.0


def _foreign_full(text: str, run: str, end: int) -> int:
    """Where `run` is a listed Western given name and a second word follows it that is no common
    word, a particle aside (샤론 스톤, 보리스 옐친이): the end of that second word, else 0."""
    if run not in ko_foreign_given() or not text.startswith(" ", end):
        return 0
    m = HANGUL_RUN.match(text, end + 1)
    if m is None:
        return 0
    word = m.group()
    if ko_zipf(run) >= _FOREIGN_GIVEN and not any(c in _CLUSTER_SYLLABLES for c in word):
        return 0  # (제임스 해리스; not 밥 먹구)
    if ko_zipf(word) >= _FOREIGN_SURNAME or word.startswith(_HONORIFIC_T):
        return 0  # (후세인 대통령: a title; the given name alone is another rule's)
    for k in range(2, len(word)):  # the particle off (드뇌브와, 스페이시의), not a name's end (파블로, 솔차가)
        rest = word[k:]
        if (rest in _PARTICLE_SET and len(rest) > 1 or rest in "은는을를의와과" or (rest in "이가" and k >= 3)) and ko_zipf(word[:k]) < _FOREIGN_SURNAME:
            return m.start() + k
    return m.end()


_FOREIGN_GIVEN = 4.5  # a given name this common (제임스, 존, 밥) needs a second word with a cluster
_FOREIGN_SURNAME = 4.5  # a second word this common is a Korean word, not a surname (스톤 4.2 still passes)


def find_korean_names(text: str, out: list[Span]) -> None:
    """Every Korean person name in `text`."""
    first, given = _surname_firsts(), ko_given()
    cued = {m.end() for m in _CUE.finditer(text)}
    i_am = {m.end() for m in _I_AM.finditer(text)}
    for m in HANGUL_RUN.finditer(text):
        a, run = m.start(), m.group()
        f = _foreign_full(text, run, m.end())
        if f:
            out.append(Span(a, f, PERSON))
            continue
        if len(run) < 2:
            if _surname_titled(run, text, m.end()):  # 최 영사
                out.append(Span(a, a + 1, PERSON))
            continue
        if a in cued or _honorific_next(text, m.end()):
            k = _with_context(run, glued_only=False) or _unlisted_titled(run)
        elif a in i_am and run.endswith(_COPULA):
            k = _with_context(run, glued_only=False)
        elif run[0] in first or run[:2] in given or run.startswith(_GLUED, 2) or run.startswith(_GLUED, 3) or _given_like(run[:2]):
            k = (_surname_titled(run, text, m.end()) if run.startswith(_SURNAME_TITLES, 1) else 0) or (  # 김일병이
                _with_context(run, glued_only=True) or _alone(run) or _given_alone(run) or _unlisted_full(run)
                or _foreign_alone(run))  # (고르바초프는: a surname's syllable first)
        else:  # (most words: no surname, no given name, no honorific glued on)
            f = _foreign_alone(run)
            if f:
                out.append(Span(a, a + f, PERSON))
            continue
        k = k or _surname_titled(run, text, m.end())
        if k:
            out.append(Span(a, a + k, PERSON))


def looks_like_korean_name(value: str) -> bool:
    """Could `value`, found under a name-like key, be a Korean name (김민수, 김 민수, 남궁민, 민수)?"""
    s = value.replace(" ", "")
    if not 2 <= len(s) <= 5 or HANGUL_RUN.fullmatch(s) is None or _word(s):
        return False
    k = _surname_len(s, rare=True)
    return (bool(k) and 1 <= len(s) - k <= 3 and _given_like(s[k:])) or (len(s) == 2 and _given_like(s))


def ko_name(orig: str, rng_for) -> str:
    """A substitute for the Korean name `orig`: a common surname for its surname and given-name
    syllables for its given name, each drawn from `rng_for(part_kind, part)` (a KeyedRandom), so
    the given name alone (서연, a later mention of 이서연) gets the same substitute as inside the
    full name. Two syllables are a given name alone; spaces are kept."""
    k = _surname_len(orig, rare=True) if sum(map(_is_syllable, orig)) >= 3 else 0
    out = []
    if k:
        r = rng_for("ko_surname", orig[:k])
        out.append(r.choice(_SUB_SURNAMES) if k == 1 else r.choice(_SUB_SURNAMES_2))
    r = rng_for("ko_given", orig[k:].replace(" ", ""))
    syl = _sub_syllables()
    out.extend(r.choice(syl) if _is_syllable(c) else c for c in orig[k:])
    return "".join(out)


def _is_syllable(c: str) -> bool:
    return "\uac00" <= c <= "\ud7a3"


_SUB_SURNAMES = tuple("김이박정최조강윤장임한오서신권황안송류전홍고문양손배백허유남심노하곽성차주우구민진지엄")
_SUB_SURNAMES_2 = tuple(sorted(KO_SURNAMES_2))


@functools.cache
def _sub_syllables() -> tuple[str, ...]:
    return tuple(sorted(ko_given_syllables()))


def korean_name_parts(name: str) -> list[str]:
    """The parts of a Korean name that identify the person alone: its given name of two
    syllables or more, when that is not a common word (이서연 -> 서연; 정하늘 -> none)."""
    k = _surname_len(name, rare=True)
    given = name[k:]
    return [given] if k and len(given) >= 2 and HANGUL_RUN.fullmatch(given) and not _word(given) else []

