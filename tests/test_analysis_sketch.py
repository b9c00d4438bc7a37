"""The latency sketch (analysis/sketch.py, summary.sql, itl.sql, fold.sql): its error bound on
several distributions, merging, exact small groups, and the same findings as the exact path."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
import pytest

from shadowreplay.analysis import sketch
from tests.analysis_helpers import PlantedAnomaly, SynthSpec, read_table, run_cli, run_json, write_recording

QS = (0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999)


def _distributions(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {
        "lognormal": rng.lognormal(np.log(200), 0.8, n),
        "bimodal": np.concatenate([rng.normal(40, 5, n // 2).clip(1), rng.lognormal(np.log(3000), 0.3, n - n // 2)]),
        "heavy tail (Pareto 1.2)": 10 * (1 + rng.pareto(1.2, n)),
        "with zeros and negatives": np.concatenate([rng.lognormal(2, 1, n - 200), np.zeros(100), -rng.lognormal(1, 1, 100)]),
    }


@pytest.mark.parametrize("name", ["lognormal", "bimodal", "heavy tail (Pareto 1.2)", "with zeros and negatives"])
def test_sketch_quantile_within_the_stated_relative_error(name):
    v = _distributions(np.random.default_rng(3), 200_000)[name]
    s = sketch.buckets(v)
    assert len(s) < 5000  # a few hundred to a few thousand buckets, not 200k values
    for q in QS:
        exact = float(np.quantile(v, q))  # linear interpolation, as quantile_cont
        got = sketch.quantile(s, q)
        assert abs(got - exact) <= sketch.ALPHA * abs(exact) + 1e-12, (name, q, got, exact)


def test_a_coarser_sketch_breaks_the_bound():
    # The bound is the sketch's, not luck: representatives of wider buckets are further off.
    v = np.random.default_rng(4).lognormal(5, 1, 50_000)
    errs = [abs(sketch.quantile(sketch.buckets(v), q) - np.quantile(v, q)) / np.quantile(v, q) for q in QS]
    assert max(errs) > sketch.ALPHA / 10  # it is an approximation at all
    assert max(errs) <= sketch.ALPHA


def test_merged_partition_sketches_equal_the_sketch_of_the_union():
    rng = np.random.default_rng(5)
    parts = [rng.lognormal(4 + i / 3, 0.7, 30_000 + 1000 * i) for i in range(5)]
    merged = sketch.merge(*(sketch.buckets(p) for p in parts))
    union = sketch.buckets(np.concatenate(parts))
    assert merged == union
    for q in QS:
        assert sketch.quantile(merged, q) == sketch.quantile(union, q)


def _big_dataset(root, rows=36_000, itl_lists=True):
    clients = ("web-app", "mobile", "internal-tools")
    spec = SynthSpec(periods=2, period_s=3600, rate_per_s=rows / 7200, clients=clients, client_weights=(0.5, 0.3, 0.2),
                     itl_lists=itl_lists, anomaly=None, seed=11)
    write_recording(root, spec)
    return read_table(root, "requests")


def _pcts(values, qs=(0.5, 0.95, 0.99)):
    return [float(np.quantile(values, q)) for q in qs]


def test_analyze_sketch_within_bound_of_exact_small_groups_exact(tmp_path, capsys):
    t = _big_dataset(tmp_path)
    sk = run_json(capsys, "analyze", tmp_path)
    ex = run_json(capsys, "analyze", tmp_path, "--exact")
    assert sk["percentiles"] == {"method": "sketch", "relative_error": sketch.ALPHA, "exact_up_to": sketch.EXACT_MAX}
    assert ex["percentiles"]["method"] == "exact"
    clients = t.column("client_id").to_numpy(zero_copy_only=False)
    ttft = t.column("ttft_ms").to_numpy(zero_copy_only=False)
    e2e = t.column("e2e_ms").to_numpy(zero_copy_only=False)
    gaps = {c: np.concatenate([np.asarray(x) for x, k in zip(t.column("itl_ms").to_pylist(), clients) if k == c]) for c in set(clients)}
    for gs, ge in zip(sk["groups"], ex["groups"]):
        who = None if gs["total"] else gs["client_id"]
        assert who == (None if ge["total"] else ge["client_id"])
        m = np.ones(len(clients), bool) if who is None else clients == who
        n = int(m.sum())
        g = np.concatenate(list(gaps.values())) if who is None else gaps[who]
        # the exact path is quantile_cont's figure; the sketch is within ALPHA of it
        for metric, vals in (("ttft_ms", ttft[m]), ("e2e_ms", e2e[m]), ("itl_ms", g)):
            exact = _pcts(vals)
            assert [ge[metric][p] for p in ("p50", "p95", "p99")] == pytest.approx(exact, rel=1e-12)
            for p, x in zip(("p50", "p95", "p99"), exact):
                assert abs(gs[metric][p] - x) <= sketch.ALPHA * x, (who, metric, p)
            assert gs[metric]["max"] == ge[metric]["max"] == pytest.approx(float(vals.max()))
        assert gs["sketched"] == (n > sketch.EXACT_MAX)
        assert gs["prompt_tokens"] == ge["prompt_tokens"] and gs["completion_tokens"] == ge["completion_tokens"]
        assert {k: gs[k] for k in ("requests", "good", "error_rate", "window_compliance")} == \
            {k: ge[k] for k in ("requests", "good", "error_rate", "window_compliance")}
    assert [g["sketched"] for g in sk["groups"]] == [True] * 4  # every group holds over EXACT_MAX token gaps
    rc, out, _ = run_cli(capsys, "analyze", tmp_path)
    assert rc == 0 and f"within \u00b1{100 * sketch.ALPHA:g} % (sketch) for groups over {sketch.EXACT_MAX:,}" in out


def test_small_groups_are_exact(tmp_path, capsys):
    t = _big_dataset(tmp_path, rows=6_000, itl_lists=False)  # every client under EXACT_MAX; the total over it
    res = run_json(capsys, "analyze", tmp_path)
    clients = t.column("client_id").to_numpy(zero_copy_only=False)
    e2e = t.column("e2e_ms").to_numpy(zero_copy_only=False)
    for g in res["groups"]:
        if g["total"]:
            assert g["sketched"]
            continue
        assert not g["sketched"]
        exact = _pcts(e2e[clients == g["client_id"]])
        assert [g["e2e_ms"][p] for p in ("p50", "p95", "p99")] == pytest.approx(exact, rel=1e-12)


def test_anomalies_sketch_gives_the_exact_paths_findings(tmp_path, capsys):
    # 10-minute periods of 100 s slots: each cell holds ~7,000 requests, so every TP99 is sketched.
    spec = SynthSpec(periods=6, period_s=600, rate_per_s=70.0, itl_lists=False, seed=8,
                     anomaly=PlantedAnomaly(offset_s=300, duration_s=100, client_id="nightly-batch", batch_rate_per_s=10.0))
    n = write_recording(tmp_path, spec, chunk_s=60.0)
    assert n > 6 * 6 * sketch.EXACT_MAX
    args = ("analyze", "anomalies", tmp_path, "--period", "10m", "--bucket", "100s")
    sk = run_json(capsys, *args)
    ex = run_json(capsys, *args, "--exact")
    assert sk["percentiles"]["sketched"] and not ex["percentiles"]["sketched"]
    assert [a["label"] for a in sk["anomalies"]] == [a["label"] for a in ex["anomalies"]] == ["+5m-400s of each 10m period"]
    for a, b in zip(sk["anomalies"], ex["anomalies"]):
        assert a["anomalous_periods"] == b["anomalous_periods"]
        assert [m["metric"] for m in a["metrics"]] == [m["metric"] for m in b["metrics"]]
        assert a["explained_by"] == b["explained_by"]
        assert abs(a["tp99_ms"] - b["tp99_ms"]) <= sketch.ALPHA * b["tp99_ms"]
        assert abs(a["typical_tp99_ms"] - b["typical_tp99_ms"]) <= sketch.ALPHA * b["typical_tp99_ms"]
    rc, out, _ = run_cli(capsys, *args)
    assert rc == 0 and "cell TP99s within" in out


def test_chunked_generation_keeps_the_distribution_and_the_planted_slot(tmp_path):
    spec = SynthSpec(periods=2, rate_per_s=0.05, seed=9)
    n = write_recording(tmp_path, spec, chunk_s=3600.0)
    t = read_table(tmp_path, "requests")
    assert t.num_rows == n
    assert len(set(t.column("request_id").to_pylist())) == n  # ids unique across chunks
    whole = write_recording(tmp_path / "whole", spec)
    assert abs(n - whole.num_rows) <= 2 * spec.periods  # the batch slot's count is rounded per chunk
    for col in ("prompt_tokens", "e2e_ms"):
        a = np.median(t.column(col).to_numpy(zero_copy_only=False))
        b = np.median(whole.column(col).to_numpy(zero_copy_only=False))
        assert abs(a - b) / b < 0.05, col
    batch = pc.equal(t.column("client_id"), "batch-etl").to_numpy(zero_copy_only=False)
    assert batch.sum() == pytest.approx(spec.anomaly.batch_rate_per_s * 3600 * spec.periods, abs=2)


@pytest.mark.parametrize("command", [("analyze",), ("analyze", "anomalies", "--period", "1h", "--bucket", "10m")])
def test_streamed_lat_gives_the_in_memory_figures(tmp_path, capsys, monkeypatch, command):
    # Above MATERIALIZE_MAX_ROWS `lat` is not copied and every query streams the Parquet files:
    # the same JSON, to the last digit, as the copy (small groups and token counts included).
    from shadowreplay.analysis import session

    _big_dataset(tmp_path, rows=12_000)
    copied = run_json(capsys, *command, tmp_path)
    monkeypatch.setattr(session, "MATERIALIZE_MAX_ROWS", 100)
    streamed = run_json(capsys, *command, tmp_path)
    assert streamed == copied
    assert copied["requests"] if "requests" in copied else copied["percentiles"]
