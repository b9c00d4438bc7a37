"""The expression grammar (analysis/expr.py): parsing, caret messages, goodput bounds, absolute
evaluation on a real DuckDB dataset with intervals, and JUnit XML read back by junitparser."""

from __future__ import annotations

import numpy as np
import pytest
from junitparser import Failure, JUnitXml

from shadowreplay.analysis import expr as X
from shadowreplay.analysis import stats
from shadowreplay.analysis.junit import write_junit
from shadowreplay.errors import ConfigError
from tests.analysis_helpers import SynthSpec, make_requests, write_sorted


@pytest.mark.parametrize("text, metric, q, op, value, scope", [
    ("ttft_p99<=250ms", "ttft", 0.99, "<=", 250.0, ()),
    ("e2e_p95 < 5s", "e2e", 0.95, "<", 5000.0, ()),
    ("itl_p99.9<=50ms", "itl", 0.999, "<=", 50.0, ()),
    ("tpot_p50>=1ms", "itl", 0.5, ">=", 1.0, ()),
    ("error_rate<=1%", "error_rate", None, "<=", 0.01, ()),
    ("goodput>=95% @client=web-app", "goodput", None, ">=", 0.95, (("client", "web-app"),)),
    ("ttft_p99<=1s @model=llama-3-8b @client=c_1", "ttft", 0.99, "<=", 1000.0, (("model", "llama-3-8b"), ("client", "c_1"))),
    ("ttft=500ms", "ttft", None, "<=", 500.0, ()),
])  # fmt: skip
def test_parse_absolute(text, metric, q, op, value, scope):
    e = X.parse(text)
    assert (e.metric, e.quantile, e.op, e.value, e.relative, e.scope, e.text) == (metric, q, op, pytest.approx(value), False, scope, text)
    assert e.is_bound == (q is None and metric in X.LATENCY)


def test_parse_relative_and_worse():
    e = X.parse("ttft_p99>+10%", allow_relative=True)
    assert (e.metric, e.quantile, e.op, e.value, e.relative) == ("ttft", 0.99, ">", pytest.approx(0.10), True)
    assert X.parse("goodput<-5%", allow_relative=True).value == pytest.approx(-0.05)
    w = X.parse("worse @client=batch", allow_relative=True)
    assert w.is_worse and w.scope == (("client", "batch"),)


def test_parse_all_legacy_and_lists():
    got = X.parse_all(["ttft=500ms,e2e=5s", "ttft_p99<=1s, error_rate<=1%"])
    assert [e.text for e in got] == ["ttft=500ms", "e2e=5s", "ttft_p99<=1s", "error_rate<=1%"]
    assert [e.is_bound for e in got] == [True, True, False, False]


@pytest.mark.parametrize("text, caret, words", [
    ("ttft_p99<=500", 13, "unit"),
    ("ttft_p99<=5x", 11, "unknown unit"),
    ("tfft_p99<=5s", 0, "unknown figure"),
    ("ttft_p999<=5s", 6, "percentile"),
    ("ttft_p99=5s", 8, "operator"),
    ("ttft_p99 == 5s", 9, "operator"),
    ("error_rate<=1", 13, "percentage"),
    ("error_rate<=150%", 12, "at most 100%"),
    ("ttft_p99>+10%", 9, "compare --fail-on"),
    ("worse", 0, "compare --fail-on"),
    ("goodput>=95% @region=eu", 14, "@client=ID or @model=NAME"),
    ("ttft_p99<=5s then", 13, "unexpected text"),
    ("ttft>=5s", 4, "upper limit"),
])  # fmt: skip
def test_malformed_expressions_point_at_the_wrong_character(text, caret, words):
    with pytest.raises(X.ExprError) as ei:
        X.parse(text, flag="--assert")
    e = ei.value
    assert isinstance(e, ConfigError) and e.pos == caret and words in e.reason
    lines = str(e).splitlines()
    assert lines[0].startswith("--assert: ") and lines[1].strip() == text
    assert lines[2].index("^") - lines[1].index(text[0]) == caret


def test_relative_gate_shapes_are_checked():
    with pytest.raises(X.ExprError, match="relative change"):
        X.parse("ttft_p99<=500ms", allow_relative=True)  # a compare gate is relative
    with pytest.raises(X.ExprError, match="percentage"):
        X.parse("ttft_p99>+10ms", allow_relative=True)


def test_goodput_bounds():
    es = X.parse_all(["ttft_p99<=500ms", "ttft_p50<=200ms", "e2e_p99<=5s @client=a", "itl_p99>=1ms"])
    assert X.goodput_bounds(es) == {"ttft": 500.0}  # the largest TTFT bound; scoped and lower limits left out
    assert X.goodput_bounds(es, (("client", "a"),)) == {"ttft": 500.0, "e2e": 5000.0}
    assert X.goodput_bounds(es + [X.parse("ttft=300ms")]) == {"ttft": 300.0}  # a bound given as such wins
    assert X.goodput_bounds(es, slo={"e2e": 1000.0}) == {"ttft": 500.0, "e2e": 1000.0}


