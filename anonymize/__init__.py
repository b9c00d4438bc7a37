"""PII scrubbing: keyed, deterministic, length-preserving substitutes (see docs/anonymize.md)."""
