"""`compare`: every figure with an interval and a verdict (overall, per slot, per client, a
--where subset), the A/A noise floor, repeats pooled, the warm-up, and fidelity of a replay against
its recording."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from shadowreplay.analysis import stats
from shadowreplay.dataset import run_dir
from tests.analysis_helpers import SynthSpec, make_replay, make_requests, run_cli, run_json, write_sorted


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    req = make_requests(SynthSpec(periods=1, period_s=1800, rate_per_s=2, anomaly=None, itl_lists=False, seed=3))
    write_sorted(root / "rec", "requests", req)
    same = make_replay(req, latency_scale=1.0, noise_sigma=0.03, seed=1)
    slow = make_replay(req, latency_scale=1.5, noise_sigma=0.03, shift_s=86400, seed=2)
    write_sorted(root / "same", "replay_results", same)
    write_sorted(root / "slow", "replay_results", slow)
    return root, req, same, slow


def _np(t, col):
    return t.column(col).to_numpy(zero_copy_only=False)


def _rows(res):
    return {r["metric"]: r for r in res["overall"]}


def test_replay_vs_recording_fidelity(runs, capsys):
    root, req, same, _ = runs
    res = run_json(capsys, "compare", root / "rec", root / "same")
    f = res["fidelity"]
    assert f["relation"] == "replay vs its recording"
    assert f["matched"] == req.num_rows
    a, b = _np(req, "e2e_ms"), _np(same, "e2e_ms")
    assert f["median_ratio_e2e"] == pytest.approx(np.median(b / a))
    assert f["corr_e2e"] == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert f["verdict"].startswith("no detectable difference")
    lag = _np(same, "send_lag_ms")
    assert res["send_lag_ms"]["b"]["p50"] == pytest.approx(np.percentile(lag, 50))
    rc, out, err = run_cli(capsys, "compare", root / "rec", root / "same")
    assert rc == 0 and "Fidelity (replay vs its recording): no detectable difference" in out
    assert "send lag" in out and "95% CI" in out


def test_two_replays_intervals_overall_and_per_slot(runs, capsys):
    root, req, same, slow = runs
    res = run_json(capsys, "compare", root / "same", root / "slow", "--slo", "e2e=5s", "--bucket", "5m")
    rows = _rows(res)
    a, b = _np(same, "e2e_ms"), _np(slow, "e2e_ms")
    p99 = rows["E2E P99 ms"]
    # binned at 0.1 % relative width: within 0.05 % of the exact quantile
    assert p99["a"] == pytest.approx(np.percentile(a, 99), rel=1e-3)
    assert p99["delta"] == pytest.approx(np.percentile(b, 99) - np.percentile(a, 99), rel=1e-2)
    assert p99["ratio"] == pytest.approx(1.5, rel=0.05)
    lo, hi = p99["ratio_ci"]
    assert lo < p99["ratio"] < hi and lo > 1.2
    assert p99["verdict"] == stats.WORSE
    for lab in ("TTFT P50 ms", "E2E P50 ms", "E2E P95 ms"):
        assert rows[lab]["verdict"] == stats.WORSE, lab
    g = rows["goodput share"]
    assert g["a"] == pytest.approx(np.mean(a <= 5000)) and g["b"] == pytest.approx(np.mean(b <= 5000))
    assert g["delta"] < 0 and g["verdict"] == stats.WORSE
    assert rows["error rate"]["verdict"] in (stats.SAME, stats.TOO_FEW)
    # Per slot: 30 min in 5 min slots; the shifted replay lines up by offset from its own start.
    assert len(res["slots"]) == 6
    t = (_np(same, "scheduled_at").astype("datetime64[us]").astype(np.int64) / 1e6)
    k = np.floor((t - t.min()) / 300).astype(int)
    s0 = res["slots"][0]
    assert s0["requests"] == [int((k == 0).sum())] * 2
    e = s0["figures"]["E2E P99"]
    assert e["b"] == pytest.approx(np.percentile(b[k == 0], 99), rel=1e-3)
    assert e["verdict"] == stats.WORSE
    # per client: every client of the traffic, each judged
    clients = {c["key"] for c in res["clients"]}
    assert clients == set(_np(same, "client_id"))
    assert all(c["figures"]["E2E P50"]["verdict"] == stats.WORSE for c in res["clients"] if min(c["requests"]) >= 50)
    assert res["fidelity"]["relation"] == "two replays of the same requests"
    assert res["fidelity"]["verdict"].startswith("differs")


def test_too_few_requests_for_a_p99_says_so(tmp_path, capsys):
    req = make_requests(SynthSpec(periods=1, period_s=120, rate_per_s=1, anomaly=None, itl_lists=False, seed=5))
    assert 60 < req.num_rows < 500
    write_sorted(tmp_path / "a", "replay_results", make_replay(req, seed=1))
    write_sorted(tmp_path / "b", "replay_results", make_replay(req, latency_scale=3, seed=2))
    res = run_json(capsys, "compare", tmp_path / "a", tmp_path / "b")
    rows = _rows(res)
    assert rows["E2E P99 ms"]["verdict"] == stats.TOO_FEW and rows["E2E P99 ms"]["needs"] == 500
    assert rows["E2E P50 ms"]["verdict"] == stats.WORSE
    rc, out, _ = run_cli(capsys, "compare", tmp_path / "a", tmp_path / "b")
    line = next(ln for ln in out.splitlines() if ln.startswith("E2E P99"))
    assert f"too few requests ({req.num_rows}; P99 needs 500)" in line


def test_aa_floor_beside_every_verdict(runs, tmp_path, capsys):
    root, req, same, _ = runs
    # Two "identical" shadows that differ by 1.25x (run-to-run drift), and a B 1.2x slower than A:
    # the interval of B/A excludes 1, but the A/A pair differs by as much, so it is not evidence.
    drift = make_replay(req, latency_scale=1.25, noise_sigma=0.03, seed=4)
    b = make_replay(req, latency_scale=1.2, noise_sigma=0.03, seed=5)
    write_sorted(tmp_path / "drift", "replay_results", drift)
    write_sorted(tmp_path / "b", "replay_results", b)
    plain = _rows(run_json(capsys, "compare", root / "same", tmp_path / "b"))
    assert plain["E2E P99 ms"]["verdict"] == stats.WORSE
    res = run_json(capsys, "compare", root / "same", tmp_path / "b", "--aa", root / "same", tmp_path / "drift")
    rows = _rows(res)
    assert rows["E2E P99 ms"]["aa_ratio"] == pytest.approx(1.25, rel=0.05)
    assert rows["E2E P99 ms"]["verdict"] == stats.NOISE
    assert all(f["aa_ratio"] is not None for f in res["slots"][0]["figures"].values())
    # B far beyond the floor is still a change
    res = run_json(capsys, "compare", root / "same", root / "slow", "--aa", root / "same", tmp_path / "drift")
    assert _rows(res)["E2E P99 ms"]["verdict"] == stats.WORSE
    rc, out, _ = run_cli(capsys, "compare", root / "same", tmp_path / "b", "--aa", root / "same", tmp_path / "drift")
    assert "A/A" in out and stats.NOISE in out


def test_where_subset(runs, capsys):
    root, req, same, slow = runs
    res = run_json(capsys, "compare", root / "same", root / "slow", "--where", "prompt_len > 200")
    sub = res["subset"]
    assert len(sub) == 1
    p = _np(req, "prompt_tokens")
    assert sub[0]["requests"] == [int((p > 200).sum())] * 2
    assert sub[0]["figures"]["E2E P50"]["b"] == pytest.approx(np.percentile(_np(slow, "e2e_ms")[p > 200], 50), rel=1e-3)
    for bad in ("no_such_column > 1", "prompt_len > 1) OR (1 = 1", "true; DROP TABLE s0.lat_mat"):
        rc, out, err = run_cli(capsys, "compare", root / "same", root / "slow", "--where", bad)
        assert rc == 2 and "--where" in err and "Traceback" not in err, (bad, err)  # one expression, nothing else


def test_warmup_leaves_the_start_out(runs, capsys):
    root, req, same, _ = runs
    t = _np(same, "scheduled_at").astype("datetime64[us]").astype(np.int64) / 1e6
    res = run_json(capsys, "compare", root / "same", root / "same", "--warmup", "2m")
    n = next(r for r in res["overall"] if r["metric"] == "requests")["a"]
    assert n == int((t >= t.min() + 120).sum())
    assert res["warmup_s"] == 120
    res = run_json(capsys, "analyze", root / "same", "--warmup", "2m")
    assert res["requests"] == n


def test_repeats_are_pooled_and_resampled_as_runs(runs, tmp_path, capsys):
    root, req, same, slow = runs
    for k, (scale, seed) in enumerate(((1.0, 11), (1.02, 12), (0.98, 13)), 1):
        write_sorted(run_dir(tmp_path / "a", k), "replay_results", make_replay(req, latency_scale=scale, seed=seed))
        write_sorted(run_dir(tmp_path / "b", k), "replay_results", make_replay(req, latency_scale=1.5 * scale, seed=seed + 10))
    res = run_json(capsys, "compare", tmp_path / "a", tmp_path / "b")
    assert res["a"]["runs"] == 3 and res["b"]["runs"] == 3
    rows = _rows(res)
    assert rows["requests"]["a"] == 3 * req.num_rows
    assert rows["E2E P99 ms"]["verdict"] == stats.WORSE
    # the interval over runs is wider than over one run's requests alone
    one = _rows(run_json(capsys, "compare", run_dir(tmp_path / "a", 1), run_dir(tmp_path / "b", 1)))
    w3 = np.diff(rows["E2E P50 ms"]["ratio_ci"])[0]
    w1 = np.diff(one["E2E P50 ms"]["ratio_ci"])[0]
    assert w3 > w1


def test_unrelated_runs_have_no_fidelity(tmp_path, capsys):
    r1 = make_requests(SynthSpec(periods=1, period_s=600, rate_per_s=1, anomaly=None, itl_lists=False, seed=1))
    write_sorted(tmp_path / "a", "requests", r1)
    write_sorted(tmp_path / "b", "requests", r1.set_column(0, "request_id", [[f"other-{i}" for i in range(r1.num_rows)]]))
    res = run_json(capsys, "compare", tmp_path / "a", tmp_path / "b")
    assert res["fidelity"] is None and any("share no request_id" in n for n in res["notes"])
