"""A character tagger for Chinese person names: a linear-chain CRF over hashed features.

Each character of a text's Chinese runs gets features: the characters around it (-2..+2, four
bigrams, one skip-gram), jieba's tag and word around it (its own, the one before, the one
after, and its place in its word), and the gazetteer's surname and given-name scores of the
characters around it. A feature is a 64-bit FNV-1a hash cut to `BITS` bits (a word is hashed by
its characters, the same wherever it stands); the model is a weight per (bucket, label) for the
labels O, B (a name starts) and I (a name goes on), and a transition weight per pair of labels.
It is trained by `scripts/train-zh-names` (python-crfsuite, on the MSRA NER corpus's train split
and half of People's Daily 1998-01) and shipped as `data/zh_names_crf.npz`.

Features, Viterbi and the names' margins are compiled (names_zh_kernels.py, numba).

`features` is shared with the training script, so the two never disagree on a feature."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
from typing import Protocol

import numpy as np

from .gazetteer import CN_SURNAMES_1, CN_SURNAMES_2, zh_given_scores, zh_surname_scores


class Tokens(Protocol):
    """What the tagger reads of a text's jieba tokens (names_zh builds them): their tags and,
    as int64 arrays, their start positions and lengths in the text."""

    tag: list[str]
    starts: np.ndarray
    lens: np.ndarray

BITS = 17
LABELS = ("O", "B", "I")
MODEL_FILE = "zh_names_crf.npz"
_NC = 0x30000  # code points above the CJK extension planes share one code
_MASK = np.uint64((1 << BITS) - 1)


@functools.cache
def gazetteer_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per code point: the surname score bucket (1-9; 10: listed without a score), whether a
    two-character surname starts with it, and the given-name score bucket (1-10); 0: none.
    Bytes, so the three tables stay in the cache."""
    sur = np.zeros(_NC, dtype=np.uint8)
    for s, v in zh_surname_scores().items():
        if len(s) == 1:
            sur[ord(s)] = 1 + int(np.clip((v + 2) // 1, 0, 8))
    for s in CN_SURNAMES_1:
        if sur[ord(s)] == 0:
            sur[ord(s)] = 10
    sur2 = np.zeros(_NC, dtype=np.uint8)
    for s in CN_SURNAMES_2:
        sur2[ord(s[0])] = 1
    giv = np.zeros(_NC, dtype=np.uint8)
    for c, v in zh_given_scores().items():
        if len(c) == 1:
            giv[ord(c)] = 1 + int(np.clip((v + 6) // 1.5, 0, 9))
    return sur, sur2, giv


def gazetteer_fingerprint() -> str:
    """A digest of the gazetteer buckets: a model trained on other buckets must be retrained."""
    h = hashlib.sha256()
    for t in gazetteer_tables():
        h.update(t.astype(np.uint64).tobytes())
    return h.hexdigest()[:16]


@functools.cache
def kernels():
    """The compiled kernels, imported on first use: numba's import takes a second, and a process
    that never sees Chinese text never pays it."""
    from . import names_zh_kernels

    return names_zh_kernels


class _TagCodes(dict):
    """jieba's tags (a small closed set) to the 64-bit codes the features hash them by."""

    def __missing__(self, tag: str) -> int:
        code = self[tag] = int.from_bytes(tag.encode()[:8].ljust(8, b"\0"), "little") | 1 << 62
        return code


_tag_code = _TagCodes().__getitem__


def _inputs(text: str, toks: Tokens) -> tuple:
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    tcode = np.fromiter(map(_tag_code, toks.tag), dtype=np.uint64, count=len(toks.tag))
    return (toks.starts, toks.lens, codes, tcode, *gazetteer_tables(), _MASK)


def features(text: str, toks: Tokens) -> tuple[np.ndarray, np.ndarray]:
    """(positions in `text`, (n, NFEAT) feature buckets) for the n characters of the text's
    Chinese runs (the characters jieba's tokens cover). Neighbours across a gap between runs
    are padding."""
    return kernels().features(*_inputs(text, toks))


def _name_spans(labels: np.ndarray, pos: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each name in a label sequence, in the positions `pos` of its characters:
    a B and the I after it (an I after an O starts one too), cut where the positions jump."""
    return list(map(tuple, kernels().name_spans(labels, pos).tolist()))


class Model:
    """Weights of a trained tagger: `table` (2**BITS, 3), the emission weight of each bucket per
    label, times `scale`; `trans` (3, 3) from label to label. Quantized to bytes by default, so
    the table is 384 KiB: its lookups (cache misses, where other work ran in between) are most
    of the tagger's time."""

    def __init__(self, bucket: np.ndarray, weight: np.ndarray, trans: np.ndarray, quantize: bool = True) -> None:
        if quantize:
            self.scale = float(np.abs(weight).max()) / 127.0 or 1.0
            self.table = np.zeros((1 << BITS, len(LABELS)), dtype=np.int8)
            self.table[bucket] = np.round(weight / self.scale).astype(np.int8)
        else:
            self.scale = 1.0
            self.table = np.zeros((1 << BITS, len(LABELS)), dtype=np.float32)
            self.table[bucket] = weight
        self.trans = trans.astype(np.float64)

    def labels(self, x: np.ndarray) -> np.ndarray:
        """The best label of each feature row of `x`: 0 O, 1 B, 2 I."""
        return kernels().viterbi(x, self.table, self.scale, self.trans)

    def tag(self, x: np.ndarray) -> list[tuple[int, int]]:
        """Name spans [a, b) in sequence indices for the feature rows `x`."""
        labels = self.labels(x)
        return _name_spans(labels, np.arange(len(labels)))


def model_arrays() -> dict[str, np.ndarray]:
    """The arrays of the shipped model file: bucket, weight, trans, bits, gazetteer."""
    with importlib.resources.files(__package__).joinpath("data", MODEL_FILE).open("rb") as f:
        with np.load(f) as z:
            return {k: z[k] for k in z.files}


@functools.cache
def model() -> Model:
    """The shipped model, loaded on first use."""
    z = model_arrays()
    if int(z["bits"]) != BITS:
        raise RuntimeError(f"{MODEL_FILE} has {int(z['bits'])}-bit buckets, the features {BITS}: rerun scripts/train-zh-names")
    return Model(z["bucket"], z["weight"], z["trans"])


class Tagged:
    """What the tagger says of a text: the names it finds (`spans`, [start, end) in the text;
    none crosses a gap between runs), and, asked, how plausible a name is elsewhere."""

    __slots__ = ("spans", "peak", "_text_len", "_pos", "_margin_at", "_margin", "_margin_list")

    def __init__(self, spans: list[tuple[int, int]], text_len: int, pos: np.ndarray, margin_at: np.ndarray, peak: float) -> None:
        self.spans = spans
        # the highest margin anywhere the tagger read (0 where it found a name; -inf where it
        # read nothing): a name inside its runs is at least this much less plausible
        self.peak = peak
        self._text_len, self._pos, self._margin_at = text_len, pos, margin_at
        self._margin: np.ndarray | None = None
        self._margin_list: list[float] | None = None

    @property
    def margin(self) -> np.ndarray:
        """Per position of the text, how far below the best labelling the best one with a name
        there scores: 0 inside the names found; +inf where the tagger saw nothing (outside the
        Chinese runs: it has no say there)."""
        if self._margin is None:
            self._margin = np.empty(self._text_len)
            self._margin.fill(np.inf)
            self._margin[self._pos] = self._margin_at
        return self._margin

    @property
    def margin_list(self) -> list[float]:
        """`margin` as a list (a slice's max is quicker on a short list than on an array)."""
        if self._margin_list is None:
            self._margin_list = self.margin.tolist()
        return self._margin_list

    def plausible(self, start: int, end: int, within: float) -> bool:
        """Does a labelling with a name somewhere in [start, end) score within `within` of the
        best labelling (or does the span reach where the tagger saw nothing)?"""
        return end > start and max(self.margin_list[start:end]) >= -within


def tag_text(text: str, toks: Tokens) -> Tagged:
    """The tagger's names in `text`, over its Chinese runs (jieba's tokens `toks`)."""
    if not toks.word:
        return Tagged([], len(text), np.zeros(0, dtype=np.int64), np.zeros(0), -np.inf)
    m = model()
    pos, spans, margin_at, peak = kernels().tag(*_inputs(text, toks), m.table, m.scale, m.trans)
    return Tagged(list(map(tuple, spans.tolist())), len(text), pos, margin_at, peak)


def find_spans(text: str, toks: Tokens) -> list[tuple[int, int]]:
    """The tagger's name spans [start, end) in `text`."""
    return tag_text(text, toks).spans
