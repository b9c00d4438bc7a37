"""Person names, found by what they are, not only after a trigger phrase.

Latin script (English and other languages written in it): every run of capitalised words is
looked at. A word is a *first* or *last* name when one of Faker's locales lists it, and a *word*
when the English word list has it in lower case; a name that is not also a word ("Carla",
"Nakamura") is strong evidence, one that is ("Will", "Grace", "Brown") needs company: a second
name, a title, or a cue such as "said", "Dear", "customer" or a possessive. Trigger phrases
("my name is", "Regards,") still take any capitalised words, and lower-case names after them.

In German text (German function words near the candidate) a capital is no evidence: frequent
German words are words there, surnames among them too (Vogel, Bauer), and nothing is rare.

Chinese: names_zh.py.

Rare capitalised words (in no name list, no word list and not among the frequent tokens of
English) count as names in prose, never in a line of source code. `find_names` appends PERSON
spans; `mentions` and `mention_spans` find the other mentions of names already found (a
second "Lena" after "my name is Lena Andersson"); `looks_like_name` judges a whole JSON value
under a name-like key (`NAME_KEY`)."""

from __future__ import annotations

import re

from .gazetteer import (
    COMMON_TOKENS, COMMON_WORDS, EN_FIRST, EN_NOT_NAMES, ENGLISH_PROPER, ENGLISH_WORDS, NAME_FIRST, NAME_FIRST_LOWER, NAME_LAST, NAME_LAST_LOWER,
    NOT_PERSON_WORDS, PLACES_EN, TERM_HEADS, THING_NOUNS, TITLES, german_words,
)
from .charclass import ASCII_LETTERS, is_cjk, is_hangul, latin_letters, unspaced_name_char
from .names_ja import (
    KANA, find_japanese_full_names, find_japanese_names, is_japanese, ja_surname_len, japanese_name_parts, japanese_word,
    looks_like_japanese_name,
)
from .names_ko import HANGUL_RUN, find_korean_names, is_korean, korean_name_parts, looks_like_korean_name
from .names_zh import DOTS, find_chinese_names, is_doctrine, surname_len
from .evidence import context_words
from .spans import PERSON, Span
from .zh_script import simplified

# ---------------------------------------------------------------- Latin script
_UP = "A-Z" + latin_letters(upper=True)
_LOW = "a-z" + latin_letters(upper=False) + "\u0300-\u036f"  # (combining accents: decomposed text)
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
_STREET_NAMES = frozenset("Street Avenue Road Boulevard".split())  # (Lane, Court, Way are surnames too)
_HOUSE_NUMBER = re.compile(r"\d+[A-Za-z]?,?[ \t]+$")
_STREET_AFTER = re.compile(r"[ \t]+(?:Dr|Rd|St|Ave|Blvd|Ln|Ct|Pl|Hwy|Pkwy)\b\.?(?![ \t]+[A-Z][a-z])")
_INITIAL = re.compile("[" + _UP + r"]\.?$")
NAME_PARTICLES = frozenset(_PARTICLES.split("|"))  # van, de, bin: inside names
_TITLE_WORDS = frozenset(t.lower() for t in TITLES) | {"mr.", "mrs.", "ms.", "dr.", "prof.", "mx."}

# family and the people around one, right before a name: "my wife Priyanka", "my boss Grace"
_KIN_CUES = frozenset(
    "wife husband son daughter mother father mom mum dad brother sister friend boyfriend girlfriend fiance fiancee "
    "partner cousin uncle aunt nephew niece grandson granddaughter grandmother grandfather grandma grandpa "
    "boss neighbor neighbour roommate coworker classmate".split()
)
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
_DOTTED_CUES = frozenset("mr mrs ms mx dr prof attn cc".split())  # abbreviations, written with a dot
# before a capitalised word in no name list that is a frequent token ("Dear Priyanka")
_NAMING_CUES = frozenset("dear hi hello hey customer patient named called".split())
# the word right before a rare capitalised word that makes it a thing, not a person: a product
# or a tool (`a password manager such as Bitwarden`, `like KeePassXC`, `using Pydantic`)
_THING_CUES = frozenset("as like using via use uses install installs installed supports support e.g i.e vs than".split())
_MEETING_CUES = frozenset("met meet emailed".split())  # one meets people (`I met Priyanka`), not tools
_ARTICLES = frozenset("a an".split())  # (not `the`: `the Nevels novel` is a person's)
_PLACE_PREPOSITIONS = frozenset("on in into onto within".split())


def _thing_by_place(text: str, prev: str, e: int, nxt) -> bool:
    """Where a rare capitalised word stands as a thing's name: between an indefinite article and
    a noun (`a Cython wrapper`), or after a preposition of place and not a
    possessive (`on Wiktionary`, `in Pyodide`; not `in Priyanka's team`)."""
    if prev in _ARTICLES:
        return (text.startswith(" ", e) and nxt is not None and nxt.start(1) == e + 1
                and nxt.group(1) not in _PERSON_VERBS and nxt.group(1) not in _POST_CUES)
    return prev in _PLACE_PREPOSITIONS and not text.startswith(("'s", "\u2019s"), e)


_LIST_BEFORE = re.compile(r"([A-Z][\w.+#-]*)(?:,[ \t]+|[ \t]+(?:and|or)[ \t]+|,[ \t]+(?:and|or)[ \t]+)$")
_LIST_AFTER = re.compile(r"(?:,[ \t]+|[ \t]+(?:and|or)[ \t]+|,[ \t]+(?:and|or)[ \t]+)([A-Z][\w.+#-]*)")


def _listed_with_things(text: str, s: int, e: int) -> bool:
    """Is text[s:e] an item of a list with a product, a place or a language in it, up to three
    items away (`Linux, OSX, Cygwin or other`, `Google and Numpydoc format`)?"""
    a, b = s, e
    for _ in range(3):
        before = _LIST_BEFORE.search(text, max(0, a - 40), a) if a else None
        after = _LIST_AFTER.match(text, b)
        if before is None and after is None:
            return False
        if any(m is not None and m.group(1) in NOT_PERSON_WORDS for m in (before, after)):
            return True
        a = before.start() if before is not None else 0
        b = after.end() if after is not None else len(text) + 1
    return False


_POST_CUES = frozenset("said says asked wrote replied told called emailed mentioned".split())
_TITLE_BEFORE = re.compile(r"(?<![A-Za-z])(?:(?:Mr|Mrs|Ms|Miss|Dr|Prof|Mx)\.?|(?i:mr|mrs|ms|dr|prof)\.|Herrn?|Frau)[ \t]{1,3}$")
_NEXT_WORD = re.compile(r"[ \t]*,?[ \t]*([a-z]+)")
_INITIAL_BEFORE = re.compile(r"(?<![\w.])[A-Z]\.?[ \t]{1,2}$")  # "J. " before Smith (not "U.S. ")
_GIVEN_AFTER = re.compile(r",[ \t]{1,2}([A-Z][a-z]+)(?![\w-])")  # ", John" after Smith
_SENTENCE_END = frozenset(".!?\n\r\"'\u201c\u201d([{*\u2022>-:\t\u00bf\u00a1#|")  # (¿ and ¡ open a Spanish sentence)

