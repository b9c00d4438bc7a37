"""The command line as a newcomer meets it: a mistyped option is named with the option meant, in
one line; an error names only flags that were given; every duration flag reads a bare number by
one rule (the README's: the flag's former unit, with a note)."""

from __future__ import annotations

import argparse

import pytest

from shadowreplay import durations
from shadowreplay.cli import build_parser, main
from tests.replayer_helpers import chat_row, write_recording


@pytest.mark.parametrize("argv,typo,meant", [
    (["replay", "REC", "--tagret", "http://127.0.0.1:9", "--out", "O"], "--tagret", "--target"),
    (["replay", "REC", "--target", "http://127.0.0.1:9", "--out", "O", "--dry-rnu"], "--dry-rnu", "--dry-run"),
    (["record", "--upstream", "http://127.0.0.1:9", "--out", "O", "--key-flie", "k"], "--key-flie", "--key-file"),
    (["analyze", "P", "--slo=ttft=1s", "--windwo", "5s"], "--windwo", "--window"),
    (["analyze", "anomalies", "P", "--perod", "1d"], "--perod", "--period"),
    (["compare", "A", "B", "--replicate", "10", "--jsno"], "--jsno", "--json"),
])  # fmt: skip
def test_a_mistyped_option_is_one_line_naming_the_option_meant(capsys, argv, typo, meant):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.strip().splitlines() == [f"shadowreplay {argv[0] if argv[1] != 'anomalies' else 'analyze anomalies'}: "
                                        f"error: unknown option {typo}; did you mean {meant}?"], err


def test_other_usage_errors_are_one_line_too(capsys):
    with pytest.raises(SystemExit) as e:
        main(["replay", "REC", "--out", "O"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "--target" in err[0] and "--help" in err[0], err


@pytest.fixture
def recording(tmp_path):
    write_recording(tmp_path / "rec", [chat_row(i, i * 1.0) for i in range(5)])  # 4 s of traffic
    return tmp_path / "rec"


def test_a_start_past_the_end_names_only_start(recording, tmp_path, capsys):
    rc = main(["replay", str(recording), "--target", "http://127.0.0.1:9", "--out", str(tmp_path / "o"), "--dry-run",
               "--start", "10m"])
    err = capsys.readouterr().err
    assert rc == 2 and "--start 10m" in err and "--end" not in err and "last request" in err, err
    rc = main(["replay", str(recording), "--target", "http://127.0.0.1:9", "--out", str(tmp_path / "o"), "--dry-run",
               "--end", "2020-01-01T00:00:00Z"])
    err = capsys.readouterr().err
    assert rc == 2 and "--end" in err and "--start" not in err and "first request" in err, err


def _duration_flags():
    """(command, flag, action) for every duration flag of the whole command line."""
    def walk(parser, name):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    yield from walk(sub, f"{name} {sub_name}".strip())
            elif getattr(action.type, "__name__", "") == "duration" and action.help != argparse.SUPPRESS:
                yield name, action.option_strings[0], action

    return list(walk(build_parser(), ""))


def test_every_duration_flag_reads_a_bare_number_by_the_one_rule(capsys):
    flags = _duration_flags()
    assert {f for _, f, _ in flags} >= {"--rotate", "--timeout", "--spin-lead", "--window", "--period", "--warmup",
                                         "--metrics-interval", "--lead-in", "--ready-timeout"}
    for command, flag, action in flags:
        durations._noted.clear()
        seconds = action.type("7")
        note = capsys.readouterr().err
        assert seconds is not None and seconds > 0, (command, flag)
        unit = "ms" if flag == "--spin-lead" else "s"  # the flag's former unit: --spin-lead was --spin-lead-ms
        assert seconds == pytest.approx(durations.UNITS[unit] * 7), (command, flag)
        assert f"write {flag} 7{unit}" in note, (command, flag, note)


def test_record_rotate_and_timeout_follow_the_same_rule(capsys):
    p = build_parser()
    r = p.parse_args(["record", "--upstream", "http://u", "--out", "o", "--rotate", "10"])
    a = p.parse_args(["replay", "rec", "--target", "http://t", "--out", "o", "--timeout", "30"])
    assert (r.rotate, a.timeout) == (10.0, 30.0)
    err = capsys.readouterr().err
    assert "write --rotate 10s" in err and "write --timeout 30s" in err
