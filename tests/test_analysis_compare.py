"""`compare`: deltas overall and per slot, and fidelity of a replay against its recording."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_replay_vs_recording_fidelity(runs, capsys):
    root, req, same, _ = runs
    res = run_json(capsys, "compare", root / "rec", root / "same")
    f = res["fidelity"]
    assert f["relation"] == "replay vs its recording"
    assert f["matched"] == req.num_rows
    a, b = _np(req, "e2e_ms"), _np(same, "e2e_ms")
    assert f["p99_ratio_e2e"] == pytest.approx(np.percentile(b, 99) / np.percentile(a, 99))
    assert f["corr_e2e"] == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert f["verdict"].startswith("close")
    lag = _np(same, "send_lag_ms")
    assert f["send_lag_ms"]["b"]["p50"] == pytest.approx(np.percentile(lag, 50))
    rc, out, err = run_cli(capsys, "compare", root / "rec", root / "same")
    assert rc == 0 and "Fidelity (replay vs its recording): close" in out


def test_two_replays_deltas_overall_and_per_slot(runs, capsys):
    root, req, same, slow = runs
    res = run_json(capsys, "compare", root / "same", root / "slow", "--slo", "e2e=5s", "--bucket", "5m")
    rows = {r["metric"]: r for r in res["overall"]}
    a, b = _np(same, "e2e_ms"), _np(slow, "e2e_ms")
    p99 = rows["E2E P99 ms"]
    assert p99["a"] == pytest.approx(np.percentile(a, 99))
    assert p99["delta"] == pytest.approx(np.percentile(b, 99) - np.percentile(a, 99))
    assert p99["ratio"] == pytest.approx(1.5, rel=0.05)
    g = rows["goodput share"]
    assert g["a"] == pytest.approx(np.mean(a <= 5000)) and g["b"] == pytest.approx(np.mean(b <= 5000))
    assert g["delta"] < 0
    # Per slot: 30 min in 5 min slots; the shifted replay lines up by offset from its own start.
    assert len(res["slots"]) == 6
    t = (_np(same, "scheduled_at").astype("datetime64[us]").astype(np.int64) / 1e6)
    k = np.floor((t - t.min()) / 300).astype(int)
    s0 = res["slots"][0]
    assert s0["requests"] == [int((k == 0).sum())] * 2
    assert s0["e2e_p99_ms"]["b"] == pytest.approx(np.percentile(b[k == 0], 99))
    assert res["fidelity"]["relation"] == "two replays of the same requests"
    assert res["fidelity"]["verdict"].startswith("far")


def test_unrelated_runs_have_no_fidelity(tmp_path, capsys):
    r1 = make_requests(SynthSpec(periods=1, period_s=600, rate_per_s=1, anomaly=None, itl_lists=False, seed=1))
    write_sorted(tmp_path / "a", "requests", r1)
    write_sorted(tmp_path / "b", "requests", r1.set_column(0, "request_id", [[f"other-{i}" for i in range(r1.num_rows)]]))
    res = run_json(capsys, "compare", tmp_path / "a", tmp_path / "b")
    assert res["fidelity"] is None and any("share no request_id" in n for n in res["notes"])