# German function words, hardly ever English ones: two of them near a candidate make its
# sentence German, where every noun is capitalised (Buch, Kopf, Vogel)
_GERMAN = re.compile(r"(?<![\w\-])(?:Der|Das|Er|Im|Ich|Ein|Eine|Wir|Sie|Es|Mit|Auf|Für|Bei|Nach|Von|Zu|muss|soll|hat|und|der|das|nicht|ist|ich|du|er|sie|mit|auf|für|über|ein|eine|einen|zu|von|dem|des|sich"
                     r"|auch|wir|ihr|uns|mir|dir|mich|dich|ihn|ihm|sind|wird|noch|nach|bei|aus|wie|oder|aber|haben|habe|werden"
                     r"|sehr|schon|kein|keine|bitte|kann|kannst|können|zum|zur|vom|ob|heute|morgen|jetzt|danke"
                     r"|im|beim|ins|einem|einer|eines|diese|dieser|dieses|wurde|wurden|gibt|steht|nur|hier|dann|wenn|weil|dass|doch|immer)(?![\w\-])")
_GERMAN_WINDOW = 120  # characters either side of a candidate
_GERMAN_CUES = frozenset("herr frau liebe lieber hallo kunde kundin patient patientin kollege kollegin".split())


_LOWER_WORD = re.compile("[" + "a-z\u00df-\u00ff" + "]{3,}")
# what almost every German text has somewhere: a text with none of these is not looked at closer
# (one regular expression, which starts only at spaces, and the letters only in non-ASCII text)
_GERMAN_HINT_WORDS = re.compile(" (?:und |der |die |das |ist |nicht |ich |du |er |sie |mit |ein|zu |auf |muss |hat |im |Der |Die |Das |Ich |Ein |Wir )")
_GERMAN_HINT_STARTS = ("Der ", "Die ", "Das ", "Ich ", "Ein ", "Wir ", "Er ", "Es ")  # a sentence's first word
_GERMAN_HINT_LETTERS = ("\u00e4", "\u00f6", "\u00fc", "\u00df")


def _maybe_german(text: str) -> bool:
    return (_GERMAN_HINT_WORDS.search(text) is not None or text.startswith(_GERMAN_HINT_STARTS)
            or (not text.isascii() and any(h in text for h in _GERMAN_HINT_LETTERS)))


def _german_near(text: str, s: int, e: int) -> bool:
    """Is the text around [s, e) German? Two German function words within _GERMAN_WINDOW, or
    one and two lower-case words that are frequent German words and no English ones."""
    a, b = max(0, s - _GERMAN_WINDOW), min(len(text), e + _GERMAN_WINDOW)
    m = _GERMAN.search(text, a, b)
    if m is None:
        return False
    if _GERMAN.search(text, m.end(), b) is not None:
        return True
    de, en = german_words(), ENGLISH_WORDS
    n = 0
    for w in _LOWER_WORD.findall(text, a, b):
        if w in de and w not in en:
            n += 1
            if n >= 2:
                return True
    return False


def _as_german(w: str, c: tuple[bool, bool, bool, bool]) -> tuple[bool, bool, bool, bool]:
    """A word's class as German text reads it: a frequent German word is a word (a surname that
    is one needs company), and no capitalised word is rare (a noun, a compound)."""
    return (c[0], c[1], c[2] or w.lower() in german_words(), False)


# a memo of word classes: (first name, last name, English word, rare). "rare": none of the
# three and not among the frequent tokens of English text either: most such capitalised words
# are names (Zeliha, Balabanov), and a Kubernetes or an Nginx is frequent.
_CLASS: dict[str, tuple[bool, bool, bool, bool]] = {}
# the words that declare a value (data/context-*.txt: Passwort, Kennwort, Konto, Karte, ...) are
# words in every language, never a person's name
_CONTEXT_WORDS = frozenset(
    w[:1].upper() + w[1:] for name in ("password", "key", "pin", "username", "card", "iban", "account", "ssn", "phone")
    for lang, phrases in context_words(name).items() if lang not in ("filler", "copula") for w in phrases if " " not in w and w.isalpha()
)


# pronouns of the polite and familiar address, capitalised in German letters (`ändern Sie Ihr
# Passwort`): words, no one's name
_PRONOUNS = frozenset("Sie Ihr Ihre Ihren Ihrem Ihrer Ihnen Du Dich Dir Dein Deine Euch Euer Eure Er Es".split())


# English word formation: a word in no list made of English words is a term, no one's name
# (`Unencoded`, `Backported`, `Deprecations`, `Pythonic`, `Lookahead`, `Keepsafe`, `Makefile`).
# Prefixes and suffixes that surnames seldom start or end with (not de-, re-, -er, -es).
_EN_PREFIXES = ("un", "non", "pre", "back", "sub", "over", "under", "multi", "auto", "dis", "mis", "inter", "super", "micro")
_EN_SUFFIXES = ("ed", "ing", "able", "ible", "ic", "ly", "ness", "ment", "ful", "less", "ity", "ize", "ise", "ized", "ised")


def _english_stem(x: str) -> bool:
    """x is an English word, or one with a suffix (`s` after a stem of seven letters or more)."""
    if x in ENGLISH_WORDS:
        return True
    if x.endswith("s") and len(x) >= 8 and x[:-1] in ENGLISH_WORDS:
        return True
    for suf in _EN_SUFFIXES:
        if x.endswith(suf) and len(x) - len(suf) >= 4:
            stem = x[: -len(suf)]
            if stem in ENGLISH_WORDS or stem + "e" in ENGLISH_WORDS:
                return True
    return False


# how English surnames made of words end (toponyms: Willshire, Blackwood, Ashford)
_PLACE_ENDINGS = tuple(
    "shire ford field wood land worth well stone brook hill dale more wick ridge bury borough berg burg stein mann "
    "water house hall burn croft gate mont ville ington cliff combe mere moor thorpe grove wall side".split())


def english_compound(w: str) -> bool:
    """`w` (one capitalised word in no name list) is English word formation: a word with an
    English suffix, an English prefix before a word, or two common English words of four
    letters or more (keep+safe; Bergstrand, Copeland would be too, but they are listed names)."""
    low = w.lower()
    if not low.isalpha():
        return False
    if _english_stem(low):
        return True
    for pre in _EN_PREFIXES:
        if low.startswith(pre) and len(low) - len(pre) >= 4 and _english_stem(low[len(pre):]):
            return True
    if low.endswith(_PLACE_ENDINGS):
        return False
    for i in range(4, len(low) - 3):
        a, b = low[:i], low[i:]
        if a in ENGLISH_WORDS and a in COMMON_TOKENS and b in COMMON_TOKENS and _english_stem(b):
            return True
    return False


