"""The one duration parser (shadowreplay.durations) and the time flags built on it, down to the
command line: units in the value, bare numbers in each flag's old unit with one deprecation note,
bad input as one error line and no traceback, --start/--end alike in `replay` and `import`."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest

from shadowreplay import durations
from shadowreplay.cli import build_parser
from shadowreplay.dataset import parquet_files
from shadowreplay.durations import TimePoint, format_duration, parse_duration, parse_time, parse_time_point
from shadowreplay.errors import ConfigError
from tests.conftest import REPO
from tests.replayer_helpers import chat_row, write_recording


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch):
    monkeypatch.setattr(durations, "_noted", set())  # each test sees its notes printed


def sr(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shadowreplay", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def column(dataset, name: str) -> list:
    """The sorted values of one column of a dataset's requests table."""
    import pyarrow.parquet as pq

    return sorted(v for f in parquet_files(dataset, "requests") for v in pq.read_table(f).column(name).to_pylist())


def notes(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "deprecated" in ln]


# ---- the parser ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,seconds", [
    ("250us", 250e-6), ("500ms", 0.5), ("30s", 30.0), ("5m", 300.0), ("2min", 120.0), ("1.5h", 5400.0),
    ("1d", 86400.0), ("1w", 604800.0), (".5s", 0.5), (" 10 S ", 10.0), ("3.", 3.0),
])  # fmt: skip
def test_units(text, seconds):
    assert parse_duration(text, bare="s") == pytest.approx(seconds)


def test_zero_needs_no_unit_and_only_where_allowed():
    assert parse_duration("0", zero=True) == 0.0
    assert parse_duration("0ms", zero=True) == 0.0
    with pytest.raises(ConfigError, match="--window '0': must be greater than 0"):
        parse_duration("0", flag="--window")


def test_bare_number_keeps_the_flags_unit_with_one_note(capsys):
    assert parse_duration("30", flag="--timeout", bare="s") == 30.0
    assert parse_duration("30", flag="--timeout", bare="s") == 30.0  # the note is printed once
    assert parse_duration("2", flag="--spin-lead-ms", bare="ms") == 0.002
    err = capsys.readouterr().err
    assert notes(err) == [
        "shadowreplay: deprecated: --timeout 30: a number without a unit; write --timeout 30s",
        "shadowreplay: deprecated: --spin-lead-ms 2: a number without a unit; write --spin-lead-ms 2ms",
    ]
    assert parse_duration("30", bare="s") == 30.0  # no flag (a library caller): no note
    assert capsys.readouterr().err == ""


def test_bare_number_refused_where_the_flag_never_took_one():
    with pytest.raises(ConfigError, match=r"--spin-lead '1': give a unit, e.g. 1s or 1ms"):
        parse_duration("1", flag="--spin-lead")


@pytest.mark.parametrize("text,message", [
    ("5x", "--timeout '5x': unknown unit 'x'"),
    ("fast", "--timeout 'fast' is not a duration (examples: 500ms, 30s"),
    ("", "--timeout '' is not a duration"),
    ("-1s", "--timeout '-1s': a duration cannot be negative"),
    ("1m30s", "--timeout '1m30s' is not a duration"),
    ("2h", "--timeout '2h': at most 1h"),
])  # fmt: skip
def test_bad_input_is_one_clear_error(text, message):
    with pytest.raises(ConfigError) as e:
        parse_duration(text, flag="--timeout", bare="s", maximum=3600)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("seconds", [604800, 86400, 3600, 600, 60, 10, 1.5, 0.5, 0.001, 250e-6])
def test_format_duration_reads_back(seconds):
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)


def test_time_points(capsys):
    first = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    assert parse_time("1500ms", first) == first + dt.timedelta(seconds=1.5)
    assert parse_time("+2m", first) == first + dt.timedelta(minutes=2)
    assert parse_time("2026-01-01T00:00:05Z", first) == first + dt.timedelta(seconds=5)
    assert parse_time("2026-01-01T01:00:05+01:00", first) == first + dt.timedelta(seconds=5)
    assert parse_time("2026-01-01T00:00:05", first) == first + dt.timedelta(seconds=5)  # no zone: UTC
    assert parse_time_point("90", flag="--start") == TimePoint(offset_s=90.0, text="90")
    assert notes(capsys.readouterr().err) == ["shadowreplay: deprecated: --start 90: a number without a unit; write --start 90s"]
    assert str(parse_time_point("5m")) == "5m"
    with pytest.raises(ConfigError, match="--end 'yesterday' is not a time: give an ISO time"):
        parse_time_point("yesterday", flag="--end")


