"""Compiled kernels of the Chinese name tagger (names_zh_model.py): features, emission scores,
Viterbi and max-marginals. numba compiles them on first use and caches the machine code (in __pycache__ beside
this file, or numba's user cache when that is read-only), so a process pays the compile once
per machine, not per text. Plain loops over arrays; every integer is uint64 or int64 on purpose
(numba turns mixed signed and unsigned arithmetic into floats)."""

from __future__ import annotations

import numpy as np
from numba import njit

NFEAT = 24
_OFFSET = np.uint64(1469598103934665603)
_PRIME = np.uint64(1099511628211)
_WORD_BASE = np.uint64(0x100000001B3)
_PAD = np.uint64(1)
_ZERO = np.uint64(0)


@njit(cache=True, inline="always")
def _m(h, c):
    return (h ^ c) * _PRIME


@njit(cache=True)
def _sequence(starts, lens, codes, nc):  # pragma: no cover (compiled)
    """The characters jieba's tokens cover (token i: text[starts[i] : starts[i] + lens[i]]):
    their positions in the text, their token, each token's first sequence index, their code
    points (at most nc - 1) and each token's word hash (its characters', wherever it stands)."""
    ntok = starts.shape[0]
    first = np.empty(ntok, dtype=np.int64)
    n = 0
    for t in range(ntok):
        first[t] = n
        n += lens[t]
    pos = np.empty(n, dtype=np.int64)
    tok_of = np.empty(n, dtype=np.int64)
    cp = np.empty(n, dtype=np.uint64)
    whash = np.empty(ntok, dtype=np.uint64)
    for t in range(ntok):
        h = _ZERO
        p = np.uint64(1)
        for j in range(lens[t]):
            i = first[t] + j
            pos[i] = starts[t] + j
            tok_of[i] = t
            cp[i] = np.uint64(min(codes[starts[t] + j], nc - 1))
            h += cp[i] * p
            p *= _WORD_BASE
        whash[t] = h ^ np.uint64(lens[t])
    return pos, tok_of, first, cp, whash


@njit(cache=True)
def place_tokens(lens, plens):  # pragma: no cover (compiled)
    """Where jieba's tokens of the runs joined by line breaks stand in the text: `lens` the tokens'
    lengths, `plens` those of the text's parts (gap, run, gap, ..., run, gap). Returns (each
    token's start in the text, whether it is a run's token rather than a separator, whether
    the tokens fit the runs: each run covered by whole tokens, one one-character token between
    two runs; False where jieba joined a line break to a word)."""
    n = lens.shape[0]
    nruns = (plens.shape[0] - 1) // 2
    starts = np.empty(n, dtype=np.int64)
    keep = np.empty(n, dtype=np.bool_)
    if nruns == 0:
        return starts, keep, n == 0
    pos = plens[0]
    left = plens[1]
    k = 0
    for t in range(n):
        if left == 0:  # the separator after run k, then run k + 1
            if lens[t] != 1 or k + 1 >= nruns:
                return starts, keep, False
            keep[t] = False
            starts[t] = pos
            pos += plens[2 * k + 2]
            k += 1
            left = plens[2 * k + 1]
            continue
        keep[t] = True
        starts[t] = pos
        pos += lens[t]
        left -= lens[t]
        if left < 0:
            return starts, keep, False
    return starts, keep, k == nruns - 1 and left == 0


