"""`analyze` and `sql` on small hand-checkable data: expectations are recomputed with numpy."""

from __future__ import annotations

import datetime as dt
import io
import math
from collections import Counter

import duckdb
import numpy as np
import pytest

from shadowreplay.analysis.session import SQL_DIR
from shadowreplay.dataset import glob_for, write_rows
from tests.analysis_helpers import SynthSpec, make_replay, make_requests, run_cli, run_json, write_sorted

T0 = dt.datetime(2026, 11, 2, 10, 0, 0, tzinfo=dt.timezone.utc)  # on a 5 s boundary


def small_rows() -> list[dict]:
    rows = []
    for i in range(60):
        client = ("web", "batch", "mobile")[i % 3]
        e2e = 100.0 + (37 * i) % 900
        failed = i in (7, 31)
        timeout = i == 44
        rows.append(
            {
                "request_id": f"r{i}",
                "ts_start": T0 + dt.timedelta(seconds=0.5 * i),
                "kind": "chat",
                "model": "m1",
                "client_id": client,
                "status": 500 if failed else (504 if timeout else 200),
                "error": "upstream timeout" if timeout else None,
                "ttft_ms": None if failed or timeout else e2e / 5,
                "e2e_ms": None if failed or timeout else e2e,
                "itl_ms": None if failed or timeout else [10.0 + i % 4, 20.0, 30.0 + i % 7],
                "prompt_tokens": 100 + 10 * i,
                "completion_tokens": None if failed or timeout else 4,
                "prefix_hash": f"p{i % 7}" if client == "web" else (f"q{i}" if client == "mobile" else "shared"),
            }
        )
    return rows


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    write_rows(root, "requests", small_rows())
    return root


SLO = {"ttft": 120.0, "e2e": 700.0}


def _expect(rows, slo=SLO, window_s=5.0):
    t = np.array([(r["ts_start"] - T0).total_seconds() for r in rows])
    failed = np.array([r["status"] >= 400 or r["error"] is not None for r in rows])
    e2e = np.array([np.nan if r["e2e_ms"] is None else r["e2e_ms"] for r in rows])
    ttft = np.array([np.nan if r["ttft_ms"] is None else r["ttft_ms"] for r in rows])
    good = ~failed & (np.nan_to_num(ttft, nan=np.inf) <= slo["ttft"]) & (np.nan_to_num(e2e, nan=np.inf) <= slo["e2e"])
    span = np.max(t + np.nan_to_num(e2e) / 1000) - t.min()
    win = np.floor(t / window_s)
    ok = []
    for w in np.unique(win):
        m = win == w
        # P95 by nearest rank (inverted CDF); a failed request is infinitely slow. TTFT falls
        # back to e2e where missing.
        tt = np.where(np.isnan(ttft[m]), e2e[m], ttft[m])
        p95_t = np.percentile(np.where(failed[m], np.inf, tt), 95, method="inverted_cdf")
        p95_e = np.percentile(np.where(failed[m], np.inf, e2e[m]), 95, method="inverted_cdf")
        ok.append(bool(p95_t <= slo["ttft"] and p95_e <= slo["e2e"]))
    return {"good": int(good.sum()), "goodput_rps": good.sum() / span, "share": good.mean(), "compliance": np.mean(ok), "windows": len(ok),
            "e2e": e2e[~np.isnan(e2e)], "ttft": ttft[~np.isnan(ttft)], "failed": failed.mean()}


