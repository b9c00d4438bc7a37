"""recorder/options.py: one table behind the mitmproxy options, the `record` flags, the `--set`
list and the defaults; the key-file checks in one place (a weak key refused there)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import pytest
from mitmproxy.exceptions import OptionsError
from mitmproxy.test import taddons

from shadowreplay.errors import ConfigError
from shadowreplay.recorder import cli, options
from shadowreplay.recorder.addon import Recorder
from shadowreplay.recorder.exchange import RowOptions
from shadowreplay.recorder.grpc_addon import GrpcRecorder
from shadowreplay.recorder.record_writer import HEADER_BYTES_CAP, HEADER_COUNT_CAP, WriterConfig
from tests.conftest import free_port
from tests.recorder_helpers import Proxy, server  # noqa: F401 (server: a fixture)

BASE = ["record", "--upstream", "http://127.0.0.1:1", "--out", "/tmp/x"]

# a value other than the default for every option, as a user types it on the command line
OTHER = {
    "out": "/tmp/elsewhere", "instance": "rec-7", "key_file": "/etc/sr/scrub.key", "keep": "shape",
    "prefix_chars": "17", "body_cap": "4096", "stream_cap": "8192", "rotate_seconds": "1500ms",
    "rotate_bytes": "1000", "queue_size": "5", "header_count_cap": "9", "header_bytes_cap": "999",
    "metrics_url": "http://127.0.0.1:9/metrics", "metrics_interval": "250ms", "writer": "thread",
    "grpc_max_message": "123", "log": "verbose", "sample": "10%", "sample_by": "client", "session_header": "x-conv",
    "include_path": "/v1/*", "exclude_path": "/v1/embeddings", "include_host": "*.example",
    "exclude_host": "canary.example", "include_header": "x-tenant=^a", "exclude_header": "user-agent=probe",
    "include_client": "10.0.0.0/8", "exclude_client": "10.9.0.0/16", "metrics_port": "9464",
    "metrics_host": "0.0.0.0",
}  # fmt: skip


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    cli.register(ap.add_subparsers())
    return ap


def sets_of(cmd: list[str]) -> dict[str, str]:
    return dict(cmd[i + 1].split("=", 1) for i, c in enumerate(cmd) if c == "--set")


def test_every_option_is_a_mitmproxy_option_with_the_tables_default_and_type():
    with taddons.context(GrpcRecorder(Recorder()), Recorder()) as tctx:
        declared = {k: tctx.options._options[k] for k in tctx.options.keys() if k.startswith(options.PREFIX)}
    assert sorted(declared) == sorted(o.option for o in options.OPTIONS)
    for o in options.OPTIONS:
        d = declared[o.option]
        assert (d.default, d.typespec, d.choices) == (o.default, o.type, list(o.choices) if o.choices else None), o.name
        assert o.help[1:] in d.help


def test_every_option_is_a_record_flag_with_the_same_default_in_help():
    ap = parser()
    args = ap.parse_args(BASE)
    text = ap._subparsers._group_actions[0].choices["record"].format_help()
    flat = " ".join(text.split())
    for o in options.OPTIONS:
        assert o.cli_flag in text, o.name
        if o.name != "out":
            assert getattr(args, o.dest) == options.default(o.name), o.name
        if o.multiple:
            assert o.help in flat and "(repeatable)" in flat, o.name
        elif o.default_doc:
            assert f"(default: {o.default_doc})" in flat, o.name
        elif o.default != "":
            assert f"(default {o.default})" in flat, o.name


def test_rowoptions_and_the_writer_take_their_defaults_from_the_table():
    r, w = RowOptions(), WriterConfig(out_dir=Path("/tmp/x"), instance="i")
    assert (r.prefix_chars, r.body_cap, r.stream_cap, r.keep) == (1000, 1 << 20, 16 << 20, "text")
    assert (w.rotate_seconds, w.rotate_bytes, w.queue_size) == (60.0, 64 << 20, 10_000)
    assert (HEADER_COUNT_CAP, HEADER_BYTES_CAP) == (w.header_count_cap, w.header_bytes_cap) == (256, 64 << 10)
    assert options.default("metrics_interval") == 1.0


def test_defaults_are_not_sent_to_mitmdump_except_out_and_keep():
    sets = sets_of(cli.build_command(parser().parse_args(BASE)))
    assert {k for k in sets if k.startswith(options.PREFIX)} == {"shadowreplay_out", "shadowreplay_keep"}
    assert sets["shadowreplay_out"] == "/tmp/x" and sets["shadowreplay_keep"] == "text"
    assert (sets["flow_detail"], sets["connection_strategy"]) == ("0", "lazy")


def test_every_non_default_flag_becomes_its_set_and_the_addon_reads_back_what_was_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = list(BASE)
    for o in options.OPTIONS:
        argv += [o.cli_flag, OTHER[o.name]]
    argv += ["--out", "rel/out"]  # a relative path goes to mitmdump absolute
    sets = sets_of(cli.build_command(parser().parse_args(argv)))
    assert sorted(k for k in sets if k.startswith(options.PREFIX)) == sorted(o.option for o in options.OPTIONS)
    assert sets["shadowreplay_out"] == str(tmp_path / "rel" / "out")
    assert sets["shadowreplay_rotate_seconds"] == "1.5s" and sets["shadowreplay_prefix_chars"] == "17"
    rec, grpc = Recorder(), GrpcRecorder(Recorder())
    with taddons.context(grpc, rec) as tctx:
        tctx.options.set(*[f"{k}={v}" for k, v in sets.items() if k.startswith(options.PREFIX)])
        got = {**options.read_values(tctx.options), **options.read_values(tctx.options, options.GRPC)}
    want = {o.name: [OTHER[o.name]] if o.multiple else options.check(o, o.type(OTHER[o.name])) for o in options.OPTIONS}
    want["out"] = str(tmp_path / "rel" / "out")
    assert got == want
    assert (got["rotate_seconds"], got["metrics_interval"]) == (1.5, 0.25)


def test_a_deprecated_flag_name_still_sets_its_option(capsys):
    sets = sets_of(cli.build_command(parser().parse_args([*BASE, "--rotate-seconds", "30"])))
    assert sets["shadowreplay_rotate_seconds"] == "30s"
    assert "--rotate-seconds is a deprecated name; write --rotate 30s" in capsys.readouterr().err


@pytest.mark.parametrize("argv,needle", [
    (["--prefix-chars", "0"], "argument --prefix-chars: '0': must be > 0"),
    (["--queue-size", "lots"], "argument --queue-size: 'lots' is not a whole number"),
    (["--header-bytes-cap", "-1"], "argument --header-bytes-cap: '-1': must be > 0"),
    (["--metrics-interval", "soon"], "argument --metrics-interval: 'soon' is not a duration"),
    (["--writer", "fork"], "argument --writer: invalid choice: 'fork'"),
])  # fmt: skip
def test_a_bad_flag_value_is_one_error_line(capsys, argv, needle):
    with pytest.raises(SystemExit) as e:
        parser().parse_args([*BASE, *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and needle in err
    assert [ln for ln in err.splitlines() if "error:" in ln] == [ln for ln in err.splitlines() if needle in ln]


@pytest.mark.parametrize("name,value,needle", [
    ("prefix_chars", 0, "shadowreplay_prefix_chars must be > 0"),
    ("header_count_cap", -3, "shadowreplay_header_count_cap must be > 0"),
    ("rotate_seconds", "5x", "shadowreplay_rotate_seconds '5x': unknown unit"),
    ("metrics_interval", "0", "shadowreplay_metrics_interval '0': must be greater than 0"),
])  # fmt: skip
def test_a_bad_value_set_while_running_is_refused_and_the_old_one_kept(name, value, needle):
    rec = Recorder()
    with taddons.context(rec) as tctx:
        rec.running()
        before = getattr(tctx.options, options.PREFIX + name)
        with pytest.raises(OptionsError, match=needle):
            tctx.options.update(**{options.PREFIX + name: value})
        assert getattr(tctx.options, options.PREFIX + name) == before


def test_a_bad_grpc_value_while_running_is_refused():
    grpc = GrpcRecorder(Recorder())
    with taddons.context(grpc) as tctx:
        grpc.running()
        with pytest.raises(OptionsError, match="shadowreplay_grpc_max_message must be > 0"):
            tctx.options.update(shadowreplay_grpc_max_message=0)
        tctx.options.update(shadowreplay_grpc_max_message=77)
    assert grpc._max_message == 77


def test_a_bad_value_at_start_up_is_one_logged_line(caplog):
    caplog.set_level(logging.ERROR, logger="shadowreplay.recorder")
    rec = Recorder()
    with taddons.context(rec) as tctx:
        tctx.options.update(shadowreplay_out="/tmp/unused", shadowreplay_queue_size=0)
    assert [r.getMessage() for r in caplog.records] == ["shadowreplay recorder: shadowreplay_queue_size must be > 0"]
    assert not rec.enabled and rec.writer is None


# --- the key file ---
def test_key_file_checks(tmp_path, key_file):
    out = tmp_path / "out"
    out.mkdir()
    assert options.key_file_source(str(key_file), out) == str(key_file.resolve())
    (out / "k").write_bytes(b"k" * 32)
    with pytest.raises(ConfigError, match="is inside --out"):
        options.key_file_source(str(out / "k"), out, where="--out")
    with pytest.raises(ConfigError, match="does not exist"):
        options.key_file_source(str(tmp_path / "nope"), out)
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(ConfigError, match="is empty"):
        options.key_file_source(str(tmp_path / "empty"), out)
    with pytest.raises(ConfigError, match="is a directory"):
        options.key_file_source(str(tmp_path), out)
    assert options.key_file_source("", out, environ={"SHADOWREPLAY_SCRUB_KEY": "an-env-key-0123456789abcdef"}) is None
    with pytest.raises(ConfigError, match="no scrub key"):
        options.key_file_source("", out, environ={})
    with pytest.raises(ConfigError, match="set but empty"):
        options.key_file_source(None, out, environ={"SHADOWREPLAY_SCRUB_KEY": " "})


class Opens:
    """Counts the opens of one file in this process (an audit hook; hooks cannot be removed, so
    this one is installed once and counts only while armed)."""

    path: str | None = None
    count = 0
    installed = False

    @classmethod
    def watch(cls, path: Path) -> type[Opens]:
        if not cls.installed:
            sys.addaudithook(cls._hook)
            cls.installed = True
        cls.path, cls.count = str(path.resolve()), 0
        return cls

    @classmethod
    def _hook(cls, event: str, args: tuple) -> None:
        if event == "open" and cls.path is not None and isinstance(args[0], (str, Path)):
            if str(args[0]) == cls.path:
                cls.count += 1


def test_record_judges_the_key_and_hands_on_only_its_path(tmp_path, key_file):
    opens = Opens.watch(key_file)
    args = parser().parse_args(["record", "--upstream", "http://u", "--out", str(tmp_path / "o"), "--key-file", str(key_file)])
    cli._validate(args)
    assert opens.count == 1  # read once, to refuse a weak key before mitmdump starts
    cmd = " ".join(cli.build_command(args))
    assert str(key_file.resolve()) in cmd and key_file.read_text() not in cmd
    Opens.path = None


def test_the_thread_writer_path_reads_the_key_to_judge_it_and_to_use_it(tmp_path, key_file):
    opens = Opens.watch(key_file)
    rec = Recorder()
    with taddons.context(rec) as tctx:
        tctx.options.update(shadowreplay_out=str(tmp_path / "o"), shadowreplay_key_file=str(key_file),
                            shadowreplay_writer="thread")  # fmt: skip
        try:
            assert rec.enabled and rec.writer is not None
            assert opens.count == 2  # the check (options.key_file_source), then the writer's load
        finally:
            rec.done()
    Opens.path = None


def test_a_blank_key_file_is_refused_by_the_check_and_at_start_up_in_one_line(tmp_path, server):
    blank = tmp_path / "keys" / "blank.key"
    blank.parent.mkdir()
    blank.write_bytes(b"  \n")
    with pytest.raises(ConfigError, match="empty or only whitespace"):
        options.key_file_source(str(blank), tmp_path / "out")
    p = Proxy(server.url, tmp_path / "out", blank, free_port(), shadowreplay_writer="process").start(wait=False)
    rc = p.proc.wait(60)
    p.stop()
    assert rc == 1
    assert f"scrub key file {blank} is empty or only whitespace" in p.log() and "Traceback" not in p.log()




@pytest.mark.parametrize("key,needle", [
    (b"abc", "holds 3 bytes of key material"), (b"  \n\t ", "only whitespace"),
    (b"k" * 64, "must be random"), (b"0123456789abcdef", "holds 8 bytes"),  # hex: 8 bytes decoded
    (b"AAECAwQFBgcICQoLDA0ODw==\n", None), (b"test-key-0123456789abcdef-not-a-secret", None),
])  # fmt: skip
def test_a_weak_key_is_refused_everywhere_it_is_checked(tmp_path, key, needle):
    from shadowreplay.anonymize.keys import load_key

    kf = tmp_path / "keys" / "k"
    kf.parent.mkdir()
    kf.write_bytes(key)
    env = {"SHADOWREPLAY_SCRUB_KEY": key.decode()}
    if needle is None:
        assert options.key_file_source(str(kf), tmp_path / "out") == str(kf)
        assert load_key(None, environ=env) == key.strip()
        return
    for check in (lambda: options.key_file_source(str(kf), tmp_path / "out"), lambda: load_key(kf),
                  lambda: load_key(None, environ=env)):
        with pytest.raises(ConfigError, match=needle) as e:
            check()
        assert "head -c 32 /dev/urandom | base64" in str(e.value)
    # the addon: refused while running (the old value kept), one logged line at start-up
    rec = Recorder()
    with taddons.context(rec) as tctx:
        rec.running()
        with pytest.raises(OptionsError, match=needle):
            tctx.options.update(shadowreplay_out=str(tmp_path / "o"), shadowreplay_key_file=str(kf))
        assert not rec.enabled


@pytest.mark.parametrize("key", [b"abc", b" \n  "])
def test_record_refuses_a_weak_key_in_one_line_before_mitmdump_starts(tmp_path, key):
    from tests.anonymize_helpers import run_cli

    kf = tmp_path / "keys" / "k"
    kf.parent.mkdir()
    kf.write_bytes(key)
    port = free_port()
    r = run_cli(["record", "--upstream", "http://127.0.0.1:1", "--listen-port", str(port), "--out", str(tmp_path / "o"),
                 "--key-file", str(kf)], timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2 and len(err.strip().splitlines()) == 1 and "scrub key" in err, err
    assert not (tmp_path / "o").exists()  # mitmdump (whose addon makes the folder) never ran
    s = run_cli(["scrub", "--key-file", str(kf)], stdin=b'{"a": "b"}\n')
    assert s.returncode == 2 and len(s.stderr.decode().strip().splitlines()) == 1 and "scrub key" in s.stderr.decode()
