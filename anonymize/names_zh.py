"""Chinese person names.

jieba's part-of-speech tagger (rjieba, the Rust port) marks person names (`nr`); a name is kept
when it starts with a surname of the gazetteer, is a transliterated name joined by `·`, or stands
before an honorific (先生, 女士, 小姐, 老师, 总, ...) or after a cue (我叫, 客户, 用户, 由, ...). Names
are also found without a tag: a surname followed by characters that stand in given names far more
often than in text, a surname alone before a title (孙先生), names listed beside a name found
(、/和/与) or glued to it (张德江华国锋全树仁), the given name or surname alone of a name found
(周恩来 ... 恩来). Names of places and organisations (what ends them, what follows them at any
mention, a gazetteer of places) are dropped, and so is a name that begins the name of a
doctrine (邓小平理论, 马克思主义).
`find_chinese_names` appends PERSON spans."""

from __future__ import annotations

import bisect
import re
from itertools import accumulate, compress
from operator import itemgetter

import numpy as np

from .charclass import is_cjk
from .gazetteer import CN_SUB_SURNAMES, CN_SURNAMES_1, CN_SURNAMES_2, ZH_PLACES, ZH_ZIPF, zh_given_scores, zh_surname_scores
from .names_zh_model import Tagged, kernels, tag_text
from .spans import PERSON, Span
from .zh_script import simplified

_CN_STOP = frozenset(
    "的是在今年了和与跟说也都就很我你他她它们来去要想从住家有没不昨这那个吗呢吧啊呀哦嗯，。！？、；："
    "先女经医教同律总请"
)
_CN_TRIGGERS = ("记者", "我叫", "我是", "我的名字是", "我的名字叫", "名字叫", "名字是", "叫我", "本人", "姓名", "联系人", "收件人", "收货人",
                "患者", "客户", "用户", "他叫", "她叫", "名叫", "署名", "持卡人", "户名", "由", "经办人", "负责人", "申请人")
_CN_HONORIFICS = ("先生", "女士", "小姐", "老师", "经理", "医生", "教授", "同学", "律师", "总监", "总", "主任", "院长", "校长",
                  "局长", "处长", "部长", "书记", "董事长", "总裁", "阿姨", "叔叔", "师傅", "同志", "博士", "护士")
_CN_TRIGGER_GAP = frozenset(" \t\u3000:：")
# words after a name that begin with an honorific and are titles too (王/总经理; not 总部, 总统)
_CN_HONORIFICS_AFTER = frozenset("总经理 总裁 总工 总编 总工程师 总编辑 主任医师 副教授".split())
_CN_NAME_CUES = re.compile("|".join(sorted(_CN_TRIGGERS + _CN_HONORIFICS, key=len, reverse=True)))
_CN_TRIGGER_SET = frozenset(_CN_TRIGGERS)
# words jieba tags as names that are not (honorifics, kinship terms)
_CN_NOT_NAMES = frozenset(_CN_HONORIFICS) | frozenset(
    "谢谢 小姐姐 小哥 老板 老公 老婆 阿姨 大爷 大妈 宝宝 亲 亲爱的 同学们 朋友们 小时 小心 小说 小学 小组 小区 "
    "金钥 金鑰 密钥 密鑰 钥匙 鑰匙 秘钥 秘鑰".split()  # ("key": 金鑰 reads as a surname and a given name)
)
# a run of Chinese text (punctuation and full-width forms inside it), tagged in one call
_CJK_RUN = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\u00b7\u2022\u30fb][\u4e00-\u9fff\u3400-\u4dbf\u00b7\u2022\u30fb\u3000-\u303f\uff01-\uff5e]+")
_CJK_SPLIT = re.compile("(" + _CJK_RUN.pattern + ")")
_first, _second = itemgetter(0), itemgetter(1)
_NR = frozenset(("nr", "nrfg", "nrt"))
DOTS = frozenset("\u00b7\u2022\u30fb")


def surname_len(w: str) -> int:
    if w[:2] in CN_SURNAMES_2:
        return 2
    return 1 if w[:1] in CN_SURNAMES_1 else 0


