"""Japanese person names (kanji, kana), in text that has kana (Japanese text).

Text that is mostly Japanese does not go through the Chinese path (names.find_names); here a
name is

* a listed surname and a listed given name, in kanji or kana (山田花子, 鈴木一郎, 山田さゆり,
  木村 陽一), or a listed surname and two or three kanji that make no word (田中幹子の);
* before an honorific or title, its reading or age in brackets, or beside a cue (佐藤さん,
  山田花子様, 田中部長, 石原知事, 馬渕健一（まぶち・けんいち）, 名前は…, …と申します): a
  listed surname, a surname ending a longer run of kanji, a run of kanji that is no common word
  and does not end like a role or body, a run of katakana (スミスさん) that is no role word and
  no country, a listed given name in hiragana (さくらちゃん);
* a foreign name in katakana led by a listed given name (リチャード・ストールマン);
* with the `ja` extra installed (fugashi and UniDic), a run of words the morphological analyser
  tags as a person's name (固有名詞-人名) that is not the head of a longer noun (藤本製薬,
  芥川賞; 田中社長 is a name and its title).

In text without kana, `find_japanese_full_names` reads short strings (a value, a tool call's
arguments) for a listed surname and given name in kanji alone (鈴木一郎).
"""

from __future__ import annotations

import functools
import re

from .charclass import HIRAGANA, KATAKANA, outweighs_ideographs
from .extras import ja_tagger
from .gazetteer import ja_foreign_given, ja_given, ja_places, ja_surnames, ja_zipf
from .spans import PERSON, Span

KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")  # hiragana, katakana: the text is Japanese
_KANJI_RUN = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\u3005]+")  # (々: 佐々木)
_KATAKANA_RUN = re.compile("[\u30a1-\u30fa\u30fc]+(?:[\u30fb\uff65 =\uff1d](?:[A-Z][.\uff0e]?[\u30fb\uff65]|)[\u30a1-\u30fa\u30fc]+)*")
_NAME_DOTS = re.compile("[\u30fb\uff65=\uff1d]")
_HIRAGANA_RUN = re.compile("[\u3041-\u3096]+")
_KANA_HONORIFIC = re.compile("さん|さま|くん|ちゃん")
_KANA_HONORIFICS = ("さん", "さま", "くん", "ちゃん", "はん", "どの")
# kanji honorifics and titles that follow a name, glued to its run (longest first)
_KANJI_HONORIFICS = tuple(sorted(set(
    "様 氏 君 殿 先生 教授 博士 准教授 名誉教授 部長 課長 社長 副社長 係長 室長 所長 院長 店長 会長 名誉会長 理事長 局長 "
    "次長 主任 専務 常務 取締役 頭取 選手 議員 医師 弁護士 監督 容疑者 被告 代表 先輩 夫人 嬢 女史 首相 元首相 大統領 "
    "元大統領 知事 都知事 府知事 県知事 市長 町長 村長 区長 議長 長官 大臣 外相 国防相 判事 検事 裁判官 騎手 元騎手 "
    "投手 捕手 内野手 外野手 棋士 党首 総裁 幹事長 委員長 校長 教諭 記者 特派員 被告人".split()), key=len, reverse=True))
# katakana titles after a name (菊間千乃アナウンサー, 渡辺恒雄オーナー)
_KATAKANA_TITLES = ("アナウンサー", "オーナー", "キャプテン", "プロデューサー", "ディレクター", "コーチ")
_AFTER_CUE = re.compile("と(?:申します|申し上げます|いいます|言います|申す)")
_BEFORE_CUE = re.compile(r"(?:(?:お名前|名前|氏名|担当者|患者名|顧客名|契約者|申込者|宛名|差出人)(?:は|：|:)|担当(?:者)?(?:の|は|：|:)|本名(?:は|：|:)?)[ \t]*$")
# a run of kanji that ends so is a role, a body or a place, not a name (担当者様, 営業部長)
_NOT_NAME_ENDS = frozenset("者員長社手師家屋士官医主人婦方生会部課店局所院校省庁府県市町村区国党側様殿客神皆")
# a given part with one of these is a place, a body or a thing (山口県沖, 小倉競馬場, 山田電機)
_NOT_GIVEN_CHARS = _NOT_NAME_ENDS | frozenset("都州駅港湾沖線場館寺宮城塔湖語学科業品式法費料機")
_COMMON = 4.0  # a run at least this common (wordfreq zipf) is a word
_UNLISTED = 3.3  # ... and a run with no listed surname this common (統括 3.43; 瀬川 3.18 is a name)
# katakana words for what a person is, not who (ママさん, ドライバーさん): a name otherwise,
# however common (ジョンさん); wordfreq cannot tell them apart (ジョン 4.81, モジュール 3.76)
_KATAKANA_ROLES = frozenset(
    "パパ ママ ババ ジジ サンタ ドクター シェフ マスター オーナー スタッフ ゲスト ユーザー メンバー ファン ドライバー "
    "パート バイト ナース コーチ リーダー マネージャー ママ友 パパ友 ベテラン ルーキー プロ アイドル モデル タレント "
    "ホスト ホステス バーテンダー クライアント カスタマー オペレーター エンジニア デザイナー".split())