@njit(cache=True, inline="always")
def _row(i, o, cp, pos, tok_of, tok_first, tok_len, tcode, whash, sur_t, sur2_t, giv_t, mask, c, s, s2, g):  # pragma: no cover (compiled)
    """Feature buckets of character i into o (NFEAT); c, s, s2, g: scratch of 5."""
    n = cp.shape[0]
    ntok = tcode.shape[0]
    for d in range(5):
        k = i + d - 2
        if 0 <= k < n and pos[k] - pos[i] == d - 2:
            c[d] = cp[k]
            s[d] = sur_t[cp[k]]
            s2[d] = sur2_t[cp[k]]
            g[d] = giv_t[cp[k]]
        else:
            c[d] = _PAD
            s[d] = _ZERO
            s2[d] = _ZERO
            g[d] = _ZERO
    t = tok_of[i]
    ln = tok_len[t]
    k = i - tok_first[t]
    if ln == 1:
        bmes = np.uint64(3)
    elif k == 0:
        bmes = np.uint64(0)
    elif k == ln - 1:
        bmes = np.uint64(2)
    else:
        bmes = np.uint64(1)
    tl = np.uint64(min(ln, 5))
    tcur = tcode[t]
    wcur = whash[t]
    tprev = tcode[t - 1] if t > 0 else _ZERO
    wprev = whash[t - 1] if t > 0 else _ZERO
    tnext = tcode[t + 1] if t + 1 < ntok else _ZERO
    wnext = whash[t + 1] if t + 1 < ntok else _ZERO
    o[0] = np.int64(_m(_m(_OFFSET, np.uint64(1)), c[0]) & mask)
    o[1] = np.int64(_m(_m(_OFFSET, np.uint64(2)), c[1]) & mask)
    o[2] = np.int64(_m(_m(_OFFSET, np.uint64(3)), c[2]) & mask)
    o[3] = np.int64(_m(_m(_OFFSET, np.uint64(4)), c[3]) & mask)
    o[4] = np.int64(_m(_m(_OFFSET, np.uint64(5)), c[4]) & mask)
    o[5] = np.int64(_m(_m(_m(_OFFSET, np.uint64(6)), c[1]), c[2]) & mask)
    o[6] = np.int64(_m(_m(_m(_OFFSET, np.uint64(7)), c[2]), c[3]) & mask)
    o[7] = np.int64(_m(_m(_m(_OFFSET, np.uint64(8)), c[0]), c[1]) & mask)
    o[8] = np.int64(_m(_m(_m(_OFFSET, np.uint64(9)), c[3]), c[4]) & mask)
    o[9] = np.int64(_m(_m(_m(_OFFSET, np.uint64(10)), c[1]), c[3]) & mask)
    o[10] = np.int64(_m(_m(_m(_m(_OFFSET, np.uint64(11)), tcur), bmes), tl) & mask)
    o[11] = np.int64(_m(_m(_m(_OFFSET, np.uint64(12)), tprev), bmes) & mask)
    o[12] = np.int64(_m(_m(_m(_OFFSET, np.uint64(13)), tnext), bmes) & mask)
    o[13] = np.int64(_m(_m(_m(_m(_m(_OFFSET, np.uint64(14)), tprev), tcur), tnext), bmes) & mask)
    o[14] = np.int64(_m(_m(_m(_OFFSET, np.uint64(15)), wcur), bmes) & mask)
    o[15] = np.int64(_m(_m(_m(_OFFSET, np.uint64(16)), wprev), bmes) & mask)
    o[16] = np.int64(_m(_m(_m(_OFFSET, np.uint64(17)), wnext), bmes) & mask)
    o[17] = np.int64(_m(_m(_m(_m(_OFFSET, np.uint64(18)), s[2]), s[1]), s[0]) & mask)
    o[18] = np.int64(_m(_m(_m(_m(_OFFSET, np.uint64(19)), s2[2]), s2[1]), s2[0]) & mask)
    o[19] = np.int64(_m(_m(_m(_m(_OFFSET, np.uint64(20)), g[2]), g[1]), g[3]) & mask)
    o[20] = np.int64(_m(_m(_m(_m(_OFFSET, np.uint64(21)), s[1]), g[2]), g[3]) & mask)
    o[21] = np.int64(_m(_m(_m(_m(_OFFSET, np.uint64(22)), s[0]), g[1]), g[2]) & mask)
    o[22] = np.int64(_m(_m(_m(_m(_m(_OFFSET, np.uint64(23)), s[2]), g[3]), g[4]), bmes) & mask)
    o[23] = 24  # the bias (the same bucket for every character)


@njit(cache=True)
def features(starts, lens, codes, tcode, sur_t, sur2_t, giv_t, mask):  # pragma: no cover (compiled)
    """(positions in the text, (n, NFEAT) feature buckets) of the n characters jieba's tokens
    cover: token i is text[starts[i] : starts[i] + lens[i]], `codes` the text's code points,
    `tcode` each token's tag code; a neighbour is padding unless its position is next to the
    character's (the gap between two runs)."""
    pos, tok_of, first, cp, whash = _sequence(starts, lens, codes, sur_t.shape[0])
    n = cp.shape[0]
    out = np.empty((n, NFEAT), dtype=np.int64)
    c = np.empty(5, dtype=np.uint64)  # code points at -2..+2
    s = np.empty(5, dtype=np.uint64)  # surname buckets
    s2 = np.empty(5, dtype=np.uint64)  # starts a two-character surname
    g = np.empty(5, dtype=np.uint64)  # given-name buckets
    for i in range(n):
        _row(i, out[i], cp, pos, tok_of, first, lens, tcode, whash, sur_t, sur2_t, giv_t, mask, c, s, s2, g)
    return pos, out


