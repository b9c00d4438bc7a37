"""The Chinese name tagger (anonymize/names_zh_model.py): the shipped model, its features and
its decoding."""

from __future__ import annotations

import numpy as np
import pytest
import rjieba

from shadowreplay.anonymize import names_zh_model as zm
from shadowreplay.anonymize.names_zh import _CJK_SPLIT, _Tokens


def test_shipped_model_was_trained_on_todays_gazetteer():
    """The model's features include the gazetteer's score buckets: when the gazetteer (or the
    Faker, wordfreq or ngender data under it) changes, scripts/train-zh-names must be rerun."""
    z = zm.model_arrays()
    assert int(z["bits"]) == zm.BITS
    assert str(z["gazetteer"]) == zm.gazetteer_fingerprint()
    assert z["weight"].shape == (len(z["bucket"]), len(zm.LABELS))
    assert len(z["bucket"]) > 10_000


def _full_viterbi(e: np.ndarray, trans: np.ndarray) -> list[int]:
    score = e[0].copy()
    back = []
    for row in e[1:]:
        cand = score[:, None] + trans
        back.append(cand.argmax(axis=0))
        score = cand.max(axis=0) + row
    y = int(score.argmax())
    labels = [y]
    for b in reversed(back):
        y = int(b[y])
        labels.append(y)
    return labels[::-1]


def _spans(labels: list[int]) -> list[tuple[int, int]]:
    out, start = [], -1
    for i, lab in enumerate(labels + [0]):
        if lab != 2 and start >= 0:
            out.append((start, i))
            start = -1
        if lab == 1 or (lab == 2 and start < 0):
            start = i
    return out


def _model(e: np.ndarray, trans: np.ndarray) -> zm.Model:
    """A model with one bucket per character holding that character's emission scores."""
    return zm.Model(np.arange(len(e)), e, trans, quantize=False)


@pytest.mark.parametrize("seed", range(30))
def test_viterbi_finds_the_best_labels(seed):
    """Against every label sequence of short texts, scored the CRF's way."""
    import itertools

    rng = np.random.default_rng(seed)
    n = 1 + seed % 7
    e = rng.normal(0, 3.0, size=(n, 3)).astype(np.float32)
    trans = rng.normal(0, 3.0, size=(3, 3))
    if seed % 2:
        trans = zm.model().trans

    def score(ys):
        return sum(float(e[i, y]) for i, y in enumerate(ys)) + sum(trans[a, b] for a, b in zip(ys, ys[1:]))

    best = max(itertools.product(range(3), repeat=n), key=score)
    got = _model(e, trans).labels(np.arange(n)[:, None])
    assert score(tuple(got.tolist())) == pytest.approx(score(best))


@pytest.mark.parametrize("seed", range(5))
def test_viterbi_on_long_texts(seed):
    rng = np.random.default_rng(seed)
    trans = zm.model().trans
    n = 400
    e = rng.normal(0, 3.0, size=(n, 3)).astype(np.float32)
    e[:, 0] += rng.choice([0.0, 2.0, 4.0, 8.0], size=n)
    assert _model(e, trans).tag(np.arange(n)[:, None]) == _spans(_full_viterbi(e.astype(np.float64), trans))


def _rows(text: str, sub: str) -> np.ndarray:
    pos, x = zm.features(text, _Tokens(text))
    at = text.index(sub)
    sel = (pos >= at) & (pos < at + len(sub))
    return x[sel]


def test_features_do_not_depend_on_where_the_text_stands():
    """The word hashes are the same wherever a word stands, and the characters beyond a gap
    before a Chinese run (Latin text, digits) are padding, as at the start of a text."""
    a = _rows("李建国说今天开会", "李建国说今天开会")
    assert np.array_equal(a, _rows("Hello! 李建国说今天开会", "李建国说今天开会"))
    assert np.array_equal(a, _rows("2024 abc 李建国说今天开会", "李建国说今天开会"))
    assert not np.array_equal(a, _rows("记者李建国说今天开会", "李建国说今天开会"))


def test_a_name_never_spans_a_gap_between_runs():
    text = "王 x 建国和张 1 伟"
    toks = _Tokens(text)
    for a, b in zm.find_spans(text, toks):
        assert all("\u4e00" <= c <= "\u9fff" for c in text[a:b])