_COMMON_KATAKANA = 4.5  # under a name key, a katakana word at least this common is no name (テスト, データ)


def _foreign_full_name(run: str) -> bool:
    """A foreign full name in katakana: two to five parts joined by ・ or ＝, the first a listed
    given name (リチャード・ストールマン, ジョージ・W・ブッシュ; not ビジネス・モデル)."""
    parts = [p for p in _NAME_DOTS.split(run) if p]
    return 2 <= len(parts) <= 5 and parts[0] in ja_foreign_given() and not any(p in ja_places() for p in parts)


_KANA_RUN = re.compile("[\u3041-\u3096\u30a1-\u30fa]+")


def is_japanese(text: str) -> bool:
    """Is `text` Japanese rather than Chinese with some kana in it: at least a quarter of its
    kana and kanji are kana (Japanese prose has about half; a Chinese text that quotes a
    Japanese word has a few)?"""
    return outweighs_ideographs(text, _KANA_RUN)


def japanese_word(s: str) -> bool:
    """Is `s` (a name the Chinese path found in Japanese text) a common Japanese word, not a
    listed surname (周辺, 定義, 寿命; not 佐藤)?"""
    return ja_zipf(s) >= _JA_WORD and _surname_at(s) == 0


_JA_WORD = 3.5


def ja_surname_len(name: str) -> int:
    """The length of the listed Japanese surname `name` starts with (the longest), or 0."""
    return _surname_at(name)


def _surname_at(run: str) -> int:
    """The length of the listed surname `run` starts with (the longest), or 0."""
    sur = ja_surnames()
    for k in (4, 3, 2, 1):
        if k <= len(run) and run[:k] in sur:
            return k
    return 0


def _surname_end(run: str) -> int:
    """Where the listed surname that ends `run` starts (the longest), or -1 (昨日石井 -> 2)."""
    sur = ja_surnames()
    for i in range(max(0, len(run) - 4), len(run)):
        if run[i:] in sur:
            return i
    return -1


def _kanji_name(run: str, context: bool) -> int:
    """The length of the name at the start of the kanji run `run` (all of it), or 0."""
    s = _surname_at(run)
    given = run[s:]
    if s and given in ja_given():
        return len(run)
    if s and context and len(given) <= 3:
        return len(run)
    if (s >= 2 and 2 <= len(given) <= 3 and ja_zipf(given) == 0 and ja_zipf(run) == 0
            and not any(c in _NOT_GIVEN_CHARS for c in given)):
        return len(run)  # 田中幹子の, 上野由岐子は: a surname and a given part that is no word
    return len(run) if context and _unlisted_name(run) else 0


def _unlisted_name(run: str) -> bool:
    """Can a run of kanji with no listed surname be a name beside an honorific (鈴原さん)? Not a
    word (統括), a role, body or place (担当者, 福島), nor a run a word ends (自由契約, 同国代表;
    a listed given name may: 馬渕健一)."""
    if not 2 <= len(run) <= 4 or ja_zipf(run) >= _UNLISTED or run[-1] in _NOT_NAME_ENDS or run in ja_places():
        return False
    tail = run[-2:]
    return len(run) < 3 or tail in ja_given() or (ja_zipf(tail) < _UNLISTED and tail not in _KANJI_HONORIFICS)


_KANA_CONT = re.compile("[\u3041-\u3096]")  # (not a particle: a name does not go on in hiragana)


def _kana_given_after(text: str, j: int) -> int:
    """The length of a listed given name in kana that starts at `j` (山田|さゆり), or 0."""
    given = ja_given()
    for k in (5, 4, 3, 2):
        if text[j : j + k] in given and (j + k >= len(text) or not _KANA_CONT.match(text, j + k)
                                         or text.startswith(_KANA_HONORIFICS, j + k)):
            return k
    return 0