@njit(cache=True)
def tag(starts, lens, codes, tcode, sur_t, sur2_t, giv_t, mask, table, scale, trans):  # pragma: no cover (compiled)
    """(positions in the text, name spans [start, end) in the text, name margins, the highest
    margin or -inf) of the characters `features` describes, without building the feature
    matrix: the best labelling's names (`name_spans`) and each character's `name_margin`."""
    pos, tok_of, first, cp, whash = _sequence(starts, lens, codes, sur_t.shape[0])
    n = cp.shape[0]
    nl = trans.shape[0]
    e = np.zeros((n, nl), dtype=np.float64)
    o = np.empty(NFEAT, dtype=np.int64)
    c = np.empty(5, dtype=np.uint64)
    s = np.empty(5, dtype=np.uint64)
    s2 = np.empty(5, dtype=np.uint64)
    g = np.empty(5, dtype=np.uint64)
    for i in range(n):
        _row(i, o, cp, pos, tok_of, first, lens, tcode, whash, sur_t, sur2_t, giv_t, mask, c, s, s2, g)
        _emission(o, table, scale, e[i])
    margin = name_margin(e, trans)
    peak = -np.inf
    for i in range(n):
        if margin[i] > peak:
            peak = margin[i]
    return pos, name_spans(_decode(e, trans), pos), margin, peak


@njit(cache=True)
def viterbi(x, table, scale, trans):  # pragma: no cover (compiled)
    """The best labels (0 O, 1 B, 2 I) for feature rows `x`: emission scores summed from
    `table[bucket] * scale`."""
    n = x.shape[0]
    nl = trans.shape[0]
    e = np.zeros((n, nl), dtype=np.float64)
    for i in range(n):
        _emission(x[i], table, scale, e[i])
    return _decode(e, trans)


@njit(cache=True, inline="always")
def _emission(buckets, table, scale, out):  # pragma: no cover (compiled)
    """out[y] = sum of table[b, y] over the buckets b, times scale (integer sums for an integer
    table)."""
    for y in range(out.shape[0]):
        acc = 0.0
        for j in range(buckets.shape[0]):
            acc += table[buckets[j], y]
        out[y] = acc * scale


@njit(cache=True)
def _decode(e, trans):  # pragma: no cover (compiled)
    """Viterbi: the best labels for emission scores `e` (n, labels) and transitions `trans`
    (from, to); no weight for the first or last label."""
    n, nl = e.shape
    score = np.zeros(nl, dtype=np.float64)
    new = np.empty(nl, dtype=np.float64)
    back = np.empty((n, nl), dtype=np.int8)
    labels = np.zeros(n, dtype=np.int8)
    if n == 0:
        return labels
    for y in range(nl):
        score[y] = e[0, y]
    for i in range(1, n):
        for y in range(nl):
            best = -np.inf
            arg = 0
            for p in range(nl):
                v = score[p] + trans[p, y]
                if v > best:
                    best = v
                    arg = p
            new[y] = best + e[i, y]
            back[i, y] = arg
        for y in range(nl):
            score[y] = new[y]
    y = 0
    for p in range(1, nl):
        if score[p] > score[y]:
            y = p
    labels[n - 1] = y
    for i in range(n - 1, 0, -1):
        y = back[i, y]
        labels[i - 1] = y
    return labels


@njit(cache=True)
def name_margin(e, trans):  # pragma: no cover (compiled)
    """Per character, how far the best labelling that puts it in a name (B or I) scores below
    the best labelling of all (0 where the best one does; max-marginals from a forward and a
    backward Viterbi pass, no exponentials)."""
    n, nl = e.shape
    fw = np.empty((n, nl), dtype=np.float64)
    bw = np.zeros((n, nl), dtype=np.float64)
    out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return out
    for y in range(nl):
        fw[0, y] = e[0, y]
    for i in range(1, n):
        for y in range(nl):
            m = -np.inf
            for p in range(nl):
                v = fw[i - 1, p] + trans[p, y]
                if v > m:
                    m = v
            fw[i, y] = m + e[i, y]
    for i in range(n - 2, -1, -1):
        for y in range(nl):
            m = -np.inf
            for q in range(nl):
                v = trans[y, q] + e[i + 1, q] + bw[i + 1, q]
                if v > m:
                    m = v
            bw[i, y] = m
    for i in range(n):
        best = fw[i, 0] + bw[i, 0]
        named = -np.inf
        for y in range(1, nl):
            v = fw[i, y] + bw[i, y]
            if v > named:
                named = v
        out[i] = named - best if named < best else 0.0
    return out


@njit(cache=True)
def name_spans(labels, pos):  # pragma: no cover (compiled)
    """[start, end) in the text of each name in a label sequence (a B and the I after it; an I
    after an O starts one too), cut where the positions jump (the gap between two runs)."""
    n = labels.shape[0]
    out = np.empty((n, 2), dtype=np.int64)
    k = 0
    start = -1
    for i in range(n):
        if labels[i] == 0:
            if start >= 0:
                out[k, 0] = start
                out[k, 1] = pos[i - 1] + 1
                k += 1
                start = -1
            continue
        if start >= 0 and (labels[i] == 1 or pos[i] != pos[i - 1] + 1):
            out[k, 0] = start
            out[k, 1] = pos[i - 1] + 1
            k += 1
            start = -1
        if start < 0:
            start = pos[i]
    if start >= 0:
        out[k, 0] = start
        out[k, 1] = pos[n - 1] + 1
        k += 1
    return out[:k]