def test_intervals_cover():
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(200):
        v = np.sort(rng.exponential(100, 2000))
        lo, hi = stats.quantile_interval(v, 0.99)
        hits += lo <= 100 * np.log(100) <= hi  # the true P99 of Exp(mean 100)
    assert 0.9 <= hits / 200 <= 0.995
    lo, hi = stats.wilson_interval(0, 1000)
    assert lo == 0 and 0.002 < hi < 0.006
    lo, hi = stats.wilson_interval(50, 1000)
    assert lo < 0.05 < hi


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    root = tmp_path_factory.mktemp("expr")
    req = make_requests(SynthSpec(periods=1, period_s=1800, rate_per_s=2, anomaly=None, itl_lists=False, seed=3, error_rate=0.02))
    write_sorted(root / "rec", "requests", req)
    return root / "rec", req


def _col(t, name):
    return t.column(name).to_numpy(zero_copy_only=False).astype(float)


def test_evaluate_absolute_figures(rec, tmp_path):
    path, req = rec
    ttft, e2e = _col(req, "ttft_ms"), _col(req, "e2e_ms")
    failed = req.column("status").to_numpy() >= 400
    p99 = float(np.nanpercentile(ttft, 99))
    texts = [f"ttft_p99<={p99 * 1.1:.0f}ms", f"ttft_p99<={p99 * 0.9:.0f}ms", "error_rate<=1%", "error_rate<=5%",
             "goodput>=90%", "e2e_p99.9<=1h @client=eval", "ttft_p50<=1h @client=nobody", "ttft=300ms"]
    res = X.evaluate(path, texts)
    assert len(res) == 7  # the bound gives no result
    by = {r.expr.text: r for r in res}
    hi, lo = by[texts[0]], by[texts[1]]
    assert hi.passed and hi.outcome == X.PASS and hi.observed == pytest.approx(p99)
    assert hi.interval[0] < p99 < hi.interval[1] and hi.n == int((~np.isnan(ttft)).sum())
    assert not lo.passed and lo.outcome == X.FAIL and lo.certain and "TTFT P99" in lo.message
    err = by["error_rate<=1%"]
    assert not err.passed and err.observed == pytest.approx(failed.mean()) and err.n == req.num_rows
    assert by["error_rate<=5%"].passed
    g = by["goodput>=90%"]  # good: not failed and TTFT within the bound ttft=300ms (not streamed: on e2e)
    assert g.observed == pytest.approx(np.mean(~failed & (ttft <= 300)))
    for t in texts[5:7]:  # a percentile over too few requests does not pass
        assert not by[t].passed and by[t].outcome == X.INSUFFICIENT and "insufficient data" in by[t].message
    assert by[texts[5]].n == int(((req.column("client_id").to_numpy(zero_copy_only=False) == "eval") & ~np.isnan(e2e)).sum())


def test_evaluate_where_and_warmup(rec):
    path, req = rec
    pt = req.column("prompt_tokens").to_numpy()
    ttft = _col(req, "ttft_ms")
    r = X.evaluate(path, ["ttft_p50<=1h"], where="prompt_tokens < 400")[0]
    assert r.observed == pytest.approx(np.nanpercentile(ttft[pt < 400], 50))
    full = X.evaluate(path, ["error_rate<=100%"])[0]
    warm = X.evaluate(path, ["error_rate<=100%"], warmup_s=600)[0]
    assert warm.n < full.n
    with pytest.raises(ConfigError, match="--where"):
        X.evaluate(path, ["ttft_p50<=1h"], where="no_such_column > 1")
    with pytest.raises(X.ExprError, match="baseline"):
        X.evaluate(path, [X.parse("ttft_p99>+10%", allow_relative=True)])


def test_junit_is_read_by_a_junit_parser(rec, tmp_path):
    path, _ = rec
    res = X.evaluate(path, ["ttft_p99<=1h", "error_rate<=1%", "ttft_p50<=1h @client=nobody"])
    out = tmp_path / "gates.xml"
    write_junit(out, "analyze", res)
    xml = JUnitXml.fromfile(str(out))
    suites = list(xml)
    assert len(suites) == 1 and suites[0].name == "analyze"
    suite = suites[0]
    assert suite.tests == 3 and suite.failures == 2
    cases = {c.name: c for c in suite}
    assert set(cases) == {"ttft_p99<=1h", "error_rate<=1%", "ttft_p50<=1h @client=nobody"}
    assert cases["ttft_p99<=1h"].is_passed
    f = cases["error_rate<=1%"].result[0]
    assert isinstance(f, Failure) and f.type == "GateFailed" and "error rate" in f.message
    assert cases["ttft_p50<=1h @client=nobody"].result[0].type == "InsufficientData"
