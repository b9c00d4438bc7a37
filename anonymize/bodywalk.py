"""The walk of a JSON value: the one place that decides what becomes of each string in a body.

Protocol fields of OpenAI-style bodies are kept, values under credential-like keys are replaced
whole, values under name keys are a person, and every other string is queued and all of them are
scanned together (Scrubber.scrub_many). The same walk serves both encoders of a body:

* `encode_parsed` (the fast path, for what orjson parsed): each string is written as its
  encoded JSON fragment (fastjson.FragmentCache) and orjson encodes the body in one call; a
  string seen before costs one dict lookup, its fragment and counts cached together;
* `scrub_value` (json-parsed bodies, event-stream chunks, Python values): each string is
  written as text, and the other mentions of the body's names are replaced in the tree.

The walk is iterative, so nesting depth is not limited by Python's recursion limit. It changes
the value in place; `json_types` is the copy for values the caller still owns."""

from __future__ import annotations

from typing import Any

from . import fastjson
from .bodykeys import ONE_PERSON, OPENAI_KEEP, OPENAI_MARKER_SET, TOOL_NAME_PARENTS, is_name_key, is_secret_key, ordered_counts
from .names import looks_like_name, lower_same_length
from .results import BodyScrubber
from .spans import PERSON, SECRET

# what a dict key means for the string under it
_KEEP, _NAME, _SECRET, _PERSON = 1, 2, 4, 8
_key_codes: tuple[dict[str, int], dict[str, int]] = ({}, {})  # [openai body?] key -> code
_JSON_SCALARS = (int, float, bool, type(None))


def _key_code(key: Any, openai: bool) -> int:
    if type(key) is not str:
        return 0
    code = 0
    if openai:
        if key in OPENAI_KEEP:
            code = _KEEP
        elif key == "name":
            code = _NAME  # kept under a tool object only (llmapi.TOOL_NAME_PARENTS)
    if is_secret_key(key):
        code |= _SECRET
    if is_name_key(key):
        code |= _PERSON
    memo = _key_codes[openai]
    if len(memo) < 10_000:
        memo[key] = code
    return code


def _text_of(v: Any) -> str:
    """The text of a value that is not JSON (bytes, dates, objects): scrubbed, never passed."""
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else str(v)


def json_types(value: Any) -> Any:
    """A copy of `value` made of exact JSON types only (dict, list, str, int, float, bool,
    None): tuples become lists, str subclasses str, and any other value its text (bytes
    decoded), which the walk then scrubs like any string. Dict keys are kept as they are."""
    if type(value) is str or type(value) in _JSON_SCALARS:
        return value
    if not isinstance(value, (dict, list, tuple)):
        return str(value) if isinstance(value, str) else _text_of(value)
    root: Any = {} if isinstance(value, dict) else [None] * len(value)
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for k, v in items:
            t = type(v)
            if t is str or t in _JSON_SCALARS:
                dst[k] = v
            elif isinstance(v, dict):
                dst[k] = child = {}
                stack.append((v, child))
            elif isinstance(v, (list, tuple)):
                dst[k] = child = [None] * len(v)
                stack.append((v, child))
            else:
                dst[k] = str(v) if isinstance(v, str) else _text_of(v)
    return root


class _Walked:
    """What one walk found: the strings still to scan and where each goes, and the rest."""

    __slots__ = ("root", "strings", "dsts", "keys", "order", "named", "placed", "n_secret", "results")

    def __init__(self, root: Any) -> None:
        self.root = root
        self.strings: list[str] = []
        self.dsts: list[Any] = []
        self.keys: list[Any] = []
        self.order: list[Any] = []  # each string's counts: a cache hit's, or a queued string's index
        self.named: list[str] = []  # original strings in which a name was found
        self.placed: list[tuple[Any, Any]] = []  # where a value under a credential or name key went
        self.n_secret = 0
        self.results: list = []

    def counts(self) -> dict[str, int]:
        return ordered_counts(self.n_secret, self.order, self.results)