def _classify(w: str) -> tuple[bool, bool, bool, bool]:
    hit = _CLASS.get(w)
    if hit is not None:
        return hit
    lower = w.lower()
    if "-" in w:
        parts = [p for p in w.split("-") if p]
        first = w in NAME_FIRST or all(p in NAME_FIRST for p in parts)
        last = w in NAME_LAST or any(p in NAME_LAST for p in parts) or (
            len(parts) > 1 and not any(p.lower() in ENGLISH_WORDS or len(p) >= 18 for p in parts)
        )
        word = all(p.lower() in ENGLISH_WORDS for p in parts)
    else:
        first, last = w in NAME_FIRST, w in NAME_LAST
        word = lower in ENGLISH_WORDS
        if w[:2] in ("O'", "O\u2019", "D'", "D\u2019"):
            last = last or not word
    if (w in EN_NOT_NAMES or w in _CONTEXT_WORDS or w in _PRONOUNS or lower.endswith(("passwort", "kennwort"))
            or ("-" in w and w.rsplit("-", 1)[-1] in NOT_PERSON_WORDS)):  # Serbo-Croatian, Indo-European
        first = last = False
        word = True
    elif w in NOT_PERSON_WORDS:  # Victoria, Jackson, Paris: a name only beside another name
        word = True
    # a proper noun of the English lists (Gregorian, Manhattan) is not rare: it may be a surname
    # too (Whitfield), so it counts beside a first name, but not alone
    # (and no word of 18 letters or more: `Wiederherstellungsphrase` is a compound noun, no surname)
    rare = (not (first or last or word) and len(w) >= 3 and w not in ENGLISH_PROPER
            and not any(p.lower() in COMMON_TOKENS or len(p) >= 18 or english_compound(p) for p in w.split("-")))
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


def _kin_before(text: str, s: int) -> bool:
    """Is the word right before position s, with only spaces between, one of _KIN_CUES
    ("my wife Priyanka"; not "... my son. Strong ...")?"""
    i = s
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    e = i
    while i > 0 and e - i < 14 and text[i - 1] in ASCII_LETTERS:
        i -= 1
    return e < s and text[i:e].lower() in _KIN_CUES


def _prev_word(text: str, s: int) -> str:
    """The word right before position s, lower case: ASCII letters, then an optional dot, spaces,
    an optional colon or comma and spaces (looked for within 24 characters; a line break right
    before s may stand between)."""
    lo = max(0, s - 24)
    i = s
    if i > lo and text[i - 1] == "\n":
        i -= 1
    while i > lo and text[i - 1] in " \t":
        i -= 1
    if i > lo and text[i - 1] in ":,":
        i -= 1
        while i > lo and text[i - 1] in " \t":
            i -= 1
    dot = i > lo and text[i - 1] == "."
    if dot:
        i -= 1
    e = i
    while i > lo and text[i - 1] in ASCII_LETTERS:
        i -= 1
    word = text[i:e].lower()
    # after a full stop only an abbreviation is the word before ("Attn. Smith"; "the agent. Such")
    return word if not dot or word in _DOTTED_CUES else ""


# A line of source code (a statement, a declaration, a comment, markup): there a capitalised
# word is mostly an identifier (class Iterable, cls is Hashable:), so only names of the name
# lists count, never a word merely because it is rare.
# how a line of code starts (a keyword, a comment, a bracket, an assignment)
_CODE_START = re.compile(
    r"[ \t]*(?:def |class |import |from [\w.]+ import|return\b|raise |assert |if |for |while |elif |else:|try:|except\b|finally:"
    r"|with |async |await |@\w|#|//|/\*|\*|[{}\[\]<]|(?:const|let|var|function|public|private|static|void|int|fn|func|pub|use|package|type|interface) )"
    r"|\s*\w[\w.]*\s*[+\-*/|&]?=\s*\S"
)
_QUOTED_CAP = re.compile(r"[\"'][A-Z]\w*[\"'],")  # "Foo", in a list of strings
_LINE_ENDS = frozenset(";{}[](,")


def _code_line(line: str) -> bool:
    """Does this line (no line break in it) look like source code: a statement, a declaration,
    a comment, markup? It starts like one (_CODE_START), ends like one (in ; { } [ ] ( , or a
    colon after a word, or a closing parenthesis), or has an operator (== != <= >= => -> ::x) or
    a call (name( ) in it."""
    if _CODE_START.match(line):
        return True
    r = line.rstrip()
    if not r:
        return False
    last = r[-1]
    if last in _LINE_ENDS or last == ")":
        return True
    if last in ":{" and r[:-1].rstrip().endswith(")"):
        return True
    t = line.rstrip(" \t")
    if len(t) >= 2 and t[-1] == ":" and not t[-2].isspace():
        return True
    if "=" in line and ("==" in line or "!=" in line or "<=" in line or ">=" in line or "=>" in line):
        return True
    if "->" in line:
        return True
    p = line.find("(", 1)
    while p > 0:
        c = line[p - 1]
        if c.isalnum() or c == "_":
            return True
        p = line.find("(", p + 1)
    p = line.find("::")
    while p >= 0:
        c = line[p + 2 : p + 3]
        if c and (c.isalnum() or c == "_"):
            return True
        p = line.find("::", p + 1)
    return ('",' in line or "'," in line) and _QUOTED_CAP.search(line) is not None


_CODE_CHARS = re.compile(r"[(=:#/{,]")


class _CodeLines:
    """Which lines of a text look like source code, judged a line at a time when first asked
    (most texts have a name candidate on a few of their lines only). A NUL (between the strings
    of a batch) ends a line too, so each string is judged as if alone."""

    __slots__ = ("text", "any", "nul", "memo", "_things")

    def __init__(self, text: str) -> None:
        self.text = text
        self.any = _CODE_CHARS.search(text) is not None  # no line is code without one of these
        self.nul = "\x00" in text
        self.memo: dict[int, bool] = {}
        self._things: bool | None = None

    def things(self) -> bool:
        """Does the text hold a noun of data/thing_nouns.txt at all (asked once)?"""
        if self._things is None:
            self._things = _THING_NOUN.search(self.text) is not None
        return self._things

    def at(self, s: int) -> bool:
        if not self.any:
            return False
        text = self.text
        a = text.rfind("\n", 0, s) + 1
        if self.nul:
            a = max(a, text.rfind("\x00", 0, s) + 1)
        hit = self.memo.get(a)
        if hit is None:
            b = text.find("\n", s)
            b = len(text) if b < 0 else b
            if self.nul:
                z = text.find("\x00", s, b)
                b = z if z >= 0 else b
            hit = self.memo[a] = _code_line(text[a:b])
        return hit


