"""Deterministic prompt text with an exact token count under a given tokenizer.

A prompt is a concatenation of blocks; a block's text is a function of its key (bytes) and its
token length only: words are drawn from a fixed 256-word list by a SHAKE-256 stream seeded by the
key (never Python's hash(), so every process agrees), as many as fit, then 1-token filler words
close the gap, and the block is re-tokenized and nudged until it is exactly n tokens. Every word
carries its leading space, so byte-level BPE (and any tokenizer that splits on whitespace) never
merges across words or blocks; whole prompts are still re-tokenized and, if a tokenizer does merge
across a block boundary, the last block is nudged until the total is exact (counted as `adjusted`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from shadowreplay.errors import ConfigError

from .tokenizer import Tokenizer

WORDS = (
    "the of and to in is was for on that with as by at from his her it an were are which this be "
    "has had or not but its they their one all new more two first been who after also other when "
    "into time than over most some only year years city may would can about there up out what "
    "school world state people such many three between where high under during before while well "
    "part used team known since later each both through second these made through north south "
    "east west him she them then so if no any our we you your very long small large old young "
    "early late home house water river road music film book game group family life work name day "
    "night week month area land light sound power field point line side place end case number "
    "order form level rate plan model data system table value word story paper report market "
    "price money cost trade bank chain stone wood glass metal paint color green blue red black "
    "white gold silver cloud rain snow wind storm fire earth star moon sun sea lake hill tree "
    "flower garden bird fish horse dog cat bread milk tea coffee sugar salt apple lemon orange "
    "grape bean corn rice soup cake window door wall floor roof bridge tower train plane ship "
    "wheel engine motor signal radio phone camera screen video letter note song dance voice "
    "simple quick quiet bright dark clear warm cold fresh soft hard heavy kind hand eye face head "
    "door key lock box cup"
).split()
assert len(set(WORDS)) >= 256, len(set(WORDS))
WORDS = tuple(dict.fromkeys(WORDS))[:256]
PIECES = tuple(" " + w for w in WORDS)


class ApproxTokenizer:
    """Used without --tokenizer: one token per word. Real counts depend on the model's tokenizer
    (short common English words are mostly one token in BPE vocabularies of 32k+)."""

    name = "approx-words"
    n_special = 0

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        index = {w: i for i, w in enumerate(WORDS)}
        return [[index.get(w, 0) for w in t.split()] for t in texts]

    def count(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]


def block_key(*parts: object) -> bytes:
    """A stable key for a block: SHA-256 of the parts joined with '|'."""
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()


class Synthesizer:
    """verify: "all" re-tokenizes every prompt; "sample" (default) re-tokenizes every 64th one
    when the tokenizer proved additive over the word list (see _probe), every one otherwise."""

    def __init__(self, tok: Tokenizer, cache_blocks: int = 20_000, verify: str = "sample"):
        self.tok = tok
        counts = [len(ids) for ids in tok.encode(list(PIECES))]
        self.word_tokens = np.array(counts, dtype=np.int64)
        ones = [i for i, c in enumerate(counts) if c == 1]
        if not ones or min(counts) < 1:
            raise ConfigError(f"tokenizer {tok.name}: none of the synthesis words is a single token; cannot hit exact lengths")
        self.filler = PIECES[ones[0]]
        self._cache: OrderedDict[tuple[bytes, int], str] = OrderedDict()
        self._cache_max = cache_blocks
        self.adjusted_rows = 0
        # The approximation counts words, which is exact by construction: nothing to verify.
        self.verify = not isinstance(tok, ApproxTokenizer)
        self.verify_all = verify == "all"
        self.additive = (not self.verify) or self._probe()
        self.verified_rows = 0

    def _probe(self) -> bool:
        """True when a text of words costs exactly the sum of its words' tokens: checked on 16,384
        word pairs (local tokenizers) and on long random word sequences."""
        n = len(PIECES)
        if hasattr(self.tok, "_tok"):  # in-process: every word next to 32 partners, both orders
            partners = np.frombuffer(hashlib.shake_256(b"probe-pairs").digest(32), dtype=np.uint8).tolist()
            pairs = [(a, b) for a in range(n) for b in partners] + [(b, a) for a in range(n) for b in partners]
            texts = [PIECES[a] + PIECES[b] for a, b in pairs]
            want = [int(self.word_tokens[a] + self.word_tokens[b]) for a, b in pairs]
            if [len(x) for x in self.tok.encode(texts)] != want:
                return False
        for k in range(8):
            idx = np.frombuffer(hashlib.shake_256(b"probe%d" % k).digest(600), dtype=np.uint8)
            text = "".join(PIECES[i] for i in idx.tolist())
            if len(self.tok.encode([text])[0]) != int(self.word_tokens[idx].sum()):
                return False
        return n > 0

    def _draft(self, key: bytes, n: int) -> list[str]:
        idx = np.frombuffer(hashlib.shake_256(key).digest(n), dtype=np.uint8)
        cs = np.cumsum(self.word_tokens[idx])
        m = int(np.searchsorted(cs, n, side="right"))
        have = int(cs[m - 1]) if m else 0
        return [PIECES[i] for i in idx[:m].tolist()] + [self.filler] * (n - have)

    def _nudge(self, pieces: list[str], n: int, measure) -> list[str]:
        """Adds/removes trailing pieces until measure(text) == n."""
        for _ in range(4 * n + 64):
            c = measure("".join(pieces))
            if c == n:
                return pieces
            if c < n:
                pieces = pieces + [self.filler] * (n - c)
            else:
                pieces = pieces[:-1]
        raise ConfigError(f"tokenizer {self.tok.name}: could not build a text of exactly {n} tokens")

    def block(self, key: bytes, n: int) -> str:
        """Text of exactly n tokens (special tokens excluded) determined by (key, n)."""
        if n <= 0:
            return ""
        ck = (key, n)
        hit = self._cache.get(ck)
        if hit is not None:
            self._cache.move_to_end(ck)
            return hit
        pieces = self._draft(key, n)
        text = "".join(pieces)
        if self.verify and not self.additive and len(self.tok.encode([text])[0]) != n:
            text = "".join(self._nudge(pieces, n, lambda t: len(self.tok.encode([t])[0])))
        self._cache[ck] = text
        if len(self._cache) > self._cache_max:
            self._cache.popitem(last=False)
        return text

    def prompts(self, rows: Sequence[Sequence[tuple[bytes, int]]], targets: Sequence[int]) -> list[str]:
        """One prompt per row from its blocks [(key, n_tokens)], each re-tokenized; a prompt whose
        total is off (a merge across blocks) gets its last block nudged to the exact target."""
        texts = ["".join(self.block(k, n) for k, n in blocks) for blocks in rows]
        if not self.verify:
            return texts
        check = list(range(len(texts))) if (self.verify_all or not self.additive) else list(range(0, len(texts), 64))
        counts = self.tok.count([texts[i] for i in check])
        if self.additive and check and any(c != w and w > self.tok.n_special for c, w in zip(counts, [targets[i] for i in check])):
            self.additive = False  # the probe missed a merge: verify everything from now on
            check = list(range(len(texts)))
            counts = self.tok.count(texts)
        self.verified_rows += len(check)
        for i, c in zip(check, counts):
            want = targets[i]
            if c == want or want <= self.tok.n_special:
                continue
            blocks = rows[i]
            head = "".join(self.block(k, n) for k, n in blocks[:-1])
            k, n = blocks[-1] if blocks else (block_key("tail", i), 0)
            pieces = self._draft(k, max(n, 1)) if n > 0 else []
            pieces = self._nudge(pieces, want, lambda t: self.tok.count([head + t])[0])
            texts[i] = head + "".join(pieces)
            self.adjusted_rows += 1
        return texts


def row_blocks(key_parts: tuple, content_tokens: int, block_size: int = 512,
               hash_ids: Sequence[int] | None = None, hash_key: str = "mooncake") -> list[tuple[bytes, int]]:
    """The blocks of one prompt of `content_tokens` tokens. With hash_ids, block i is keyed by the
    block id alone (hash_key|block|id), full blocks are block_size tokens and the last one takes
    the remainder; without, the prompt is one block keyed by key_parts (unique per row)."""
    if content_tokens <= 0:
        return []
    if not hash_ids:
        return [(block_key(*key_parts), content_tokens)]
    out = []
    left = content_tokens
    for h in hash_ids:
        if left <= 0:
            break
        n = min(block_size, left)
        out.append((block_key(hash_key, "block", h), n))
        left -= n
    if left > 0:  # more tokens than the ids cover: an extra row-unique tail block
        out.append((block_key(*key_parts, "tail"), left))
    return out


def chain_block_ids(token_lists: Sequence[Sequence[int]], block_size: int = 512) -> list[list[int]]:
    """Mooncake-style hash_ids recomputed from token ids: each block_size chunk (the last may be
    shorter) gets an id determined by its tokens and every token before it (a prefix chain), so
    identical prefixes give identical ids. Ids are numbered 0, 1, ... in order of first appearance."""
    ids: dict[bytes, int] = {}
    out = []
    for toks in token_lists:
        arr = np.asarray(toks, dtype=np.int64)
        prev = b""
        row = []
        for s in range(0, len(arr), block_size):
            d = hashlib.sha256(prev + arr[s : s + block_size].tobytes()).digest()
            prev = d
            row.append(ids.setdefault(d, len(ids)))
        out.append(row)
    return out


def shared_block_share(hash_lists: Sequence[Sequence], sizes: Sequence[Sequence[int]] | None = None) -> float:
    """Share of block occurrences whose block was already seen in an earlier row or position
    (the prefix-cache hit potential). With sizes, a block is keyed by (id, size)."""
    seen = set()
    total = hits = 0
    for i, row in enumerate(hash_lists):
        for j, h in enumerate(row):
            key = (h, sizes[i][j]) if sizes is not None else h
            total += 1
            if key in seen:
                hits += 1
            else:
                seen.add(key)
    return hits / total if total else 0.0