def _cn_name_at(text: str, i: int) -> int:
    """End of a Chinese name starting at i (surname from the gazetteer + 1-2 given characters), or -1."""
    n = len(text)
    k = surname_len(text[i : i + 2])
    if not k:
        return -1
    j = i + k
    e = j
    while e < n and e - j < 2 and is_cjk(text[e]) and text[e] not in _CN_STOP:
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
    text), words and tags, sorted by position; `starts` and `lens` as arrays (for the tagger)."""

    __slots__ = ("start", "end", "word", "tag", "starts", "lens")

    def __init__(self, text: str) -> None:
        parts = _CJK_SPLIT.split(text)  # the gaps and the runs between them: gap, run, gap, ...
        if len(parts) == 1:
            self.start, self.end, self.word, self.tag = [], [], [], []
            self.starts = self.lens = np.zeros(0, dtype=np.int64)
            return
        runs = parts[1::2]
        # every run tagged in one call, the runs joined by line breaks (jieba never joins words
        # across one)
        joined = "\n".join(runs)
        tagged = _tag(joined)
        words, tags = list(map(_first, tagged)), list(map(_second, tagged))
        lens = np.fromiter(map(len, words), np.int64, len(words))
        if len(runs) == 1:
            starts = lens.cumsum()
            starts -= lens
            starts += len(parts[0])
            self.word, self.tag = words, tags
        else:
            # the separators' tokens dropped and the positions mapped back in one compiled pass
            starts, keep, ok = kernels().place_tokens(lens, np.fromiter(map(len, parts), np.int64, len(parts)))
            if not ok:  # (never seen)
                self._slow(parts, words, tags)
                return
            starts, lens = starts[keep], lens[keep]
            k = keep.tolist()
            self.word, self.tag = list(compress(words, k)), list(compress(tags, k))
        self.starts, self.lens = starts, lens
        self.start, self.end = starts.tolist(), (starts + lens).tolist()

    def _slow(self, parts: list[str], words: list[str], tags: list[str]) -> None:
        """Positions where a separator did not stay a token of its own: each token's run found
        by its offset in the joined string."""
        runs = parts[1::2]
        joined = list(accumulate((len(r) + 1 for r in runs), initial=0))  # each run's start when joined
        run_start = list(accumulate(map(len, parts), initial=0))[1::2]
        shifts = [a - j for a, j in zip(run_start, joined)]
        offs = list(accumulate(map(len, words), initial=0))
        keep = [k for k, w in enumerate(words) if w != "\n"]
        run_of = [bisect.bisect_right(joined, offs[k]) - 1 for k in keep]
        self.start = [offs[k] + shifts[r] for k, r in zip(keep, run_of)]
        self.end = [offs[k + 1] + shifts[r] for k, r in zip(keep, run_of)]
        self.word = [words[k] for k in keep]
        self.tag = [tags[k] for k in keep]
        self.starts = np.array(self.start, dtype=np.int64)
        self.lens = np.array(self.end, dtype=np.int64) - self.starts

    def at_or_before(self, pos: int) -> int:
        return max(bisect.bisect_right(self.start, pos) - 1, 0)


# How far below the tagger's best labelling of a text its best one with a name inside a name
# the rules found may score for that name to stay: a name found by what it is (jieba's name
# tags, a surname and name-like characters), and one found by what stands beside it (a title,
# cue, honorific or verb), which needs less (the tagger learned news, not chat).
_CN_CONFIRM = 3.0
_CN_CONTEXT_CONFIRM = 10.0


def find_chinese_names(text: str, out: list[Span]) -> None:
    text = simplified(text)  # (traditional script read as simplified: 陳大文 as 陈大文)
    toks = _Tokens(text)
    if not toks.word:
        return
    nr = list(compress(range(len(toks.tag)), map(_NR.__contains__, toks.tag)))
    n0 = len(out)
    tagged = tag_text(text, toks)
    # the rules' names lie inside jieba's tokens, where the tagger read: each rule runs only
    # where its names could pass the tagger's test (inside the tokens), and skips what could not
    peak = tagged.peak
    if peak >= -_CN_CONFIRM:
        if nr:
            _tagged(text, toks, nr, out)
        _surname_led(text, toks, out, tagged)
        if len(out) > n0:
            out[n0:] = [sp for sp in out[n0:] if tagged.plausible(sp.start, sp.end, _CN_CONFIRM)]
    n1 = len(out)
    if peak >= -_CN_CONTEXT_CONFIRM:
        _titled(text, toks, out, tagged)
        _split_names(text, toks, out)
    if _CN_NAME_CUES.search(text) is not None:  # (a cue's name may reach past the tokens: 用户 赵𡒄)
        _cn_cues(text, toks, out)
    if len(out) > n1:
        out[n1:] = [sp for sp in out[n1:] if tagged.plausible(sp.start, sp.end, _CN_CONTEXT_CONFIRM)]
    for a, b in tagged.spans:
        if b - a >= 3 and (text[b - 1] in _CN_GLUED_AFTER or _glued_verb(text[a:b])):
            b -= 1  # 张文写: a verb after the name
        name = text[a:b]
        if name not in _CN_NOT_NAMES and name not in ZH_PLACES and not (b - a >= 3 and text[b - 1] in _CN_PLACE_ENDS):
            out.append(Span(a, b, PERSON))  # (吴忠市: a place)
    if len(out) > n0:
        _cut_titles(text, out, n0)
    if len(out) > n0:
        out[n0:] = [sp for sp in out[n0:] if not _place_or_body(text, toks, sp)]
    if len(out) > n0:
        _drop_places_anywhere(text, toks, out, n0)
    if len(out) > n0 or nr:
        _listed_beside(toks, nr, out, n0)
    if len(out) > n0 + 1:
        _glued_list(text, out, n0, tagged)
    if len(out) > n0:
        _given_alone(text, toks, out, n0)
    if len(out) > n0:
        out[n0:] = [sp for sp in out[n0:] if not _in_doctrine(toks, sp)]


_CN_DOCTRINE_ENDS = ("主义", "理论", "思想", "学说")  # what ends the name of a doctrine named after a person


def is_doctrine(text: str, start: int, end: int) -> bool:
    """Does the name text[start:end] begin a doctrine named after its person, one jieba word
    with what follows (邓小平理论, 马克思主义; not 王强/思想)? A mention of the person found
    elsewhere is not replaced there."""
    w = simplified(text[start : end + 2])  # (鄧小平理論 too)
    return w.endswith(_CN_DOCTRINE_ENDS) and len(w) == end - start + 2 and len(_tag(w)) == 1


def _in_doctrine(toks: _Tokens, sp: Span) -> bool:
    """The span starts inside one jieba word that names a doctrine after a person
    (邓小平理论, 马克思主义, 毛泽东思想)."""
    k = toks.at_or_before(sp.start)
    w = toks.word[k]
    return toks.start[k] <= sp.start < toks.end[k] and len(w) >= 4 and w.endswith(_CN_DOCTRINE_ENDS)


_CN_LIST_GAP = 6  # the most characters between two names of a list, or after its last one


def _glued_list(text: str, out: list[Span], n0: int, tagged: Tagged) -> None:
    """A list of names written with nothing between them (何光远何竹康何其宗何椿霖): two names
    found at most six characters apart, with only plain Chinese characters between them, are
    read again together with what lies between; where that splits whole into names of a
    surname and one or two given characters, those are the names (何竹康/何其宗 between two, and
    白清/才 where jieba and the tagger cut 白清才 short). A name glued to another is so read
    with the characters after or before it, up to the end of the run (…刘方仁刘中一, …）).
    One pass from left to right: each pair is read with what the pair before it left."""
    found = _merged(out, n0)
    m = len(found)
    if m < 2:
        return
    regions: list[tuple[int, int]] = []  # where names were read again, left to right
    pieces: list[Span] = []
    cur, before = found[0], -1  # the name read last, and the end of the one before it
    for x in range(1, m):
        (a, b), (a2, b2) = cur, found[x]
        split = None
        if 0 <= a2 - b <= _CN_LIST_GAP and _plain(text, b, a2):
            stretches = [(a, b2)] if a2 > b else []
            if a2 == b:  # touching: the ends of the list
                if before != a:
                    stretches.append((max(_run_edge(text, a, -1), before, 0), b))
                after = found[x + 1][0] if x + 1 < m else len(text)
                if after != b2:
                    stretches.append((a2, min(_run_edge(text, b2, 1), after)))
            for s, e in stretches:
                if e - s > b - a and e - s > b2 - a2:
                    lens = _list_split(text, tagged, s, e)
                    if lens is not None:
                        split = (s, e, lens)
                        break
        if split is None or split[1] == b:  # (none, or the list's start read again: go on)
            if split is not None:
                _add_pieces(split, regions, pieces)
            cur, before = found[x], b
            continue
        last = _add_pieces(split, regions, pieces)
        cur, before = (last.start, last.end), last.start if last.start > split[0] else before
    if regions:
        starts = [s for s, _ in regions]
        out[n0:] = [sp for sp in out[n0:] if not _in_regions(regions, starts, sp)]
        out.extend(pieces)


def _add_pieces(split: tuple[int, int, list[int]], regions: list[tuple[int, int]], pieces: list[Span]) -> Span:
    """Record the names a stretch split into; the last one."""
    s, e, lens = split
    regions.append((s, e))
    for k in lens:
        pieces.append(Span(s, s + k, PERSON))
        s += k
    return pieces[-1]


def _in_regions(regions: list[tuple[int, int]], starts: list[int], sp: Span) -> bool:
    k = bisect.bisect_right(starts, sp.start) - 1
    return (k >= 0 and regions[k][1] > sp.start) or (k + 1 < len(regions) and regions[k + 1][0] < sp.end)


def _merged(out: list[Span], n0: int) -> list[tuple[int, int]]:
    """The Chinese names in out[n0:], overlapping ones merged, sorted."""
    found: list[tuple[int, int]] = []
    for a, b in sorted((sp.start, sp.end) for sp in out[n0:] if sp.kind == PERSON and sp.end - sp.start >= 2):
        if found and a < found[-1][1]:
            found[-1] = (found[-1][0], max(b, found[-1][1]))
        else:
            found.append((a, b))
    return found


def _list_split(text: str, tagged: Tagged, s: int, e: int) -> list[int] | None:
    """The lengths of the names text[s:e] splits into whole (_split_list), where the tagger does
    not rule any of them out by more than the context threshold; None otherwise. (The caller
    saw that what lies between or beside the names found is plain.)"""
    lens = _split_list(text[s:e])
    if lens is None:
        return None
    p = s
    for k in lens:
        if not tagged.plausible(p, p + k, _CN_CONTEXT_CONFIRM):
            return None
        p += k
    return lens


def _plain(text: str, a: int, b: int) -> bool:
    """Only Chinese characters that no name stops at (the, is, 、, ...) in [a, b)."""
    return all(is_cjk(c) and c not in _CN_STOP for c in text[a:b])


def _run_edge(text: str, i: int, step: int) -> int:
    """Where the stretch of plain characters from i (going left, step -1, or right) ends, when
    within _CN_LIST_GAP of it; i itself otherwise."""
    j = i
    n = len(text)
    while (0 < j if step < 0 else j < n) and abs(j - i) <= _CN_LIST_GAP:
        c = text[j - 1] if step < 0 else text[j]
        if not is_cjk(c) or c in _CN_STOP:
            return j
        j += step
    return j if (j == 0 or j == n) and abs(j - i) <= _CN_LIST_GAP else i


def _split_list(run: str) -> list[int] | None:
    """The lengths of the names `run` splits into whole, the best-scoring split (each a surname
    and one or two given characters that may stand in names, scoring at least _CN_NAME_MIN);
    None if there is none."""
    n = len(run)
    best: list[tuple[float, int] | None] = [None] * (n + 1)  # from i: (score, first name's length)
    best[n] = (0.0, 0)
    for i in range(n - 2, -1, -1):
        for ln in (2, 3, 4):
            if i + ln > n or best[i + ln] is None:
                continue
            name = run[i : i + ln]
            k = surname_len(name)
            if not k or not 1 <= ln - k <= 2 or not _given_plausible(name[k:]):
                continue
            score = _name_score(name, k)
            if score < _CN_NAME_MIN[ln - k]:
                continue
            total = score + best[i + ln][0]
            if best[i] is None or total > best[i][0]:
                best[i] = (total, ln)
    if best[0] is None:
        return None
    out, i = [], 0
    while i < n:
        out.append(best[i][1])
        i += best[i][1]
    return out


# what follows a surname in one word, and is no part of the name (王/老汉, 董/大夫, 二陈/兄弟),
# besides the titles and honorifics (杨/师傅: _CN_CUT_AFTER joins them)
_CN_AFTER_SURNAME = frozenset(
    "老汉 老太 老太太 老大爷 老大娘 老人 老伯 大夫 大娘 大婶 大嫂 大叔 大伯 大姐 大哥 兄弟 姐妹 夫妇 一家 家族 "
    "老先生 太太 夫人 伯伯 奶奶 爷爷 老师傅 司机 警官 科长 组长 班长 所长 站长 村长 乡长 镇长 支书".split()
)


def _cut_titles(text: str, out: list[Span], n0: int) -> None:
    """A span found as a name that ends with a title or kinship word (王老汉, 杨师傅, 孙先生):
    the word is no name; the surname or name before it is."""
    for x in range(n0, len(out)):
        sp = out[x]
        if sp.kind != PERSON or sp.end - sp.start < 2:
            continue
        name = text[sp.start : sp.end]
        for c in (3, 2):
            if len(name) > c and name[-c:] in _CN_CUT_AFTER and surname_len(name[:-c]) >= 1:
                out[x] = Span(sp.start, sp.end - c, PERSON)
                break


def _given_alone(text: str, toks: _Tokens, out: list[Span], n0: int) -> None:
    """A person found by full name is also written by given name alone (周恩来 ... 恩来): a word
    that is the two given characters of a name found, and that jieba tags as a name or that is
    no word of wordfreq's (zipf < 3: 李建国 ... 建国以来 keeps 建国); and by surname alone
    (赵小军 ... 赵/nr 外出了): the surname of a name found where jieba tags it a name."""
    given = set()
    surnames = set()
    for sp in out[n0:]:
        if sp.kind == PERSON and sp.end - sp.start >= 2:
            k = surname_len(text[sp.start : sp.start + 2])
            if k and sp.end - sp.start - k == 2:
                given.add(text[sp.start + k : sp.end])
            if k == 1:
                surnames.add(text[sp.start])
    if not given and not surnames:
        return
    word, tag = toks.word, toks.tag
    for i, w in enumerate(word):
        if (w in given and (tag[i] in _NR or w not in ZH_ZIPF)) or (w in surnames and tag[i] in _NR):
            out.append(Span(toks.start[i], toks.end[i], PERSON))


# negative evidence: what ends the names of organisations (党支部, 劳动部, 居委会, 国大党) and
# the words that follow a place or a body, never a person (南昆/铁路, 罗布泊/地区, X/公司)
_CN_ORG_ENDS = frozenset("部委会局厅署办院党联社所司处杯奖")
_CN_PLACE_NEXT = frozenset(
    "铁路 公路 地区 地带 一带 境内 流域 公司 集团 企业 工厂 冲突 县 市 省 区 镇 乡 村 路 街 山 江 河 湖 岛 港 "
    "大学 学院 中学 小学 医院 宾馆 饭店 酒店 银行 机场 车站 大桥 大街 广场 景区 牌 商标 品牌 "
    "半岛 附近 高原 盆地 平原 海峡 沙漠 火山 郊区 市区 当地 条约 公约 协定 奖 杯 报 号".split()
)
# words before a place (在/抵达 伊斯坦布尔, 首都 拉巴特): a transliteration after one, with nothing
# else to say it is a person, is a place
_CN_PLACE_BEFORE = frozenset("在 到 抵达 飞抵 前往 来到 途经 位于 驻 首都 首府 城市 攻占".split())


def _place_or_body(text: str, toks: _Tokens, sp: Span) -> bool:
    """A Chinese name candidate that is the name of a place or an organisation by what ends it
    or what follows it."""
    if sp.kind != PERSON or sp.end - sp.start < 2 or not is_cjk(text[sp.start]):
        return False
    if text[sp.end - 1] in _CN_ORG_ENDS:
        return True
    k = bisect.bisect_left(toks.start, sp.end)
    if k and toks.end[k - 1] > sp.end and toks.word[k - 1][-1] in _CN_ORG_ENDS and toks.start[k - 1] >= sp.start:
        return True  # 金鹏杯 one word: a cup, not 金鹏's
    return k < len(toks.start) and toks.start[k] == sp.end and toks.word[k] in _CN_PLACE_NEXT


def _drop_places_anywhere(text: str, toks: _Tokens, out: list[Span], n0: int) -> None:
    """A word found as a name that stands elsewhere in the text before a place or body word
    (罗布泊 ... 罗布泊/地区) names that place everywhere: every span of it is dropped."""
    words = {text[sp.start : sp.end] for sp in out[n0:] if sp.kind == PERSON and sp.end - sp.start >= 2}
    places = set()
    for w in words:
        p = text.find(w)
        while p >= 0:
            if _place_or_body(text, toks, Span(p, p + len(w), PERSON)):
                places.add(w)
                break
            p = text.find(w, p + len(w))
    if places:
        out[n0:] = [sp for sp in out[n0:] if text[sp.start : sp.end] not in places]


_CN_LIST_JOINS = frozenset("、 和 与 及 同 跟".split())


def _listed_beside(toks: _Tokens, nr: list[int], out: list[Span], n0: int) -> None:
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
    run: list[int] = []  # 毛冬声/nr 毛致用/nr 亢龙/nr: three or more names jieba tags, nothing between
    for i in nr + [-1]:
        if run and i == run[-1] + 1 and start[i] == end_[i - 1]:
            run.append(i)
            continue
        if len(run) >= 3:
            for j in run:
                k = surname_len(word[j])
                if j not in is_name and k and 1 <= len(word[j]) - k <= 2 and _given_plausible(word[j][k:]):
                    is_name.add(j)
                    out.append(Span(start[j], end_[j], PERSON))
        run = [i]
    todo = list(is_name)
    while todo:
        i = todo.pop()
        for j, joint in ((i + 2, i + 1), (i - 2, i - 1)):
            if 0 <= j < n and j not in is_name and word[joint] in _CN_LIST_JOINS and _could_be_name(toks, j):
                is_name.add(j)
                out.append(Span(start[j], end_[j], PERSON))
                todo.append(j)
        for j in (i + 1, i - 1):  # 张德江华国锋全树仁: a list of names with nothing between them
            if (0 <= j < n and j not in is_name and tag[j] in _NR and (start[j] == end_[i] or end_[j] == start[i])
                    and _could_be_name(toks, j)):
                is_name.add(j)
                out.append(Span(start[j], end_[j], PERSON))
                todo.append(j)


def _could_be_name(toks: _Tokens, i: int) -> bool:
    w, t = toks.word[i], toks.tag[i]
    if not 2 <= len(w) <= 6 or w in ZH_PLACES or w in _CN_NOT_NAMES or t in _CN_WORD_TAGS:
        return False
    k = surname_len(w)
    if k and len(w) - k <= 2 and all(is_cjk(c) for c in w):
        # (in a list of names jieba's other tags count for less: 巴金/ns, 胡可/v)
        score = _given_score(w[k:])
        return _given_plausible(w[k:]) and score >= 0.0 and (len(w) > 2 or not _zh_common(w))
    return t not in _CN_NOT_NAME_TAGS and all(c in _CN_TRANSLIT for c in w) and not _zh_common(w)


def _fits_words(toks: _Tokens, s: int, e: int, cue: int | None = None) -> bool:
    """A name candidate [s, e) found by a cue agrees with the segmentation: no word of two or
    more characters crosses its edges (客户信用卡: 信用卡 is a word, 信用 no name), and it is not
    itself a frequent word."""
    if _zh_common(text_of(toks, s, e)):
        return False
    i = toks.at_or_before(s)
    n = len(toks.word)
    while i < n and toks.start[i] < e:
        a, b, w, t = toks.start[i], toks.end[i], toks.word[i], toks.tag[i]
        if (b > s and t not in _NR and len(w) >= 2 and (a < s or b > e) and surname_len(w) != len(w)
                and not (cue is not None and cue <= a < s and surname_len(w[s - a:]) == b - s and not _zh_word(w))):
            # (客户王/芳: jieba glued the surname to the cue; 由于 is a word, no cue and surname)
            return False
        if a >= s and b <= e and len(w) >= 2 and t in _CN_WORD_TAGS:
            return False  # a word of another kind inside: 明天/王/局长 is no 明天王, 由南/往北 no 南往北
        i += 1
    return True


# tags of words that a surname at their start does not make a name (time words, numbers,
# pronouns, adverbs, ...: 明天, 一些, 他们)
_CN_WORD_TAGS = frozenset("t m q f d r p c u uj ul uz ug ud".split())


# what stands beside a name in news and chat: titles before or after it, speech verbs after it
_CN_TITLES = frozenset(
    "记者 总统 主席 总理 首相 部长 外长 大使 国王 女王 王子 议长 秘书长 总书记 委员长 省长 市长 县长 书记 局长 处长 "
    "主任 院长 校长 会长 团长 队长 厂长 经理 总经理 董事长 总裁 先生 女士 小姐 教授 博士 医生 律师 老师 同志 代表 "
    "委员 司令 将军 教练 选手 演员 导演 作家 诗人 画家 歌手 特使 发言人 总监 副总统 副主席 副总理 副部长".split()
)
_CN_PLACE_ENDS = frozenset("口庄县市省村镇区路街港湾乡屯寨堡")
_CN_CUT_AFTER = _CN_AFTER_SURNAME | _CN_TITLES | _CN_NOT_NAMES  # what _cut_titles cuts off
_CN_SPEECH = frozenset("说 表示 指出 认为 强调 宣布 称 介绍 透露 回忆 说道 写道 告诉 会见 会晤 访问 出席 致电 致信".split())
# verbs of chat whose object (before a name) or subject (after one) is a person
_CN_OBJECT_VERBS = frozenset("感谢 谢谢 通知 告诉 问 找 请 让 叫 认识 联系 邀请 拜访 麻烦 发给 交给 转给 抄送 转告".split())
_CN_SUBJECT_VERBS = frozenset("同意 负责 打电话 推荐 提出 投诉 请假 批准 回复 答应 觉得 发现 问道".split())
_CN_AFTER_NAME = _CN_SPEECH | _CN_SUBJECT_VERBS


_CN_WORD = 3.5  # zipf of a word that is no name without more evidence (two characters: _zh_common)
_CN_TAGGED_WORD = 3.0  # ...and of a two-character word jieba tags as a name that needs context (贺卡, 钟山)


def _zh_word(word: str) -> bool:
    """A word of Chinese text at least as frequent as zipf 3.5."""
    return ZH_ZIPF.get(word, 0.0) >= _CN_WORD


def _zh_common(word: str) -> bool:
    """A frequent word: zipf >= 3.5 for two characters, >= 4 for longer ones."""
    z = ZH_ZIPF.get(word)
    return z is not None and z >= (_CN_WORD if len(word) == 2 else 4.0)


# how words naming a person's role end (部长, 记者, 协调员, 投资家, 选手, 领导人), and their last
# characters (a set lookup before the endswith)
_CN_ROLE_ENDS = ("长", "记者", "员", "家", "手", "人")
_CN_ROLE_LAST = frozenset(e[-1] for e in _CN_ROLE_ENDS)


def _context(toks: _Tokens, i: int, j: int) -> bool:
    """A title right before tokens i..j, or a title or speech verb right after them."""
    before = toks.word[i - 1] if i > 0 else ""
    after = toks.word[j + 1] if j + 1 < len(toks.word) else ""
    return (before in _CN_TITLES or (len(before) >= 2 and before.endswith(_CN_ROLE_ENDS)) or after in _CN_TITLES
            or after in _CN_SPEECH)


def _person_verb(toks: _Tokens, i: int) -> bool:
    """A verb whose object is a person right before token i (感谢/高东), or one whose subject is
    a person right after it (周洋/同意)."""
    return (i > 0 and toks.word[i - 1] in _CN_OBJECT_VERBS) or (i + 1 < len(toks.word) and toks.word[i + 1] in _CN_SUBJECT_VERBS)


def _tagged(text: str, toks: _Tokens, nr: list[int], out: list[Span]) -> None:
    """The name tokens (indices `nr`), each with the surname token before it when jieba split
    the name (江/泽民, 欧阳/娜娜) and the parts joined by a middle dot (阿卜杜拉·买买提)."""
    word, tag, start, end_ = toks.word, toks.tag, toks.start, toks.end
    n = len(word)
    done = -1
    for i in nr:
        if i <= done:
            continue
        if (i > 0 and i - 1 > done and surname_len(word[i - 1]) == len(word[i - 1]) and len(word[i]) <= 2
                and start[i] == end_[i - 1] and tag[i - 1] not in _CN_FUNCTION_TAGS):
            i -= 1  # the surname token before a given name
        j = i
        w, t = word[i], tag[i]
        if surname_len(w) == len(w) and j + 1 < n and tag[j + 1] in _NR and len(word[j + 1]) <= 2:
            j += 1
        elif (len(w) == 1 and surname_len(w) == 1 and t in _NR and j + 1 < n and start[j + 1] == end_[j]
              and _split_given(toks, j + 1) and word[j + 1] not in ZH_PLACES):
            j += 1  # 李/nr 森林/n: jieba split the name it saw
        while j + 2 < n and word[j + 1] in DOTS and len(word[j + 2]) <= 4:
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
        spoke = False
        if len(name) >= 3 and (name[-1] in _CN_GLUED_AFTER or _glued_verb(name)):  # 恩佐说, 谭彦是, 张文写: jieba took a word in
            spoke, name, end = name[-1] in _CN_SPEECH, name[:-1], end - 1
        elif len(name) >= 3 and name[0] in _CN_GLUED_BEFORE and (surname_len(name[1:3]) or name[1] in _CN_TRANSLIT):
            name, s = name[1:], s + 1  # 同恩佐, 后丁伟
        k = surname_len(name)
        if titled and len(name) == k:
            ok = True  # a surname alone before a title: 孙先生, 韩女士
        elif len(name) == 2 and name[1] == "某" and k == 1:
            ok = True  # 李某: a person whose name the writer withholds, still a person
        elif len(name) < 2 or name in _CN_NOT_NAMES or name in ZH_PLACES:
            ok = False
        elif (i + 1 < n and word[i + 1] in DOTS) or any(c in DOTS for c in name):
            ok = True
        elif k and len(name) - k <= 2 and t != "nrt" and name[-1] not in _CN_PLACE_ENDS:
            # a surname and one or two given characters (王芳, 欧阳娜娜, 江泽民); one that is
            # also a frequent word (文明, 祝贺, 莫斯科) needs context
            # (a famous name is a frequent word too: one whose given characters stand in
            # names far more often than in text, 李鹏, 孙中山, needs no context)
            # (and so does a tagged two-character name that is a word at all: 贺卡, 钟山, 母爱)
            common = _zh_common(name) or (len(name) == 2 and ZH_ZIPF.get(name, 0.0) >= _CN_TAGGED_WORD)
            least = _CN_NAME_MIN_WORD if name in ZH_ZIPF else _CN_NAME_MIN[len(name) - k]
            ok = (_given_plausible(name[k:]) and (not common or _given_score(name[k:]) >= _CN_FAMOUS_TAGGED)
                  and _name_score(name, k) >= least) or spoke or _context(toks, i, j)
        else:  # a transliteration (克林顿, 恩佐) or a longer run: only where the context says so
            ok = len(name) <= 6 and (spoke or _context(toks, i, j))
        if ok:
            out.append(Span(s, end, PERSON))


# characters jieba glues to the end or the start of a name it tags (恩佐说, 谭彦是, 同恩佐)
_CN_GLUED_AFTER = frozenset("说是摄等在的")
_CN_GLUED_BEFORE = frozenset("同和与跟对向把被给让叫请由将后从")


def _glued_verb(name: str) -> bool:
    """A surname, one or two given characters and a last character that stands in no given
    name (张文写, 李娜问): jieba glued the word after the name to it, and tags the name alone as
    one (not 宣传/部, 杨浦/区, 严峻/考验; 成正比 is a word)."""
    k = surname_len(name)
    return (k > 0 and 1 <= len(name) - k - 1 <= 2 and zh_given_scores().get(name[-1], -5.0) < _CN_TAGGED_MIN
            and name[-1] not in _CN_ORG_ENDS and name[-1] not in _CN_PLACE_ENDS and name not in ZH_ZIPF
            and _given_plausible(name[k:-1]) and _known_name(name[:-1]))


# conjunctions, prepositions, adverbs, pronouns, particles: 和 of 和小王 is no surname
_CN_FUNCTION_TAGS = frozenset("c p d r u uj ul uz ug ud".split())
# tags of words that are no name (places, organisations, numbers, adjectives, verbs, adverbs)
_CN_NOT_NAME_TAGS = frozenset("ns nt nz m q a ad an v vn d f s".split())
_CN_GIVEN_MIN = 2.0  # summed zh_given_scores() of the given characters a name needs without context
_CN_GIVEN_STRONG = 4.0  # ...and a three-character word jieba tags as a place, adjective or verb
_CN_FAMOUS = 3.0  # ...and one that is also a frequent word (周恩来, 江泽民)
_CN_FAMOUS_TAGGED = 5.0  # summed score a name jieba tags needs when it is also a frequent word (李鹏)
_CN_TAGGED_MIN = -4.0  # no given character of a name jieba tags may score below this (部 -4.4)
# characters of transliterated names (克林顿, 内塔尼亚胡); one made only of these that jieba tags
# a name, and that is no frequent word or known place, is taken for a person
_CN_TRANSLIT = frozenset(
    "阿埃艾安奥巴拜班邦保贝本比彼宾波伯博布查达戴丹道德迪蒂丁东杜多厄恩法菲费芬丰弗福盖甘戈格古哈海汉豪赫亨胡霍基吉加"
    "贾杰金卡凯坎康科克肯库拉莱赖兰朗劳勒雷里利连琳卢鲁伦罗洛马迈麦曼梅门蒙米密莫默穆纳内尼努诺帕派潘佩彭皮珀普齐奇恰乔"
    "切钦丘萨塞桑瑟森沙尚舍什施斯松苏索塔泰坦汤唐特滕提图托瓦威维韦温沃乌伍西希谢辛休雅亚扬耶伊尤约泽扎詹兹佐尔夫顿撒姆翰玛列娜莎琼蕾黛罕奈汀妮茨丽林文瑞"
)
_CN_TRANSLIT_PLACE_ENDS = frozenset("达拉亚加")  # 巴格达, 马尼拉, 印度尼西亚, 芝加哥: they end many places


# the least name score (surname and given characters together) of a tagged name without context,
# by the number of given characters: 贺/卡, 巴/方, 罗/布泊, 金/字塔 score below, 王/芳, 贺/龙 above
_CN_NAME_MIN = (0.0, -1.0, -2.0)
_CN_NAME_MIN_WORD = 2.0  # ...and one that is also a word of zipf >= 3 (连/衣裙 -0.7, 马/尼拉; 刘/伯承 above)


def _name_score(name: str, k: int) -> float:
    """How much more often name[:k] and name[k:] stand as a surname and a given name than in
    text (the log ratios summed)."""
    return zh_surname_scores().get(name[:k], -5.0) + _given_score(name[k:])


def _given_score(given: str) -> float:
    scores = zh_given_scores()
    return sum(scores.get(c, -5.0) for c in given)


def _given_plausible(given: str) -> bool:
    """Could these characters after a surname be a given name? Not where one of them ends words
    far more often than it stands in names (宣/传部, 党/支部)."""
    scores = zh_given_scores()
    return min((scores.get(c, -5.0) for c in given), default=0.0) >= _CN_TAGGED_MIN


_CN_LEAD = frozenset(CN_SUB_SURNAMES) | frozenset(s[0] for s in CN_SURNAMES_2) | frozenset("老小")


def _surname_led(text: str, toks: _Tokens, out: list[Span], tagged: Tagged) -> None:
    """Names found by what they are, without a tag or cue: a surname and one or two given
    characters that stand in given names far more often than in text (鹏, 泽民; not 部, 水平),
    covering whole jieba words; 老张/小王/侯老; and transliterations jieba tags as names.
    Tokens where the tagger rules out a name by more than _CN_CONFIRM are skipped: what is
    found here must pass that test."""
    word, tag, start = toks.word, toks.tag, toks.start
    ends: dict[int, int] | None = None
    for i, w in enumerate(word):
        if w[0] not in _CN_LEAD and tag[i] not in _NR:
            continue  # most tokens: no surname, 老 or 小 starts them and jieba sees no name
        p = start[i]
        if not tagged.plausible(p, p + max(4, len(w)), _CN_CONFIRM):
            continue  # (every name found below lies in these characters)
        if ends is None:
            ends = {e: j for j, e in enumerate(toks.end)}
        for k in (2, 1):
            if (k == 2 and text[p : p + 2] not in CN_SURNAMES_2) or (k == 1 and text[p] not in CN_SUB_SURNAMES):
                continue
            for g in (2, 1):
                e = p + k + g
                j = ends.get(e)
                if j is None:
                    continue
                given = text[p + k : e]
                if not all(is_cjk(c) and c not in _CN_STOP for c in given):
                    continue
                name = text[p:e]
                if g == 2 and _zh_word(given):
                    continue
                if any(tag[x] in _CN_NOT_NAME_TAGS for x in range(i, j + 1)) and not (
                        i == j and g == 2 and name not in ZH_ZIPF and _given_score(given) >= _CN_GIVEN_STRONG):
                    continue  # (one word of three characters with strongly name-like given ones: 邱娥国/ns)
                if name in ZH_PLACES or name in _CN_NOT_NAMES or name[-1] in _CN_PLACE_ENDS:
                    continue
                score = _given_score(given)
                z = ZH_ZIPF.get(name, 0.0)
                if len(name) == 2 and z >= _CN_WORD:
                    continue  # 智慧, 高峰: words first (a name among them needs a cue)
                if score >= _CN_GIVEN_MIN and (z < 4.0 or score >= _CN_FAMOUS):
                    out.append(Span(p, e, PERSON))
                    break
            else:
                continue
            break
        if (len(w) == 3 and tag[i] not in _NR and tag[i] not in _CN_PLACE_TAGS and w[0] in CN_SURNAMES_1 and w not in ZH_PLACES
                and _known_given_name(w[1:])):
            out.append(Span(p, p + 3, PERSON))  # 周恩来 (jieba: a time word): 恩来 alone is a name to jieba
        elif len(w) == 2 and not _zh_word(w) and ((w[0] in "老小" and w[1] in CN_SUB_SURNAMES) or (w[1] == "老" and w[0] in CN_SUB_SURNAMES)):
            e = p + 2
            if (w[0] in "老小" and i + 1 < len(word) and start[i + 1] == e and len(word[i + 1]) == 1
                    and tag[i + 1] not in _CN_WORD_TAGS and word[i + 1] not in _CN_STOP
                    and zh_given_scores().get(word[i + 1], -5.0) >= _CN_GIVEN_STRONG):
                e += 1  # 小张/倩: the given name jieba cut off after 小 and the surname
            out.append(Span(p, e, PERSON))
        elif (2 <= len(w) <= 6 and tag[i] in _NR and not (_zh_word(w) or (len(w) == 2 and w in ZH_ZIPF)) and w not in ZH_PLACES
              and w[-1] not in _CN_TRANSLIT_PLACE_ENDS and all(c in _CN_TRANSLIT for c in w)
              and (i == 0 or word[i - 1] not in _CN_PLACE_BEFORE)):
            out.append(Span(p, p + len(w), PERSON))


_CN_PLACE_TAGS = frozenset("ns nt nz".split())
_KNOWN_NAME: dict[str, bool] = {}


def _known_name(chars: str) -> bool:
    """Does jieba, shown these characters alone, take them for one person's name (张文, 李娜;
    恩来, 泽民)? Its dictionary lists the given names of people written about by given name
    alone."""
    known = _KNOWN_NAME.get(chars)
    if known is None:
        if len(_KNOWN_NAME) >= 100_000:
            _KNOWN_NAME.clear()
        tagged = _tag(chars)
        known = _KNOWN_NAME[chars] = len(tagged) == 1 and tagged[0][1] in _NR
    return known


def _known_given_name(given: str) -> bool:
    """Two characters jieba takes alone for a name that may stand as a given name (恩来, 泽民)."""
    return _known_name(given) and _given_plausible(given)


# titles jieba glues to a surname into one word (江主席, 王老师); not 代表 or 委员 (党代表)
_CN_GLUED_TITLES = frozenset(_CN_HONORIFICS) | frozenset("主席 总理 总统 首相 部长 市长 省长 县长 大使 司令 将军 教练".split())
_CN_GLUED_WORDS = frozenset(f + t for f in CN_SURNAMES_1 | CN_SURNAMES_2 for t in _CN_GLUED_TITLES)  # 江主席, 王老师
_CN_BESIDE = _CN_TITLES | frozenset(_CN_HONORIFICS) | _CN_AFTER_NAME | _CN_OBJECT_VERBS  # the words _context looks for


class _WordTest(dict):
    """A test of a word, remembered per word (jieba's words repeat): `get_many` maps a token
    list in one C-level pass. Bounded: cleared when it holds 65,536 words."""

    __slots__ = ("_test",)

    def __init__(self, test) -> None:
        super().__init__()
        self._test = test

    def get_many(self, words: list[str]):
        return map(self.__getitem__, words)

    def __missing__(self, w: str) -> bool:
        if len(self) >= 1 << 16:
            self.clear()
        r = self[w] = self._test(w)
        return r


def _is_beside_word(w: str) -> bool:
    """A title, honorific, speech or person verb, role word (…长, …员) or surname and title as
    one word (江主席): what _titled looks beside."""
    return w in _CN_BESIDE or (w[-1] in _CN_ROLE_LAST and w.endswith(_CN_ROLE_ENDS)) or w in _CN_GLUED_WORDS


_beside_word = _WordTest(_is_beside_word)


def _titled(text: str, toks: _Tokens, out: list[Span], tagged: Tagged) -> None:
    """What stands beside a title: a surname on its own (李/团长, 王/局长: a person named by the
    surname and the title) and a transliterated name jieba does not tag as one (外长/利维,
    秘书长/安南, 恩佐/说), a whole word made only of transliteration characters. Only the words
    next to a title, role word or speech verb are looked at."""
    word = toks.word
    n = len(word)
    hits = list(compress(range(n), _beside_word.get_many(word)))
    if not hits:
        return
    beside, glued = _CN_BESIDE, _CN_GLUED_WORDS
    cands: set[int] = set()
    for i in hits:
        w = word[i]
        if w in glued:
            cands.add(i)
        elif w in beside or len(w) >= 2:
            if i and w not in _CN_OBJECT_VERBS:
                cands.add(i - 1)
            if i + 1 < n and w not in _CN_AFTER_NAME:
                cands.add(i + 1)
    end_ = toks.end
    for i in sorted(cands):  # (what is found here must pass the tagger's test: it skips the rest)
        if tagged.plausible(toks.start[i], end_[i + 1] if i + 1 < n else end_[i], _CN_CONTEXT_CONFIRM):
            _titled_at(toks, i, out)


def _titled_at(toks: _Tokens, i: int, out: list[Span]) -> None:
    word, tag, start, end_ = toks.word, toks.tag, toks.start, toks.end
    w = word[i]
    nxt = word[i + 1] if i + 1 < len(word) and start[i + 1] == end_[i] else ""
    k = surname_len(w)
    if k == len(w) and k <= 2 and nxt and tag[i] not in _CN_WORD_TAGS and _after_title(toks, i) and _split_given(toks, i + 1):
        out.append(Span(start[i], end_[i + 1], PERSON))  # 所长/陈/书生: jieba split the name after a title
    elif k == len(w) and k <= 2:
        # (何/r 教授: a common surname jieba reads as a pronoun is still one before a title)
        if nxt and (nxt in _CN_TITLES or nxt in _CN_HONORIFICS) and (tag[i] not in _CN_FUNCTION_TAGS or w in _CN_LEAD) and tag[i] not in _CN_NOT_NAME_TAGS:
            if i == 0 or end_[i - 1] != start[i] or not ((is_cjk(word[i - 1][-1]) and len(word[i - 1]) == 1) or tag[i - 1] == "m"):
                out.append(Span(start[i], end_[i], PERSON))
    elif k and w[k:] in _CN_GLUED_TITLES and tag[i] not in _NR:
        out.append(Span(start[i], start[i] + k, PERSON))  # 江主席 as one word
    elif (k and 1 <= len(w) - k <= 2 and tag[i] not in _CN_FUNCTION_TAGS and tag[i] not in ("v", "d", "a", "m", "q", "f")
          and all(is_cjk(c) and c not in _CN_STOP for c in w) and w not in ZH_PLACES
          and _given_plausible(w[k:]) and (_context(toks, i, i) or (len(w) == 2 and _person_verb(toks, i) and _name_score(w, k) >= _CN_NAME_MIN_WORD))
          and (not _zh_common(w) or (tag[i] == "ns" and i and toks.word[i - 1] in _CN_TITLES))):
        out.append(Span(start[i], end_[i], PERSON))  # 委员/罗干, 感谢/高东: a surname and given characters beside a title or verb
    elif (2 <= len(w) <= 6 and tag[i] not in _CN_FUNCTION_TAGS and tag[i] not in ("v", "d", "a", "m", "q", "f")
          and all(c in _CN_TRANSLIT for c in w) and w not in ZH_PLACES and not _zh_common(w) and _context(toks, i, i)):
        out.append(Span(start[i], end_[i], PERSON))


def _after_title(toks: _Tokens, i: int) -> bool:
    """A title or role word right before token i (记者/周, 组长/李)."""
    if i == 0 or toks.end[i - 1] != toks.start[i]:
        return False
    before = toks.word[i - 1]
    return before in _CN_TITLES or (len(before) >= 2 and before[-1] in _CN_ROLE_LAST and before.endswith(_CN_ROLE_ENDS))


def _split_given(toks: _Tokens, j: int) -> bool:
    """Token j could be the given name of the surname before it (书生 of 陈/书生): one or two
    characters that are no title, verb of speech or function word and score as given names."""
    w = toks.word[j]
    return (len(w) <= 2 and toks.tag[j] not in _CN_WORD_TAGS and w not in _CN_BESIDE and w not in _CN_NOT_NAMES
            and all(is_cjk(c) and c not in _CN_STOP for c in w) and _given_plausible(w) and _given_score(w) >= 0.0)


# a name jieba cut after its surname into words of other kinds (张/q 丹丹/ns, 郑/ns 建平/n,
# 许/m 婷婷/z) or whose surname it glued to the word before (给林/淑英, 发给/许/婷婷): the given
# part must be strongly name-like, since nothing else says it is a name
_CN_SPLIT_GIVEN_MIN = 4.5
_CN_SPLIT_SURNAMES = frozenset(CN_SUB_SURNAMES)


def _is_surname_end(w: str) -> bool:
    """A surname alone, or glued to a preposition or cue before it (给林, 客户王)."""
    return w[-1] in _CN_SPLIT_SURNAMES and (len(w) == 1 or w[:-1] in _CN_GLUED_BEFORE or w[:-1] in _CN_TRIGGER_SET)


_surname_ends = _WordTest(_is_surname_end)


def _split_names(text: str, toks: _Tokens, out: list[Span]) -> None:
    word, tag, start, end_ = toks.word, toks.tag, toks.start, toks.end
    for i in compress(range(len(word) - 1), _surname_ends.get_many(word)):
        w = word[i]
        if end_[i] != start[i + 1]:
            continue
        g = word[i + 1]
        if not 1 <= len(g) <= 2 or tag[i + 1] in _CN_WORD_TAGS or g in _CN_BESIDE or g in _CN_NOT_NAMES or _zh_word(g):
            continue
        if not all(is_cjk(c) and c not in _CN_STOP for c in g) or not _given_plausible(g):
            continue
        name = w[-1] + g
        if name in ZH_PLACES or name[-1] in _CN_PLACE_ENDS or _zh_common(name):
            continue
        if _given_score(g) >= _CN_SPLIT_GIVEN_MIN:
            out.append(Span(end_[i] - 1, end_[i + 1], PERSON))


def text_of(toks: _Tokens, s: int, e: int) -> str:
    """The text of [s, e) rebuilt from the tokens that cover it."""
    i = toks.at_or_before(s)
    parts = []
    while i < len(toks.word) and toks.start[i] < e:
        a, b, w = toks.start[i], toks.end[i], toks.word[i]
        parts.append(w[max(0, s - a) : len(w) - max(0, b - e)])
        i += 1
    return "".join(parts)


def _word_first(toks: _Tokens, s: int) -> bool:
    """A frequent word that jieba tags as no name starts at s (普通/nz 科 医生: 普 is no surname)."""
    k = bisect.bisect_left(toks.start, s)
    return (k < len(toks.start) and toks.start[k] == s and len(toks.word[k]) >= 2 and toks.tag[k] not in _NR
            and _zh_word(toks.word[k]))


def _honorific_at(toks: _Tokens, i: int, word: str) -> bool:
    """A token starts at i and is the honorific `word`, its plural (老师们) or a title that
    begins with it (总经理); not a word that only begins with it (总部, 总统 after a country)."""
    k = bisect.bisect_left(toks.start, i)
    if k == len(toks.start) or toks.start[k] != i:
        return False
    w = toks.word[k]
    return w == word or w == word + "们" or w in _CN_HONORIFICS_AFTER


def _cn_cues(text: str, toks: _Tokens, out: list[Span]) -> None:
    for m in _CN_NAME_CUES.finditer(text):
        if m.group() in _CN_TRIGGER_SET:  # 我叫/姓名/联系人...: the name follows
            i = m.end()
            gap = 0
            while gap < 2 and i < len(text) and text[i] in _CN_TRIGGER_GAP:
                i += 1
                gap += 1
            e = _cn_name_at(text, i)
            if e - i >= 3 and text[e - 1] in _CN_GLUED_AFTER:
                e -= 1  # 由王永摄: 摄 ends no name
            if e < 0:
                continue
            # (客户王强/投诉: the second given character may begin the next word)
            for end in (e, e - 1) if e - i - surname_len(text[i : i + 2]) == 2 else (e,):
                if _fits_words(toks, i, end, m.start()):
                    out.append(Span(i, end, PERSON))
                    break
        else:  # 先生/女士/老师...: the name precedes (a surname and one or two given characters)
            i = m.start()
            if not _honorific_at(toks, i, m.group()):
                continue  # 总 of 国务院副总理 or of 巴格达总部 is no honorific
            for ln in (3, 2, 4):
                st = i - ln
                if st < 0:
                    continue
                k = surname_len(text[st : st + 2])
                if (k and k < ln and ln - k <= 2 and all(is_cjk(c) and c not in _CN_STOP for c in text[st + k : i])
                        and _given_plausible(text[st + k : i]) and _fits_words(toks, st, i) and not _word_first(toks, st)):
                    out.append(Span(st, i, PERSON))
                    break