def test_analyze_overall_matches_numpy(small, capsys):
    rows = small_rows()
    res = run_json(capsys, "analyze", small, "--slo", "ttft=120ms,e2e=0.7s", "--window", "5s")
    tot = next(g for g in res["groups"] if g["total"])
    exp = _expect(rows)
    assert tot["requests"] == 60
    assert tot["error_rate"] == pytest.approx(3 / 60)
    assert tot["timeout_rate"] == pytest.approx(1 / 60)
    for p, q in (("p50", 50), ("p95", 95), ("p99", 99)):
        assert tot["e2e_ms"][p] == pytest.approx(np.percentile(exp["e2e"], q))
        assert tot["ttft_ms"][p] == pytest.approx(np.percentile(exp["ttft"], q))
    assert tot["e2e_ms"]["max"] == pytest.approx(exp["e2e"].max())
    assert tot["good"] == exp["good"]
    assert tot["goodput_share"] == pytest.approx(exp["share"])
    assert tot["goodput_rps"] == pytest.approx(exp["goodput_rps"])
    assert tot["windows"] == exp["windows"] == 6
    assert tot["window_compliance"] == pytest.approx(exp["compliance"])
    assert 0 < exp["compliance"] < 1  # the data is built so that some windows fail and some pass
    gaps = np.concatenate([r["itl_ms"] for r in rows if r["itl_ms"]])
    assert tot["itl_source"] == "token gaps"
    assert tot["itl_ms"]["p99"] == pytest.approx(np.percentile(gaps, 99))


def test_analyze_per_client(small, capsys):
    rows = small_rows()
    res = run_json(capsys, "analyze", small, "--slo", "e2e=700")
    for g in (g for g in res["groups"] if not g["total"]):
        mine = [r for r in rows if r["client_id"] == g["client_id"]]
        exp = _expect(mine, slo={"ttft": math.inf, "e2e": 700.0})
        assert g["requests"] == len(mine)
        assert g["e2e_ms"]["p95"] == pytest.approx(np.percentile(exp["e2e"], 95))
        assert g["good"] == exp["good"]
        assert g["error_rate"] == pytest.approx(exp["failed"])


def test_prefix_share_per_client(small, capsys):
    rows = small_rows()
    res = run_json(capsys, "analyze", small)
    counts = Counter(r["prefix_hash"] for r in rows)
    got = {p["client_id"]: p for p in res["prefix"] if not p["total"]}
    for client in ("web", "batch", "mobile"):
        mine = [r for r in rows if r["client_id"] == client]
        shared = sum(counts[r["prefix_hash"]] > 1 for r in mine)
        assert got[client]["shared"] == shared
        assert got[client]["shared_share"] == pytest.approx(shared / len(mine))
    assert got["mobile"]["shared"] == 0 and got["batch"]["shared_share"] == 1.0
    total = next(p for p in res["prefix"] if p["total"])
    assert total["shared"] == sum(counts[r["prefix_hash"]] > 1 for r in rows)


def test_human_output_is_aligned_tables(small, capsys):
    rc, out, err = run_cli(capsys, "analyze", small, "--slo", "ttft=120ms,e2e=700ms")
    assert rc == 0, err
    lines = out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("kind") and "goodput/s" in ln)
    assert set(lines[header + 1]) <= {"-", " "}
    assert "Prefix sharing" in out and "E2E latency (ms)" in out