def _honorific_after(text: str, j: int) -> bool:
    """An honorific, a title or a reading in brackets at text[j:] (a kanji title not glued to
    more kanji: not 選手権)."""
    if text.startswith(_KANA_HONORIFICS, j) or text.startswith(_KATAKANA_TITLES, j) or _READING.match(text, j):
        return True
    if text.startswith(_KANJI_HONORIFICS, j):
        h = next(h for h in _KANJI_HONORIFICS if text.startswith(h, j))
        return j + len(h) >= len(text) or not _KANJI_RUN.match(text, j + len(h))
    return False


# a name's reading or age in brackets after it: 馬渕健一（まぶち・けんいち）, 中村文則(27),
# 朱川湊人（しゅかわ・みなと、42）
_READING = re.compile("[（(](?:(?P<reading>[\u3041-\u3096]+(?:[・\u3000 ][\u3041-\u3096]+)?)(?:[、,][ \u3000]?[0-9０-９]{1,3})?"
                      "|[0-9０-９]{1,3})[）)]")


_SPACED = re.compile(  # 山田 花子, 斎藤 くみ子, ヤマダ ハナコ: a surname and a given name with a space between
    "([\u4e00-\u9fff\u3005]{1,4})[ \u3000]([\u4e00-\u9fff\u3005]{1,3}|[\u3041-\u3096]{1,4}[\u4e00-\u9fff]?)"
    "(?=" + "|".join(_KANJI_HONORIFICS) + "|[^\u4e00-\u9fff\u3005]|$)"
    "|([\u30a1-\u30fa\u30fc]{2,8})[ \u3000]([\u30a1-\u30fa\u30fc]{2,8})"
)


def _spaced_names(text: str, out: list[Span]) -> None:
    for m in _SPACED.finditer(text):
        a, b = m.span()
        if m.group(1) is not None:
            sur, given = m.group(1), m.group(2)
            titled = False
            for h in _KANJI_HONORIFICS if given.endswith(_KANJI_HONORIFICS) else ():  # 中島 香織氏
                if len(given) > len(h) and given.endswith(h):
                    given, b, titled = given[: -len(h)], b - len(h), True
                    break
            i = _surname_end(sur)
            if i >= 0 and (given in ja_given() or titled or _context(text, a, b)):
                out.append(Span(a + i, b, PERSON))
        elif _context(text, a, b) or (m.group(3) in _KANA_SURNAMES and m.group(4) in _KANA_GIVEN):
            out.append(Span(a, b, PERSON))


def _context(text: str, a: int, b: int) -> bool:
    """An honorific after text[a:b], or a cue before or after it."""
    return (_honorific_after(text, b) or _AFTER_CUE.match(text, b) is not None
            or _BEFORE_CUE.search(text, max(0, a - 8), a) is not None)


@functools.cache
def _short_run_re() -> tuple[re.Pattern, frozenset[str]]:
    """A run of three to seven kanji, alone, that starts with the first character of a listed
    surname of two characters or more; those surnames' first two characters. (The first
    character is matched before the look back, so the scan skips ahead on it.)"""
    two = {x for x in ja_surnames() if len(x) >= 2}
    first = "".join(sorted({x[0] for x in two}))
    k = "\u4e00-\u9fff\u3005"
    return re.compile(f"[{first}](?<![{k}].)[{k}]{{2,6}}(?![{k}])"), frozenset(x[:2] for x in two)


_SHORT = 512  # the longest string (or NUL-separated part of one) read for names without kana


def find_japanese_full_names(text: str, out: list[Span]) -> None:
    """Japanese names in short strings without kana (a value, a cell, a tool call's arguments;
    Japanese prose has kana): a run of kanji that is a listed surname of two characters or more
    and a listed given name (鈴木一郎), nothing more."""
    if len(text) <= _SHORT:
        _full_names(text, 0, out)
    elif "\x00" in text:
        pos = 0
        for part in text.split("\x00"):
            if len(part) <= _SHORT:
                _full_names(part, pos, out)
            pos += len(part) + 1


def _full_names(text: str, shift: int, out: list[Span]) -> None:
    pattern, starts = _short_run_re()
    for m in pattern.finditer(text):
        run = m.group()
        if run[:2] in starts:
            k = _surname_at(run)
            if k >= 2 and run[k:] in ja_given():
                out.append(Span(shift + m.start(), shift + m.end(), PERSON))


