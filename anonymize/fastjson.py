"""JSON through orjson, byte for byte what the standard library would have produced.

orjson parses and encodes several times faster than `json`, but it is not a drop-in
replacement: it refuses some inputs `json` accepts (NaN, 1E400, lone surrogates), reads
integers beyond 64 bits as floats, writes only the compact form, and formats some floats
differently (1e-05 as 0.00001). The scrubber therefore uses it only where the result is provably
the same, and falls back to `json` otherwise:

* `loads` says so where orjson refuses the text (the caller then runs `json.loads`, which
  gives the usual value or the usual error);
* a float whose `repr` has an exponent (or is inf/nan) is where both differences can hide (an
  integer orjson read as a float is at least 2**63, so it has one too): `plain_floats` says
  whether a value is free of them, and the caller must use `json` when it is not;
* `dumps_fragments` writes what `json.dumps(value, ensure_ascii=False, separators=seps)`
  writes, for a value whose strings were replaced by their encoded fragments (so orjson's
  compact output can be given the body's separators with two bytes.replace), or returns None
  where orjson refuses the value (nesting deeper than 254); a lone surrogate cannot be
  encoded into a fragment (JSONEncodeError, the caller falls back).

Strings are escaped identically (the tests check every code point below U+3000 and a sample
above); orjson writes floats without an exponent exactly as `repr` does.
"""

from __future__ import annotations

from typing import Any

import orjson


def loads(data: bytes | str) -> tuple[bool, Any]:
    """(True, the parsed value), or (False, None) when orjson refuses `data` (then json.loads
    gives the usual value or the usual error)."""
    try:
        return True, orjson.loads(data)
    except orjson.JSONDecodeError:
        return False, None


def plain_floats(floats: list[float]) -> bool:
    """True when every float's repr has no exponent and is finite: both libraries agree there."""
    for f in floats:
        r = repr(f)
        if "e" in r or "n" in r:
            return False
    return True


# In a fragment, the commas and colons of the string are written as \x04 and \x05 (orjson never
# writes a raw control character, so they cannot be confused with anything): then every , and :
# left in orjson's compact output separates items or keys from values and can take a space,
# and two bytes.replace put the hidden ones back (cheaper than a bytes.translate).
_HIDE = bytes.maketrans(b",:", b"\x04\x05")
_MAX_FRAGMENT_BYTES = 64_000_000
_MAX_FRAGMENTS = 200_000


class FragmentCache:
    """Encoded strings, so a string seen in many bodies is encoded once: `map` is text ->
    orjson.Fragment of its JSON string (commas and colons hidden), `scrubbed` is an original
    string -> (the fragment of its scrubbed text, its counts or None). Both are bounded together
    (cleared when full, like the scrubber's whole-string cache)."""

    __slots__ = ("map", "scrubbed", "_bytes")

    def __init__(self) -> None:
        self.map: dict[str, Any] = {}
        self.scrubbed: dict[str, tuple[Any, dict[str, int] | None]] = {}
        self._bytes = 0

    def _full(self, n: int) -> None:
        self.map.clear()
        self.scrubbed.clear()
        self._bytes = n

    def make(self, text: str) -> Any:
        """The fragment of `text` (raises orjson.JSONEncodeError on a lone surrogate)."""
        f = self.map.get(text)
        if f is None:
            enc = orjson.dumps(text).translate(_HIDE)
            self._bytes += len(enc)
            if self._bytes > _MAX_FRAGMENT_BYTES or len(self.map) >= _MAX_FRAGMENTS:
                self._full(len(enc))
            f = self.map[text] = orjson.Fragment(enc)
        return f

    def remember(self, original: str, fragment: Any, counts: dict[str, int] | None) -> None:
        self._bytes += len(original)
        if self._bytes > _MAX_FRAGMENT_BYTES or len(self.scrubbed) >= _MAX_FRAGMENTS:
            self._full(len(original))
        self.scrubbed[original] = (fragment, counts)

    def clear(self) -> None:
        self.map.clear()
        self.scrubbed.clear()
        self._bytes = 0


_plain_keys: set[str] = set()


def plain_key(key: str) -> bool:
    """A dict key without , or : (remembered, since bodies repeat their keys)."""
    if "," in key or ":" in key:
        return False
    if len(_plain_keys) < 10_000:
        _plain_keys.add(key)
    return True


def dumps_fragments(value: Any, separators: tuple[str, str]) -> str | None:
    """json.dumps(value, ensure_ascii=False, separators=separators) for a value whose strings
    are all FragmentCache fragments and whose keys are plain_key (the caller has checked that
    and plain_floats), or None where orjson refuses it (nesting deeper than 254)."""
    try:
        out = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None
    item, key = separators
    if item != ",":
        out = out.replace(b",", item.encode())
    if key != ":":
        out = out.replace(b":", key.encode())
    return out.replace(b"\x04", b",").replace(b"\x05", b":").decode("utf-8")
