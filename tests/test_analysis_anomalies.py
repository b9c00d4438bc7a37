"""`analyze anomalies` on generated recordings with planted periodic anomalies (and without)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from shadowreplay.analysis.anomalies import MONDAY_S, slot_label
from tests.analysis_helpers import (
    PlantedAnomaly, SynthSpec, fold_cells_numpy, read_table, run_cli, run_json, weekly_recording, write_recording, write_replay, write_sorted,
)


@pytest.fixture
def weekly(tmp_path_factory):
    return weekly_recording(tmp_path_factory)


def test_weekly_anomaly_found_with_slot_ratios_and_client(weekly, capsys):
    res = run_json(capsys, "analyze", "anomalies", weekly)
    assert len(res["anomalies"]) == 1, res["anomalies"]
    a = res["anomalies"][0]
    assert a["label"] == "Wednesday 14:00-15:00 UTC"
    assert a["slot"] == 2 * 24 + 14
    assert (a["periods_anomalous"], a["periods_seen"]) == (3, 3)
    assert a["explained_by"][0]["who"] == "batch-etl"
    assert a["explained_by"][0]["long_share"] > 0.7
    assert a["explained_by"][0]["share_elsewhere"] == 0

    # Judged on TTFT, E2E and ITL together (all rose 3x; ITL, the least noisy, by the largest z).
    # The figures, recomputed independently from the Parquet with numpy.
    assert {m["metric"] for m in a["metrics"]} == {"ttft", "e2e", "itl"}
    assert a["metric"] == a["metrics"][0]["metric"] and a["z"] == max(m["z"] for m in a["metrics"])
    req = read_table(weekly, "requests", ["ts_start", "ttft_ms", "e2e_ms", "prompt_tokens"])
    t = req.column("ts_start").cast("int64").to_numpy() / 1e6
    prompt = req.column("prompt_tokens").to_numpy().astype(float)
    for m in (m for m in a["metrics"] if m["metric"] != "itl"):
        lat = req.column(f"{m['metric']}_ms").to_numpy()
        cells = fold_cells_numpy(t, lat, prompt, 7 * 86400, 3600, MONDAY_S)
        judged = {k: v for k, v in cells.items() if v[0] >= 10}
        logs = np.log([v[1] for v in judged.values()])
        med = np.median(logs)
        scale = max(1.4826 * np.median(np.abs(logs - med)), 0.05)
        mine = [v for k, v in judged.items() if k[1] == a["slot"]]
        assert m["tp99_ratio"] == pytest.approx(np.median([v[1] for v in mine]) / np.exp(med), rel=1e-6)
        assert m["z"] == pytest.approx(np.median([(np.log(v[1]) - med) / scale for v in mine]), rel=1e-6)
        if m["metric"] == "ttft":
            typ_prompt = np.median([v[2] for v in judged.values()])
            assert a["prompt_ratio"] == pytest.approx(np.median([v[2] for v in mine]) / typ_prompt, rel=1e-6)
    assert a["consistency"] == 1.0 and a["z"] > 3.5
    # ...and roughly what was planted: latency x3 (plus the batch's long prompts), prompts ~2x.
    e2e = next(m for m in a["metrics"] if m["metric"] == "e2e")
    assert 2.5 < e2e["tp99_ratio"] < 6
    assert 1.8 < a["prompt_ratio"] < 3.2


def test_weekly_human_output(weekly, capsys):
    rc, out, err = run_cli(capsys, "analyze", "anomalies", weekly)
    assert rc == 0, err
    assert "Wednesday 14:00-15:00 UTC" in out and "batch-etl" in out
    assert "no engine_metrics" in out


def test_no_false_alarms_without_anomaly_daily(tmp_path, capsys):
    # (The weekly test above is also a no-false-alarm check: one slot flagged out of 168.)
    write_recording(tmp_path, SynthSpec(periods=4, period_s=86400, rate_per_s=0.03, anomaly=None, seed=1))
    res = run_json(capsys, "analyze", "anomalies", tmp_path, "--period", "1d", "--bucket", "1h")
    assert res["anomalies"] == []
    assert res["periods"] == 4 and res["slots"] == 24
    rc, out, _ = run_cli(capsys, "analyze", "anomalies", tmp_path, "--period", "1d", "--bucket", "1h")
    assert "no periodic anomalies found" in out


@pytest.mark.parametrize("seed", [2, 3, 4, 5, 6])
def test_no_false_alarms_without_anomaly_compressed(tmp_path, capsys, seed):
    write_recording(tmp_path, SynthSpec(periods=30, period_s=60, rate_per_s=4.0, anomaly=None, seed=seed))
    res = run_json(capsys, "analyze", "anomalies", tmp_path, "--period", "1m", "--bucket", "10s")
    assert res["periods"] == 30
    assert res["anomalies"] == []


def test_compressed_period_60s_with_10s_buckets(tmp_path, capsys):
    spec = SynthSpec(
        periods=20, period_s=60, rate_per_s=4.0, start=SynthSpec().start, seed=5,
        anomaly=PlantedAnomaly(offset_s=20, duration_s=10, client_id="nightly-batch", batch_rate_per_s=2.0),
    )
    write_recording(tmp_path, spec, engine_metrics=True, metrics_interval_s=1, max_batch=256)
    res = run_json(capsys, "analyze", "anomalies", tmp_path, "--period", "60s", "--bucket", "10s", "--corr-window", "5s")
    assert [a["label"] for a in res["anomalies"]] == ["+20s-30s of each 1m period"]
    a = res["anomalies"][0]
    assert a["periods_anomalous"] >= 18 and a["periods_seen"] == 20
    assert a["explained_by"][0]["who"] == "nightly-batch"
    # Latency rises with the engine's batch: the generated metrics follow requests in flight.
    assert res["engine"]["corr_p99_running"] > 0.1
    assert a["engine"]["running"] > 1.2 * a["engine"]["running_overall"]
    rc, out, err = run_cli(capsys, "analyze", "anomalies", tmp_path, "--period", "60s", "--bucket", "10s", "--corr-window", "5s")
    assert "engine correlation over" in out and "+20s-30s of each 1m period" in out


def test_min_periods_is_configurable(tmp_path, capsys):
    spec = SynthSpec(periods=6, period_s=60, rate_per_s=4.0, seed=4,
                     anomaly=PlantedAnomaly(offset_s=30, duration_s=10, batch_rate_per_s=2.0, periods=(1, 4)))
    write_recording(tmp_path, spec)
    fold = ("--period", "1m", "--bucket", "10s")
    res = run_json(capsys, "analyze", "anomalies", tmp_path, *fold)  # 2 of 6 periods: below the 50% share
    assert res["anomalies"] == []
    res = run_json(capsys, "analyze", "anomalies", tmp_path, *fold, "--min-share", "0.3")
    assert [a["label"] for a in res["anomalies"]] == ["+30s-40s of each 1m period"]
    starts = [dt.datetime.fromisoformat(x) for x in res["anomalies"][0]["anomalous_period_starts"]]
    assert starts == [spec.start + dt.timedelta(minutes=1), spec.start + dt.timedelta(minutes=4)]
    assert run_json(capsys, "analyze", "anomalies", tmp_path, *fold, "--min-share", "0.3", "--min-periods", "3")["anomalies"] == []


def test_prompt_ratio_threshold_filters(weekly, capsys):
    res = run_json(capsys, "analyze", "anomalies", weekly, "--prompt-ratio", "5")
    assert res["anomalies"] == []


def test_short_data_for_period_says_so(tmp_path, capsys):
    write_recording(tmp_path, SynthSpec(periods=1, period_s=3 * 3600, rate_per_s=0.5, anomaly=None))
    res = run_json(capsys, "analyze", "anomalies", tmp_path)
    assert res["anomalies"] == []
    assert any("fewer than --min-periods" in n for n in res["notes"])
    assert any("no engine_metrics" in n for n in res["notes"])


def test_slot_labels():
    assert slot_label(2 * 24 + 14, 7 * 86400, 3600) == "Wednesday 14:00-15:00 UTC"
    assert slot_label(6 * 24 + 23, 7 * 86400, 3600) == "Sunday 23:00-24:00 UTC"
    assert slot_label(3, 86400, 3600) == "03:00-04:00 UTC daily"
    assert slot_label(2, 60, 10) == "+20s-30s of each 1m period"
    assert slot_label(0, 3600, 300) == "+0s-5m of each 1h period"


def test_bad_period_is_a_clear_error(weekly, capsys):
    with pytest.raises(SystemExit) as e:  # a bad duration is an argparse error: usage, one error line, exit 2
        run_cli(capsys, "analyze", "anomalies", weekly, "--period", "1x")
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --period: '1x': unknown unit" in err and "Traceback" not in err
    rc, out, err = run_cli(capsys, "analyze", "anomalies", weekly, "--period", "1h", "--bucket", "2h")
    assert rc == 2 and "longer than --period" in err


# ---------------------------------------------------------------- replays fold on the recording's clock

SHIFT_S = 3 * 86400 + 17.25  # the replay ran days later, at another phase of the minute


@pytest.fixture(scope="module")
def planted_replay(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay-fold")
    spec = SynthSpec(periods=12, period_s=60, rate_per_s=2.0, seed=8,
                     anomaly=PlantedAnomaly(offset_s=30, duration_s=10, client_id="nightly-batch", batch_rate_per_s=1.5))
    req = write_recording(root / "rec", spec)
    # The same latencies as recorded (no noise), scheduled SHIFT_S later.
    write_replay(root / "rep", req, recording=root / "rec", shift_s=SHIFT_S, noise_sigma=0)
    write_replay(root / "rep-alone", req, shift_s=SHIFT_S, noise_sigma=0)  # no manifest: recording unknown
    return root


def test_replay_folds_on_the_recording_clock(planted_replay, capsys):
    fold = ("--period", "60s", "--bucket", "10s")
    rec = run_json(capsys, "analyze", "anomalies", planted_replay / "rec", *fold)
    rep = run_json(capsys, "analyze", "anomalies", planted_replay / "rep", *fold)
    assert [a["label"] for a in rec["anomalies"]] == ["+30s-40s of each 1m period"]
    assert rep["table"] == "replay_results" and rep["fold_clock"] == "recording"
    assert any("recording's clock" in n for n in rep["notes"])
    # Same requests, same latencies, folded on the same clock: the same result, period starts included.
    assert rep["anomalies"] == rec["anomalies"]
    assert (rep["periods"], rep["slots"]) == (rec["periods"], rec["slots"])
    # Both paths given (no manifest needed) fold the same way.
    both = run_json(capsys, "analyze", "anomalies", planted_replay / "rep-alone", planted_replay / "rec", *fold)
    assert both["anomalies"] == rec["anomalies"]


def test_replay_without_recording_folds_on_its_own_clock(planted_replay, capsys):
    """The control: without the recording the slot sits at the replay's phase (30 s + 17.25 s), which
    is what replays used to report even when the recording was known."""
    rep = run_json(capsys, "analyze", "anomalies", planted_replay / "rep-alone", "--period", "60s", "--bucket", "10s")
    assert rep["fold_clock"] == "replay"
    assert any("own clock" in n for n in rep["notes"])
    assert "+30s-40s of each 1m period" not in [a["label"] for a in rep["anomalies"]]
    assert "+50s-1m of each 1m period" in [a["label"] for a in rep["anomalies"]]
    assert {a["label"] for a in rep["anomalies"]} <= {"+40s-50s of each 1m period", "+50s-1m of each 1m period"}


def test_replayed_request_missing_from_recording_folds_at_the_median_offset(planted_replay):
    """A replayed request the recording lacks is placed at its scheduled time minus the replay's
    median offset from the recording (here exactly SHIFT_S)."""
    from shadowreplay.analysis.session import open_dataset
    from shadowreplay.dataset import write_rows

    extra = planted_replay / "rep-extra"
    rep = read_table(planted_replay / "rep", "replay_results")
    write_sorted(extra, "replay_results", rep)
    t_extra = dt.datetime(2026, 10, 8, 12, 0, 5, tzinfo=dt.timezone.utc)
    write_rows(extra, "replay_results", [{"request_id": "not-recorded", "scheduled_at": t_extra, "e2e_ms": 10.0, "status": 200}])
    (extra / "manifest.json").write_text((planted_replay / "rep" / "manifest.json").read_text())
    con, _, table = open_dataset([str(extra)])
    assert table == "replay_results"
    got = con.execute("SELECT epoch(fold_t) - epoch(t) FROM lat WHERE request_id = 'not-recorded'").fetchone()[0]
    assert got == pytest.approx(-SHIFT_S, abs=1e-6)
    rec_ok = con.execute("SELECT count(*) FROM lat l WHERE request_id <> 'not-recorded' AND abs(epoch(fold_t) - epoch(t) + ?) > 1e-6", [SHIFT_S]).fetchone()[0]
    assert rec_ok == 0


# ---------------------------------------------------------------- the finder on its defaults


def test_defaults_find_the_wednesday_batch_that_moves_ttft_far_more_than_e2e(tmp_path, capsys):
    """The incident as users meet it: one client sends ~4x longer prompts every Wednesday
    14:00-16:00 UTC; TTFT TP99 rises several-fold, E2E TP99 under 2x. The defaults find both hours
    and name TTFT and the client."""
    spec = SynthSpec(periods=3, rate_per_s=0.03, seed=21, anomaly=PlantedAnomaly(
        duration_s=7200, batch_rate_per_s=0.01, ttft_factor=5.0, itl_factor=1.0))
    write_recording(tmp_path, spec)
    res = run_json(capsys, "analyze", "anomalies", tmp_path)
    assert [a["label"] for a in res["anomalies"]] == sorted(
        ["Wednesday 14:00-15:00 UTC", "Wednesday 15:00-16:00 UTC"], key=[a["label"] for a in res["anomalies"]].index)
    for a in res["anomalies"]:
        assert a["metric"] == "ttft" and a["tp99_ratio"] > 4
        e2e = [m for m in a["metrics"] if m["metric"] == "e2e"]
        assert not e2e or e2e[0]["tp99_ratio"] < a["tp99_ratio"]
        assert a["explained_by"][0]["who"] == "batch-etl"
    # strong and consistent: reported on both counts; with neither allowed, nothing is
    assert all(a["z"] >= 3.5 and a["chance"] <= 0.01 for a in res["anomalies"])
    assert run_json(capsys, "analyze", "anomalies", tmp_path, "--min-z", "100", "--alpha", "0")["anomalies"] == []
    assert len(run_json(capsys, "analyze", "anomalies", tmp_path, "--min-z", "100")["anomalies"]) == 2  # consistency alone
    # the old default (E2E alone, 2x) misses it
    assert run_json(capsys, "analyze", "anomalies", tmp_path, "--metric", "e2e", "--tp99-ratio", "2")["anomalies"] == []


@pytest.mark.parametrize(
    "fold,planted,metric",
    [
        ("weekly", dict(ttft_factor=2.5, itl_factor=1.0), "ttft"),
        ("weekly", dict(ttft_factor=6.0, itl_factor=1.0), "ttft"),
        ("weekly", dict(ttft_factor=1.0, itl_factor=2.0), "itl"),
        ("weekly", dict(ttft_factor=1.0, itl_factor=1.0, completion_factor=3.0), "e2e"),
        ("daily", dict(ttft_factor=2.5, itl_factor=1.0), "ttft"),
        ("daily", dict(ttft_factor=1.0, itl_factor=4.0), "itl"),
        ("daily", dict(ttft_factor=1.0, itl_factor=1.0, completion_factor=3.0), "e2e"),
    ],
)
def test_one_metric_rises_alone(tmp_path, capsys, planted, metric, fold):
    if fold == "weekly":
        spec = SynthSpec(periods=3, rate_per_s=0.03, seed=31, anomaly=PlantedAnomaly(batch_rate_per_s=0.0, **planted))
        args, label = (), "Wednesday 14:00-15:00 UTC"
    else:
        spec = SynthSpec(periods=5, period_s=86400, rate_per_s=0.03, seed=32,
                         anomaly=PlantedAnomaly(offset_s=9 * 3600, batch_rate_per_s=0.0, **planted))
        args, label = ("--period", "1d"), "09:00-10:00 UTC daily"
    write_recording(tmp_path, spec)
    res = run_json(capsys, "analyze", "anomalies", tmp_path, *args)
    assert [a["label"] for a in res["anomalies"]] == [label], res["anomalies"]
    assert res["anomalies"][0]["metric"] == metric


def test_a_rise_below_the_minimum_ratio_is_not_reported(tmp_path, capsys):
    spec = SynthSpec(periods=3, rate_per_s=0.03, seed=33,
                     anomaly=PlantedAnomaly(batch_rate_per_s=0.0, latency_factor=1.15))
    write_recording(tmp_path, spec)
    assert run_json(capsys, "analyze", "anomalies", tmp_path)["anomalies"] == []


@pytest.mark.parametrize("seed", [41, 42, 43])
def test_no_findings_on_clean_multi_week_traffic(tmp_path, capsys, seed):
    write_recording(tmp_path, SynthSpec(periods=4, rate_per_s=0.03, anomaly=None, seed=seed))
    res = run_json(capsys, "analyze", "anomalies", tmp_path)
    assert res["periods"] == 4 and res["anomalies"] == []
    assert res["metrics"] == ["ttft", "e2e", "itl"]
