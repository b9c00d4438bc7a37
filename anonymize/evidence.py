"""The recognizer model: every kind of personal data is found the same way.

A *recognizer* (the `Recognizer` protocol) proposes *candidates*: spans of the text with the
kind they would be, how strong their shape is (`STRONG`: the format alone says what it is, a
`sk-` key, a Luhn-valid 16-digit card; `WEAK`: the format fits many things, a quoted word, nine
digits), what a validator said (`PASS`, `FAIL`, `NONE` for a kind with none: a checksum, "is
this code rather than a value") and the context that would declare it (`context`: the name of a
context set, whose words per language are data, `data/context-<name>.txt`; or `FOUND` when the
recognizer found the candidate right after its context word). One rule decides for every kind
(`decide`): a score is the shape's weight plus the validator's plus the context's, and a
candidate is replaced when its score reaches `THRESHOLD`:

    strong shape                       0.8  -> replaced
    strong shape, validator passes     1.0  -> replaced
    strong shape, validator fails      0.4  -> kept;      with context 0.8 -> replaced
    weak shape                         0.4  -> kept;      with context 0.8 -> replaced
    weak shape, validator passes       0.6  -> kept;      with context 1.0 -> replaced
    weak shape, validator fails        0.0  -> kept;      with context 0.4 -> kept

So a card number with a wrong check digit is kept in a random digit string and replaced after
"card number"; a quoted word is kept, and replaced after "password"; a value after "password"
that is code (`None`, `getpass()`) is kept."""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import NamedTuple, Protocol

from .spans import Span

STRONG, WEAK = 0.8, 0.4  # a shape's weight
PASS, NONE, FAIL = 0.2, 0.0, -0.4  # a validator's
CONTEXT = 0.4  # a context word's
THRESHOLD = 0.8
FOUND = "="  # context: found right after its context word by the recognizer itself


class Candidate(NamedTuple):
    start: int
    end: int
    kind: str
    shape: float  # STRONG or WEAK
    check: float = NONE  # PASS, NONE or FAIL
    context: str = ""  # "" none, FOUND, or a context set's name, looked for before `start`


class Doc:
    """One text as every recognizer reads it, computed once: the text, its lower-cased copy of
    the same length, whether it is ASCII and whether it has an ASCII letter at all."""

    __slots__ = ("text", "lo", "ascii", "letters")

    def __init__(self, text: str, lo: str, ascii_text: bool, letters: bool) -> None:
        self.text, self.lo, self.ascii, self.letters = text, lo, ascii_text, letters


class Recognizer(Protocol):
    """One kind or a family of kinds (see docs/anonymize.md, Recognizers)."""

    name: str
    kinds: tuple[str, ...]

    def candidates(self, doc: Doc, out: list[Candidate]) -> None:
        """Append the candidates found in doc (cheap gates first: most texts hold none)."""


def score(c: Candidate, context_found: bool) -> float:
    return c.shape + c.check + (CONTEXT if context_found else 0.0)


def decide(doc: Doc, cands: list[Candidate], out: list[Span]) -> None:
    """The one rule: each candidate whose score reaches THRESHOLD becomes a span."""
    for c in cands:
        ctx = c.context
        base = c.shape + c.check
        if base >= THRESHOLD - 1e-9:
            out.append(Span(c.start, c.end, c.kind))
        elif ctx and base + CONTEXT >= THRESHOLD - 1e-9 and (ctx == FOUND or context(ctx).before(doc, c.start)):
            out.append(Span(c.start, c.end, c.kind))


# ---------------------------------------------------------------- context words (data)
_LATIN_OR_CYRILLIC = re.compile(r"[A-Za-z\u00c0-\u024f\u0400-\u04ff]")


def context_words(name: str) -> dict[str, list[str]]:
    """{language: [word or phrase, ...]} of data/context-<name>.txt (lines `lang<TAB>phrase`;
    `#` starts a comment)."""
    text = resources.files(__package__).joinpath("data", f"context-{name}.txt").read_text(encoding="utf-8")
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        lang, _, phrase = line.partition("\t")
        if not phrase:
            lang, _, phrase = line.partition(" ")
        out.setdefault(lang.strip(), []).append(phrase.strip().lower())
    return out


def alternation(phrases: list[str], bounded: bool = True) -> str:
    """One regular-expression alternative for a list of phrases, longest first; a phrase in
    Latin or Cyrillic letters only as a whole word (`pin` is no context in `spinning`), CJK and
    kana phrases anywhere (they are written without spaces). Spaces in a phrase match any
    run of spaces, hyphens or none (`one-time code`, `one time code`). With bounded=False the
    caller checks the word boundaries (a scan without lookbehinds runs much faster)."""
    alts = []
    for p in sorted(set(phrases), key=lambda p: (-len(p), p)):
        body = r"[ \t\u00a0\-]*".join(re.escape(w) for w in p.split(" "))
        if bounded and _LATIN_OR_CYRILLIC.search(p):
            body = r"(?<![^\W\d_])" + body + r"(?![^\W\d_])"
        alts.append(body)
    return "(?:" + "|".join(alts) + ")"


class Context:
    """A context set: its words in every language, and where they declare a value.

    `before(doc, start)` is True when a word of the set ends within `window` characters before
    `start` with nothing between but filler: separators, the set's own filler words (`number`,
    `is`, `番号`) and, when `near`, any words of the same line and sentence."""

    def __init__(self, name: str, window: int, near: bool) -> None:
        words = context_words(name)
        self.name = name
        self.window = window
        self.languages = tuple(sorted(k for k in words if k != "filler"))
        phrases = [p for lang, ps in words.items() if lang != "filler" for p in ps]
        filler = words.get("filler", [])
        sep = r"[ \t\u00a0\u3000:：#=.\-–—(（/]"
        between = r"[^\n\x00!?。！？;；]*" if near else r"(?:" + sep + (("|" + alternation(filler)) if filler else "") + r")*"
        self.pattern = re.compile(alternation(phrases) + between + r"$")
        self.word = re.compile(alternation(phrases))

    def before(self, doc: Doc, start: int) -> bool:
        return self.pattern.search(doc.lo, max(0, start - self.window), start) is not None


# (set name -> (window, near)): what each context set declares and how close it must be
_CONTEXTS = {
    "card": (48, True),
    "iban": (40, True),
    "account": (40, True),
    "ssn": (32, True),
    "phone": (40, False),
    "ip": (24, False),
}


@functools.cache
def context(name: str) -> Context:
    window, near = _CONTEXTS[name]
    return Context(name, window, near)