def _tagged_names(text: str, out: list[Span]) -> None:
    """Runs of words the analyser tags as a person's name (固有名詞-人名), with the katakana parts
    joined to them by ・ or ＝ that it tags so too or does not know (ドルゴルスレン・ダグワドルジ),
    unless nouns follow that are no title, or a word it knows joined so: the name is then the head
    of a company's, a prize's or a place's name (藤本製薬, 芥川賞, ランゲル・フィヨルド; not
    石原慎太郎東京都知事)."""
    words: list[tuple[int, int, str, bool]] = []  # (start, end, UniDic's features, unknown)
    pos = 0
    for w in ja_tagger()(text):
        surface = w.surface
        a = text.find(surface, pos)
        if a >= 0:
            pos = a + len(surface)
            words.append((a, pos, w.feature_raw, w.is_unk))
    n, i = len(words), 0
    while i < n:
        if _PERSON not in words[i][2]:
            i += 1
            continue
        j = i + 1
        while j < n and words[j][0] == words[j - 1][1]:
            if _PERSON in words[j][2]:
                j += 1
            elif _joined(text, words, j) and (_PERSON in words[j + 1][2] or words[j + 1][3]):
                j += 2
            else:
                break
        a, b = words[i][0], words[j - 1][1]
        c = b  # the nouns after the name: a title (東京都知事, 仏文学科教授) or the rest of a name
        for k in range(j, n):
            if not words[k][2].startswith(_NOUNS) or words[k][0] != c:
                break
            c = words[k][1]
        if c == b and j < n and words[j][0] == b and _joined(text, words, j):
            c = words[j + 1][1]  # a word the analyser knows joined by ・ (ランゲル・フィヨルド): a thing's name
        titled = _honorific_after(text, b) or text[b:c].endswith(_KANJI_HONORIFICS + _KATAKANA_TITLES)
        if text[a:b] not in _KATAKANA_ROLES and (b - a >= 2 or titled) and (c == b or titled):
            out.append(Span(a, b, PERSON))
        i = j


_PERSON = "固有名詞,人名"
_NOUNS = ("名詞,", "接尾辞,")


def _joined(text: str, words: list[tuple[int, int, str, bool]], j: int) -> bool:
    """Is words[j] a ・ or ＝ with a katakana word right after it?"""
    return (j + 1 < len(words) and _NAME_DOTS.fullmatch(text, words[j][0], words[j][1]) is not None
            and words[j + 1][0] == words[j][1] and _KATAKANA_RUN.fullmatch(text, words[j + 1][0], words[j + 1][1]) is not None)


def find_japanese_names(text: str, out: list[Span], japanese: bool) -> None:
    """Every Japanese person name in `text` (text with kana); `japanese`: is_japanese(text), which
    the caller has decided already (the analyser reads only text that is mostly Japanese)."""
    if japanese and ja_tagger() is not None:
        _tagged_names(text, out)
    if " " in text or "\u3000" in text:
        _spaced_names(text, out)
    for m in _KANJI_RUN.finditer(text):
        a, run = m.start(), m.group()
        context = False
        for h in _KANJI_HONORIFICS if run.endswith(_KANJI_HONORIFICS) else ():
            if len(run) > len(h) and run.endswith(h):
                # (日本同様: 同様 is a word, 様 no honorific there)
                if ja_zipf(run[-len(h) - 1 :]) < _JA_WORD and ja_zipf(run[-len(h) - 2 :]) < _JA_WORD:
                    run, context = run[: -len(h)], True
                break
        end = a + len(run)
        context = context or _context(text, a, end)
        if len(run) > 7:  # a run of kanji that long is prose, not a name and its honorific
            continue
        k = _kanji_name(run, context)
        if not k and context and len(run) >= 3:  # 昨日前田浩さん: the name after a word
            for i in range(1, len(run) - 1):
                s = _surname_at(run[i:])
                if s >= 2 and len(run) - i - s <= 3:
                    a, run, k = a + i, run[i:], len(run) - i
                    break
        if k:
            out.append(Span(a, a + k, PERSON))
        else:
            i = _surname_end(run)
            g = _kana_given_after(text, end) if i >= 0 else 0  # 山田さゆり
            if g:
                out.append(Span(a + i, end + g, PERSON))
    for m in _KATAKANA_RUN.finditer(text):
        a, b = m.span()
        if b - a < 2 or m.group() in _KATAKANA_ROLES or m.group() in ja_places():
            continue
        if _context(text, a, b) or _foreign_full_name(m.group()):
            out.append(Span(a, b, PERSON))
    if "（" in text or "(" in text:
        for m in _READING.finditer(text):  # the reading of a name found before it
            if m.group("reading") and out and out[-1].end == m.start() or any(sp.end == m.start() for sp in out):
                if m.group("reading"):
                    out.append(Span(m.start("reading"), m.end("reading"), PERSON))
    given = ja_given()
    for m in _KANA_HONORIFIC.finditer(text):  # さくらちゃん: a listed given name in hiragana before one
        p = m.start()
        for k in (5, 4, 3, 2):
            if k <= p and text[p - k : p] in given and _HIRAGANA_RUN.fullmatch(text, p - k, p):
                out.append(Span(p - k, p, PERSON))
                break


