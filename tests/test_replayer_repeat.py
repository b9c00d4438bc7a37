"""`replay --lead-in` (traffic before the window warms the shadow, left out of the analysis) and
`replay --repeat N` with a second configuration interleaved, against a real local server."""

from __future__ import annotations

import json

import duckdb

from shadowreplay.dataset import run_dirs
from shadowreplay.replayer.repeat import interleaved
from tests.analysis_helpers import run_cli, run_json
from tests.replayer_helpers import ServerThread, chat_row, write_recording


def _rows(out) -> list[tuple]:
    con = duckdb.connect()
    return con.execute(f"SELECT request_id, lead_in FROM read_parquet('{out}/replay_results/**/*.parquet') ORDER BY scheduled_at").fetchall()


def test_lead_in_is_sent_and_left_out_of_the_analysis(tmp_path, capsys):
    offsets = [0.0, 0.05, 0.1, 0.15, 0.3, 0.35, 0.4, 0.45]
    write_recording(tmp_path / "rec", [chat_row(i, t) for i, t in enumerate(offsets)])
    with ServerThread() as srv:
        rc, out, err = run_cli(capsys, "replay", tmp_path / "rec", "--target", srv.url, "--out", tmp_path / "out",
                               "--start", "300ms", "--lead-in", "200ms", "--no-metrics", "--no-progress")
        assert rc == 0, err
        posts = [a for a in srv.arrivals if a.method == "POST"]
    rows = _rows(tmp_path / "out")
    # the window is 300 ms on (4 requests); the lead-in the 200 ms before it (2 requests)
    assert len(posts) == 6
    assert [r[1] for r in rows] == [True, True, False, False, False, False]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["lead_in_s"] == 0.2 and manifest["schedule"]["lead_in_requests"] == 2
    res = run_json(capsys, "analyze", tmp_path / "out")
    assert res["requests"] == 4
    # Without the recording (no manifest link) the lead-in is left out too.
    res = run_json(capsys, "analyze", tmp_path / "out" / "replay_results")
    assert res["requests"] == 4


def test_interleaved_order():
    assert interleaved(3, 2) == [0, 1, 1, 0, 0, 1]
    assert interleaved(2, 1) == [0, 0]


def test_repeat_with_a_second_configuration(tmp_path, capsys):
    offsets = [0.0, 0.04, 0.08, 0.12]
    write_recording(tmp_path / "rec", [chat_row(i, t) for i, t in enumerate(offsets)])
    with ServerThread() as a, ServerThread() as b:
        rc, out, err = run_cli(capsys, "replay", tmp_path / "rec", "--target", a.url, "--out", tmp_path / "A",
                               "--repeat", "2", "--b-target", b.url, "--b-out", tmp_path / "B", "--no-metrics", "--no-progress")
        assert rc == 0, err
        assert len([x for x in a.arrivals if x.method == "POST"]) == 8
        assert len([x for x in b.arrivals if x.method == "POST"]) == 8
    assert [d.name for d in run_dirs(tmp_path / "A")] == ["run-01", "run-02"]
    assert [d.name for d in run_dirs(tmp_path / "B")] == ["run-01", "run-02"]
    ra = json.loads((tmp_path / "A" / "repeats.json").read_text())
    rb = json.loads((tmp_path / "B" / "repeats.json").read_text())
    assert [r["order"] for r in ra["runs"]] == [1, 4] and [r["order"] for r in rb["runs"]] == [2, 3]
    res = run_json(capsys, "compare", tmp_path / "A", tmp_path / "B")
    assert res["a"]["runs"] == 2 and res["b"]["runs"] == 2
    assert next(r for r in res["overall"] if r["metric"] == "requests")["a"] == 8
    assert run_json(capsys, "analyze", tmp_path / "A")["requests"] == 8


def test_configuration_b_needs_its_output(tmp_path, capsys):
    write_recording(tmp_path / "rec", [chat_row(0, 0.0)])
    rc, out, err = run_cli(capsys, "replay", tmp_path / "rec", "--target", "http://127.0.0.1:9", "--out", tmp_path / "A",
                           "--b-target", "http://127.0.0.1:9")
    assert rc == 2 and "--b-out" in err
