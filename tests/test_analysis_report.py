"""`report`: one self-contained HTML page, checked by rendering it in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.analysis_helpers import PlantedAnomaly, SynthSpec, png_is_blank, run_cli, run_json, weekly_recording, write_recording

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


@pytest.fixture(scope="session")
def chromium() -> str:
    if os.environ.get("SHADOWREPLAY_SKIP_CHROMIUM") == "1":
        pytest.skip("SHADOWREPLAY_SKIP_CHROMIUM=1")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("chromium not installed: run scripts/install-chromium (make setup does), or set SHADOWREPLAY_SKIP_CHROMIUM=1")
    return exe


def render(chromium: str, html: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, html.resolve().as_uri()],
                          capture_output=True, text=True, timeout=180)


def console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln and re.search(r"error|uncaught", ln, re.I)]


@pytest.fixture(scope="module")
def compressed(tmp_path_factory):
    root = tmp_path_factory.mktemp("rep")
    spec = SynthSpec(periods=20, period_s=60, rate_per_s=4.0, seed=5, prefix_groups=30,
                     anomaly=PlantedAnomaly(offset_s=20, duration_s=10, client_id="nightly-batch", batch_rate_per_s=2.0))
    write_recording(root, spec, engine_metrics=True, metrics_interval_s=1, max_batch=256)
    return root


def test_report_renders_in_chromium(compressed, chromium, tmp_path, capsys):
    out = tmp_path / "report.html"
    rc, _, err = run_cli(capsys, "report", compressed, "--out", out, "--period", "1m", "--bucket", "10s")
    assert rc == 0, err
    page = out.read_text()
    # self-contained: nothing to fetch
    assert not re.search(r"<(link|img|iframe)\b|\ssrc=|@import|url\(", page)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    assert "+20s-30s of each 1m period" in page and "nightly-batch" in page
    assert page.count("<svg") >= 5
    dom = render(chromium, out, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r"rendered:(\d+):(\d+)", dom.stdout)
    assert m, "the page's script did not run"
    assert int(m.group(1)) >= 5 and int(m.group(2)) >= 5
    assert console_errors(dom.stderr) == []
    shot = tmp_path / "shot.png"
    r = render(chromium, out, tmp_path, f"--screenshot={shot}", "--window-size=1200,2400")
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    assert not png_is_blank(shot)


def test_render_checks_can_fail(chromium, tmp_path):
    """The harness catches a script error and a blank page."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><html><body style='background:#fff'><script>null.boom()</script></body></html>")
    r = render(chromium, bad, tmp_path, "--dump-dom")
    assert console_errors(r.stderr), r.stderr[-2000:]
    shot = tmp_path / "blank.png"
    render(chromium, bad, tmp_path, f"--screenshot={shot}", "--window-size=800,600")
    assert png_is_blank(shot)


def test_weekly_report_has_week_heatmap_and_anomaly(tmp_path_factory, tmp_path, capsys):
    weekly = weekly_recording(tmp_path_factory)
    out = tmp_path / "weekly.html"
    rc, _, err = run_cli(capsys, "report", weekly, "--out", out)
    assert rc == 0, err
    page = out.read_text()
    assert "TP99 by slot (1w fold, 1h buckets)" in page
    assert all(d in page for d in ("Monday", "Sunday")) and "Wednesday 14:00-15:00 UTC" in page
    assert "No engine_metrics in this dataset" in page


def test_report_without_streaming_or_metrics_still_renders(tmp_path, chromium, capsys):
    spec = SynthSpec(periods=10, period_s=60, rate_per_s=2.0, anomaly=None, itl_lists=False)
    from tests.analysis_synth import make_requests, write_sorted

    req = make_requests(spec)
    req = req.set_column(req.column_names.index("ttft_ms"), "ttft_ms", [[None] * req.num_rows])
    write_sorted(tmp_path / "ds", "requests", req)
    out = tmp_path / "r.html"
    rc, _, err = run_cli(capsys, "report", tmp_path / "ds", "--out", out)
    assert rc == 0, err
    page = out.read_text()
    assert "no TTFT recorded" in page and "No periodic anomalies" in page
    dom = render(chromium, out, tmp_path, "--dump-dom")
    assert "rendered:" in dom.stdout and console_errors(dom.stderr) == []


def test_report_on_a_trace_without_latencies(tmp_path, capsys):
    """An imported trace has arrival times and token counts only: the page says so and still plots."""
    import datetime as dt

    from shadowreplay.dataset import write_rows

    t0 = dt.datetime(2023, 11, 16, 18, 0, tzinfo=dt.timezone.utc)
    write_rows(tmp_path / "trace", "requests", [
        {"request_id": f"t{i}", "ts_start": t0 + dt.timedelta(seconds=2 * i), "prompt_tokens": 100 + i % 50, "completion_tokens": 20, "kind": "completion"}
        for i in range(600)
    ])
    out = tmp_path / "trace.html"
    rc, _, err = run_cli(capsys, "report", tmp_path / "trace", "--out", out)
    assert rc == 0, err
    page = out.read_text()
    assert "Prompt length over time" in page and "no latencies recorded" in page.lower()
    assert "TP99 by slot" not in page


# ---------------------------------------------------------------- the report's anomaly table is `analyze anomalies`

