"""Issue #37 items the other tests left uncovered: `capacity --skip-bad-files`, a bare number in
an `--slo` value (the one rule: its former unit, milliseconds, with a note)."""

from __future__ import annotations


import pytest

from shadowreplay import durations
from tests.capacity_helpers import StandIn, capacity_cli, write_steady
from tests.test_core_bad_files import plant


@pytest.mark.slow
def test_capacity_names_a_bad_file_and_skips_it_with_the_option(tmp_path):
    rec = write_steady(tmp_path / "rec", 25, 6)
    bad = plant(rec, "requests")
    p = capacity_cli(rec, "--target", "http://127.0.0.1:9", "--slo", "e2e_p95<=1s", "--out", tmp_path / "o", timeout=120)
    assert p.returncode == 2 and str(bad) in p.stderr and "--skip-bad-files" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    with StandIn(slots=4, service_ms=20) as engine:
        p = capacity_cli(rec, "--target", engine.url, "--slo", "e2e_p50<=1s", "--out", tmp_path / "cap", "--loads", "1",
                      "--step-requests", "100", "--skip-bad-files", timeout=300)
    assert p.returncode == 0, p.stderr
    assert "skipped 1 unreadable file" in p.stderr and str(bad) in p.stderr, p.stderr
    assert (tmp_path / "cap" / "capacity.json").exists()


def test_a_bare_slo_value_is_milliseconds_with_a_note(capsys):
    from shadowreplay.analysis.units import parse_slo

    durations._noted.clear()
    assert parse_slo("ttft=500,e2e=5s") == {"ttft": 500.0, "e2e": 5000.0}
    err = capsys.readouterr().err
    assert "--slo ttft=500: a number without a unit; write ttft=500ms" in err and "e2e" not in err, err
