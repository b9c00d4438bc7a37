"""What a JSON body's keys mean to the scrubber, and the small helpers of its walk (bodywalk)
and of the event-stream reader (sse).

Kept apart from scrubber.py so that bodywalk.py and sse.py need nothing of the Scrubber but its
public methods, and no module of anonymize/ imports one that imports it back."""

from __future__ import annotations

import re
from typing import Any

from shadowreplay import llmapi

from .names import NAME_KEY
from .spans import PERSON, SECRET
from .zh_script import simplified

# Strings at least this long are cached whole (scrubber.py says why every length is).
CACHE_MIN_CHARS = 1

# Protocol keys kept in LLM API bodies, and what marks such a body: defined with the APIs.
OPENAI_KEEP = llmapi.PROTOCOL_KEYS
OPENAI_MARKER_SET = llmapi.BODY_MARKERS
TOOL_NAME_PARENTS = llmapi.TOOL_NAME_PARENTS
# Dict keys whose string value is a credential whatever it looks like.
SECRET_KEY_RE = re.compile(
    r"(?i)^(?:x[-_])?(?:api[-_]?key|apikey|access[-_]?key|secret[-_]?key|secret|client[-_]?secret|password|passwd|pwd"
    r"|passphrase|token|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|authorization|private[-_]?key|cookie)$"
)
ONE_PERSON = {PERSON: 1}


class KeyTest:
    """Whether a dict key matches a pattern, memoized (the same keys come in every body)."""

    __slots__ = ("pattern", "memo")

    def __init__(self, pattern: re.Pattern) -> None:
        self.pattern = pattern
        self.memo: dict[str, bool] = {}

    def __call__(self, key: Any) -> bool:
        if type(key) is not str:
            return False
        hit = self.memo.get(key)
        if hit is None:
            # (a Chinese key in traditional script as in simplified: 聯繫人, 客戶)
            hit = bool(self.pattern.match(key if key.isascii() else simplified(key)))
            if len(self.memo) < 10_000:
                self.memo[key] = hit
        return hit


is_secret_key = KeyTest(SECRET_KEY_RE)  # credential-valued keys: api_key, password, ...
is_name_key = KeyTest(NAME_KEY)  # person-valued keys: name, customer, patient_name, ...


def merge_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for k, v in counts.items():
        into[k] = into.get(k, 0) + v


def ordered_counts(n_secret: int, order: list[Any], results: list) -> dict[str, int]:
    """Counts per kind: credential-valued keys first, then each string's counts in walk order
    (`order` holds a cache hit's counts, or the index of a queued string's result)."""
    counts: dict[str, int] = {SECRET: n_secret} if n_secret else {}
    get = counts.get
    for item in order:
        c = results[item].counts if type(item) is int else item
        if c:
            for kind, n in c.items():
                counts[kind] = get(kind, 0) + n
    return counts


_ITEM_SPACE = re.compile(r'[\]}"\d],\s')
_KEY_SPACE = re.compile(r'":\s')


def separators(text: str) -> tuple[str, str]:
    """The (item, key) separators a JSON text was written with, as json.dumps takes them."""
    # a short look first: most bodies show both separators in their first few keys
    item = ", " if _ITEM_SPACE.search(text, 0, 256) or _ITEM_SPACE.search(text, 0, 4096) else ","
    key = ": " if _KEY_SPACE.search(text, 0, 256) or _KEY_SPACE.search(text, 0, 4096) else ":"
    return item, key
