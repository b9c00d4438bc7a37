"""Issue #37 items the other tests left uncovered: `capacity --skip-bad-files`, a bare number in
an `--slo` value (the one rule: its former unit, milliseconds, with a note), and the report's
summary tiles under compare's request-count rule."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from shadowreplay import durations
from tests.analysis_helpers import SynthSpec, run_cli, write_recording
from tests.capacity_helpers import StandIn, write_steady
from tests.conftest import REPO
from tests.test_core_bad_files import plant


def _capacity(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shadowreplay", "capacity", *map(str, args), "--no-progress"],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.mark.slow
def test_capacity_names_a_bad_file_and_skips_it_with_the_option(tmp_path):
    rec = write_steady(tmp_path / "rec", 25, 6)
    bad = plant(rec, "requests")
    p = _capacity(rec, "--target", "http://127.0.0.1:9", "--slo", "e2e_p95<=1s", "--out", tmp_path / "o", timeout=120)
    assert p.returncode == 2 and str(bad) in p.stderr and "--skip-bad-files" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    with StandIn(slots=4, service_ms=20) as engine:
        p = _capacity(rec, "--target", engine.url, "--slo", "e2e_p50<=1s", "--out", tmp_path / "cap", "--loads", "1",
                      "--step-requests", "100", "--skip-bad-files")
    assert p.returncode == 0, p.stderr
    assert "skipped 1 unreadable file" in p.stderr and str(bad) in p.stderr, p.stderr
    assert (tmp_path / "cap" / "capacity.json").exists()


def test_a_bare_slo_value_is_milliseconds_with_a_note(capsys):
    from shadowreplay.analysis.units import parse_slo

    durations._noted.clear()
    assert parse_slo("ttft=500,e2e=5s") == {"ttft": 500.0, "e2e": 5000.0}
    err = capsys.readouterr().err
    assert "--slo ttft=500: a number without a unit; write ttft=500ms" in err and "e2e" not in err, err


def test_the_report_tiles_follow_the_request_count_rule(tmp_path, capsys):
    rec = tmp_path / "rec"
    write_recording(rec, SynthSpec(periods=1, period_s=3600.0, n_rows=100, anomaly=None, seed=7))
    rc, out, err = run_cli(capsys, "report", rec, "--out", tmp_path / "r.html")
    assert rc == 0, err
    tiles = dict((k, v) for v, k in re.findall(r"<div class='v'>([^<]*)</div><div class='k'>([^<]*)</div>",
                                                (tmp_path / "r.html").read_text()))
    # 100 requests: a P99 needs 500, a P95 100 (stats.needed), as compare says
    assert "TTFT P99" not in tiles and "E2E P99" not in tiles, tiles
    assert tiles["TTFT P95"].endswith(" ms") and tiles["E2E P95"].endswith(" ms"), tiles