# ---- the flags, through the command line ----------------------------------------------------------

def parse(*argv):
    return build_parser().parse_args([str(a) for a in argv])


def test_every_time_flag_reads_units():
    a = parse("replay", "rec", "--target", "http://t", "--out", "o", "--timeout", "2m", "--metrics-interval", "250ms",
              "--spin-lead", "500us", "--drain", "0", "--flush-interval", "1s", "--keepalive-expiry", "5s",
              "--lead-in", "1m", "--start", "10s", "--end", "2026-11-29T10:05:00Z")
    assert (a.timeout, a.metrics_interval, a.spin_lead, a.drain, a.flush_interval, a.keepalive_expiry, a.lead_in) == (
        120.0, 0.25, pytest.approx(0.0005), 0.0, 1.0, 5.0, 60.0)
    assert a.start.offset_s == 10.0 and a.end.absolute == dt.datetime(2026, 11, 29, 10, 5, tzinfo=dt.timezone.utc)
    d = parse("replay", "rec", "--target", "http://t", "--out", "o")
    assert (d.timeout, d.metrics_interval, d.spin_lead, d.drain, d.flush_interval, d.keepalive_expiry, d.lead_in) == (
        600.0, 1.0, 0.001, 30.0, 10.0, None, 0.0)  # the defaults, as before units
    r = parse("record", "--upstream", "http://u", "--out", "o", "--rotate", "5m", "--metrics-interval", "2s")
    assert (r.rotate, r.metrics_interval) == (300.0, 2.0)
    assert parse("record", "--upstream", "http://u", "--out", "o").rotate == 60.0
    an = parse("analyze anomalies", "p", "--period", "1d", "--bucket", "1h", "--corr-window", "30s", "--warmup", "2m")
    assert (an.period, an.bucket, an.corr_window, an.warmup) == (86400.0, 3600.0, 30.0, 120.0)
    assert parse("report", "p", "--out", "r.html").period is None  # auto: picked from the data
    assert parse("compare", "a", "b").bucket is None
    assert parse("analyze", "p", "--window", "1m").window == 60.0


def test_old_names_and_bare_numbers_keep_their_meaning_with_a_note(capsys):
    a = parse("replay", "rec", "--target", "http://t", "--out", "o", "--spin-lead-ms", "2", "--timeout", "30")
    r = parse("record", "--upstream", "http://u", "--out", "o", "--rotate-seconds", "30")
    assert (a.spin_lead, a.timeout, r.rotate) == (0.002, 30.0, 30.0)
    assert notes(capsys.readouterr().err) == [
        "shadowreplay: deprecated: --spin-lead-ms is a deprecated name; write --spin-lead 2ms",
        "shadowreplay: deprecated: --timeout 30: a number without a unit; write --timeout 30s",
        "shadowreplay: deprecated: --rotate-seconds is a deprecated name; write --rotate 30s",
    ]
    assert "--spin-lead-ms" not in build_parser()._subparsers._group_actions[0].choices["replay"].format_help()


def test_recorder_passes_durations_to_mitmproxy_in_a_form_the_addon_reads():
    from shadowreplay.recorder.addon import _seconds
    from shadowreplay.recorder.cli import build_command

    cmd = build_command(parse("record", "--upstream", "http://u", "--out", "o", "--rotate", "1.5s",
                              "--metrics-url", "http://m/metrics", "--metrics-interval", "250ms"))
    sets = dict(cmd[i + 1].split("=", 1) for i, c in enumerate(cmd) if c == "--set")
    assert _seconds(sets["shadowreplay_rotate_seconds"], "x") == 1.5
    assert _seconds(sets["shadowreplay_metrics_interval"], "x") == 0.25
    assert _seconds("60", "x") == 60.0  # a bare number in a mitmproxy --set: seconds, as the name says


