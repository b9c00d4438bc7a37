"""The walk of a body orjson parsed (the fast path of Scrubber.scrub_body).

Same decisions as Scrubber._collect (protocol fields kept in OpenAI-style bodies, values under
credential-like keys replaced, every other string scrubbed, counts in the same order), but for
values that can only hold exact JSON types, changed in place, and with every string written as
its encoded JSON fragment (fastjson.FragmentCache), so the body is encoded by orjson in one call
(fastjson.dumps_fragments). A string seen before costs one dict lookup: its fragment and
counts are cached together."""

from __future__ import annotations

from typing import Any

from . import fastjson
from .bodykeys import ONE_PERSON, OPENAI_KEEP, OPENAI_MARKER_SET, TOOL_NAME_PARENTS, is_name_key, is_secret_key, ordered_counts
from .names import looks_like_name
from .results import BodyScrubber
from .spans import PERSON, SECRET


# what a dict key means for the string under it
_KEEP, _NAME, _SECRET, _PERSON = 1, 2, 4, 8
_key_codes: tuple[dict[str, int], dict[str, int]] = ({}, {})  # [openai body?] key -> code


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


def scrub_parsed(scrubber: BodyScrubber, value: Any, separators: tuple[str, str]) -> tuple[str, dict[str, int]] | None:
    """A value orjson parsed, scrubbed in place and encoded as json.dumps(ensure_ascii=False,
    separators=separators) would, the other mentions of the body's names replaced in the encoded
    text (Scrubber.propagate_json, as the json path does); None where orjson cannot stand in
    for json (see fastjson), and the caller parses again with json, as `value` may have
    changed."""
    frags = scrubber.fragments
    fmap_get, fmake = frags.map.get, frags.make
    cached = scrubber.caching
    seen_get = frags.scrubbed.get if cached else {}.get
    substitute = scrubber.substitute
    openai = type(value) is dict and not OPENAI_MARKER_SET.isdisjoint(value)
    codes = _key_codes[openai]
    code_get = codes.get
    plain_keys = fastjson._plain_keys
    strings: list[str] = []
    dsts: list[Any] = []
    keys: list[Any] = []
    floats: list[float] = []
    order: list[Any] = []  # as in Scrubber._collect
    named: list[str] = []  # original strings in which a name was found
    n_secret = 0
    hits = 0
    unsafe = False
    root = value if type(value) is dict or type(value) is list else [value]
    # (container, the key it sits under, the key its parent sits under)
    stack: list[tuple[Any, Any, Any]] = [(root, None, None)]
    pop, push = stack.pop, stack.append

    def other(src: Any, k: Any, v: str, kk: Any, ctx: Any) -> bool:
        """A string under a key with a meaning (kk, in ctx): written here, True; else False."""
        nonlocal n_secret
        code = code_get(kk)
        if code is None:
            code = _key_code(kk, openai)
        if not code:
            return False
        if code & _KEEP or (code & _NAME and ctx in TOOL_NAME_PARENTS):
            f = fmap_get(v)
            src[k] = f if f is not None else fmake(v)
            return True
        if code & _SECRET and v:
            n_secret += 1
            sub = substitute(SECRET, v)
            f = fmap_get(sub)
            src[k] = f if f is not None else fmake(sub)
            return True
        if code & _PERSON and looks_like_name(v):
            named.append(v)
            order.append(ONE_PERSON)
            sub = scrubber.name_value(v)
            f = fmap_get(sub)
            src[k] = f if f is not None else fmake(sub)
            return True
        return False

    try:
        while stack:
            src, key, parent = pop()
            if type(src) is dict:
                if not plain_keys.issuperset(src):
                    for k in src:
                        if not fastjson.plain_key(k):
                            unsafe = True
                for k, v in src.items():
                    t = type(v)
                    if t is str:
                        c = code_get(k, -1)  # -1 for a key not seen yet: other() looks
                        if c:
                            if c == _KEEP:  # role, model, type, ...: kept as it is
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
        scrubber.stats.cache_hits += hits
        results = scrubber.scrub_many(strings) if strings else []
        named += [t for t, r in zip(strings, results) if r.counts and PERSON in r.counts]
        for dst, k, s, r in zip(dsts, keys, strings, results):
            f = fmap_get(r.text)
            if f is None:
                f = fmake(r.text)
            dst[k] = f
            if cached and r.error is None:
                frags.remember(s, f, r.counts or None)
    except fastjson.orjson.JSONEncodeError:  # a lone surrogate: json writes it, orjson cannot
        return None
    if unsafe or (floats and not fastjson.plain_floats(floats)):
        return None
    out = fastjson.dumps_fragments(root if root is value else root[0], separators)
    if out is None:
        return None
    counts = ordered_counts(n_secret, order, results)
    return scrubber.propagate_json(out, scrubber.words_of(named), counts), counts