def _latin(text: str, out: list[Span]) -> None:
    code: _CodeLines | None = None
    maybe_german: bool | None = None
    plain = _PLAIN
    for m in _RUN.finditer(text):
        g0 = m.group()
        if g0 in plain:  # one plain word, the most common match by far: The, This, Property
            continue
        b = m.start()
        if b and (text[b - 1].isalnum() or text[b - 1] in _GLUED_BEFORE):
            continue
        if code is None:
            code = _CodeLines(text)
            maybe_german = _maybe_german(text)
        german = maybe_german and _german_near(text, b, m.end())
        if " " not in g0 and "\u00a0" not in g0:  # one word, the usual candidate (Price, Carla)
            c = _as_german(g0, _classify(g0)) if german else _classify(g0)
            if not (_only_word(c) or g0.lower() in _TITLE_WORDS or _STREET_AFTER.match(text, m.end())):
                _judge(text, [(b, m.end(), g0, c)], -1, out, code, german)
            continue
        pieces = [(p.start(), p.end(), p.group()) for p in _PIECE.finditer(g0)]
        base = m.start()
        words = []  # (start, end, word, first, last, word)
        for a, b, w in pieces:
            if _INITIAL.match(w) or w in NAME_PARTICLES:
                words.append((base + a, base + b, w, None))
            else:
                words.append((base + a, base + b, w, _as_german(w, _classify(w)) if german else _classify(w)))
        # titles inside the run ("Dr Nakamura", and "Cheriton Dr", where it is no title) and
        # plain words at either end ("Patient Eleanor", "Eleanor Street") are not the name
        title_at = -1
        # (in German a noun stands before a name: Kunde Markus Weber, Kollegin Anna)
        while words and (words[0][3] is None or words[0][2].lower() in _TITLE_WORDS or _only_word(words[0][3])
                         or (german and len(words) > 1 and words[0][2].lower() in german_words())):
            if words[0][2].lower() in _TITLE_WORDS and len(words) > 1:
                title_at = words[0][0]
            words.pop(0)
        street = False
        while words and (words[-1][3] is None or words[-1][2].lower() in _TITLE_WORDS or _only_word(words[-1][3])):
            if words[-1][3] is not None and _after_particle(words, len(words) - 1):
                break  # Alex de Grunt: a particle's word is a surname, whatever else it is
            street = street or words[-1][2] in _STREET_WORDS
            words.pop()
        if len(words) > 1 and (words[-1][2] in _STREET_NAMES or (
                words[-1][2] in _STREET_WORDS and _HOUSE_NUMBER.search(text, max(0, words[0][0] - 8), words[0][0]))):
            street = True  # Franklin Street; 12 Baker Lane
        if not words or street or _STREET_AFTER.match(text, m.end()):
            continue  # 12 Cheriton Dr, Baker Street: a street, not a person
        # a plain word inside ("Carla And Sandra" in a title-cased line) splits the run
        groups: list[list] = [[]]
        for k, w in enumerate(words):
            if w[3] is not None and _only_word(w[3]) and not _after_particle(words, k):
                groups.append([])
            else:
                groups[-1].append(w)
        for g in groups:
            while g and g[-1][3] is None:
                g.pop()
            if g:
                _judge(text, g, title_at if g is groups[0] else -1, out, code, german)


def _after_particle(words: list, k: int) -> bool:
    """Does words[k] follow a particle (van, de, bin, ...) with a name word before it?"""
    return k >= 2 and words[k - 1][3] is None and words[k - 1][2] in NAME_PARTICLES and words[k - 2][3] is not None


_LOWER_WINDOW = 4000  # characters either side looked at (detection stays local)


def _lower_whole_words(text: str, s: int, e: int):
    """(start, end, string start, string end) of each whole-word lower-case mention of text[s:e]
    within 4,000 characters and its own string (a NUL separates the strings of a batch)."""
    low = text[s:e].lower()
    lo_bound, hi_bound = max(0, s - _LOWER_WINDOW), min(len(text), e + _LOWER_WINDOW)
    a = text.rfind("\x00", lo_bound, s) + 1 or lo_bound
    b = text.find("\x00", e, hi_bound)
    b = hi_bound if b < 0 else b
    i = text.find(low, a, b)
    while i != -1:
        j = i + len(low)
        if (i == a or not text[i - 1].isalpha()) and (j == b or not text[j].isalpha()):
            yield i, j, a, b
        i = text.find(low, j, b)


def _written_lower(text: str, s: int, e: int) -> bool:
    """The string holding text[s:e] writes this capitalised word in lower case too, as a whole
    word (`Field` and `field`, `Numba` and `import numba`): a term or an identifier, not a
    person."""
    return next(_lower_whole_words(text, s, e), None) is not None


_IDENT_EDGE = frozenset("./_-`=:[")
_IDENT_AFTER = frozenset("=<>+*^|&[")


def _written_as_identifier(text: str, s: int, e: int) -> bool:
    """The string holding text[s:e] writes this word in lower case as an identifier too: in a
    path or a URL, a module, an option (`Textualize/rich`, `rich.print`, `-m rich`, `import
    rich`); so a capitalised "Rich" there names the thing, not a person."""
    for i, j, a, b in _lower_whole_words(text, s, e):
        before = text[i - 1] if i > a else ""
        after = text[j] if j < b else ""
        if (before in _IDENT_EDGE and before) or (after in _IDENT_EDGE and after and after not in ".:") or (
                after in ".:" and j + 1 < b and text[j + 1].isalnum()) or text.endswith(("import ", "install "), a, i):
            return True
    return False


def _only_word(c: tuple[bool, bool, bool, bool]) -> bool:
    return c[2] and not c[0] and not c[1]


# articles, determiners and pronouns of the European languages: before a lower-case word or an
# acronym they start a sentence (`Le chat`, `Das Passwort muss`, `El PIN`), they are no one's name
_FUNCTION_WORDS = frozenset(
    "Le La Les Un Une Des Du Ce Cette Ces Il Elle Ils Elles Nous Vous Je Mon Ma Mes Son Sa Ses Notre Votre Leur Leurs "
    "Der Die Das Den Dem Ein Eine Einen Einem Einer Ich Wir Mein Meine Dein Deine Sein Seine Unser Unsere Dieser Diese Dieses "
    "El Los Las Una Unos Unas Mi Tu Nuestro Nuestra Este Esta Estos Estas Ese Esa "
    "Os As Um Uma Meu Minha Seu Sua Nosso Nossa Esse Essa Isso Isto "
    "Gli Uno Questo Questa Quel Quella Het Een Deze Dit".split())


_ACRONYM = re.compile(r"[A-Z]{2,6}(?![\w])")
_CAP_WORDS_AFTER = re.compile(r"(?:[ \t]+[A-Z][a-z]+){1,3}")
# one or two lower-case words (or an acronym) after a capitalised word: `Wayland backend`, `Myers
# diff algorithm`, `Mac OS`
_BETWEEN_NOT = frozenset(
    "the a an to of in on at by for from with and or but as is are was were be been has have had will would can "
    "could should may might must do does did not no that this these those it its his her their our your my me him "
    "them us we you they he she who which what when where".split())
_THING_NOUN = re.compile(r"(?i)(?<![\w])(?:" + "|".join(sorted(THING_NOUNS, key=len, reverse=True)) + r")(?![\w])")
_DETERMINERS = frozenset("the a an its this that these those our your their his her any each every whose".split())
_GAP = r"(?:[ \t]+|[ \t]*\n[ \t]*)"
_THING_AFTER = re.compile(_GAP + r"([a-z]+|[A-Z]{2,3})(?![\w'\u2019-])(?:" + _GAP + r"([a-z]+)(?![\w'\u2019-]))?")
_ADJ_BEFORE = re.compile(r"(?<![\w-])([A-Za-z]+)" + _GAP + r"([a-z][a-z-]+)" + _GAP + "$")


def _thing_noun_follows(text: str, s: int, e: int) -> bool:
    """Does text[s:e] name a thing by the noun after it (data/thing_nouns.txt), right after it
    or one lower-case word on, with a determiner before it (`the Wayland backend`, `a Wayland
    session`, `the Myers diff algorithm`), or an acronym of the list after it (`Mac OS`,
    `Travis CI`)? (Without the determiner `give Tom server access` names a person.)"""
    m = _THING_AFTER.match(text, e)
    if m is None:
        return False
    one, two = m.group(1), m.group(2)
    if one.isupper():
        return one.lower() in THING_NOUNS
    if one not in THING_NOUNS and not (two is not None and two in THING_NOUNS and one not in _PERSON_VERBS
                                       and one not in _BETWEEN_NOT):
        return False
    prev = _prev_word(text, s)
    if prev in _DETERMINERS:
        return True
    # a determiner and an adjective before it (`the slow Huffman decoder`, `the published Myers algorithm`)
    m = _ADJ_BEFORE.search(text, max(0, s - 40), s)
    return m is not None and m.group(1).lower() in _DETERMINERS and m.group(2) in ENGLISH_WORDS