@pytest.mark.parametrize("argv,needle", [
    (["replay", "REC", "--target", "http://127.0.0.1:9", "--out", "O", "--timeout", "5x"], "argument --timeout: '5x': unknown unit"),
    (["replay", "REC", "--target", "http://127.0.0.1:9", "--out", "O", "--spin-lead", "5000"], "argument --spin-lead: '5000': at most 1s"),  # 5000 ms
    (["replay", "REC", "--target", "http://127.0.0.1:9", "--out", "O", "--spin-lead", "2s"], "argument --spin-lead: '2s': at most 1s"),
    (["replay", "REC", "--target", "http://127.0.0.1:9", "--out", "O", "--start", "soon"], "argument --start: 'soon' is not a time"),
    (["record", "--upstream", "http://127.0.0.1:9", "--out", "O", "--rotate", "0s"], "argument --rotate: '0s': must be greater than 0"),
    (["analyze", "P", "--window=-5s"], "argument --window: '-5s': a duration cannot be negative"),
    (["analyze", "anomalies", "P", "--period", "auto"], "argument --period: 'auto' is not a duration"),
    (["import", "mooncake", "F", "--out", "O", "--end", "5 minutes"], "argument --end: '5 minutes': unknown unit 'minutes'"),
    (["import", "mooncake", "F", "--out", "O", "--end", "tomorrow"], "argument --end: 'tomorrow' is not a time"),
])  # fmt: skip
def test_bad_time_flags_give_one_error_line(tmp_path, argv, needle):
    p = sr(*[str(tmp_path / a) if a in ("REC", "O", "P", "F") else a for a in argv])
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    errors = [ln for ln in p.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and needle in errors[0], p.stderr


def test_start_end_offsets_select_the_same_rows_in_replay_and_import(tmp_path):
    # an openai-jsonl trace of 10 requests 1 s apart; imported whole and replayed with offsets, or
    # imported with the same offsets: the same 3 requests
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 1_750_000_000 + i, "id": f"q{i}", "model": "m", "max_tokens": 4,
                                         "messages": [{"role": "user", "content": f"hi {i}"}]}) + "\n" for i in range(10)))
    p = sr("import", "openai-jsonl", trace, "--out", tmp_path / "all")
    assert p.returncode == 0, p.stderr
    p = sr("replay", tmp_path / "all", "--target", "http://127.0.0.1:9", "--out", tmp_path / "o", "--dry-run",
           "--start", "2s", "--end", "+5s")
    assert p.returncode == 0 and "dry run: 3 requests" in p.stdout, p.stdout + p.stderr
    p = sr("import", "openai-jsonl", trace, "--out", tmp_path / "win", "--start", "2s", "--end", "+5s")
    assert p.returncode == 0, p.stderr
    assert column(tmp_path / "win", "request_id") == ["q2", "q3", "q4"]
    # an ISO --start is a window start too
    p = sr("import", "openai-jsonl", trace, "--out", tmp_path / "iso", "--start",
           dt.datetime.fromtimestamp(1_750_000_008, dt.timezone.utc).isoformat())
    assert p.returncode == 0, p.stderr
    assert column(tmp_path / "iso", "request_id") == ["q8", "q9"]


def test_import_start_iso_on_a_relative_trace_still_places_it_with_a_note(tmp_path):
    trace = tmp_path / "BurstGPT_1.csv"
    trace.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                     + "".join(f"{i},ChatGPT,10,5,15,Conversation log\n" for i in range(4)))
    p = sr("import", "burstgpt", trace, "--out", tmp_path / "old", "--no-text", "--start", "2025-03-01T00:00:00Z")
    assert p.returncode == 0, p.stderr
    assert notes(p.stderr) == ["shadowreplay: deprecated: import --start 2025-03-01T00:00:00Z places the trace; write "
                               "--origin 2025-03-01T00:00:00Z (--start with --origin selects the rows from that time)"]
    ts = column(tmp_path / "old", "ts_start")
    assert ts[0] == dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc) and len(ts) == 4
    p = sr("import", "burstgpt", trace, "--out", tmp_path / "new", "--no-text", "--origin", "2025-03-01T00:00:00Z",
           "--start", "2025-03-01T00:00:02Z")
    assert p.returncode == 0 and not notes(p.stderr), p.stderr
    ts = column(tmp_path / "new", "ts_start")
    assert ts == [dt.datetime(2025, 3, 1, 0, 0, s, tzinfo=dt.timezone.utc) for s in (2, 3)]


def test_replay_offsets_in_a_dry_run(tmp_path):
    write_recording(tmp_path / "rec", [chat_row(i, i * 0.01) for i in range(5)])
    base = ["replay", tmp_path / "rec", "--target", "http://127.0.0.1:9", "--out", tmp_path / "o", "--dry-run"]
    p = sr(*base, "--start", "20ms")
    assert p.returncode == 0 and "dry run: 3 requests" in p.stdout and not notes(p.stderr), p.stdout + p.stderr
    p = sr(*base, "--start", "0.02")  # a bare number: seconds, as before, with a note
    assert p.returncode == 0 and "dry run: 3 requests" in p.stdout, p.stdout + p.stderr
    assert notes(p.stderr) == ["shadowreplay: deprecated: --start 0.02: a number without a unit; write --start 0.02s"]
