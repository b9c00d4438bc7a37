"""What scrubbing returns, and what the body walk (bodywalk) and sse need of a scrubber.

The walks take a `BodyScrubber` rather than the Scrubber class, so they import nothing of
scrubber.py, which imports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .fastjson import FragmentCache


@dataclass(frozen=True)
class Scrubbed:
    """One scrubbed item: same length in characters as the input."""

    text: str
    counts: dict[str, int]
    error: str | None = None


@dataclass(frozen=True)
class ScrubbedBody:
    text: str
    counts: dict[str, int]
    is_json: bool
    error: str | None = None


@dataclass
class ScrubStats:
    cache_hits: int = 0
    fallbacks: int = 0


class BodyScrubber(Protocol):
    """The part of Scrubber that the JSON and event-stream walks use."""

    stats: ScrubStats

    @property
    def fragments(self) -> FragmentCache: ...

    @property
    def caching(self) -> bool: ...

    def substitute(self, kind: str, value: str) -> str: ...

    def scrub_text(self, text: str) -> Scrubbed: ...

    def scrub_many(self, texts: list[str]) -> list[Scrubbed]: ...

    def name_value(self, value: str) -> str: ...

    def scrub_tree(self, value: Any, *, inplace: bool) -> tuple[Any, dict[str, int]]: ...

    def replace_mentions(self, text: str, words: frozenset[str], json_text: bool = False, lo: str | None = None) -> tuple[str, int]: ...

    def words_of(self, named: list[str]) -> frozenset[str]: ...

    def propagate_json(self, encoded: str, words: frozenset[str], counts: dict[str, int]) -> str: ...