_SPACED_KANJI = re.compile("[\u4e00-\u9fff\u3005]{1,4}[ \u3000][\u4e00-\u9fff\u3005]{1,3}")


def looks_like_japanese_name(value: str) -> bool:
    """Could `value`, found under a name-like key, be a Japanese name (山田花子, 山田 花子,
    さゆり, スズキ・イチロウ)?"""
    s = re.sub("[ \u3000\u30fb\uff65]", "", value)
    if not 2 <= len(s) <= 10:
        return False
    if _KANJI_RUN.fullmatch(s):  # a listed surname, or surname and given name apart (鈴原 美咲)
        return (_surname_at(s) > 0 and len(s) - _surname_at(s) <= 3) or _SPACED_KANJI.fullmatch(value.strip()) is not None
    if re.fullmatch("[\u30a1-\u30fa\u30fc]+", s):
        return s not in _KATAKANA_ROLES and (s != value.strip() or ja_zipf(s) < _COMMON_KATAKANA)
    k = _surname_at(s)
    return s in ja_given() or (k > 0 and s[k:] in ja_given())


def ja_name(orig: str, rng_for) -> str:
    """A substitute for the Japanese name `orig`: a listed surname of the same length for its
    surname, kanji of listed given names for its other kanji, kana of the same kind for its
    kana; separators kept. The surname and the given name are each drawn from
    `rng_for(part_kind, part)` (a KeyedRandom), so 山田 alone gets the surname 山田花子 got."""
    k = _surname_at(orig)
    out = []
    if k:
        pool = _surnames_by_len().get(k)
        r = rng_for("ja_surname", orig[:k])
        out.append(r.choice(pool) if pool else "".join(r.choice(_given_kanji()) for _ in range(k)))
    r = rng_for("ja_given", orig[k:])
    for c in orig[k:]:
        if "\u3041" <= c <= "\u3096":
            out.append(r.choice(HIRAGANA))
        elif "\u30a1" <= c <= "\u30fa":
            out.append(r.choice(KATAKANA))
        elif _KANJI_RUN.match(c):
            out.append(r.choice(_given_kanji()))
        else:
            out.append(c)
    return "".join(out)


def _kana_readings(attrs: tuple[str, ...]) -> frozenset[str]:
    from faker.providers.person.ja_JP import Provider as _Ja

    return frozenset(p[1] for a in attrs for p in getattr(_Ja, a))


_KANA_SURNAMES = _kana_readings(("last_name_pairs",))
_KANA_GIVEN = _kana_readings(("first_name_female_pairs", "first_name_male_pairs"))


@functools.cache
def _surnames_by_len() -> dict[int, tuple[str, ...]]:
    out: dict[int, list[str]] = {}
    for s in sorted(ja_surnames()):
        out.setdefault(len(s), []).append(s)
    return {k: tuple(v) for k, v in out.items()}


@functools.cache
def _given_kanji() -> tuple[str, ...]:
    return tuple(sorted({c for n in ja_given() for c in n if _KANJI_RUN.match(c) and c != "\u3005"}))


def japanese_name_parts(name: str) -> list[str]:
    """The parts of a Japanese name that identify the person alone: its surname and its given
    name, each of two characters or more and not a common word (山田花子 -> 山田, 花子); the
    parts of a foreign name in katakana of three characters or more that are no common word
    (リチャード・ストールマン -> ストールマン)."""
    if _NAME_DOTS.search(name):
        return [p for p in _NAME_DOTS.split(name) if len(p) >= 3 and ja_zipf(p) < _COMMON]
    k = _surname_at(name)
    if not k or k == len(name):
        return []
    out = [name[:k]] if k >= 2 and ja_zipf(name[:k]) < _COMMON_SURNAME else []  # (listed: 三浦, 中村)
    return out + ([name[k:]] if len(name) - k >= 2 and ja_zipf(name[k:]) < _COMMON else [])


_COMMON_SURNAME = 5.0
