"""Person names, found by what they are, not only after a trigger phrase.

Latin script (English and other languages written in it): every run of capitalised words is
looked at. A word is a *first* or *last* name when one of Faker's locales lists it, and a *word*
when the English word list has it in lower case; a name that is not also a word ("Carla",
"Nakamura") is strong evidence, one that is ("Will", "Grace", "Brown") needs company: a second
name, a title, or a cue such as "said", "Dear", "customer" or a possessive. Trigger phrases
("my name is", "Regards,") still take any capitalised words, and lower-case names after them.

Chinese: jieba's part-of-speech tagger (rjieba, the Rust port) marks person names (`nr`); a name
is kept when it starts with a surname of the gazetteer, is a transliterated name joined by `·`,
or stands before an honorific (先生, 女士, 小姐, 老师, 总, ...) or after a cue (我叫, 客户, 用户, 由, ...).

Rare capitalised words (in no name list, no word list and not among the frequent tokens of
English) count as names in prose, never in a line of source code. `find_names` appends PERSON
spans; `mentions` and `mention_pattern` find the other mentions of names already found (a
second "Lena" after "my name is Lena Andersson"); `looks_like_name` judges a whole JSON value
under a name-like key (`NAME_KEY`)."""

from __future__ import annotations

import bisect
import re
from itertools import accumulate

from .gazetteer import (
    CN_SURNAMES_1, CN_SURNAMES_2, COMMON_TOKENS, EN_FIRST, EN_NOT_NAMES, ENGLISH_PROPER, ENGLISH_WORDS, NAME_FIRST, NAME_FIRST_LOWER, NAME_LAST,
    CN_SUB_SURNAMES, NAME_LAST_LOWER, NOT_PERSON_WORDS, TITLES, ZH_PLACES, ZH_ZIPF, zh_given_scores,
)
from .spans import PERSON, Span

# ---------------------------------------------------------------- Latin script
_UP = "A-Z\u00c0-\u00d6\u00d8-\u00de\u0100-\u017f"
_LOW = "a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u017f"
_CAP = "[" + _UP + "][" + _LOW + "]+(?:['\\-][" + _UP + "]?[" + _LOW + "]+)?"
# one capitalised word: O'Brien, D'Angelo, McDonald, Marie-Claire, Whitfield-Barnes (never the
# possessive 's, which stays outside)
# (written to start with the capital, so the regex engine can skip to capitals quickly:
# M+c+D = McDonald, M+ac+A = MacArthur, O+'B = O'Brien)
_WORD = "[" + _UP + "](?:c[" + _UP + "]|ac[" + _UP + "]|['\u2019][" + _UP + "])?[" + _LOW + "]+(?:-[" + _UP + "][" + _LOW + "]+)*"
_PARTICLES = "van|von|de|der|den|da|di|du|del|della|la|le|bin|ibn|al|dos|das|ter|ten|y"
_GAP = "[ \u00a0]{1,2}"
_RUN = re.compile(
    # (not inside an identifier, a path, a handle or an attribute access: _latin checks the
    # character before, a lookbehind here would be tried at every position of the text)
    _WORD
    + "(?:" + _GAP + "(?:[" + _UP + r"]\." + _GAP + "|[" + _UP + "]" + _GAP + ")*(?:(?:" + _PARTICLES + ")" + _GAP + ")*" + _WORD + "){0,3}"
    # not glued to a word, a call, a path or an attribute (Foo(), Foo.bar, Foo/bar)
    + r"(?![\w(@/\\]|\.\w|-\w|['\u2019][A-Za-z]{2})"
)
_PIECE = re.compile(r"\S+")
_GLUED_BEFORE = frozenset("_-.@/\\#$%&*+=|~^`")
_STREET_WORDS = frozenset("Dr Rd St Ave Blvd Ln Ct Pl Hwy Pkwy Drive Road Street Avenue Boulevard Lane Court Place Way".split())
_STREET_AFTER = re.compile(r"[ \t]+(?:Dr|Rd|St|Ave|Blvd|Ln|Ct|Pl|Hwy|Pkwy)\b\.?(?![ \t]+[A-Z][a-z])")
_INITIAL = re.compile("[" + _UP + r"]\.?$")
_PARTICLE_SET = frozenset(_PARTICLES.split("|"))
_TITLE_WORDS = frozenset(t.lower() for t in TITLES) | {"mr.", "mrs.", "ms.", "dr.", "prof.", "mx."}

# the word right before a run that makes its names count (lower case)
_STRONG_CUES = frozenset(
    "dear hi hello hey thanks thank said asked told named called customer patient client user employee "
    "colleague manager contact applicant tenant student teacher doctor nurse caller agent passenger guest "
    "member author sender recipient attn cc signed regards sincerely cheers "
    "professor sir madam meet ask call tell tells emailed met by".split()
)
_WEAK_CUES = _STRONG_CUES | frozenset("and with to from for is am was".split())
_PERSON_VERBS = frozenset(
    "is was has had will would can could said says wrote writes began begins told asked and lives lived works "
    "worked went called joined left died born".split()
)
_POST_CUES = frozenset("said says asked wrote replied told called emailed mentioned".split())
_PREV_WORD = re.compile(r"([A-Za-z]+)\.?[ \t]*[:,]?[ \t]*$")
_TITLE_BEFORE = re.compile(r"(?<![A-Za-z])(?:(?:Mr|Mrs|Ms|Miss|Dr|Prof|Mx)\.?|(?i:mr|mrs|ms|dr|prof)\.)[ \t]{1,3}$")
_NEXT_WORD = re.compile(r"[ \t]*,?[ \t]*([a-z]+)")
_SENTENCE_END = frozenset(".!?\n\r\"'\u201c\u201d([{*\u2022>-:\t")

# a memo of word classes: (first name, last name, English word, rare). "rare": none of the
# three and not among the frequent tokens of English text either: most such capitalised words
# are names (Zeliha, Balabanov), and a Kubernetes or an Nginx is frequent.
_CLASS: dict[str, tuple[bool, bool, bool, bool]] = {}