def _thing_in_text(text: str, s: int, e: int) -> bool:
    """Does the text around text[s:e] (4,000 characters either side) name the same word as a
    thing somewhere (`_thing_noun_follows`: `Native Wayland Support` where a paragraph on says
    `a Wayland session`)?"""
    w = text[s:e]
    lo_bound, hi_bound = max(0, s - _LOWER_WINDOW), min(len(text), e + _LOWER_WINDOW)
    i = text.find(w, lo_bound, hi_bound)
    while i != -1:
        j = i + len(w)
        if (i == 0 or not text[i - 1].isalnum()) and _thing_noun_follows(text, i, j):
            return True
        i = text.find(w, j, hi_bound)
    return False


def _term_follows(text: str, e: int) -> bool:
    """Do up to three capitalised English words after text[:e] end in a noun that ends a thing's
    name (data/term_heads.txt: `Form`, `Number`, `Research`)?"""
    m = _CAP_WORDS_AFTER.match(text, e)
    if m is None:
        return False
    words = m.group().split()
    for w in words:
        lw = w.lower()
        if lw in TERM_HEADS:
            return True
        if lw not in ENGLISH_WORDS:
            return False
    return False
_CAP_WORD = re.compile(r"[A-Z\u00c0-\u00de][a-z\u00df-\u00ff]+")


def _common_noun_at(text: str, i: int) -> bool:
    """A capitalised word at text[i] that is a frequent German or an English word and no listed
    name: a noun after an article (`Das Passwort`), not a name's second part."""
    m = _CAP_WORD.match(text, i)
    if m is None:
        return False
    w = m.group()
    lw = w.lower()
    return (lw in german_words() or lw in ENGLISH_WORDS) and w not in NAME_FIRST and w not in NAME_LAST


def _judge(text: str, g: list, title_at: int, out: list[Span], code: _CodeLines, german: bool = False) -> None:
    s, e = g[0][0], g[-1][1]
    if e < len(text) and text[e] in _IDENT_AFTER and not (
            text[e] == "[" and (text[e + 1 : e + 2].isdigit() or text.startswith(("[at]", "[dot]"), e))):
        return  # an identifier glued to an operator (`Le=Y=0`, `Le++`, `List[str]`; not a citation's `[1]`)
    if len(g) > 1 and text[s:e] in PLACES_EN:  # Costa Rica, San Marino
        return
    if _term_follows(text, e) or (len(g) > 1 and g[-1][2].lower() in TERM_HEADS) or (code.things() and _thing_in_text(text, s, e)):
        return  # `Backus-Naur Form`, `Unique Master Citizen Number`, `Wolfram Research`: a term
    if len(g) == 1 and g[0][2] in _FUNCTION_WORDS and e + 1 < len(text) and text[e] == " " and (
            text[e + 1].islower() or _ACRONYM.match(text, e + 1) or _common_noun_at(text, e + 1)):
        return  # (`El perro`, `El PIN caducó`, `Das Passwort lautet`)
    listed = any(c is not None and (c[0] or c[1]) for _, _, _, c in g)
    if (not listed or any(c is not None and c[3] for _, _, _, c in g)) and code.at(s):
        # in a line of code only listed names count: no rare words, no capital-in-sentence
        if not listed:
            return
        g = [(a, b, w, c if c is None else (c[0], c[1], c[2], False)) for a, b, w, c in g]
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
        # (a first word that is a common token but no name and no English word, before a surname
        # that is a word too, is a term: Callback Hell)
        ok = (bool(strong) or (first[0] and (last[1] or unknown_last)) or (unknown_first and last[1] and not german
                                                                          and not (last[2] and len(named) == 2))
              or (not german and all(not (w[3][0] or w[3][1] or w[3][2]) for w in named)  # Kimiko Hoshino: no words
                  and not any(english_compound(w[2]) for w in named)))  # (Runtime Deprecations: word formation)
        if not ok and (first[0] or first[1]) and (prev in _WEAK_CUES or (german and prev in _GERMAN_CUES)):
            ok = True
        elif (ok and first[2] and len(named) == 2 and not (last[0] or last[1] or last[2]) and _sentence_start(text, s)
              and named[0][2].lower() in COMMON_WORDS and named[0][2] not in EN_FIRST):
            # `Add Cython optimization`, `Made Cython line tracing`: a word that starts a sentence
            # and a rare word are a name only where something says a person follows
            nxt = _NEXT_WORD.match(text, e)
            ok = prev in _WEAK_CUES or text.startswith(("'s", "\u2019s", ","), e) or (
                nxt is not None and ((nxt.group(1) in _PERSON_VERBS and nxt.group(1) != "and") or nxt.group(1) in _POST_CUES
                                     or nxt.group(1).endswith("ed")))
    else:
        c = first
        # a surname that is a word too, with an initial before it or a first name after it (J. Smith,
        # Smith, John; not Paris, France or Chipmunk Lane, Warren)
        if c[1] and c[2] and text[s:e] not in NOT_PERSON_WORDS and text[s:e] not in _STREET_WORDS:
            initial = _INITIAL_BEFORE.search(text, max(0, s - 6), s)  # J. Smith
            if initial is not None:
                prev = _prev_word(text, initial.start())  # Signed: J. Smith
            given = _GIVEN_AFTER.match(text, e)  # Smith, John
            listed = initial is not None or (given is not None and given.group(1) in NAME_FIRST
                                             and given.group(1) not in NOT_PERSON_WORDS)
        else:
            listed = False
        nxt = _NEXT_WORD.match(text, e)
        post = text.startswith(("'s", "\u2019s"), e) or (nxt is not None and nxt.group(1) in _POST_CUES)
        if (c[0] or c[1]) and not c[2]:  # a name that is no word: Carla, Eleanor, Nakamura
            ok = True
        elif c[0] or c[1]:  # Will, Grace, Brown: a word too; a name where a word has no capital
            # (in German every noun has one: there only a cue says so)
            ok = prev in _STRONG_CUES or post or listed or _kin_before(text, s) or (german and prev in _GERMAN_CUES) or (
                not german and _capital_mid_sentence(text, s) and text[s:e] not in NOT_PERSON_WORDS and not code.at(s)
                and not _written_lower(text, s, e))
            if ok and not listed and not _kin_before(text, s) and _written_as_identifier(text, s, e):
                return  # `powered by Rich` where the text has `import rich`
        else:  # unknown capitalised word: a rare one, or where the context says it is a name
            ok = prev in _NAMING_CUES or prev in _MEETING_CUES or _kin_before(text, s)
            if c[3] and not ok and (prev in _THING_CUES or _written_lower(text, s, e) or _thing_by_place(text, prev, e, nxt)
                                    or _listed_with_things(text, s, e)):
                return  # a product (`such as Bitwarden`, `a Cython wrapper`, `on Wiktionary`), a term the text writes in lower case too (Numba, numba)
            if c[3] and not ok:
                # at a sentence start a rare word may be any foreign word ("Svar till ..."):
                # there a name is followed by a comma, a possessive or a verb of the person
                ok = not _sentence_start(text, s) or post or text.startswith((",", ":"), e) or (
                    nxt is not None and nxt.group(1) in _PERSON_VERBS)
    if ok:
        out.append(Span(title_at if title_at >= 0 else s, e, PERSON))


