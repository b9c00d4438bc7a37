"""The scrubber's optional parts: which this install has, said in every recorded file's
metadata and, for a missing one, in a warning when the recorder starts (never silently weaker).

Each optional part is an extra of the package; without it the scrubber still runs, with the
evidence listed here as missing."""

from __future__ import annotations

import functools
from importlib import metadata

# extra -> (the distributions it installs, what the scrubber does with them, what it does without)
OPTIONAL: dict[str, tuple[tuple[str, ...], str, str]] = {
    "ja": (("fugashi", "unidic-lite"), "Japanese names also by morphological analysis (fugashi, UniDic)",
           "Japanese names from name lists and cues only"),
}


def _versions(dists: tuple[str, ...]) -> str | None:
    """"fugashi 1.5.2, unidic-lite 1.0.8", or None when one of them is not installed."""
    try:
        return ", ".join(f"{d} {metadata.version(d)}" for d in dists)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def ja_tagger():
    """The Japanese morphological analyser (fugashi with UniDic, the `ja` extra), or None."""
    try:
        import fugashi
        import unidic_lite

        return fugashi.Tagger(f'-d "{unidic_lite.DICDIR}"')
    except (ImportError, RuntimeError):  # (RuntimeError: a dictionary MeCab cannot open)
        return None


def _usable(extra: str) -> bool:
    return {"ja": ja_tagger}[extra]() is not None


@functools.cache
def scrub_metadata() -> dict[str, str]:
    """{"anonymize.extra.ja": "fugashi 1.5.2, unidic-lite 1.0.8"} for each optional part, or
    "absent: <what the scrubber does without it>" (read once: the writer adds it to every file;
    callers must not change the dict)."""
    out = {}
    for extra, (dists, _, without) in OPTIONAL.items():
        v = _versions(dists) if _usable(extra) else None
        out[f"anonymize.extra.{extra}"] = v or f"absent: {without}"
    return out


def missing_warnings() -> list[str]:
    """One line for each optional part this install lacks, naming the extra that adds it."""
    return [f"scrubber without the {extra} extra: {without} (pip install 'shadowreplay[{extra}]' adds: {adds})"
            for extra, (_, adds, without) in OPTIONAL.items() if not _usable(extra)]
