"""`report`: one self-contained HTML page, checked by rendering it in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.analysis_helpers import PlantedAnomaly, SynthSpec, png_is_blank, run_cli, weekly_recording, write_recording

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
    from analysis.synth import make_requests, write_sorted

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