ROW = re.compile(r"<tr><td class='slot'>([^<]*)</td><td>[A-Z0-9]+</td><td>(\d+)/(\d+)</td><td class='bad'>([0-9.]+)x</td>")


def report_anomalies(page: str) -> tuple[list[tuple[str, int, int, str]], dict]:
    """The rows of the page's anomaly table, and the result embedded next to it."""
    import html as html_mod
    import json

    rows = [(html_mod.unescape(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)) for m in ROW.finditer(page)]
    m = re.search(r'<script type="application/json" id="anomalies-json">(.*?)</script>', page, re.S)
    assert m, "no embedded anomaly result"
    return rows, json.loads(m.group(1))


def shown(res: dict) -> list[tuple[str, int, int, str]]:
    return [(a["label"], a["periods_anomalous"], a["periods_seen"], f"{a['tp99_ratio']:.1f}") for a in res["anomalies"]]


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """A compressed 1m period with about 5 requests per 10 s cell (8 in the planted +30s slot):
    under the default --min-requests 10 no cell is judged."""
    root = tmp_path_factory.mktemp("sparse")
    spec = SynthSpec(periods=12, period_s=60, rate_per_s=0.5, seed=3,
                     anomaly=PlantedAnomaly(offset_s=30, duration_s=10, client_id="nightly-batch", batch_rate_per_s=0.3))
    write_recording(root, spec, engine_metrics=True, metrics_interval_s=1, max_batch=64)
    return root


@pytest.mark.parametrize("opts", [
    ("--period", "60s", "--bucket", "10s"),  # defaults: cells of < 10 requests are not judged, nothing found
    ("--period", "60s", "--bucket", "10s", "--min-requests", "3"),
    ("--period", "60s", "--bucket", "10s", "--min-requests", "3", "--metric", "ttft", "--corr-window", "5s"),
    ("--period", "60s", "--bucket", "10s", "--min-requests", "3", "--tp99-ratio", "1.5", "--min-periods", "4", "--min-share", "0.8",
     "--long-factor", "3", "--prompt-ratio", "1.2"),
    ("--period", "60s", "--bucket", "10s", "--min-requests", "3", "--tp99-ratio", "20"),  # nothing that extreme
])
def test_report_anomaly_table_equals_analyze_anomalies(sparse, tmp_path, capsys, opts):
    expected = run_json(capsys, "analyze", "anomalies", sparse, *opts)
    out = tmp_path / "r.html"
    rc, _, err = run_cli(capsys, "report", sparse, "--out", out, *opts)
    assert rc == 0, err
    page = out.read_text()
    rows, embedded = report_anomalies(page)
    assert embedded["anomalies"] == expected["anomalies"]
    assert embedded["params"] == expected["params"]
    assert rows == shown(expected)
    if expected["anomalies"]:
        assert "No periodic anomalies" not in page
    else:
        assert "No periodic anomalies" in page


def test_report_finds_the_sparse_slot_only_with_min_requests(sparse, tmp_path, capsys):
    """The case the hard-coded 10 hid: the slot is there with --min-requests 3, the same as analyze."""
    fold = ("--period", "60s", "--bucket", "10s")
    out = tmp_path / "r.html"
    assert run_cli(capsys, "report", sparse, "--out", out, *fold)[0] == 0
    assert report_anomalies(out.read_text())[0] == []
    assert "cells of 10+ requests judged" in out.read_text()
    assert run_cli(capsys, "report", sparse, "--out", out, *fold, "--min-requests", "3", "--metric", "ttft")[0] == 0
    page = out.read_text()
    rows, embedded = report_anomalies(page)
    assert [r[0] for r in rows] == ["+30s-40s of each 1m period"]
    assert rows[0][1] >= 10 and rows[0][2] == 12
    assert embedded["metric"] == "ttft" and "TTFT latency, cells of 3+ requests" in page
    assert embedded["anomalies"][0]["explained_by"][0]["who"] == "nightly-batch"


def test_report_anomaly_defaults_are_analyze_anomalies_defaults():
    """Same option names and defaults (report alone lets the fold be `auto`)."""
    import argparse

    from shadowreplay.analysis.cli import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="cmd"))
    an = vars(parser.parse_args(["analyze anomalies", "x"]))  # the console script joins the two words
    rep = vars(parser.parse_args(["report", "x", "--out", "r.html"]))
    shared = ["metric", "min_z", "tp99_ratio", "prompt_ratio", "min_periods", "min_share", "min_requests", "long_factor", "corr_window"]
    assert {k: rep[k] for k in shared} == {k: an[k] for k in shared}
    assert (rep["period"], rep["bucket"]) == (None, None)  # auto: picked from the data
    assert (an["period"], an["bucket"]) == (604800.0, 3600.0)  # 1w, 1h


def test_report_bad_anomaly_option_is_a_clear_error(sparse, tmp_path, capsys):
    rc, _, err = run_cli(capsys, "report", sparse, "--out", tmp_path / "r.html", "--period", "1m", "--bucket", "2m")
    assert rc == 2 and "longer than --period" in err and "Traceback" not in err
    rc, _, err = run_cli(capsys, "report", sparse, "--out", tmp_path / "r.html", "--min-periods", "0")
    assert rc == 2 and "--min-periods" in err
    assert not (tmp_path / "r.html").exists()
