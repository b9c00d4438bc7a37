"""compare's per-slot and per-client tables follow the data: P95 where the groups lack the
requests a P99 needs (stats.needed), not a column of "too few requests"."""

from __future__ import annotations

import re

from tests.analysis_helpers import SynthSpec, run_cli, write_recording, write_replay


def test_group_tables_show_the_percentile_their_requests_allow(tmp_path, capsys):
    rec = tmp_path / "rec"
    req = write_recording(rec, SynthSpec(periods=1, period_s=3600.0, n_rows=1500, anomaly=None, seed=5))
    write_replay(tmp_path / "a", req, rec)
    write_replay(tmp_path / "b", req, rec, latency_scale=1.3, seed=6)
    rc, out, err = run_cli(capsys, "compare", tmp_path / "a", tmp_path / "b", "--bucket", "10m")  # ~250 per slot
    assert rc == 0, err
    slots = out[out.index("Per slot"):]
    assert "E2E P95 A" in slots and "P99 needs" not in slots, slots


def test_report_applies_the_same_request_count_rule(tmp_path, capsys):
    rec = tmp_path / "rec"
    write_recording(rec, SynthSpec(periods=1, period_s=3600.0, n_rows=100, anomaly=None, seed=7))
    rc, out, err = run_cli(capsys, "report", rec, "--out", tmp_path / "r.html")
    assert rc == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "too few (P99 needs 500)" in page
    # the summary tiles too: 100 requests carry a P95 (stats.needed), not a P99
    tiles = dict((k, v) for v, k in re.findall(r"<div class='v'>([^<]*)</div><div class='k'>([^<]*)</div>", page))
    assert "TTFT P99" not in tiles and "E2E P99" not in tiles, tiles
    assert tiles["TTFT P95"].endswith(" ms") and tiles["E2E P95"].endswith(" ms"), tiles