# ---------------------------------------------------------------- names in capitals
# JOHN SMITH, ELEANOR R. WHITFIELD-BARNES (forms, headers, records): two to four words in capitals
_CAPS_RUN = re.compile(
    "[" + _UP + "]{2}[" + _UP + "'\u2019\\-]*(?:[ \t]+(?:[" + _UP + "]\\.?[ \t]+)?[" + _UP + "][" + _UP + "'\u2019\\-]+)+"
    r"(?![\w(@/\\]|\.\w)"
)


def _caps(text: str, out: list[Span]) -> None:
    """Names written in capitals: a listed first name and a listed surname, with at most two
    words between them that are no plain English words (acronyms, headings and shouted sentences
    have words of their own: ORDER BY, TABLE OF CONTENTS, I TOLD JOHN SMITH stays JOHN SMITH)."""
    for m in _CAPS_RUN.finditer(text):
        b = m.start()
        if b and (text[b - 1].isalnum() or text[b - 1] in _GLUED_BEFORE):
            continue
        words = []  # (start, end, classification) of each word in capitals (initials left out)
        for p in _PIECE.finditer(m.group()):
            w = p.group()
            if len(w) > 1 and not w.endswith("."):
                words.append((b + p.start(), b + p.end(), _classify(w[0] + w[1:].lower())))
        group: list = []
        for w in [*words, None]:
            if w is not None and not _only_word(w[2]):
                group.append(w)
                continue
            # a group of words that are names or no words: first name ... surname
            while group and not group[0][2][0]:
                group.pop(0)
            while group and not group[-1][2][1]:
                group.pop()
            if 2 <= len(group) <= 4:
                out.append(Span(group[0][0], group[-1][1], PERSON))
            group = []


# ---------------------------------------------------------------- lists of names
# a name word right after or before a name found, across a comma or "and" (Attendees: Bob,
# Alice, Carol; Bob and Alice): listed with a person, a name that is also a word is one too
# (a word alone between the separators: not the end of a street or a place, Chipmunk Lane, Warren)
_LIST_NEXT = re.compile(r"(?:,[ \t]*|[ \t]+(?:and|&|or)[ \t]+)(" + _WORD + r")(?![\w'\u2019-]|[ \t]+[" + _UP + "])")
_LIST_PREV = re.compile(r"(?<![\w'\u2019-])(" + _WORD + r")(?:,[ \t]*|[ \t]+(?:and|&|or)[ \t]+)$")
_CAPITALISED_BEFORE = re.compile(r"[" + _UP + r"][\w'\u2019-]*[ \t]+$")


def listed_beside(text: str, found: list[Span], out: list[Span]) -> None:
    """The listed first names and surnames beside the Latin-script names `found` in a list,
    added to `out` (and theirs beside them, along the list). A list starts from a first name
    (Alice, Will) or a surname that is no English word, not from a surname that is one (White,
    in Red, White and Blue)."""
    taken = {(sp.start, sp.end) for sp in out}
    todo = [sp for sp in found if sp.kind == PERSON and text[sp.start].isascii() and text[sp.start].isalpha()
            and any(c[0] or (c[1] and not c[2]) for c in map(_classify, text[sp.start : sp.end].split()))]
    while todo:
        sp = todo.pop()
        for m in (_LIST_NEXT.match(text, sp.end), _LIST_PREV.search(text, max(0, sp.start - 40), sp.start)):
            if m is None or (m.start(1), m.end(1)) in taken or _CAPITALISED_BEFORE.search(text, max(0, m.start(1) - 30), m.start(1)):
                continue
            w = m.group(1)
            first, last, _, _ = _classify(w)
            if (first or last) and w not in NOT_PERSON_WORDS and w not in _STREET_WORDS:
                new = Span(m.start(1), m.end(1), PERSON)
                taken.add((new.start, new.end))
                out.append(new)
                todo.append(new)


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
_CODE_TYPES = frozenset("None True False Optional Literal Any List Dict Set Tuple Union Type Callable Sequence Iterable "
                        "Mapping Iterator Generator Annotated ClassVar Final Self String Integer Boolean Object Array".split())
_CODE_AFTER = frozenset("[(|=<")


def _code_after(text: str, i: int) -> bool:
    """What follows a trigger's name makes it code: `name: Optional[str]`, `Name.attr`; a full
    stop that ends the sentence (`my name is Randy Cox. Antworten ...`) does not."""
    c = text[i : i + 1]
    return c in _CODE_AFTER or (c == "." and (text[i + 1 : i + 2].isalnum() or text[i + 1 : i + 2] == "_"))
_NAME_COLON = _EN_TRIGGERS["name:"][0]
_EN_TITLE = re.compile(r"(?P<title>(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?[ \t]{1,4})(?P<name>" + _CAP + r"(?:[ \t]" + _CAP + r")?)")
_TITLE_FIND = ("Mr", "Ms", "Dr", "Miss", "Prof")


def _add_trigger_name(text: str, m: re.Match, strong: bool, out: list[Span]) -> None:
    if m.groupdict().get("lname"):  # my name is lena andersson: known names only
        words = m.group("lname").split()
        keep = []
        for k, w in enumerate(words):
            if len(w) <= 3 and w in ENGLISH_WORDS and (k == 0 or len(w) < 3 or w not in NAME_LAST_LOWER):
                break  # name is an ..., name is not ...: a word of the sentence (`an`, `not`, `the`); not `cox`
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
    if words[0] in EN_NOT_NAMES or words[0] in _CODE_TYPES or _code_after(text, m.end("name")):
        return  # name: Optional[str], name: Any, name is None: code
    keep = [words[0]]
    for w in words[1:]:
        if w in EN_NOT_NAMES:
            break
        keep.append(w)
    end = text.find(keep[-1], start) + len(keep[-1])
    if len(keep) == 1 and m.re is _NAME_COLON and _written_lower(text, start, end):
        return  # Name: Pygments (a package's metadata, which writes `pygments` too)
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


# ---------------------------------------------------------------- all together
_CAPITAL = re.compile("[" + _UP + "]")


def find_names(text: str, lo: str, ascii_text: bool, letters: bool, out: list[Span]) -> None:
    """Every person name in `text` (`lo`: its lower-cased copy, same length)."""
    if letters:
        _triggers(text, lo, out)
        if _CAPITAL.search(text):
            _latin(text, out)
            if _TWO_CAPITALS.search(text):
                _caps(text, out)
    if not ascii_text:
        if _KANA_OR_HANGUL.search(text) is None:
            find_chinese_names(text, out)
            find_japanese_full_names(text, out)
            return
        kana = KANA.search(text) is not None
        korean = HANGUL_RUN.search(text) is not None
        # Japanese or Korean text: the Chinese path would read kanji compounds (周辺, 定義) and
        # hanja (政治, 王道) as names; Chinese text with some kana or Hangul in it keeps it
        japanese = kana and is_japanese(text)
        if not japanese and not (korean and is_korean(text)):
            n0 = len(out)
            find_chinese_names(text, out)
            if kana and len(out) > n0:  # its finds that are words of Japanese dropped
                out[n0:] = [sp for sp in out[n0:] if not japanese_word(text[sp.start : sp.end])]
        if kana:
            find_japanese_names(text, out, japanese)
        else:
            find_japanese_full_names(text, out)
        if korean:
            find_korean_names(text, out)