def _walk(scrubber: BodyScrubber, value: Any, fragments: bool) -> _Walked | None:
    """Walk `value` (exact JSON types; anything else is scrubbed as its text) in place, scan its
    strings and write each result: as a fragment (fragments=True) or as text. None where
    fragments were asked for and orjson cannot stand in for json (a key with , or :, a float
    with an exponent, a lone surrogate)."""
    frags = scrubber.fragments
    fmap_get, fmake = frags.map.get, frags.make
    cached = fragments and scrubber.caching
    # (text mode looks nothing up here: scrub_many serves the cached strings, same results)
    seen_get = frags.scrubbed.get if cached else {}.get
    substitute = scrubber.substitute
    openai = type(value) is dict and not OPENAI_MARKER_SET.isdisjoint(value)
    codes = _key_codes[openai]
    code_get = codes.get
    plain_keys = fastjson._plain_keys
    w = _Walked(value if type(value) is dict or type(value) is list else [value])
    strings, dsts, keys, order, named = w.strings, w.dsts, w.keys, w.order, w.named
    floats: list[float] = []
    hits = 0
    unsafe = False
    # (container, the key it sits under, the key its parent sits under)
    stack: list[tuple[Any, Any, Any]] = [(w.root, None, None)]
    pop, push = stack.pop, stack.append

    def write(src: Any, k: Any, text: str) -> None:
        if fragments:
            f = fmap_get(text)
            src[k] = f if f is not None else fmake(text)
        else:
            src[k] = text

    def other(src: Any, k: Any, v: str, kk: Any, ctx: Any) -> bool:
        """A string under a key with a meaning (kk, in ctx): written here, True; else False."""
        code = code_get(kk)
        if code is None:
            code = _key_code(kk, openai)
        if not code:
            return False
        if code & _KEEP or (code & _NAME and ctx in TOOL_NAME_PARENTS):
            if fragments:
                write(src, k, v)
            return True
        if code & _SECRET and v:
            w.n_secret += 1
            write(src, k, substitute(SECRET, v))
            w.placed.append((src, k))
            return True
        if code & _PERSON and looks_like_name(v):
            named.append(v)
            order.append(ONE_PERSON)
            write(src, k, scrubber.name_value(v))
            w.placed.append((src, k))
            return True
        return False

    def odd(src: Any, k: Any, v: Any, key: Any, parent: Any) -> None:
        """A value of no exact JSON type (only in values the caller made): its JSON copy."""
        v = json_types(v)
        src[k] = v
        if type(v) is str:
            if not (code_get(key, -1) and other(src, k, v, key, parent)):
                order.append(len(strings))
                dsts.append(src)
                keys.append(k)
                strings.append(v)
        elif type(src) is dict:
            push((v, k, key))
        else:  # (a list item inherits the key of its list)
            push((v, key, parent))

    try:
        while stack:
            src, key, parent = pop()
            if type(src) is dict:
                if fragments and not plain_keys.issuperset(src):
                    for k in src:
                        if type(k) is not str or not fastjson.plain_key(k):
                            unsafe = True
                for k, v in src.items():
                    t = type(v)
                    if t is str:
                        c = code_get(k, -1)  # -1 for a key not seen yet: other() looks
                        if c:
                            if c == _KEEP:  # role, model, type, ...: kept as it is
                                if fragments:
                                    f = fmap_get(v)
                                    src[k] = f if f is not None else fmake(v)
                                continue
                            if other(src, k, v, k, key):
                                continue
                        e = seen_get(v)
                        if e is not None:
                            hits += 1
                            src[k] = e[0]
                            if e[1]:
                                if PERSON in e[1]:
                                    named.append(v)
                                order.append(e[1])
                            continue
                        order.append(len(strings))
                        dsts.append(src)
                        keys.append(k)
                        strings.append(v)
                    elif t is dict or t is list:
                        push((v, k, key))
                    elif t is float:
                        floats.append(v)
                    elif t is not int and t is not bool and v is not None:
                        odd(src, k, v, key, parent)
            else:
                for i, v in enumerate(src):
                    t = type(v)
                    if t is str:
                        # a list item inherits the key of its list (e.g. "stop": ["..."])
                        if code_get(key, -1) and other(src, i, v, key, parent):
                            continue
                        e = seen_get(v)
                        if e is not None:
                            hits += 1
                            src[i] = e[0]
                            if e[1]:
                                if PERSON in e[1]:
                                    named.append(v)
                                order.append(e[1])
                            continue
                        order.append(len(strings))
                        dsts.append(src)
                        keys.append(i)
                        strings.append(v)
                    elif t is dict or t is list:
                        push((v, key, parent))
                    elif t is float:
                        floats.append(v)
                    elif t is not int and t is not bool and v is not None:
                        odd(src, i, v, key, parent)
        scrubber.stats.cache_hits += hits
        results = w.results = scrubber.scrub_many(strings) if strings else []
        named += [t for t, r in zip(strings, results) if r.counts and PERSON in r.counts]
        if fragments:
            for dst, k, s, r in zip(dsts, keys, strings, results):
                f = fmap_get(r.text)
                if f is None:
                    f = fmake(r.text)
                dst[k] = f
                if cached and r.error is None:
                    frags.remember(s, f, r.counts or None)
        else:
            for dst, k, r in zip(dsts, keys, results):
                dst[k] = r.text
    except fastjson.orjson.JSONEncodeError:  # a lone surrogate: json writes it, orjson cannot
        return None
    if fragments and (unsafe or (floats and not fastjson.plain_floats(floats))):
        return None
    return w


def encode_parsed(scrubber: BodyScrubber, value: Any, separators: tuple[str, str]) -> tuple[str, dict[str, int]] | None:
    """A value orjson parsed, scrubbed in place and encoded as json.dumps(ensure_ascii=False,
    separators=separators) would, the other mentions of the body's names replaced in the encoded
    text (Scrubber.propagate_json); None where orjson cannot stand in for json (see fastjson),
    and the caller parses again with json, as `value` may have changed."""
    w = _walk(scrubber, value, True)
    if w is None:
        return None
    out = fastjson.dumps_fragments(w.root if w.root is value else w.root[0], separators)
    if out is None:
        return None
    counts = w.counts()
    return scrubber.propagate_json(out, scrubber.words_of(w.named), counts), counts


def scrub_value(scrubber: BodyScrubber, value: Any, *, propagate: bool) -> tuple[Any, dict[str, int], frozenset[str]]:
    """A JSON value scrubbed in place: (the value, counts, the name words found in it). With
    propagate=True the other mentions of those names are replaced in its strings too (protocol
    fields kept); with False that is left to the caller (Scrubber.propagate_json on the encoded
    text)."""
    w = _walk(scrubber, value, False)
    assert w is not None  # (only the fragment encoder gives up)
    counts = w.counts()
    words = scrubber.words_of(w.named)
    if words and propagate:  # a name found anywhere in the body is replaced everywhere in it
        lowered = [x.lower() for x in words]
        n = 0
        for dst, k in list(zip(w.dsts, w.keys)) + w.placed:
            v = dst[k]
            lo = lower_same_length(v)
            if any(x in lo for x in lowered):
                new, c = scrubber.replace_mentions(v, words, False, lo)
                if c:
                    dst[k] = new
                    n += c
        if n:
            counts[PERSON] = counts.get(PERSON, 0) + n
    root = w.root if w.root is value else w.root[0]
    return root, counts, words