def _classify(w: str) -> tuple[bool, bool, bool, bool]:
    hit = _CLASS.get(w)
    if hit is not None:
        return hit
    lower = w.lower()
    if "-" in w:
        parts = [p for p in w.split("-") if p]
        first = w in NAME_FIRST or all(p in NAME_FIRST for p in parts)
        last = w in NAME_LAST or any(p in NAME_LAST for p in parts) or (
            len(parts) > 1 and not any(p.lower() in ENGLISH_WORDS for p in parts)
        )
        word = all(p.lower() in ENGLISH_WORDS for p in parts)
    else:
        first, last = w in NAME_FIRST, w in NAME_LAST
        word = lower in ENGLISH_WORDS
        if w[:2] in ("O'", "O\u2019", "D'", "D\u2019"):
            last = last or not word
    if w in EN_NOT_NAMES:
        first = last = False
        word = True
    elif w in NOT_PERSON_WORDS:  # Victoria, Jackson, Paris: a name only beside another name
        word = True
    # a proper noun of the English lists (Gregorian, Manhattan) is not rare: it may be a surname
    # too (Whitfield), so it counts beside a first name, but not alone
    rare = (not (first or last or word) and len(w) >= 3 and w not in ENGLISH_PROPER
            and not any(p.lower() in COMMON_TOKENS for p in w.split("-")))
    res = (first, last, word, rare)
    if len(_CLASS) < 200_000:
        _CLASS[w] = res
    return res


# Capitalised English words in no name list, and titles: a run that is one of them alone is
# never a name (a set lookup per match, before any other work)
_PLAIN: frozenset[str] = frozenset(
    c for c in (w[:1].upper() + w[1:] for w in ENGLISH_WORDS) if c not in NAME_FIRST and c not in NAME_LAST
) | EN_NOT_NAMES | frozenset(t for t in TITLES) | frozenset(w for w in NOT_PERSON_WORDS if w not in NAME_FIRST and w not in NAME_LAST)


def _sentence_start(text: str, s: int) -> bool:
    i = s - 1
    while i >= 0 and text[i] in " \u00a0":
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END or text[i] == "\x00"


_PREV_CAP = re.compile(r"[A-Z][\w'\u2019-]*[ \t]+$")


def _capital_mid_sentence(text: str, s: int) -> bool:
    """A capitalised word inside a sentence, not after another capitalised word (a title-cased
    heading such as "The Grace Period Policy" capitalises every word)."""
    return not _sentence_start(text, s) and _PREV_CAP.search(text, max(0, s - 30), s) is None


def _prev_word(text: str, s: int) -> str:
    """The word right before position s, lower case."""
    m = _PREV_WORD.search(text, max(0, s - 24), s)
    return m.group(1).lower() if m else ""


# A line of source code (a statement, a declaration, a comment, markup): there a capitalised
# word is mostly an identifier (class Iterable, cls is Hashable:), so only names of the name
# lists count, never a word merely because it is rare.
_CODE_LINE = re.compile(
    r"^[ \t]*(?:def |class |import |from [\w.]+ import|return\b|raise |assert |if |for |while |elif |else:|try:|except\b|finally:"
    r"|with |async |await |@\w|#|//|/\*|\*|[{}\[\]<]|(?:const|let|var|function|public|private|static|void|int|fn|func|pub|use|package|type|interface) )"
    r"|[;{}\[\](,]\s*$|\S:[ \t]*$|[=!<>]=|=>|->|\w\(|\)\s*[:{]?\s*$|^\s*\w[\w.]*\s*[+\-*/|&]?=\s*\S|[\"'][A-Z]\w*[\"'],|::\w",
    re.M,
)


