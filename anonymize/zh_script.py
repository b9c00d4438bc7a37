"""Traditional and simplified Chinese script, one character for one, so positions stay.

The Chinese detectors read simplified text (jieba's dictionary, the name tagger and the
gazetteers are simplified): `simplified` folds the characters only traditional text writes (陳,
劉, 說) into their simplified forms first. A name found in traditional text gets a substitute
in traditional script (`traditional`). The tables are OpenCC's (data/README.md)."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

__all__ = ["simplified", "traditional"]


def _lines(name: str) -> list[list[str]]:
    with gzip.open(Path(__file__).with_name("data") / name, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f]


@functools.cache
def _t2s() -> tuple[np.ndarray, dict[int, str]]:
    """(per code point, whether only traditional text writes it; the table of every pair). An
    array, not a character class: a regular expression tests a class of 4,000 scattered
    characters one by one."""
    lines = _lines("zh_t2s.txt.gz")
    only = np.zeros(0x110000, dtype=np.bool_)
    only[[ord(t) for t, _, *shared in lines if not shared]] = True
    return only, {ord(t): s for t, s, *_ in lines}


@functools.cache
def _s2t() -> dict[int, str]:
    return {ord(s): t for s, t in _lines("zh_s2t.txt.gz")}


def simplified(text: str) -> str:
    """`text` in simplified script where it writes a character only traditional text writes
    (陳大文 -> 陈大文); there the characters both scripts write are folded too (於 -> 于, as
    traditional text means it). The same length; the text itself when it has none."""
    only, table = _t2s()
    if not only[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)].any():
        return text
    return text.translate(table)


def traditional(text: str) -> str:
    """`text` with each simplified character in its usual traditional form (陈伟 -> 陳偉);
    one that traditional text writes too (于, 后) stays."""
    return text.translate(_s2t())
