"""The Scrubber: text, JSON values, HTTP bodies and headers in; scrubbed copies and counts out."""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterable
from typing import Any

from . import bodywalk, fastjson
from .bodykeys import CACHE_MIN_CHARS as _CACHE_MIN_CHARS, merge_counts as _merge, separators as _separators
from .detectors import PERSON, SECRET, Span, find_spans
from .names import lower_same_length, mention_spans, name_words
from .keyedhash import KeyedIds
from .results import Scrubbed, ScrubbedBody, ScrubStats
from .sse import scrub_sse
from .substitutes import Substituter

# Strings at least _CACHE_MIN_CHARS long (bodykeys.py: every length) are cached whole: a system
# prompt shared by many requests is scrubbed once and stays byte-identical (prefix caching in a
# replay depends on it). Short strings are cached too: a multi-turn body repeats every earlier
# turn, short ones included, and a lookup is far cheaper than a scan.
_CACHE_MAX_ENTRIES = 200_000  # bounds the per-entry overhead of many short strings
_BATCH_CHARS = 1_000_000  # strings of one body are scanned together, up to this many characters
_CACHE_MAX_CHARS = 64_000_000
_FAST_MASK_OVER = 200_000

_SENSITIVE_HEADERS = frozenset(
    "authorization proxy-authorization cookie set-cookie x-api-key api-key x-auth-token x-access-token "
    "x-amz-security-token x-goog-api-key openai-api-key anthropic-api-key x-csrf-token x-xsrf-token".split()
)
_SENSITIVE_HEADER_WORDS = ("token", "secret", "password", "api-key", "apikey", "auth", "cookie", "session", "signature")
_MASK_TABLE = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "X" * 26 + "x" * 26 + "0" * 10,
)
_NON_ASCII_ALNUM = re.compile(r"[^\W\d_A-Za-z]|[^\x00-\x7f]")


_ITEM_SPACE_BYTES = re.compile(rb'[\]}"0-9], ')  # (the usual case of _ITEM_SPACE)


_ENCODERS: dict[tuple[str, str], json.JSONEncoder] = {}


def _encoder(separators: tuple[str, str]) -> json.JSONEncoder:
    """What json.dumps(..., ensure_ascii=False, separators=separators) uses, made once (an
    encoder keeps no state between calls)."""
    enc = _ENCODERS.get(separators)
    if enc is None:
        enc = _ENCODERS[separators] = json.JSONEncoder(ensure_ascii=False, separators=separators)
    return enc


_JSON_OPENERS = (b"{", b"[")


def _body_separators(body: bytes) -> tuple[str, str]:
    """_separators of a body known to be valid UTF-8, decoding only the characters it looks at
    (at most 4 bytes each; a character cut at the end of a slice is dropped)."""
    if body.find(b'": ', 0, 256) >= 0 and _ITEM_SPACE_BYTES.search(body, 0, 256):
        return ", ", ": "  # (within the first 256 bytes, so within the first 256 characters)
    return _separators(body[: 4 * 4096 + 4].decode("utf-8", "ignore"))