def _code_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of the lines of text that look like source code. A NUL (between the
    strings of a batch) ends a line too, so each string is judged as if alone."""
    if not ("(" in text or "=" in text or ":" in text or "#" in text or "/" in text or "{" in text or "," in text):
        return []
    out = []
    start = 0
    while start <= len(text):
        end = text.find("\x00", start)
        end = len(text) if end < 0 else end
        seg = text[start:end] if start or end < len(text) else text
        for m in _CODE_LINE.finditer(seg):
            a = seg.rfind("\n", 0, m.start()) + 1
            b = seg.find("\n", m.end())
            out.append((start + a, start + (len(seg) if b < 0 else b)))
        start = end + 1
    out.sort()
    return out


def _in_code(lines: list[tuple[int, int]], s: int) -> bool:
    i = bisect.bisect_right(lines, (s, 1 << 62)) - 1
    return i >= 0 and lines[i][0] <= s < lines[i][1]


def _latin(text: str, out: list[Span]) -> None:
    code: list[tuple[int, int]] | None = None
    plain = _PLAIN
    for m in _RUN.finditer(text):
        g0 = m.group()
        if g0 in plain:  # one plain word, the most common match by far: The, This, Property
            continue
        b = m.start()
        if b and (text[b - 1].isalnum() or text[b - 1] in _GLUED_BEFORE):
            continue
        if code is None:
            code = _code_lines(text)
        pieces = [(p.start(), p.end(), p.group()) for p in _PIECE.finditer(g0)]
        base = m.start()
        words = []  # (start, end, word, first, last, word)
        for a, b, w in pieces:
            if _INITIAL.match(w) or w in _PARTICLE_SET:
                words.append((base + a, base + b, w, None))
            else:
                words.append((base + a, base + b, w, _classify(w)))
        # titles inside the run ("Dr Nakamura", and "Cheriton Dr", where it is no title) and
        # plain words at either end ("Patient Eleanor", "Eleanor Street") are not the name
        title_at = -1
        while words and (words[0][3] is None or words[0][2].lower() in _TITLE_WORDS or _only_word(words[0][3])):
            if words[0][2].lower() in _TITLE_WORDS and len(words) > 1:
                title_at = words[0][0]
            words.pop(0)
        street = False
        while words and (words[-1][3] is None or words[-1][2].lower() in _TITLE_WORDS or _only_word(words[-1][3])):
            street = street or words[-1][2] in _STREET_WORDS
            words.pop()
        if not words or street or _STREET_AFTER.match(text, m.end()):
            continue  # 12 Cheriton Dr, Baker Street: a street, not a person
        # a plain word inside ("Carla And Sandra" in a title-cased line) splits the run
        groups: list[list] = [[]]
        for w in words:
            if w[3] is not None and _only_word(w[3]):
                groups.append([])
            else:
                groups[-1].append(w)
        for g in groups:
            while g and g[-1][3] is None:
                g.pop()
            if g:
                _judge(text, g, title_at if g is groups[0] else -1, out, bool(code) and _in_code(code, g[0][0]))


def _only_word(c: tuple[bool, bool, bool, bool]) -> bool:
    return c[2] and not c[0] and not c[1]


def _judge(text: str, g: list, title_at: int, out: list[Span], code: bool = False) -> None:
    s, e = g[0][0], g[-1][1]
    if code:  # in a line of code only listed names count: no rare words, no capital-in-sentence
        g = [(a, b, w, c if c is None else (c[0], c[1], c[2], False)) for a, b, w, c in g]
        if not any(c is not None and (c[0] or c[1]) for _, _, _, c in g):
            return
    prev = _prev_word(text, title_at if title_at >= 0 else s)
    if title_at < 0:
        t = _TITLE_BEFORE.search(text, max(0, s - 10), s)
        if t:  # "Dr. Nakamura": the span starts at the title
            title_at = t.start()
    named = [w for w in g if w[3] is not None]
    # strong: a known name that is no English word, or a rare capitalised word
    strong = [w for w in named if ((w[3][0] or w[3][1]) and not w[3][2]) or w[3][3]]
    first, last = named[0][3], named[-1][3]
    if title_at >= 0:
        ok = True
    elif len(named) >= 2:
        unknown_last = not (last[0] or last[1] or last[2])
        unknown_first = not (first[0] or first[1] or first[2])
        ok = (bool(strong) or (first[0] and (last[1] or unknown_last)) or (unknown_first and last[1])
              or all(not (w[3][0] or w[3][1] or w[3][2]) for w in named))  # Kimiko Hoshino: no words
        if not ok and (first[0] or first[1]) and prev in _WEAK_CUES:
            ok = True
    else:
        c = first
        nxt = _NEXT_WORD.match(text, e)
        post = text.startswith(("'s", "\u2019s"), e) or (nxt is not None and nxt.group(1) in _POST_CUES)
        if (c[0] or c[1]) and not c[2]:  # a name that is no word: Carla, Eleanor, Nakamura
            ok = True
        elif c[0] or c[1]:  # Will, Grace, Brown: a word too; a name where a word has no capital
            ok = prev in _STRONG_CUES or post or (not code and _capital_mid_sentence(text, s) and text[s:e] not in NOT_PERSON_WORDS)
        else:  # unknown capitalised word: a rare one, or where the context says it is a name
            ok = prev in ("dear", "hi", "hello", "hey", "customer", "patient", "named", "called")
            if c[3] and not ok:
                # at a sentence start a rare word may be any foreign word ("Svar till ..."):
                # there a name is followed by a comma, a possessive or a verb of the person
                ok = not _sentence_start(text, s) or post or text.startswith((",", ":"), e) or (
                    nxt is not None and nxt.group(1) in _PERSON_VERBS)
    if ok:
        out.append(Span(title_at if title_at >= 0 else s, e, PERSON))


# ---------------------------------------------------------------- trigger phrases
_NAME_WORDS = r"(?P<name>" + _CAP + r"(?:[ \t]" + _CAP + r"){0,2})"
_LOWER_NAME = r"(?P<lname>[a-z]+(?:[ \t][a-z]+)?)"
# trigger (found lower-cased) -> (pattern matched at the trigger, strong?)
# strong triggers accept any capitalised word (and lower-case known names); weak ones only a
# known first name.
_EN_TRIGGERS: dict[str, tuple[re.Pattern, bool]] = {
    "my name": (re.compile(r"(?i:my name)(?: is|'s|:)?[ \t]{1,4}(?:" + _NAME_WORDS + "|" + _LOWER_NAME + ")"), True),
    "name is": (re.compile(r"(?i:name is)[ \t]{1,4}(?:" + _NAME_WORDS + "|" + _LOWER_NAME + ")"), True),
    "name:": (re.compile(r"(?i:name:)[ \t]{0,4}" + _NAME_WORDS), True),
    "call me": (re.compile(r"(?i:call me)[ \t]{1,4}(?:" + _NAME_WORDS + "|" + _LOWER_NAME + ")"), True),
    "regards,": (re.compile(r"(?i:regards),[ \t\r\n]{1,4}" + _NAME_WORDS), True),
    "sincerely,": (re.compile(r"(?i:sincerely),[ \t\r\n]{1,4}" + _NAME_WORDS), True),
    "dear ": (re.compile(r"(?i:dear)[ \t]{1,4}(?P<title>(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?[ \t]{1,4})?" + _NAME_WORDS), True),
    "i am ": (re.compile(r"I am[ \t]{1,4}" + _NAME_WORDS), False),
    "i'm ": (re.compile(r"I'm[ \t]{1,4}" + _NAME_WORDS), False),
    "i\u2019m ": (re.compile(r"I\u2019m[ \t]{1,4}" + _NAME_WORDS), False),
    "this is ": (re.compile(r"(?i:this is)[ \t]{1,4}" + _NAME_WORDS), False),
}
_EN_TITLE = re.compile(r"(?P<title>(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?[ \t]{1,4})(?P<name>" + _CAP + r"(?:[ \t]" + _CAP + r")?)")
_TITLE_FIND = ("Mr", "Ms", "Dr", "Miss", "Prof")


def _add_trigger_name(text: str, m: re.Match, strong: bool, out: list[Span]) -> None:
    if m.groupdict().get("lname"):  # my name is lena andersson: known names only
        words = m.group("lname").split()
        keep = []
        for w in words:
            if w in NAME_FIRST_LOWER or w in NAME_LAST_LOWER:
                keep.append(w)
            else:
                break
        if keep:
            s = m.start("lname")
            out.append(Span(s, text.find(keep[-1], s) + len(keep[-1]), PERSON))
        return
    words = m.group("name").split()
    start = m.start("name")
    # after a title the span starts at the title ("Mr. Brown"): the substitute keeps the title
    # and draws the name from surnames
    title_start = m.start("title") if "title" in m.re.groupindex and m.group("title") else -1
    if not strong and words[0] not in EN_FIRST and words[0] not in NAME_FIRST:
        return
    if words[0] in EN_NOT_NAMES:
        return
    keep = [words[0]]
    for w in words[1:]:
        if w in EN_NOT_NAMES:
            break
        keep.append(w)
    end = text.find(keep[-1], start) + len(keep[-1])
    out.append(Span(title_start if title_start >= 0 else start, end, PERSON))


def _triggers(text: str, lo: str, out: list[Span]) -> None:
    has_name, has_i = "name" in lo, "I" in text
    for trig, (pat, strong) in _EN_TRIGGERS.items():
        if ("name" in trig and not has_name) or (trig[0] == "i" and not has_i):
            continue
        p = lo.find(trig)
        while p != -1:
            if p == 0 or not (text[p - 1].isalnum() or text[p - 1] == "_"):  # full_file_name is None: no
                m = pat.match(text, p)
                if m:
                    _add_trigger_name(text, m, strong, out)
            p = lo.find(trig, p + 1)
    for trig in _TITLE_FIND:
        p = text.find(trig)
        while p != -1:
            if p == 0 or not text[p - 1].isalpha():
                m = _EN_TITLE.match(text, p)
                if m:
                    _add_trigger_name(text, m, True, out)
            p = text.find(trig, p + 1)


# ---------------------------------------------------------------- Chinese
_CN_STOP = frozenset(
    "的是在今年了和与跟说也都就很我你他她它们来去要想从住家有没不昨这那个吗呢吧啊呀哦嗯，。！？、；："
    "先女经医教同律总请"
)
_CN_TRIGGERS = ("记者", "我叫", "我是", "我的名字是", "我的名字叫", "名字叫", "名字是", "叫我", "本人", "姓名", "联系人", "收件人", "收货人",
                "患者", "客户", "用户", "他叫", "她叫", "名叫", "署名", "持卡人", "户名", "由", "经办人", "负责人", "申请人")
_CN_HONORIFICS = ("先生", "女士", "小姐", "老师", "经理", "医生", "教授", "同学", "律师", "总监", "总", "主任", "院长", "校长",
                  "局长", "处长", "部长", "书记", "董事长", "总裁", "阿姨", "叔叔", "师傅", "同志", "博士", "护士")
_CN_TRIGGER_GAP = frozenset(" \t\u3000:：")
_CN_NAME_CUES = re.compile("|".join(sorted(_CN_TRIGGERS + _CN_HONORIFICS, key=len, reverse=True)))
_CN_TRIGGER_SET = frozenset(_CN_TRIGGERS)
# words jieba tags as names that are not (honorifics, kinship terms)
_CN_NOT_NAMES = frozenset(_CN_HONORIFICS) | frozenset(
    "谢谢 小姐姐 小哥 老板 老公 老婆 阿姨 大爷 大妈 宝宝 亲 亲爱的 同学们 朋友们 小时 小心 小说 小学 小组 小区".split()
)
# a run of Chinese text (punctuation and full-width forms inside it), tagged in one call
_CJK_RUN = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\u00b7\u2022\u30fb][\u4e00-\u9fff\u3400-\u4dbf\u00b7\u2022\u30fb\u3000-\u303f\uff01-\uff5e]+")
_NR = frozenset(("nr", "nrfg", "nrt"))
_DOTS = frozenset("\u00b7\u2022\u30fb")


def _is_cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def _surname_len(w: str) -> int:
    if w[:2] in CN_SURNAMES_2:
        return 2
    return 1 if w[:1] in CN_SURNAMES_1 else 0


def _cn_name_at(text: str, i: int) -> int:
    """End of a Chinese name starting at i (surname from the gazetteer + 1-2 given characters), or -1."""
    n = len(text)
    k = _surname_len(text[i : i + 2])
    if not k:
        return -1
    j = i + k
    e = j
    while e < n and e - j < 2 and _is_cjk(text[e]) and text[e] not in _CN_STOP:
        e += 1
    return e if e > j else -1


_tagger = None


def _tag(segment: str) -> list[tuple[str, str]]:
    global _tagger
    if _tagger is None:
        import rjieba

        _tagger = rjieba.tag
    return _tagger(segment)


class _Tokens:
    """jieba's tokens of a text's Chinese runs: parallel lists of start and end positions (in the
    text), words and tags, sorted by position."""

    __slots__ = ("start", "end", "word", "tag")

    def __init__(self, text: str) -> None:
        self.start: list[int] = []
        self.end: list[int] = []
        self.word: list[str] = []
        self.tag: list[str] = []
        runs = [(m.start(), m.end()) for m in _CJK_RUN.finditer(text)]
        if not runs:
            return
        # every run tagged in one call, the runs joined by line breaks (jieba never joins words
        # across one); the separators' tokens are dropped and positions mapped back run by run
        tagged = _tag("\n".join(text[a:b] for a, b in runs))
        words = [w for w, _ in tagged]
        offs = list(accumulate(map(len, words), initial=0))
        if len(runs) == 1:
            shift = runs[0][0]
            self.start = [o + shift for o in offs[:-1]]
            self.end = [o + shift for o in offs[1:]]
            self.word = words
            self.tag = [t for _, t in tagged]
            return
        joined = list(accumulate((b - a + 1 for a, b in runs), initial=0))  # each run's start when joined
        shifts = [a - j for (a, _), j in zip(runs, joined)]
        keep = [k for k, w in enumerate(words) if w != "\n"]
        run_of = [bisect.bisect_right(joined, offs[k]) - 1 for k in keep]
        self.start = [offs[k] + shifts[r] for k, r in zip(keep, run_of)]
        self.end = [offs[k + 1] + shifts[r] for k, r in zip(keep, run_of)]
        self.word = [words[k] for k in keep]
        self.tag = [tagged[k][1] for k in keep]

    def at_or_before(self, pos: int) -> int:
        return max(bisect.bisect_right(self.start, pos) - 1, 0)


def _chinese(text: str, out: list[Span]) -> None:
    toks = _Tokens(text)
    if not toks.word:
        return
    nr = [i for i, t in enumerate(toks.tag) if t in _NR]
    n0 = len(out)
    if nr:
        _tagged(text, toks, nr, out)
    _surname_led(text, toks, out)
    _titled(text, toks, out)
    if _CN_NAME_CUES.search(text) is not None:
        _cn_cues(text, toks, out)
    if len(out) > n0:
        out[n0:] = [sp for sp in out[n0:] if not _place_or_body(text, toks, sp)]
    if len(out) > n0 or nr:
        _listed_beside(toks, out, n0)


# negative evidence: what ends the names of organisations (党支部, 劳动部, 居委会, 国大党) and
# the words that follow a place or a body, never a person (南昆/铁路, 罗布泊/地区, X/公司)
_CN_ORG_ENDS = frozenset("部委会局厅署办院党联社所司处")
_CN_PLACE_NEXT = frozenset(
    "铁路 公路 地区 地带 一带 境内 流域 公司 集团 企业 工厂 冲突 县 市 省 区 镇 乡 村 路 街 山 江 河 湖 岛 港 "
    "大学 学院 中学 小学 医院 宾馆 饭店 酒店 银行 机场 车站 大桥 大街 广场 景区 牌 商标 品牌".split()
)


def _place_or_body(text: str, toks: _Tokens, sp: Span) -> bool:
    """A Chinese name candidate that is the name of a place or an organisation by what ends it
    or what follows it."""
    if sp.kind != PERSON or sp.end - sp.start < 2 or not _is_cjk(text[sp.start]):
        return False
    if text[sp.end - 1] in _CN_ORG_ENDS:
        return True
    k = bisect.bisect_left(toks.start, sp.end)
    return k < len(toks.start) and toks.start[k] == sp.end and toks.word[k] in _CN_PLACE_NEXT


_CN_LIST_JOINS = frozenset("、 和 与 及 同 跟".split())


def _listed_beside(toks: _Tokens, out: list[Span], n0: int) -> None:
    """Names listed with a name found (毛泽东、周恩来、刘少奇; 江泽民和李鹏): a whole word beside
    it, across 、 or 和, that could be a name (a surname and plausible given characters, or a
    transliteration) is one too, and so on along the list."""
    word, tag, start, end_ = toks.word, toks.tag, toks.start, toks.end
    n = len(word)
    is_name: set[int] = set()
    for sp in out:
        if sp.kind == PERSON:
            i = bisect.bisect_left(start, sp.start)
            if i < n and start[i] == sp.start and end_[i] == sp.end:
                is_name.add(i)
    todo = list(is_name)
    while todo:
        i = todo.pop()
        for j, joint in ((i + 2, i + 1), (i - 2, i - 1)):
            if 0 <= j < n and j not in is_name and word[joint] in _CN_LIST_JOINS and _could_be_name(toks, j):
                is_name.add(j)
                out.append(Span(start[j], end_[j], PERSON))
                todo.append(j)


def _could_be_name(toks: _Tokens, i: int) -> bool:
    w, t = toks.word[i], toks.tag[i]
    if not 2 <= len(w) <= 6 or w in ZH_PLACES or w in _CN_NOT_NAMES or t in _CN_NOT_NAME_TAGS or t in _CN_FUNCTION_TAGS:
        return False
    k = _surname_len(w)
    if k and len(w) - k <= 2 and all(_is_cjk(c) for c in w):
        score = _given_score(w[k:])
        return _given_plausible(w[k:]) and score >= 0.0 and (len(w) > 2 or not _zh_common(w))
    return all(c in _CN_TRANSLIT for c in w) and not _zh_common(w)


def _fits_words(toks: _Tokens, s: int, e: int) -> bool:
    """A name candidate [s, e) found by a cue agrees with the segmentation: no word of two or
    more characters crosses its edges (客户信用卡: 信用卡 is a word, 信用 no name), and it is not
    itself a frequent word."""
    if _zh_common(text_of(toks, s, e)):
        return False
    i = toks.at_or_before(s)
    n = len(toks.word)
    while i < n and toks.start[i] < e:
        a, b, w, t = toks.start[i], toks.end[i], toks.word[i], toks.tag[i]
        if b > s and t not in _NR and len(w) >= 2 and (a < s or b > e) and _surname_len(w) != len(w):
            return False
        i += 1
    return True


# what stands beside a name in news and chat: titles before or after it, speech verbs after it
_CN_TITLES = frozenset(
    "记者 总统 主席 总理 首相 部长 外长 大使 国王 女王 王子 议长 秘书长 总书记 委员长 省长 市长 县长 书记 局长 处长 "
    "主任 院长 校长 会长 团长 队长 厂长 经理 总经理 董事长 总裁 先生 女士 小姐 教授 博士 医生 律师 老师 同志 代表 "
    "委员 司令 将军 教练 选手 演员 导演 作家 诗人 画家 歌手 特使 发言人 总监 副总统 副主席 副总理 副部长".split()
)
_CN_PLACE_ENDS = frozenset("口庄县市省村镇区路街港湾乡屯寨堡")
_CN_SPEECH = frozenset("说 表示 指出 认为 强调 宣布 称 介绍 透露 回忆 说道 写道 告诉 会见 会晤 访问 出席 致电 致信".split())


def _zh_common(word: str) -> bool:
    """A frequent word: zipf >= 3.5 for two characters, >= 4 for longer ones."""
    z = ZH_ZIPF.get(word)
    return z is not None and z >= (3.5 if len(word) == 2 else 4.0)


def _context(toks: _Tokens, i: int, j: int) -> bool:
    """A title right before tokens i..j, or a title or speech verb right after them."""
    before = toks.word[i - 1] if i > 0 else ""
    after = toks.word[j + 1] if j + 1 < len(toks.word) else ""
    return (before in _CN_TITLES or (len(before) >= 2 and before.endswith(_CN_ROLE_ENDS)) or after in _CN_TITLES
            or after in _CN_SPEECH)


# last characters of words naming a person's role (部长, 记者, 协调员, 投资家, 选手, 领导人)
_CN_ROLE_ENDS = ("长", "记者", "员", "家", "手", "人")


def _tagged(text: str, toks: _Tokens, nr: list[int], out: list[Span]) -> None:
    """The name tokens (indices `nr`), each with the surname token before it when jieba split
    the name (江/泽民, 欧阳/娜娜) and the parts joined by a middle dot (阿卜杜拉·买买提)."""
    word, tag, start, end_ = toks.word, toks.tag, toks.start, toks.end
    n = len(word)
    done = -1
    for i in nr:
        if i <= done:
            continue
        if (i > 0 and i - 1 > done and _surname_len(word[i - 1]) == len(word[i - 1]) and len(word[i]) <= 2
                and start[i] == end_[i - 1] and tag[i - 1] not in _CN_FUNCTION_TAGS):
            i -= 1  # the surname token before a given name
        j = i
        w, t = word[i], tag[i]
        if _surname_len(w) == len(w) and j + 1 < n and tag[j + 1] in _NR and len(word[j + 1]) <= 2:
            j += 1
        while j + 2 < n and word[j + 1] in _DOTS and len(word[j + 2]) <= 4:
            j += 2  # 阿卜杜拉·买买提: whatever follows the dot belongs to the name
        done = j
        s, end = start[i], end_[j]
        if any(end_[k] != start[k + 1] for k in range(i, j)):
            continue  # not one stretch of text
        name = text[s:end]
        titled = False
        while len(name) > 1:  # 王芳小姐, 孙先生, 周总理 tagged as one name: the title is no name
            cut = next((c for c in (3, 2, 1) if len(name) > c and (name[-c:] in _CN_NOT_NAMES or name[-c:] in _CN_TITLES)), 0)
            if not cut:
                break
            name, end, titled = name[:-cut], end - cut, True
        k = _surname_len(name)
        if titled and len(name) == k:
            ok = True  # a surname alone before a title: 孙先生, 韩女士
        elif len(name) == 2 and name[1] == "某" and k == 1:
            ok = True  # 李某: a person whose name the writer withholds, still a person
        elif len(name) < 2 or name in _CN_NOT_NAMES or name in ZH_PLACES:
            ok = False
        elif (i + 1 < n and word[i + 1] in _DOTS) or any(c in _DOTS for c in name):
            ok = True
        elif k and len(name) - k <= 2 and t != "nrt" and name[-1] not in _CN_PLACE_ENDS:
            # a surname and one or two given characters (王芳, 欧阳娜娜, 江泽民); one that is
            # also a frequent word (文明, 祝贺, 莫斯科) needs context
            # (a famous name is a frequent word too: one whose given characters stand in
            # names far more often than in text, 李鹏, 孙中山, needs no context)
            ok = (_given_plausible(name[k:]) and (not _zh_common(name) or _given_score(name[k:]) >= _CN_FAMOUS_TAGGED)) or _context(toks, i, j)
        else:  # a transliteration (克林顿, 恩佐) or a longer run: only where the context says so
            ok = len(name) <= 6 and _context(toks, i, j)
        if ok:
            out.append(Span(s, end, PERSON))


# conjunctions, prepositions, adverbs, pronouns, particles: 和 of 和小王 is no surname
_CN_FUNCTION_TAGS = frozenset("c p d r u uj ul uz ug ud".split())
# tags of words that are no name (places, organisations, numbers, adjectives, verbs, adverbs)
_CN_NOT_NAME_TAGS = frozenset("ns nt nz m q a ad an v vn d f s".split())
_CN_GIVEN_MIN = 2.0  # summed zh_given_scores() of the given characters a name needs without context
_CN_FAMOUS = 3.0  # ...and one that is also a frequent word (周恩来, 江泽民)
_CN_FAMOUS_TAGGED = 5.0  # summed score a name jieba tags needs when it is also a frequent word (李鹏)
_CN_TAGGED_MIN = -4.0  # no given character of a name jieba tags may score below this (部 -4.4)
# characters of transliterated names (克林顿, 内塔尼亚胡); one made only of these that jieba tags
# a name, and that is no frequent word or known place, is taken for a person
_CN_TRANSLIT = frozenset(
    "阿埃艾安奥巴拜班邦保贝本比彼宾波伯博布查达戴丹道德迪蒂丁东杜多厄恩法菲费芬丰弗福盖甘戈格古哈海汉豪赫亨胡霍基吉加"
    "贾杰金卡凯坎康科克肯库拉莱赖兰朗劳勒雷里利连琳卢鲁伦罗洛马迈麦曼梅门蒙米密莫默穆纳内尼努诺帕派潘佩彭皮珀普齐奇恰乔"
    "切钦丘萨塞桑瑟森沙尚舍什施斯松苏索塔泰坦汤唐特滕提图托瓦威维韦温沃乌伍西希谢辛休雅亚扬耶伊尤约泽扎詹兹佐尔夫"
)
_CN_TRANSLIT_PLACE_ENDS = frozenset("斯尔特达拉亚加")  # 巴格达, 赫尔辛基 aside: 达/斯/... end many places


def _given_score(given: str) -> float:
    scores = zh_given_scores()
    return sum(scores.get(c, -5.0) for c in given)


def _given_plausible(given: str) -> bool:
    """Could these characters after a surname be a given name? Not where one of them ends words
    far more often than it stands in names (宣/传部, 党/支部)."""
    scores = zh_given_scores()
    return min((scores.get(c, -5.0) for c in given), default=0.0) >= _CN_TAGGED_MIN


_CN_LEAD = frozenset(CN_SUB_SURNAMES) | frozenset(s[0] for s in CN_SURNAMES_2) | frozenset("老小")


def _surname_led(text: str, toks: _Tokens, out: list[Span]) -> None:
    """Names found by what they are, without a tag or cue: a surname and one or two given
    characters that stand in given names far more often than in text (鹏, 泽民; not 部, 水平),
    covering whole jieba words; 老张/小王/侯老; and transliterations jieba tags as names."""
    word, tag, start = toks.word, toks.tag, toks.start
    ends: dict[int, int] | None = None
    for i, w in enumerate(word):
        if w[0] not in _CN_LEAD and tag[i] not in _NR:
            continue  # most tokens: no surname, 老 or 小 starts them and jieba sees no name
        if ends is None:
            ends = {e: j for j, e in enumerate(toks.end)}
        p = start[i]
        for k in (2, 1):
            if (k == 2 and text[p : p + 2] not in CN_SURNAMES_2) or (k == 1 and text[p] not in CN_SUB_SURNAMES):
                continue
            for g in (2, 1):
                e = p + k + g
                j = ends.get(e)
                if j is None:
                    continue
                given = text[p + k : e]
                if not all(_is_cjk(c) and c not in _CN_STOP for c in given):
                    continue
                name = text[p:e]
                if any(tag[x] in _CN_NOT_NAME_TAGS for x in range(i, j + 1)) or (g == 2 and given in ZH_ZIPF):
                    continue
                if name in ZH_PLACES or name in _CN_NOT_NAMES or name[-1] in _CN_PLACE_ENDS:
                    continue
                score = _given_score(given)
                z = ZH_ZIPF.get(name, 0.0)
                if len(name) == 2 and z:
                    continue  # 智慧, 高峰: words first (a name among them needs a cue)
                if score >= _CN_GIVEN_MIN and (z < 4.0 or score >= _CN_FAMOUS):
                    out.append(Span(p, e, PERSON))
                    break
            else:
                continue
            break
        if len(w) == 2 and w not in ZH_ZIPF and ((w[0] in "老小" and w[1] in CN_SUB_SURNAMES) or (w[1] == "老" and w[0] in CN_SUB_SURNAMES)):
            out.append(Span(p, p + 2, PERSON))
        elif (3 <= len(w) <= 6 and tag[i] in _NR and w not in ZH_ZIPF and w not in ZH_PLACES
              and w[-1] not in _CN_TRANSLIT_PLACE_ENDS and all(c in _CN_TRANSLIT for c in w)):
            out.append(Span(p, p + len(w), PERSON))


# titles jieba glues to a surname into one word (江主席, 王老师); not 代表 or 委员 (党代表)
_CN_GLUED_TITLES = frozenset(_CN_HONORIFICS) | frozenset("主席 总理 总统 首相 部长 市长 省长 县长 大使 司令 将军 教练".split())
_CN_GLUED_WORDS = frozenset(f + t for f in CN_SURNAMES_1 | CN_SURNAMES_2 for t in _CN_GLUED_TITLES)  # 江主席, 王老师
_CN_BESIDE = _CN_TITLES | frozenset(_CN_HONORIFICS) | _CN_SPEECH  # the words _context looks for


def _titled(text: str, toks: _Tokens, out: list[Span]) -> None:
    """What stands beside a title: a surname on its own (李/团长, 王/局长: a person named by the
    surname and the title) and a transliterated name jieba does not tag as one (外长/利维,
    秘书长/安南, 恩佐/说), a whole word made only of transliteration characters. Only the words
    next to a title, role word or speech verb are looked at."""
    word = toks.word
    n = len(word)
    beside, role, glued = _CN_BESIDE, _CN_ROLE_LAST, _CN_GLUED_WORDS
    hits = [i for i, w in enumerate(word) if w in beside or w[-1] in role or w in glued]
    if not hits:
        return
    cands: set[int] = set()
    for i in hits:
        w = word[i]
        if w in glued:
            cands.add(i)
        elif w in beside or len(w) >= 2:
            if i:
                cands.add(i - 1)
            if i + 1 < n and w not in _CN_SPEECH:
                cands.add(i + 1)
    for i in sorted(cands):
        _titled_at(toks, i, out)


_CN_ROLE_LAST = frozenset("长员家手人")


def _titled_at(toks: _Tokens, i: int, out: list[Span]) -> None:
    word, tag, start, end_ = toks.word, toks.tag, toks.start, toks.end
    w = word[i]
    nxt = word[i + 1] if i + 1 < len(word) and start[i + 1] == end_[i] else ""
    k = _surname_len(w)
    if k == len(w) and k <= 2:
        # (何/r 教授: a common surname jieba reads as a pronoun is still one before a title)
        if nxt and (nxt in _CN_TITLES or nxt in _CN_HONORIFICS) and (tag[i] not in _CN_FUNCTION_TAGS or w in _CN_LEAD) and tag[i] not in _CN_NOT_NAME_TAGS:
            if i == 0 or end_[i - 1] != start[i] or not ((_is_cjk(word[i - 1][-1]) and len(word[i - 1]) == 1) or tag[i - 1] == "m"):
                out.append(Span(start[i], end_[i], PERSON))
    elif k and w[k:] in _CN_GLUED_TITLES and tag[i] not in _NR:
        out.append(Span(start[i], start[i] + k, PERSON))  # 江主席 as one word
    elif (k and 1 <= len(w) - k <= 2 and tag[i] not in _CN_FUNCTION_TAGS and tag[i] not in ("v", "d", "a", "m", "q", "f")
          and all(_is_cjk(c) and c not in _CN_STOP for c in w) and w not in ZH_PLACES and not _zh_common(w)
          and _given_plausible(w[k:]) and _context(toks, i, i)):
        out.append(Span(start[i], end_[i], PERSON))  # 委员/罗干: a surname and given characters beside a title
    elif (2 <= len(w) <= 6 and tag[i] not in _CN_FUNCTION_TAGS and tag[i] not in ("v", "d", "a", "m", "q", "f")
          and all(c in _CN_TRANSLIT for c in w) and w not in ZH_PLACES and not _zh_common(w) and _context(toks, i, i)):
        out.append(Span(start[i], end_[i], PERSON))


def text_of(toks: _Tokens, s: int, e: int) -> str:
    """The text of [s, e) rebuilt from the tokens that cover it."""
    i = toks.at_or_before(s)
    parts = []
    while i < len(toks.word) and toks.start[i] < e:
        a, b, w = toks.start[i], toks.end[i], toks.word[i]
        parts.append(w[max(0, s - a) : len(w) - max(0, b - e)])
        i += 1
    return "".join(parts)


def _starts_token(toks: _Tokens, i: int, word: str) -> bool:
    """A token starts at i and is `word` (or begins with it: 老师们)."""
    k = bisect.bisect_left(toks.start, i)
    return k < len(toks.start) and toks.start[k] == i and toks.word[k].startswith(word)


def _cn_cues(text: str, toks: _Tokens, out: list[Span]) -> None:
    for m in _CN_NAME_CUES.finditer(text):
        if m.group() in _CN_TRIGGER_SET:  # 我叫/姓名/联系人...: the name follows
            i = m.end()
            gap = 0
            while gap < 2 and i < len(text) and text[i] in _CN_TRIGGER_GAP:
                i += 1
                gap += 1
            e = _cn_name_at(text, i)
            if e > 0 and _fits_words(toks, i, e):
                out.append(Span(i, e, PERSON))
        else:  # 先生/女士/老师...: the name precedes (a surname and one or two given characters)
            i = m.start()
            if not _starts_token(toks, i, m.group()):
                continue  # 总 of 国务院副总理 is no honorific
            for ln in (3, 2, 4):
                st = i - ln
                if st < 0:
                    continue
                k = _surname_len(text[st : st + 2])
                if k and k < ln and ln - k <= 2 and all(_is_cjk(c) and c not in _CN_STOP for c in text[st + k : i]) and _fits_words(toks, st, i):
                    out.append(Span(st, i, PERSON))
                    break


# ---------------------------------------------------------------- all together
_CAPITAL = re.compile("[" + _UP + "]")


def find_names(text: str, lo: str, ascii_text: bool, letters: bool, out: list[Span]) -> None:
    """Every person name in `text` (`lo`: its lower-cased copy, same length)."""
    if letters:
        _triggers(text, lo, out)
        if _CAPITAL.search(text):
            _latin(text, out)
    if not ascii_text:
        _chinese(text, out)


def name_words(name: str) -> list[str]:
    """The words of a detected name that identify the person on their own (no titles, no
    initials): "Dr. Eleanor R. Whitfield-Barnes" -> Eleanor, Whitfield-Barnes."""
    if any(_is_cjk(c) for c in name):
        return [name] if len(name) >= 2 else []
    out = []
    for w in name.replace("\u00a0", " ").split():
        w = w.rstrip(".,")
        if len(w) >= 2 and w.lower() not in _TITLE_WORDS and w not in _PARTICLE_SET:
            out.append(w)
    return out


_PATTERNS: dict[tuple[frozenset[str], bool], re.Pattern] = {}


_NEVER = re.compile(r"(?!)")


def _listed(word: str) -> bool:
    cap = word[:1].upper() + word[1:].lower() if word.islower() else word
    return cap in NAME_FIRST or cap in NAME_LAST or word.lower() in NAME_FIRST_LOWER or word.lower() in NAME_LAST_LOWER


def mention_pattern(words: frozenset[str], json_text: bool = False) -> re.Pattern:
    """The pattern of every whole-word mention of the given name words. A word that is also an
    English word ("Will") is matched with its capital only, the others in any case. With
    json_text, for the encoded text of a JSON body: a mention right after an escape (\\n, \\")
    or right before one counts as it does in the decoded string."""
    pat = _PATTERNS.get((words, json_text))
    if pat is not None:
        return pat
    alts = []
    cjk = sorted((w for w in words if _is_cjk(w[0])), key=len, reverse=True)
    latin = sorted((w for w in words if not _is_cjk(w[0])), key=len, reverse=True)
    # any case for a listed name that is no English word (lena for Lena), with its capital for
    # one that is (Will); a word in no name list, taken for a name because it is rare, is not
    # looked for elsewhere (it may be an identifier: class Iterable)
    folded = [re.escape(w) for w in latin if _listed(w) and w.lower() not in ENGLISH_WORDS]
    plain = [re.escape(w) for w in latin if _listed(w) and w.lower() in ENGLISH_WORDS]
    if not (folded or plain or cjk):
        return _NEVER
    # the edges of a word in prose, as _RUN has them: not an attribute (obj.Emin), a call, a path
    before, after = r"(?<![\w\-.@/\\#$%&*+=|~^`])", r"(?![\w\-(@/\\]|\.\w)"
    if json_text:
        # decoded, a newline, tab or quote stands there (an escaped backslash does not)
        before = r"(?:(?<=(?<!\\)\\[nrtbf])|(?<=(?<!\\)\\u[0-9a-fA-F]{4})|" + before + ")"
        after = r"(?![\w\-(@/]|\.\w|\\\\)"
    if folded:
        alts.append(before + "(?i:" + "|".join(folded) + ")" + after)
    if plain:
        alts.append(before + "(?:" + "|".join(plain) + ")" + after)
    if cjk:
        alts.append("|".join(re.escape(w) for w in cjk))
    pat = re.compile("|".join(alts))
    if len(_PATTERNS) >= 4096:
        _PATTERNS.clear()
    _PATTERNS[(words, json_text)] = pat
    return pat


def mentions(text: str, words: set[str], out: list[Span]) -> None:
    """Every whole-word mention in `text` of the given name words (found elsewhere in it)."""
    if not words:
        return
    if all(_is_cjk(w[0]) for w in words):  # Chinese names only: str.find, no regex to compile
        for w in words:
            p = text.find(w)
            while p >= 0:
                out.append(Span(p, p + len(w), PERSON))
                p = text.find(w, p + len(w))
        return  # (overlaps, as 王芳 in 王芳芳, are resolved by the caller: earliest, longest first)
    out.extend(Span(m.start(), m.end(), PERSON) for m in mention_pattern(frozenset(words)).finditer(text))


# ---------------------------------------------------------------- JSON values under name keys
# {"name": "Marie-Claire Dupont"}, {"customer": "Henrik Nakamura"}, {"patient_name": "赵悦"}
NAME_KEY = re.compile(
    r"(?i)^(?:(?:customer|patient|client|user|contact|account|card|holder|passenger|guest|employee|author|sender"
    r"|recipient|owner|assignee|reviewer|manager|beneficiary|spouse|signer|person|student|teacher|doctor|caller)[-_ ]?)?"
    r"(?:(?:full|first|last|middle|given|family|display|legal|real|nick|sur)[-_ ]?)?name$"
    r"|^(?:customer|patient|contact|author|sender|recipient|owner|assignee|reviewer|employee|passenger|guest"
    r"|cardholder|card_holder|account_holder|beneficiary|spouse|person|attendee|signatory)$"
    r"|^(?:姓名|名字|联系人|客户|收件人|收货人|患者|用户姓名|持卡人)$"
)
_NAME_VALUE = re.compile(r"[A-Za-z\u00c0-\u024f'\u2019.\-]+(?: [A-Za-z\u00c0-\u024f'\u2019.\-]+){0,3}")


def looks_like_name(value: str) -> bool:
    """Could this whole value, found under a name-like key, be a person's name? Yes for
    "Marie-Claire Dupont", "Bob", "lena andersson", "赵悦"; no for "get_weather", "search",
    "Acme Corp", "gpt-4o" (tool names, words, products)."""
    v = value.strip()
    if not v or len(v) > 64:
        return False
    if any(_is_cjk(c) for c in v):
        return 2 <= len(v) <= 12 and all(_is_cjk(c) or c in _DOTS for c in v) and (bool(_surname_len(v)) or any(c in _DOTS for c in v))
    if not _NAME_VALUE.fullmatch(v):
        return False
    named = False
    for w in v.split():
        w = w.strip(".")
        if not w:
            continue
        if _INITIAL.match(w) or w in _PARTICLE_SET:
            continue
        cap = w[:1].upper() + w[1:].lower() if w.islower() or w.isupper() else w
        first, last, word, _ = _classify(cap)
        if word and not first and not last:
            return False
        named = named or first or last or not w.islower()
    return named
