"""Replay from s3:// with results, engine metrics and the manifest back to s3://, then analyze,
compare and report there; import into s3://. Against moto's S3 server in its own process and a
local OpenAI-style server (tests/replayer_helpers.py)."""

from __future__ import annotations

import json

import pytest

from shadowreplay.replayer.replay import ReplayOptions, replay
from tests.analysis_helpers import run_cli
from tests.replayer_helpers import ServerThread, chat_row, write_recording
from tests.s3_helpers import moto_server, s3  # noqa: F401 (fixtures)


def _replay(rec: str, srv: ServerThread, out: str, **kw):
    kw.setdefault("progress", False)
    return replay(ReplayOptions(recording=rec, target=srv.url, out=out, **kw), echo=lambda s: None)


@pytest.mark.slow  # about 20 s: two replays, then the analysis reads through s3fs
def test_replay_from_s3_into_s3_then_analyze_compare_and_report_there(s3, tmp_path, capsys):
    n = 8
    write_recording(s3.url("rec"), [chat_row(i, i * 0.05, completion_tokens=2) for i in range(n)])
    with ServerThread() as srv:
        res = _replay(s3.url("rec"), srv, s3.url("runs/a"), no_metrics=False, metrics_interval_s=0.2)
        assert str(res.out) == s3.url("runs/a") and res.files and all(str(f).startswith(s3.url("runs/a/")) for f in res.files)
        _replay(s3.url("rec"), srv, s3.url("runs/b"), no_metrics=True)
        posts = [a for a in srv.arrivals if a.method == "POST"]
    assert len(posts) == 2 * n
    keys = s3.keys("runs/a/")
    assert "runs/a/manifest.json" in keys
    assert [k for k in keys if k.startswith("runs/a/replay_results/") and k.endswith(".parquet")]
    assert [k for k in keys if k.startswith("runs/a/engine_metrics/") and k.endswith(".parquet")]
    assert not [k for k in keys if k.endswith(".tmp")]
    manifest = json.loads(s3.get("runs/a/manifest.json"))
    assert manifest["recording"] == s3.url("rec") and manifest["rows_flushed"] == n

    # the replay's manifest leads analyze to the recording on s3 (replayed = results joined to it)
    rc, out, err = run_cli(capsys, "analyze", s3.url("runs/a"), "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["table"] == "replay_results" and got["requests"] == n
    assert s3.url("rec") in got["sources"] and s3.url("runs/a") in got["sources"]
    rc, out, err = run_cli(capsys, "sql", s3.url("runs/a"), "-c",
                           "SELECT count(*) FROM replayed WHERE prompt_chars IS NOT NULL", "--csv")
    assert rc == 0, err
    assert out.split()[-1] == str(n)
    rc, out, err = run_cli(capsys, "compare", s3.url("runs/a"), s3.url("runs/b"), "--json", "--replicates", "100")
    assert rc == 0, err
    assert json.loads(out)
    html = tmp_path / "report.html"
    rc, out, err = run_cli(capsys, "report", s3.url("runs/a"), "--out", str(html))
    assert rc == 0, err
    assert "<html" in html.read_text().lower()


def test_replay_into_a_missing_bucket_is_one_clear_error_before_sending(s3, capsys):
    write_recording(s3.url("rec"), [chat_row(i, i * 0.05) for i in range(3)])
    with ServerThread() as srv:
        rc, out, err = run_cli(capsys, "replay", s3.url("rec"), "--target", srv.url, "--out", "s3://no-such-bucket-x/run",
                               "--no-metrics")
        posts = [a for a in srv.arrivals if a.method == "POST"]
    assert rc == 2 and "no such bucket" in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1
    assert posts == []


def test_import_writes_a_dataset_under_s3(s3, tmp_path, capsys):
    csv = tmp_path / "AzureLLMInferenceTrace_code.csv"
    csv.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                   + "".join(f"2023-11-16 18:15:{i:02d}.0000000,{100 + i},{10 + i}\n" for i in range(20)))
    rc, out, err = run_cli(capsys, "import", "azure-llm", str(csv), "--out", s3.url("azure"))
    assert rc == 0, err
    assert [k for k in s3.keys("azure/requests/") if k.endswith(".parquet")]
    rc, out, err = run_cli(capsys, "sql", s3.url("azure"), "-c", "SELECT sum(prompt_tokens) FROM requests", "--csv")
    assert rc == 0, err
    assert out.split()[-1] == str(sum(100 + i for i in range(20)))
