"""Rows the recorder marked damaged (a request body stored truncated, one it could not decode, a
decompression bomb it did not decode) are not replayed by default: re-sending them would send
something production never received. They are counted in the summary and the manifest;
--include-damaged sends them anyway."""

from __future__ import annotations

import gzip
import json

import pytest

from shadowreplay.anonymize import Scrubber
from shadowreplay.dataset import write_rows
from shadowreplay.recorder.exchange import HttpExchange, RowOptions
from shadowreplay.replayer.replay import ReplayOptions, replay
from tests.sse_server import SseServer


def exchange(i: int, body: bytes, headers=()) -> HttpExchange:
    return HttpExchange(
        request_id=f"r{i}", ts_start=1_790_000_000.0 + i * 0.05, client_addr="10.0.0.1", method="POST", scheme="http",
        host="gw.prod.invalid:8000", port=8000, path="/v1/chat/completions",
        request_headers=[("content-type", "application/json"), *headers], request_body=body, status=200,
        response_headers=[("content-type", "application/json")], ts_end=1_790_000_000.0 + i * 0.05 + 0.01,
        response_body=b'{"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}',
    )


def chat(text: str) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": 2}).encode()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """Rows converted by the recorder's own code (HttpExchange.to_row), body cap 2000 bytes."""
    scrubber, opts = Scrubber(b"unit-test-key-0123456789abcdef"), RowOptions(body_cap=2000)
    exchanges = [
        exchange(0, chat("fine")),
        exchange(1, chat("x" * 5000)),  # stored truncated: 2000 bytes of a 5 kB JSON body
        exchange(2, gzip.compress(bytes(70 << 20), 9), [("content-encoding", "gzip")]),  # a decompression bomb
        exchange(3, b"\x1f\x8bnot really gzip", [("content-encoding", "gzip")]),  # undecodable
        exchange(4, chat("also fine")),
    ]
    rows = [e.to_row(scrubber, opts) for e in exchanges]
    root = tmp_path_factory.mktemp("damaged") / "rec"
    write_rows(root, "requests", rows)
    return root


def test_damaged_rows_are_left_out_counted_and_can_be_included(recording, tmp_path):
    with SseServer() as shadow:
        res = replay(ReplayOptions(recording=str(recording), target=shadow.url, out=str(tmp_path / "a"),
                                   no_metrics=True, progress=False), echo=lambda s: None)
        assert res.summary["sent"] == 2 and res.summary["errors"] == 0
        assert res.summary["damaged_left_out"] == {"truncated": 1, "decompression bomb": 1, "undecodable": 1}
        assert sorted(json.loads(r.body)["messages"][0]["content"] for r in shadow.requests) == ["also fine", "fine"]
        manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
        assert manifest["summary"]["damaged_left_out"] == res.summary["damaged_left_out"]
        assert manifest["include_damaged"] is False

        res = replay(ReplayOptions(recording=str(recording), target=shadow.url, out=str(tmp_path / "b"),
                                   no_metrics=True, progress=False, include_damaged=True), echo=lambda s: None)
        assert res.summary["sent"] == 5 and res.summary["damaged_included"] == {
            "truncated": 1, "decompression bomb": 1, "undecodable": 1}
        assert len(shadow.requests) == 2 + 5


def test_the_summary_line_and_the_dry_run_say_so(recording, tmp_path, capsys):
    from shadowreplay.cli import main

    assert main(["replay", str(recording), "--target", "http://127.0.0.1:1", "--out", str(tmp_path / "d"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2 requests" in out and "3 damaged rows (" in out and "left out" in out and "--include-damaged" in out, out
    assert main(["replay", str(recording), "--target", "http://127.0.0.1:1", "--out", str(tmp_path / "d"), "--dry-run",
                 "--include-damaged"]) == 0
    assert "5 requests" in capsys.readouterr().out


def test_an_unreachable_target_leaves_no_empty_output_folder(recording, tmp_path):
    from shadowreplay.errors import TargetError
    from shadowreplay.ports import free_port

    out = tmp_path / "runs" / "base"
    with pytest.raises(TargetError):
        replay(ReplayOptions(recording=str(recording), target=f"http://127.0.0.1:{free_port()}", out=str(out),
                             no_metrics=True, progress=False), echo=lambda s: None)
    assert not out.exists() and not out.parent.exists()


@pytest.mark.slow
def test_a_sharded_replay_reports_the_damaged_rows_once(recording, tmp_path, capsys):
    """Every shard selects from the whole recording, so each knows the selection's damaged rows;
    the combined summary (stdout and shards.json) reports them once, not once per shard."""
    from shadowreplay.cli import main

    out = tmp_path / "sharded"
    with SseServer() as shadow:
        assert main(["replay", str(recording), "--target", shadow.url, "--out", str(out), "--shards", "2",
                     "--no-metrics"]) == 0
        assert len(shadow.requests) == 2
    combined = json.loads((out / "shards.json").read_text())
    assert combined["sent"] == 2
    assert combined["damaged_left_out"] == {"truncated": 1, "decompression bomb": 1, "undecodable": 1}
    assert "3 damaged rows (" in capsys.readouterr().out