class Scrubber:
    def __init__(self, key: bytes, *, max_chars: int = 8_000_000):
        if not isinstance(key, (bytes, bytearray)) or not key:
            raise ValueError("Scrubber needs a non-empty key (bytes)")
        self._key = bytes(key)
        self.max_chars = max_chars
        self._subs = Substituter(self._key)
        self._ids = KeyedIds(self._key)
        self._whole: dict[str, Scrubbed] = {}
        self._whole_chars = 0
        self.stats = ScrubStats()
        self._cache_min = _CACHE_MIN_CHARS
        self._frags = fastjson.FragmentCache()
        self._names_of: dict[str, frozenset[str]] = {}  # string -> the name words found in it

    @property
    def fragments(self) -> fastjson.FragmentCache:
        """Scrubbed strings as encoded JSON fragments (bodywalk's cache)."""
        return self._frags

    @property
    def caching(self) -> bool:
        """Whether strings are cached whole (off after disable_text_cache)."""
        return self._cache_min <= _CACHE_MIN_CHARS

    def disable_text_cache(self) -> None:
        """Scan every string even when it was seen before (benchmarks; results are identical)."""
        self._cache_min = 1 << 62
        self._whole.clear()
        self._whole_chars = 0
        self._frags.clear()
        self._names_of.clear()

    # ------------------------------------------------------------ hashing
    def keyed_hash(self, text: str) -> str:
        return self._ids.keyed_hash(text)

    def client_id(self, credential: str) -> str:
        return self._ids.client_id(credential)

    def substitute(self, kind: str, value: str) -> str:
        """The keyed substitute of one detected value of category `kind` (`detectors.KINDS`):
        what scrubbing puts in its place wherever it is detected."""
        return self._subs.substitute(kind, value)

    # ------------------------------------------------------------ text
    def scrub_text(self, text: str) -> Scrubbed:
        if not text:
            return Scrubbed(text, {})
        if len(text) >= self._cache_min:
            hit = self._whole.get(text)
            if hit is not None:
                self.stats.cache_hits += 1
                return Scrubbed(hit.text, dict(hit.counts))  # callers may mutate counts
        result = self._scrub_text_uncached(text)
        if len(text) >= self._cache_min and result.error is None:
            self._remember(text, result)
            return Scrubbed(result.text, dict(result.counts))
        return result

    def _scrub_text_uncached(self, text: str) -> Scrubbed:
        if len(text) > self.max_chars:
            return self._masked(text, f"text of {len(text)} characters is over max_chars={self.max_chars}; masked")
        try:
            return self._apply(text, find_spans(text))
        except RecursionError:
            return self._masked(text, "scrubber recursion limit; masked")
        except Exception as e:  # noqa: BLE001 - the fallback is to mask, never to pass raw text
            return self._masked(text, f"scrubber failed ({type(e).__name__}); masked")

    def scrub_many(self, texts: list[str]) -> list[Scrubbed]:
        """Scrub several strings; same results as scrub_text on each, but the uncached ones are
        scanned as one text (joined with NUL, which no detector crosses), so the fixed cost of a
        scan is paid once per body rather than once per string."""
        results: list[Scrubbed | None] = [None] * len(texts)
        pending: dict[str, list[int]] = {}
        whole_get = self._whole.get
        cmin = self._cache_min
        hits = 0
        for i, t in enumerate(texts):
            if len(t) >= cmin:
                hit = whole_get(t)
                if hit is not None:
                    hits += 1
                    results[i] = hit
                    continue
            if not t:
                results[i] = Scrubbed(t, {})
            elif t in pending:
                pending[t].append(i)
            elif "\x00" in t or len(t) > _BATCH_CHARS:
                results[i] = self.scrub_text(t)
            else:
                pending[t] = [i]
        self.stats.cache_hits += hits
        if not pending:
            return results  # type: ignore[return-value]
        batch: list[str] = []
        size = 0
        for t in list(pending):
            if size + len(t) > _BATCH_CHARS and batch:
                self._scrub_batch(batch, pending, results)
                batch, size = [], 0
            batch.append(t)
            size += len(t) + 1
        if batch:
            self._scrub_batch(batch, pending, results)
        return results  # type: ignore[return-value]

    def _scrub_batch(self, batch: list[str], pending: dict[str, list[int]], results: list) -> None:
        if len(batch) == 1:  # not in the cache (scrub_many looked): scan it directly
            t = batch[0]
            r = self._scrub_text_uncached(t)
            if len(t) >= self._cache_min and r.error is None:
                self._remember(t, r)
            per = [r]
        else:
            per = self._scrub_joined(batch)
        for t, r in zip(batch, per):
            for i in pending[t]:
                results[i] = r

    def _scrub_joined(self, batch: list[str]) -> list[Scrubbed]:
        joined = "\x00".join(batch)
        try:
            spans = find_spans(joined)
        except Exception:  # noqa: BLE001 - fall back to one string at a time
            return [self.scrub_text(t) for t in batch]
        out: list[Scrubbed] = []
        base = 0
        k = 0
        for t in batch:
            end = base + len(t)
            mine: list[Span] = []
            while k < len(spans) and spans[k].start < end:
                mine.append(spans[k])
                k += 1
            if mine and (mine[0].start < base or mine[-1].end > end):  # crossed a boundary: never expected
                r = self._scrub_text_uncached(t)
            else:
                r = self._apply(t, [Span(a - base, b - base, kind) for a, b, kind in mine])
            if len(t) >= self._cache_min and r.error is None:
                self._remember(t, r)
            out.append(r)
            base = end + 1
        return out

    def _remember(self, text: str, result: Scrubbed) -> None:
        if self._whole_chars + len(text) > _CACHE_MAX_CHARS or len(self._whole) >= _CACHE_MAX_ENTRIES:
            self._whole.clear()
            self._whole_chars = 0
        self._whole[text] = result
        self._whole_chars += len(text)

    def _apply(self, text: str, spans: list[Span]) -> Scrubbed:
        if not spans:
            return Scrubbed(text, {})
        try:
            pieces = []
            counts: dict[str, int] = {}
            pos = 0
            sub = self._subs.substitute
            names: set[str] = set()
            for s, e, kind in spans:
                pieces.append(text[pos:s])
                pieces.append(sub(kind, text[s:e]))
                counts[kind] = counts.get(kind, 0) + 1
                if kind == PERSON:
                    names.update(name_words(text[s:e]))
                pos = e
            pieces.append(text[pos:])
            out = "".join(pieces)
            if len(out) != len(text):
                raise AssertionError("substitute changed the length")
            if names:
                self._remember_names(text, names)
            return Scrubbed(out, counts)
        except Exception as e:  # noqa: BLE001
            return self._masked(text, f"scrubber failed ({type(e).__name__}); masked")

    def _remember_names(self, text: str, names: set[str]) -> None:
        if len(self._names_of) >= _CACHE_MAX_ENTRIES:
            self._names_of.clear()
        self._names_of[text] = frozenset(names)

    def names_in(self, text: str) -> frozenset[str]:
        """The name words found in one original string (remembered when it was scrubbed)."""
        hit = self._names_of.get(text)
        if hit is None:
            hit = frozenset(w for s, e, kind in find_spans(text) if kind == PERSON for w in name_words(text[s:e]))
            self._remember_names(text, set(hit))
        return hit

    def name_value(self, value: str) -> str:
        """A whole value under a name-like key ({"customer": "Henrik Nakamura"}): a person."""
        self._remember_names(value, set(name_words(value)))
        return self._subs.substitute(PERSON, value)

    def replace_mentions(self, text: str, words: frozenset[str], json_text: bool = False, lo: str | None = None) -> tuple[str, int]:
        """Every mention of the name words in `text` (names.mention_spans) replaced by its name's
        substitute."""
        spans = mention_spans(text, words, json_text, lo)
        if not spans:
            return text, 0
        pieces = []
        pos = 0
        for s, e in spans:
            word = text[s:e]
            pieces.append(text[pos:s])
            cjk = any("\u3400" <= c <= "\u9fff" for c in word)
            pieces.append(self._subs.substitute(PERSON, word) if cjk else self._subs.name_word(word))
            pos = e
        pieces.append(text[pos:])
        return "".join(pieces), len(spans)

    def mask_text(self, text: str) -> str:
        """Every letter and digit replaced by a class-preserving placeholder (no detection)."""
        if len(text) <= _FAST_MASK_OVER:
            return self._subs.mask(text)
        out = text.translate(_MASK_TABLE)
        if not out.isascii():
            out = _NON_ASCII_ALNUM.sub(_mask_char, out)
        return out

    def _masked(self, text: str, error: str) -> Scrubbed:
        self.stats.fallbacks += 1
        return Scrubbed(self.mask_text(text), {"masked": 1}, error)

    # ------------------------------------------------------------ JSON
    def scrub_json(self, value: Any) -> tuple[Any, dict[str, int]]:
        """Scrub every string value (in OpenAI-style bodies: all but protocol fields such as
        model/role/type). Keys, numbers, booleans, nulls and array lengths are unchanged.
        Iterative, so nesting depth is not limited by Python's recursion limit. Returns a copy;
        `value` is not modified."""
        return self.scrub_tree(value, inplace=False)

    def scrub_tree(self, value: Any, *, inplace: bool) -> tuple[Any, dict[str, int]]:
        """scrub_json; with inplace=True (for values this module parsed itself and owns, of
        exact JSON types) the containers are reused instead of copied. A name found anywhere in
        the tree is replaced everywhere in it."""
        root, counts, _ = bodywalk.scrub_value(self, value if inplace else bodywalk.json_types(value), propagate=True)
        return root, counts

    def words_of(self, named: list[str]) -> frozenset[str]:
        """The name words found in these original strings of one body."""
        return frozenset().union(*(self.names_in(t) for t in named)) if named else frozenset()

    def propagate_json(self, encoded: str, words: frozenset[str], counts: dict[str, int]) -> str:
        """Other mentions of the body's names in its encoded JSON text (scrub_body's paths)."""
        if not words:
            return encoded
        lo = lower_same_length(encoded)
        if not any(w.lower() in lo for w in words):
            return encoded  # the usual case: the one mention, replaced already
        out, n = self.replace_mentions(encoded, words, True, lo)
        if n:
            counts[PERSON] = counts.get(PERSON, 0) + n
        return out

    # ------------------------------------------------------------ bodies
    def scrub_body(self, body: bytes, content_type: str | None = None) -> ScrubbedBody:
        """A request/response body: JSON-aware when it parses as JSON, else scrubbed as text.
        Invalid UTF-8 is decoded with replacement characters (and reported), never passed raw.

        The cyclic garbage collector waits until the body is done: a body makes thousands of
        short-lived containers (its parsed JSON, the spans), which reference counting frees,
        and collections in between would only walk them (and, in a proxy, its whole heap)."""
        if not gc.isenabled():
            return self._scrub_body(body, content_type)
        gc.disable()
        try:
            return self._scrub_body(body, content_type)
        finally:
            gc.enable()

    def _scrub_body(self, body: bytes, content_type: str | None) -> ScrubbedBody:
        ct = (content_type or "").lower()
        fast = body[:1] in _JSON_OPENERS and "event-stream" not in ct
        if fast:  # orjson refuses invalid UTF-8, so the body needs no decoding here
            done = self._orjson_body(body, _body_separators(body), None)
            if done is not None:
                return done
            # orjson refused the body or could not stand in for json (see fastjson): the
            # general path below parses it with json (the strings come from the cache)
        error = None
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            text = body.decode("utf-8", errors="replace")
            error = f"body is not valid UTF-8 (first bad byte at {e.start}); decoded with replacement characters"
        stripped = text.lstrip()
        if "event-stream" in ct or stripped.startswith(("data:", "event:")):
            try:
                out, counts = scrub_sse(self, text)
                return ScrubbedBody(out, counts, False, error)
            except RecursionError:
                error = _join(error, "event stream nested too deeply; scrubbed as text")
        elif stripped[:1] in ("{", "[") or (content_type and "json" in content_type.lower()):
            if not fast or error is not None:  # (whitespace before the JSON; invalid UTF-8 replaced)
                done = self._orjson_body(body if error is None else text, _separators(text), error)
                if done is not None:
                    return done
            try:
                value = json.loads(text)
            except RecursionError:
                error = _join(error, "JSON nested too deeply; scrubbed as text")
            except ValueError:
                if content_type and "json" in content_type.lower():
                    error = _join(error, "body is not valid JSON; scrubbed as text")
            else:
                try:
                    scrubbed, counts, words = bodywalk.scrub_value(self, value, propagate=False)
                    out = self.propagate_json(_encoder(_separators(text)).encode(scrubbed), words, counts)
                    return ScrubbedBody(out, counts, True, error)
                except RecursionError:
                    error = _join(error, "JSON nested too deeply to re-encode; scrubbed as text")
        r = self.scrub_text(text)
        return ScrubbedBody(r.text, r.counts, False, _join(error, r.error))

    def _orjson_body(self, data: bytes | str, separators: tuple[str, str], error: str | None) -> ScrubbedBody | None:
        """A JSON body parsed by orjson and walked by bodywalk (several times faster than json),
        where they give what json would (fastjson); None where orjson refuses `data` or cannot
        stand in for json."""
        ok, value = fastjson.loads(data)
        if not ok:
            return None
        done = bodywalk.encode_parsed(self, value, separators)
        return None if done is None else ScrubbedBody(done[0], done[1], True, error)

    # ------------------------------------------------------------ headers
    def scrub_headers(self, headers: Iterable[tuple[str, str]]) -> tuple[dict[str, str], dict[str, int]]:
        """Lower-cased names; repeated headers joined with ", "; credentials replaced by a keyed
        fingerprint "<redacted:...>"; every other value scrubbed as text."""
        joined: dict[str, list[str]] = {}
        for name, value in headers:
            joined.setdefault(str(name).strip().lower(), []).append(str(value))
        out: dict[str, str] = {}
        counts: dict[str, int] = {}
        plain: list[str] = []
        for name, values in joined.items():
            value = ", ".join(values)
            if name in _SENSITIVE_HEADERS or any(w in name for w in _SENSITIVE_HEADER_WORDS):
                out[name] = "<redacted:" + self.keyed_hash("header\0" + value) + ">"
                counts[SECRET] = counts.get(SECRET, 0) + 1
            else:
                out[name] = value
                plain.append(name)
        for name, r in zip(plain, self.scrub_many([out[n] for n in plain])):
            out[name] = r.text
            _merge(counts, r.counts)
        return out, counts


def _join(a: str | None, b: str | None) -> str | None:
    if a and b:
        return f"{a}; {b}"
    return a or b


def _mask_char(m: re.Match) -> str:
    ch = m.group()
    if ch.isdigit():
        return "0"
    if ch.isalpha():
        return "某" if "\u4e00" <= ch <= "\u9fff" else ("X" if ch.isupper() else "x")
    return ch