@pytest.mark.parametrize(("text", "name"), [
    ("据新华社报道，国务院副总理钱其琛昨天在人民大会堂会见了来访的客人。", "钱其琛"),
    ("经过三年努力，孙晓梅终于完成了这部长篇小说的创作。", "孙晓梅"),
    ("本届大赛的冠军被来自广州的选手黄家驹摘得。", "黄家驹"),
])
def test_names_in_news_without_a_cue(text, name):
    toks = _Tokens(text)
    spans = zm.find_spans(text, toks)
    s = text.index(name)
    assert (s, s + len(name)) in spans, [text[a:b] for a, b in spans]


@pytest.mark.parametrize("text", ["今天天气很好，我们去公园散步吧。", "国务院发布了关于加强食品安全的通知。", "这个函数的返回值是一个列表。"])
def test_no_names_in_text_without_any(text):
    assert zm.find_spans(text, _Tokens(text)) == []


@pytest.mark.parametrize("seed", range(12))
def test_name_margin_against_every_labelling(seed):
    """How far below the best labelling the best one with a name at each character scores,
    against every label sequence of short texts."""
    import itertools

    from shadowreplay.anonymize.names_zh_kernels import name_margin

    rng = np.random.default_rng(seed)
    n = 1 + seed % 6
    e = rng.normal(0, 2.0, size=(n, 3))
    trans = rng.normal(0, 2.0, size=(3, 3))
    scores = {ys: sum(e[i, y] for i, y in enumerate(ys)) + sum(trans[a, b] for a, b in zip(ys, ys[1:]))
              for ys in itertools.product(range(3), repeat=n)}
    best = max(scores.values())
    want = [max(v for ys, v in scores.items() if ys[i] != 0) - best for i in range(n)]
    assert np.allclose(name_margin(e, trans), want)


def test_tag_text_gives_names_and_their_margin():
    text = "Hello 国务院副总理钱其琛昨天会见了客人。"
    tagged = zm.tag_text(text, _Tokens(text))
    s = text.index("钱其琛")
    assert (s, s + 3) in tagged.spans
    assert tagged.plausible(s, s + 3, 0.0)
    assert tagged.plausible(0, 5, 0.0)  # outside the Chinese runs the tagger has no say
    assert not tagged.plausible(text.index("会见"), text.index("会见") + 2, 3.0)
    assert tagged.peak == 0.0  # a name found: the best labelling has one


def test_peak_is_the_highest_margin_where_the_tagger_read():
    text = "ok 今天天气很好，我们去公园散步吧。"
    tagged = zm.tag_text(text, _Tokens(text))
    read = tagged.margin[np.isfinite(tagged.margin)]
    assert not tagged.spans and len(read) == len(text) - 3
    assert tagged.peak == read.max() < 0.0
    assert zm.tag_text("ok", _Tokens("ok")).peak == -np.inf


def test_weights_quantized_to_bytes_tag_as_the_float_weights_do():
    z = zm.model_arrays()
    exact = zm.Model(z["bucket"], z["weight"], z["trans"], quantize=False)
    quantized = zm.model()
    assert quantized.table.dtype == np.int8
    texts = ["据新华社报道，国务院副总理钱其琛昨天在人民大会堂会见了来访的客人。", "经过三年努力，孙晓梅终于完成了这部长篇小说的创作。",
             "江泽民、李鹏、朱镕基等领导同志出席了会议。", "今天天气很好，我们去公园散步吧。"]
    same = 0
    for text in texts:
        _, x = zm.features(text, _Tokens(text))
        same += exact.tag(x) == quantized.tag(x)
    assert same == len(texts)


@pytest.mark.parametrize("text", [
    "李建国说今天开会",
    "Hello! 李建国说：今天开会。\n他在 2024 年去了北京，见到王 x 建国和张 1 伟",
    "订单\u3000号码：１２３　客户　王芳小姐\x00下一段：张伟老师说好的",
    "a 中 b 文字 c",
])
def test_tokens_sit_where_their_words_are(text):
    """Every token's positions hold its word, whichever way they were mapped back from the
    joined runs (the array path and the per-run search agree)."""
    toks = _Tokens(text)
    assert toks.word and all(text[a:b] == w for a, b, w in zip(toks.start, toks.end, toks.word))
    assert toks.starts.tolist() == toks.start and toks.lens.tolist() == [len(w) for w in toks.word]
    parts = _CJK_SPLIT.split(text)
    words, tags = map(list, zip(*rjieba.tag("\n".join(parts[1::2]))))
    slow = _Tokens.__new__(_Tokens)
    slow._slow(parts, words, tags)
    assert (slow.start, slow.end, slow.word, slow.tag) == (toks.start, toks.end, toks.word, toks.tag)
