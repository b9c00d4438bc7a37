"""PII scrubbing: keyed, deterministic, length-preserving substitutes (see docs/anonymize.md)."""

from .keys import ENV_VAR, load_key
from .scrubber import Scrubbed, ScrubbedBody, Scrubber

__all__ = ["ENV_VAR", "Scrubbed", "ScrubbedBody", "Scrubber", "load_key"]