def test_sql_files_run_by_hand_in_plain_duckdb(small, capsys):
    """The cookbook path: plain DuckDB, a view over the glob, then the .sql files."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW requests AS SELECT * FROM read_parquet('{glob_for(small, 'requests')}', hive_partitioning = true)")
    con.execute((SQL_DIR / "lat_requests.sql").read_text())
    con.execute((SQL_DIR / "lat.sql").read_text())
    con.execute("SET VARIABLE slo_ttft_ms = 120")
    con.execute("SET VARIABLE slo_e2e_ms = 700")
    row = con.execute((SQL_DIR / "summary.sql").read_text()).fetchall()[0]
    cols = [d[0] for d in con.description]
    by_hand = dict(zip(cols, row))
    res = run_json(capsys, "analyze", small, "--slo", "ttft=120ms,e2e=700ms")
    tot = next(g for g in res["groups"] if g["total"])
    assert by_hand["is_total"] and by_hand["good"] == tot["good"] == _expect(small_rows())["good"]


def test_sql_command_c_f_and_repl(small, capsys, tmp_path, monkeypatch):
    rc, out, err = run_cli(capsys, "sql", small, "-c", "SELECT client_id, count(*) AS n FROM requests GROUP BY 1 ORDER BY 1;")
    assert rc == 0, err
    assert "batch" in out and "20" in out and "(3 rows)" in out
    f = tmp_path / "q.sql"
    f.write_text("SET VARIABLE x = 3;\nSELECT count(*) * getvariable('x') AS n FROM lat;\n")
    rc, out, err = run_cli(capsys, "sql", small, "-f", f)
    assert rc == 0 and "180" in out
    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT 1 +\n 41 AS answer;\nSELECT nope FROM requests;\n.tables\nSELECT count(*) AS c FROM requests WHERE status = 500;\n"))
    rc, out, err = run_cli(capsys, "sql", small)
    assert rc == 0
    assert "42" in out and "requests" in out and "lat" in out
    assert "error:" in err  # the bad statement is reported and the session goes on
    tail = [ln.strip() for ln in out.strip().splitlines()[-4:]]
    assert tail[0] == "c" and tail[2] == "2" and tail[3] == "(1 row)"
    rc, out, err = run_cli(capsys, "sql", small, "-c", "SELECT nope FROM requests")
    assert rc == 2 and "query failed" in err and "Traceback" not in err


def test_replayed_view_via_manifest(tmp_path, capsys):
    req = make_requests(SynthSpec(periods=1, period_s=600, rate_per_s=1, anomaly=None, itl_lists=False))
    write_sorted(tmp_path / "rec", "requests", req)
    write_sorted(tmp_path / "rep", "replay_results", make_replay(req, latency_scale=2.0, noise_sigma=0))
    (tmp_path / "rep" / "manifest.json").write_text('{"recording": "../rec"}')
    rc, out, err = run_cli(capsys, "sql", tmp_path / "rep", "--csv", "-c",
                           "SELECT count(*) AS n, round(avg(e2e_ms / rec_e2e_ms), 6) AS r FROM replayed WHERE rec_e2e_ms > 0")
    assert rc == 0, err
    assert out.splitlines()[1] == f"{req.num_rows},2.0"
    # and given as two paths
    rc, out, err = run_cli(capsys, "sql", tmp_path / "rep", tmp_path / "rec", "--csv", "-c", "SELECT count(*) FROM replayed WHERE rec_ts_start IS NOT NULL")
    assert out.splitlines()[1] == str(req.num_rows)


def test_non_streaming_dataset_says_what_is_missing(tmp_path, capsys):
    rows = [{"request_id": f"x{i}", "ts_start": T0 + dt.timedelta(seconds=i), "status": 200, "e2e_ms": 100.0 + i, "client_id": "c"} for i in range(20)]
    write_rows(tmp_path, "requests", rows)
    res = run_json(capsys, "analyze", tmp_path, "--slo", "ttft=110ms")
    tot = next(g for g in res["groups"] if g["total"])
    assert tot["ttft_ms"]["p99"] is None
    assert tot["e2e_ms"]["p50"] == pytest.approx(109.5)
    assert tot["good"] == 11  # no TTFT: judged on e2e (100..110 ms)
    assert any("no TTFT" in n for n in res["notes"]) and any("prefix" in n for n in res["notes"])
    rc, out, err = run_cli(capsys, "analyze", tmp_path)
    assert rc == 0 and "note: no TTFT recorded" in out


def test_replay_without_recording_or_metrics(tmp_path, capsys):
    req = make_requests(SynthSpec(periods=1, period_s=300, rate_per_s=2, anomaly=None, itl_lists=False))
    write_sorted(tmp_path, "replay_results", make_replay(req))
    res = run_json(capsys, "analyze", tmp_path)
    assert res["table"] == "replay_results" and res["requests"] == req.num_rows
    res = run_json(capsys, "analyze", "anomalies", tmp_path, "--period", "1m", "--bucket", "10s")
    assert any("no engine_metrics" in n for n in res["notes"])


def test_empty_and_missing_datasets_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "requests" / "date=2026-11-02" / "hour=10").mkdir(parents=True)
    for argv in (["analyze", tmp_path], ["analyze", "anomalies", tmp_path], ["report", tmp_path, "--out", tmp_path / "r.html"],
                 ["analyze", tmp_path / "nope"], ["sql", tmp_path / "nope", "-c", "select 1"]):
        rc, out, err = run_cli(capsys, *argv)
        assert rc == 2, argv
        assert len(err.strip().splitlines()) == 1 and "error:" in err and "Traceback" not in err, err
    rc, out, err = run_cli(capsys, "analyze", tmp_path)
    assert "nothing to analyze" in err and "requests" in err


def test_corrupt_parquet_is_a_one_line_error(tmp_path, capsys):
    write_rows(tmp_path, "requests", small_rows()[:5])
    bad = tmp_path / "requests" / "date=2026-11-02" / "hour=10" / "part-bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    rc, out, err = run_cli(capsys, "analyze", tmp_path)
    assert rc == 2 and "Traceback" not in err and "error:" in err


def test_token_percentiles_exact(tmp_path, capsys):
    """Token percentiles come from a per-value histogram (summary.sql): they must equal numpy's
    linear percentiles, per group and overall, with repeated values, missing counts and
    fractional prompt lengths (prompt_chars / 4 when prompt_tokens is unknown)."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(501):
        client = ("web", "batch", "mobile")[i % 3]
        known = i % 5 != 0
        rows.append(
            {
                "request_id": f"t{i}",
                "ts_start": T0 + dt.timedelta(seconds=0.1 * i),
                "kind": "chat",
                "model": "m1",
                "client_id": client,
                "status": 200,
                "e2e_ms": float(rng.integers(50, 900)),
                "prompt_tokens": int(rng.integers(1, 40)) * (9 if client == "batch" else 1) if known else None,
                "prompt_chars": int(rng.integers(1, 400)),
                "completion_tokens": int(rng.integers(0, 12)) if i % 7 else None,
            }
        )
    write_rows(tmp_path, "requests", rows)
    res = run_json(capsys, "analyze", tmp_path)
    groups = {None if g["total"] else g["client_id"]: g for g in res["groups"]}
    assert set(groups) == {None, "web", "batch", "mobile"}
    for client, g in groups.items():
        mine = [r for r in rows if client is None or r["client_id"] == client]
        prompt = [r["prompt_tokens"] if r["prompt_tokens"] is not None else r["prompt_chars"] / 4 for r in mine]
        out = [r["completion_tokens"] for r in mine if r["completion_tokens"] is not None]
        assert any(p != int(p) for p in prompt)  # fractional lengths are exercised
        for p, q in (("p50", 50), ("p99", 99)):
            assert g["prompt_tokens"][p] == pytest.approx(np.percentile(prompt, q), rel=1e-12)
            assert g["completion_tokens"][p] == pytest.approx(np.percentile(out, q), rel=1e-12)


def test_timeout_rate_from_error_text(tmp_path, capsys):
    """A timeout is status 408/504 or an error mentioning one (any case), whatever the status."""
    errors = [None, None, "Upstream TIMEOUT", "read timed out", "connection reset", None, None, "x"]
    statuses = [200, 504, None, 200, 502, 408, 500, None]
    rows = [
        {"request_id": f"e{i}", "ts_start": T0 + dt.timedelta(seconds=i), "kind": "chat", "model": "m1",
         "client_id": "c", "status": s, "error": e, "e2e_ms": 100.0}
        for i, (e, s) in enumerate(zip(errors, statuses))
    ]
    write_rows(tmp_path, "requests", rows)
    tot = next(g for g in run_json(capsys, "analyze", tmp_path)["groups"] if g["total"])
    assert tot["timeout_rate"] == pytest.approx(4 / 8)  # 504, "TIMEOUT", "timed out", 408
    assert tot["error_rate"] == pytest.approx(7 / 8)