_KANA_OR_HANGUL = re.compile("[\u3041-\u30fa\uac00-\ud7a3]")
# (a quick test for _CAPS_RUN: two ASCII capitals start it, which the engine looks for fastest)
_TWO_CAPITALS = re.compile("[A-Z][A-Z][" + _UP + "'\u2019\\-]*[ \t]+[" + _UP + "]")


def name_words(name: str) -> list[str]:
    """The words of a detected name that identify the person on their own (no titles, no
    initials): "Dr. Eleanor R. Whitfield-Barnes" -> Eleanor, Whitfield-Barnes."""
    if any(unspaced_name_char(c) for c in name):
        if len(name) < 2:
            return []
        if HANGUL_RUN.match(name):
            return [name, *korean_name_parts(name)]
        if KANA.search(name) or ja_surname_len(name) >= 2:
            return [name, *japanese_name_parts(name)]
        return [name]
    out = []
    for w in name.replace("\u00a0", " ").split():
        w = w.rstrip(".,")
        if len(w) >= 2 and w.lower() not in _TITLE_WORDS and w.lower() not in NAME_PARTICLES:
            out.append(w)
    return out


def _listed(word: str) -> bool:
    cap = word[:1].upper() + word[1:].lower() if word.islower() else word
    return cap in NAME_FIRST or cap in NAME_LAST or word.lower() in NAME_FIRST_LOWER or word.lower() in NAME_LAST_LOWER


def lower_same_length(text: str) -> str:
    """text lower-cased, position for position (a character that lower-cases to two stays)."""
    lo = text.lower()
    if len(lo) != len(text):
        lo = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return lo


# the edges of a word in prose, as _RUN has them (_GLUED_BEFORE before it): not an attribute
# (obj.Emin), a call, a path
_NOT_AFTER = frozenset("_-(@/\\=<>+*^|&")
_NOT_AFTER_JSON = frozenset("_-(@/=<>+*^|&")
_HEX = frozenset("0123456789abcdefABCDEF")


def _edge_before(text: str, i: int, json_text: bool) -> bool:
    if i == 0:
        return True
    c = text[i - 1]
    if not (c.isalnum() or c in _GLUED_BEFORE):
        return True
    if json_text and i >= 2:
        # decoded, a newline, tab or quote stands there (an escaped backslash does not)
        if c in "nrtbf" and text[i - 2] == "\\" and (i < 3 or text[i - 3] != "\\"):
            return True
        if (i >= 6 and text[i - 6] == "\\" and text[i - 5] == "u" and all(h in _HEX for h in text[i - 4 : i])
                and (i < 7 or text[i - 7] != "\\")):
            return True
    return False


def _edge_after(text: str, j: int, json_text: bool) -> bool:
    if j >= len(text):
        return True
    c = text[j]
    if c.isalnum() or c in (_NOT_AFTER_JSON if json_text else _NOT_AFTER):
        return False
    if c == "." and j + 1 < len(text) and (text[j + 1].isalnum() or text[j + 1] == "_"):
        return False
    if c == "[" and not (text[j + 1 : j + 2].isdigit() or text[j : j + 5].lower().startswith(("[at]", "[dot]", "[at ", "[ at"))):
        return False  # code (`List[str]`, `j[Le]`), not a citation (`[1]`) or an address written out (`anna[at]...`)
    return not (json_text and c == "\\" and text.startswith("\\", j + 1))


def mention_spans(text: str, words: frozenset[str] | set[str], json_text: bool = False, lo: str | None = None) -> list[tuple[int, int]]:
    """(start, end) of every whole-word mention in `text` of the given name words, left to right,
    none overlapping (where two overlap, the earlier, then the longer one). A word that is also an
    English word ("Will") is matched with its capital only, the others in any case; a word in no
    name list, taken for a name because it is rare, is not looked for (it may be an identifier:
    class Iterable); Chinese and Japanese names anywhere but where one begins a doctrine named
    after its person (邓小平 ... 邓小平理论, names_zh.is_doctrine); Korean names where a word
    starts. With json_text, for the encoded text of a JSON body: a mention right after an escape
    (\\n, \\") or right before one counts as it does in the decoded string. `lo`:
    lower_same_length(text), if the caller has it."""
    found: list[tuple[int, int, int]] = []  # (start, rank, end): folded before plain before Chinese
    cjk = [w for w in words if unspaced_name_char(w[0])]
    if cjk:
        _cjk_mentions(text, cjk, found)
    latin = [w for w in words if not unspaced_name_char(w[0]) and _listed(w)]
    if len(latin) > _MANY_LATIN:
        if lo is None:
            lo = lower_same_length(text)
        _latin_runs(text, lo, [w for w in latin if w.isalnum()], json_text, found)
        latin = [w for w in latin if not w.isalnum()]
    for w in latin:
        if not _any_case(w):
            rank, hay, needle = 1, text, w
        else:
            if lo is None:
                lo = lower_same_length(text)
            rank, hay, needle = 0, lo, w.lower()
        n = len(needle)
        p = hay.find(needle)
        while p >= 0:
            if _edge_before(text, p, json_text) and _edge_after(text, p + n, json_text):
                found.append((p, rank, -(p + n)))
            p = hay.find(needle, p + 1)
    if not found:
        return []
    found.sort()
    out: list[tuple[int, int]] = []
    pos = 0
    for s, _, neg_end in found:
        if s >= pos:
            out.append((s, -neg_end))
            pos = -neg_end
    return out


_MANY_CJK = 16  # more Chinese names than this are looked for in one pass over the text
_MANY_LATIN = 32  # more Latin-script name words than this are looked for in one pass over the text
_ALNUM_RUN = re.compile(r"[^\W_]+")  # a run of what _edge_before and _edge_after take for word characters


def _latin_runs(text: str, lo: str, words: list[str], json_text: bool, found: list[tuple[int, int, int]]) -> None:
    """mention_spans' part for many Latin-script words of letters and digits only (a body listing
    a thousand names), in one pass over the runs of such characters in `text` (`lo`: its
    lower_same_length). A mention of such a word starts where a run starts (or, in JSON text,
    right after the escape glued to its front: \\n, \\u00e9) and ends where it ends, so each
    run is looked up instead of each word searched for."""
    folded = {w.lower() for w in words if _any_case(w)}
    plain = {w for w in words if not _any_case(w)}
    offsets = (0, 1, 5) if json_text else (0,)
    for m in _ALNUM_RUN.finditer(text):
        a, b = m.span()
        for d in offsets:
            p = a + d
            if p >= b:
                break
            if lo[p:b] in folded and _edge_before(text, p, json_text) and _edge_after(text, b, json_text):
                found.append((p, 0, -b))
            if text[p:b] in plain and _edge_before(text, p, json_text) and _edge_after(text, b, json_text):
                found.append((p, 1, -b))


def _any_case(word: str) -> bool:
    """Whether mention_spans matches a name word in any case: all but English words ("Will")."""
    return word.lower() not in ENGLISH_WORDS


