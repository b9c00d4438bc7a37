"""PII scrubbing: keyed, deterministic, length-preserving substitutes (see docs/anonymize.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .keys import ENV_VAR, load_key

if TYPE_CHECKING:
    from .scrubber import Scrubbed, ScrubbedBody, Scrubber

__all__ = ["ENV_VAR", "Scrubbed", "ScrubbedBody", "Scrubber", "load_key"]


def __getattr__(name: str):
    # The scrubber pulls in Faker and the detectors (~1 s); load it on first use so that every
    # `shadowreplay` command that merely registers `scrub` starts fast.
    if name in ("Scrubbed", "ScrubbedBody", "Scrubber"):
        from . import scrubber

        return getattr(scrubber, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
