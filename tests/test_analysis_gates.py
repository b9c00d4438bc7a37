"""The gates through the real CLI: `compare --fail-on`, `analyze --assert`, their exit statuses
(0 pass, 3 a gate failed, 2 a malformed expression), the output naming each failing gate, --json
and --junit (read back by junitparser). Real DuckDB over synthetic datasets."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from junitparser import Failure, JUnitXml

from tests.analysis_helpers import SynthSpec, make_replay, make_requests, run_cli, write_sorted


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("gates")
    req = make_requests(SynthSpec(periods=1, period_s=1800, rate_per_s=2, anomaly=None, itl_lists=False, seed=3, error_rate=0.01))
    write_sorted(root / "rec", "requests", req)
    for name, scale, seed in (("base", 1.0, 1), ("aa", 1.0, 2), ("slow", 2.0, 3), ("fast", 0.5, 4)):
        write_sorted(root / name, "replay_results", make_replay(req, latency_scale=scale, noise_sigma=0.03, seed=seed))
    # one client alone 2x slower: a scoped gate sees it, the overall TTFT P99 gate need not
    one = make_replay(req, latency_scale=1.0, noise_sigma=0.03, seed=5)
    slow_client = one.column("client_id").to_numpy(zero_copy_only=False) == "eval"
    for col in ("ttft_ms", "e2e_ms"):
        v = one.column(col).to_numpy(zero_copy_only=False).astype(float)
        w = np.where(slow_client, 2 * v, v)
        one = one.set_column(one.schema.get_field_index(col), col, pa.array(w, mask=np.isnan(w)))
    write_sorted(root / "client", "replay_results", one)
    return root, req


def test_two_times_worse_exits_3_and_names_the_ttft_figure(data, capsys, tmp_path):
    root, _ = data
    junit = tmp_path / "gates.xml"
    rc, out, err = run_cli(capsys, "compare", root / "base", root / "slow", "--fail-on", "ttft_p99>+10%",
                           "--fail-on", "worse", "--junit", junit)
    assert rc == 3, err
    assert "FAIL ttft_p99>+10%: TTFT P99" in out and "lower bound" in out and "[" in out
    assert "2 of 2 gates failed" in err
    assert "ttft_p99>+10% (TTFT P99 1.9" in err or "ttft_p99>+10% (TTFT P99 2.0" in err, err
    assert "Traceback" not in err
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert suite.name == "compare" and suite.tests == 2 and suite.failures == 2
    cases = {c.name: c for c in suite}
    f = cases["ttft_p99>+10%"].result[0]
    assert isinstance(f, Failure) and "TTFT P99" in f.message and "ratio" in f.message
    assert "TTFT P50" in cases["worse"].result[0].message


@pytest.mark.parametrize("cand", ["fast", "aa"])
def test_a_better_candidate_and_an_aa_pair_pass(data, capsys, tmp_path, cand):
    root, _ = data
    junit = tmp_path / "gates.xml"
    rc, out, err = run_cli(capsys, "compare", root / "base", root / cand, "--fail-on", "worse", "--fail-on", "ttft_p99>+10%",
                           "--fail-on", "e2e_p99>+10%", "--fail-on", "error_rate>+50%", "--junit", junit)
    assert rc == 0, err
    assert "gates: 4 of 4 passed" in out
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert suite.tests == 4 and suite.failures == 0 and all(c.is_passed for c in suite)


def test_json_carries_the_gates(data, capsys):
    root, req = data
    rc, out, err = run_cli(capsys, "compare", root / "base", root / "slow", "--fail-on", "e2e_p50>+50%", "--json")
    assert rc == 3
    res = json.loads(out)
    (g,) = res["gates"]
    overall = {r["metric"]: r for r in res["overall"]}["E2E P50 ms"]
    assert g["gate"] == "e2e_p50>+50%" and g["passed"] is False and g["outcome"] == "fail"
    assert g["ratio"] == pytest.approx(overall["ratio"]) and g["observed"] == pytest.approx(overall["b"])
    with_e2e = int((~np.isnan(req.column("e2e_ms").to_numpy(zero_copy_only=False).astype(float))).sum())
    assert g["ratio_interval"][0] > 1.5 and g["n"] == with_e2e  # B's requests with an E2E (failed ones have none)


def test_scoped_gate_sees_one_client(data, capsys):
    root, _ = data
    rc, out, err = run_cli(capsys, "compare", root / "base", root / "client", "--fail-on", "e2e_p50>+20% @client=eval",
                           "--fail-on", "e2e_p50>+20% @client=web-app", "--fail-on", "e2e_p50>+20% @model=llama-3-8b", "--json")
    assert rc == 3, err
    gates = {g["gate"]: g for g in json.loads(out)["gates"]}
    assert not gates["e2e_p50>+20% @client=eval"]["passed"]
    assert gates["e2e_p50>+20% @client=eval"]["ratio"] == pytest.approx(2.0, rel=0.1)
    assert gates["e2e_p50>+20% @client=web-app"]["passed"]
    assert gates["e2e_p50>+20% @model=llama-3-8b"]["passed"]  # one client in ten does not move the model's median 20 %
    rc, out, err = run_cli(capsys, "compare", root / "base", root / "client", "--fail-on", "worse @client=eval")
    assert rc == 3 and "worse @client=eval" in err


def test_too_few_requests_does_not_pass(data, capsys):
    root, _ = data
    rc, out, err = run_cli(capsys, "compare", root / "base", root / "aa", "--fail-on", "ttft_p99.9>+10% @client=eval")
    assert rc == 3 and "insufficient data" in out and "insufficient data" in err


def test_analyze_assert(data, capsys, tmp_path):
    root, req = data
    ttft = req.column("ttft_ms").to_numpy(zero_copy_only=False).astype(float)
    p99 = float(np.nanpercentile(ttft, 99))
    ok = [f"ttft_p99<={p99 * 1.2:.0f}ms", "error_rate<=5%", "goodput>=90%"]
    rc, out, err = run_cli(capsys, "analyze", root / "rec", *[a for x in ok for a in ("--assert", x)])
    assert rc == 0, err
    assert "gates: 3 of 3 passed" in out
    junit = tmp_path / "a.xml"
    rc, out, err = run_cli(capsys, "analyze", root / "rec", "--assert", f"ttft_p99<={p99 * 0.8:.0f}ms", "--assert",
                           "error_rate<=5%", "--junit", junit, "--json")
    assert rc == 3, err
    gates = {g["gate"]: g for g in json.loads(out)["gates"]}
    bad = gates[f"ttft_p99<={p99 * 0.8:.0f}ms"]
    assert bad["outcome"] == "fail" and bad["observed"] == pytest.approx(p99) and bad["interval"][0] < p99 < bad["interval"][1]
    assert gates["error_rate<=5%"]["passed"]
    assert "1 of 2 gates failed" in err and "TTFT P99" in err
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert suite.name == "analyze" and suite.tests == 2 and suite.failures == 1


def test_goodput_takes_legacy_slo_and_gate_bounds(data, capsys):
    root, req = data
    ttft = req.column("ttft_ms").to_numpy(zero_copy_only=False).astype(float)
    failed = req.column("status").to_numpy() >= 400
    want = float(np.mean(~failed & (ttft <= 200)))
    for argv in (["--slo", "ttft=200ms"], ["--assert", "ttft_p50<=200ms"], ["--assert", "ttft=200ms"]):
        rc, out, err = run_cli(capsys, "analyze", root / "rec", *argv, "--assert", "goodput>=1%", "--json")
        assert rc == 0, (argv, err)
        g = next(g for g in json.loads(out)["gates"] if g["gate"] == "goodput>=1%")
        assert g["observed"] == pytest.approx(want), argv


@pytest.mark.parametrize("argv, caret_under", [
    (["analyze", "REC", "--assert", "ttft_p99<=500xs"], "xs"),
    (["analyze", "REC", "--assert", "ttft_p99 =< 5s"], "=<"),
    (["compare", "BASE", "AA", "--fail-on", "ttft_p99>10%"], "10%"),
    (["compare", "BASE", "AA", "--fail-on", "tfft_p99>+10%"], "tfft"),
])  # fmt: skip
def test_malformed_expression_exits_2_with_a_caret(data, capsys, argv, caret_under):
    root, _ = data
    paths = {"REC": root / "rec", "BASE": root / "base", "AA": root / "aa"}
    rc, out, err = run_cli(capsys, *[paths.get(a, a) for a in argv])
    assert rc == 2 and "Traceback" not in err
    lines = err.rstrip("\n").splitlines()
    assert lines[0].startswith(f"shadowreplay {argv[0]}: error: --")
    text, caret = lines[-2], lines[-1]
    assert caret.strip() == "^" and text[caret.index("^"):].startswith(caret_under), err


def test_exit_statuses_from_the_console_script(data):
    """The statuses a CI job sees, from a real process."""
    root, _ = data
    run = lambda *a: subprocess.run([sys.executable, "-m", "shadowreplay", *map(str, a)], capture_output=True, text=True)  # noqa: E731
    p = run("compare", root / "base", root / "slow", "--fail-on", "ttft_p99>+10%")
    assert p.returncode == 3 and "TTFT P99" in p.stderr and "Traceback" not in p.stderr
    p = run("compare", root / "base", root / "aa", "--fail-on", "ttft_p99>+10%")
    assert p.returncode == 0, p.stderr
    p = run("analyze", root / "rec", "--assert", "goodput>=95")
    assert p.returncode == 2 and "^" in p.stderr and "Traceback" not in p.stderr


def test_independent_aa_traffic_does_not_trip_worse(tmp_path, capsys):
    """Two samples of the same traffic (not the same requests, so nothing is paired): at 95 %
    per figure one of the nine figures is often 'worse' by chance; the gate, at the family
    level, passes."""
    for side, seed in (("a", 118), ("b", 119)):  # a pair where E2E P95 and P99 say worse at 95 %
        req = make_requests(SynthSpec(periods=1, period_s=1800, rate_per_s=1.5, anomaly=None, itl_lists=False, seed=seed,
                                      error_rate=0.01))
        write_sorted(tmp_path / side, "replay_results", make_replay(req, seed=1))
    rc, out, err = run_cli(capsys, "compare", tmp_path / "a", tmp_path / "b", "--fail-on", "worse", "--json")
    assert rc == 0, err
    res = json.loads(out)
    assert any(r.get("verdict") == "worse" for r in res["overall"])  # the table's 95 % verdict alone would alarm
    assert res["gates"][0]["passed"] and "alone" in res["gates"][0]["message"]


def test_rate_gate_against_a_baseline_without_errors(tmp_path, capsys):
    """A baseline with no errors has no ratio: a candidate whose errors are above zero beyond
    doubt fails `error_rate>+X%`; one with none passes (it is not 'insufficient data')."""
    req = make_requests(SynthSpec(periods=1, period_s=600, rate_per_s=2, anomaly=None, itl_lists=False, seed=8))
    base = make_replay(req, seed=1)
    write_sorted(tmp_path / "base", "replay_results", base)
    write_sorted(tmp_path / "same", "replay_results", make_replay(req, seed=2))
    bad = make_replay(req, seed=3)
    status = bad.column("status").to_numpy().copy()
    status[::20] = 500  # 5 % errors
    write_sorted(tmp_path / "bad", "replay_results", bad.set_column(bad.schema.get_field_index("status"), "status", pa.array(status)))
    rc, out, err = run_cli(capsys, "compare", tmp_path / "base", tmp_path / "bad", "--fail-on", "error_rate>+50%")
    assert rc == 3 and "no ratio: A is 0" in out and "error_rate>+50%" in err
    rc, out, err = run_cli(capsys, "compare", tmp_path / "base", tmp_path / "same", "--fail-on", "error_rate>+50%",
                           "--fail-on", "error_rate<-50%")
    assert rc == 0, out + err