def _cjk_mentions(text: str, names: list[str], found: list[tuple[int, int, int]]) -> None:
    """mention_spans' Chinese part: every mention of the names anywhere in `text` but where one
    begins a doctrine named after its person. A few are each searched for; many (a body listing
    thousands) in one pass over the positions where a name's first character stands."""
    if len(names) <= _MANY_CJK:
        for w in names:
            n = len(w)
            hangul = is_hangul(w[0])
            p = text.find(w)
            while p >= 0:
                # (a Korean name starts a word: particles follow it, nothing comes before it)
                if not is_doctrine(text, p, p + n) and not (hangul and p > 0 and is_hangul(text[p - 1])):
                    found.append((p, 2, -(p + n)))
                p = text.find(w, p + 1)
        return
    wanted = set(names)
    lengths: dict[str, set[int]] = {}
    for w in wanted:
        lengths.setdefault(w[0], set()).add(len(w))
    for m in re.finditer("[" + re.escape("".join(lengths)) + "]", text):
        p = m.start()
        for n in lengths[m.group()]:
            if (p + n <= len(text) and text[p : p + n] in wanted and not is_doctrine(text, p, p + n)
                    and not (p > 0 and is_hangul(text[p]) and is_hangul(text[p - 1]))):
                found.append((p, 2, -(p + n)))


def mentions(text: str, words: set[str], out: list[Span]) -> None:
    """Every whole-word mention in `text` of the given name words (found elsewhere in it)."""
    if words:
        out.extend(Span(s, e, PERSON) for s, e in mention_spans(text, words))


# ---------------------------------------------------------------- JSON values under name keys
# {"name": "Marie-Claire Dupont"}, {"customer": "Henrik Nakamura"}, {"patient_name": "赵悦"}
NAME_KEY = re.compile(
    r"(?i)^(?:(?:customer|patient|client|user|contact|account|card|holder|passenger|guest|employee|author|sender"
    r"|recipient|owner|assignee|reviewer|manager|beneficiary|spouse|signer|person|student|teacher|doctor|caller)[-_ ]?)?"
    r"(?:(?:full|first|last|middle|given|family|display|legal|real|nick|sur)[-_ ]?)?name$"
    r"|^(?:customer|patient|contact|author|sender|recipient|owner|assignee|reviewer|employee|passenger|guest"
    r"|cardholder|card_holder|account_holder|beneficiary|spouse|person|attendee|signatory)$"
    r"|^(?:姓名|名字|联系人|联络人|客户|收件人|收货人|患者|用户姓名|持卡人)$"
    r"|^(?:氏名|名前|お名前|顧客名|患者名|担当者名|宛名)$"
    r"|^(?:이름|성명|성함|고객명|환자명|담당자|수신인|예금주)$"
)
_NAME_VALUE = re.compile(r"[A-Za-z\u00c0-\u024f\u1e00-\u1eff'\u2019.\-]+(?: [A-Za-z\u00c0-\u024f\u1e00-\u1eff'\u2019.\-]+){0,3}")


# a JSON member written out in a text (a tool call's arguments, JSON pasted into a message)
_JSON_MEMBER = re.compile(r'"([^"\\\n\x00]{1,40})"[ \t]*:[ \t]*"([^"\\\n\x00]{1,64})"')


def json_name_values(text: str, out: list[Span]) -> None:
    """The values of name-like keys in JSON written out in `text` ({"full_name": "anna
    kowalska"} in a tool call's arguments), as the JSON walk takes them in a parsed body."""
    for m in _JSON_MEMBER.finditer(text):
        key, value = m.group(1), m.group(2)
        if NAME_KEY.match(key if key.isascii() else simplified(key)) and looks_like_name(value):
            a = m.start(2) + len(value) - len(value.lstrip())
            out.append(Span(a, a + len(value.strip()), PERSON))


_TABLE_SEPARATORS = (",", "\t", "|", ";")
_RULE_ROW = re.compile(r"[|:\- \t]+")  # a Markdown table's |---|---| row
# words of a name column's header (NAME_KEY), looked for before a line is read as a header
_HEADER_WORDS = ("name", "customer", "patient", "contact")
_HEADER_WORDS_CJK = re.compile("姓名|名字|联系人|聯繫人|联络人|聯絡人|客户|客戶|氏名|名前|이름|성명|고객명")


def table_name_values(text: str, lo: str, out: list[Span]) -> None:
    """The cells of a name-like column of a table written out in `text` (`lo`: lower-cased; CSV,
    TSV, a Markdown table: a header row with `name`, `customer`, `姓名`, ... then rows of as
    many cells), where the cell looks like a name, as under a JSON name key (`anna kowalska` in
    a name column). Only lines holding a header word are read as headers."""
    heads = set()
    for w in _HEADER_WORDS:
        p = lo.find(w)
        while p != -1:
            heads.add(text.rfind("\n", 0, p) + 1)
            e = text.find("\n", p)
            p = -1 if e < 0 else lo.find(w, e)
    if not text.isascii():
        heads.update(text.rfind("\n", 0, m.start()) + 1 for m in _HEADER_WORDS_CJK.finditer(text))
    done = -1
    for h in sorted(heads):
        if h <= done:
            continue  # (inside the table read last)
        done = _table_at(text, h, out)


def _table_at(text: str, h: int, out: list[Span]) -> int:
    """Read the table whose header line starts at h, if it is one; where its rows end."""
    e = text.find("\n", h)
    if e < 0:
        return h
    header = text[h:e].rstrip("\r")
    for sep in _TABLE_SEPARATORS:
        if sep not in header:
            continue
        keys = [c.strip().strip("*_`").replace(" ", "_") for c in header.split(sep)]
        if sum(1 for key in keys if key) < 2:
            continue  # a table has two columns at least: "    name," is code
        columns = [k for k, key in enumerate(keys) if key and NAME_KEY.match(key if key.isascii() else simplified(key))]
        if columns:
            break
    else:
        return h
    width = len(keys)
    pos = e + 1
    while pos < len(text):
        e = text.find("\n", pos)
        e = len(text) if e < 0 else e
        row = text[pos:e].rstrip("\r")
        cells = row.split(sep)
        if len(cells) != width or '"' in row or sum(1 for c in cells if c.strip()) < 2:
            break  # the table ended (a row of one cell: code, a list; a quoted cell)
        if not _RULE_ROW.fullmatch(row):
            starts = [0]
            for c in cells[:-1]:
                starts.append(starts[-1] + len(c) + 1)
            for k in columns:
                v = cells[k].strip()
                if v and looks_like_name(v):
                    a = pos + starts[k] + len(cells[k]) - len(cells[k].lstrip())
                    out.append(Span(a, a + len(v), PERSON))
        pos = e + 1
    return pos


def looks_like_name(value: str) -> bool:
    """Could this whole value, found under a name-like key, be a person's name? Yes for
    "Marie-Claire Dupont", "Bob", "lena andersson", "赵悦"; no for "get_weather", "search",
    "Acme Corp", "gpt-4o" (tool names, words, products)."""
    v = value.strip()
    if not v or len(v) > 64:
        return False
    if any(unspaced_name_char(c) for c in v):
        if 2 <= len(v) <= 12 and all(is_cjk(c) or c in DOTS for c in v) and (bool(surname_len(simplified(v))) or any(c in DOTS for c in v)):
            return True
        return looks_like_korean_name(v) or looks_like_japanese_name(v)
    if not _NAME_VALUE.fullmatch(v):
        return False
    named = False
    for w in v.split():
        w = w.strip(".")
        if not w:
            continue
        if _INITIAL.match(w) or w in NAME_PARTICLES:
            continue
        cap = w[:1].upper() + w[1:].lower() if w.islower() or w.isupper() else w
        first, last, word, _ = _classify(cap)
        if word and not first and not last:
            return False
        named = named or first or last or not w.islower()
    return named
