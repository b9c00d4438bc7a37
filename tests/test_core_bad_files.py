"""A damaged Parquet file does not make a whole dataset unusable: every reading command names the
file and `--skip-bad-files`; with it, the command reads the rest and lists what it skipped."""

from __future__ import annotations

import json

import pytest

from tests.analysis_helpers import SynthSpec, run_cli, write_recording, write_replay
from tests.replayer_helpers import chat_row
from tests.replayer_helpers import write_recording as write_replayable


def plant(root, table: str, name: str = "part-damaged.parquet"):
    """A file with a Parquet name that is no Parquet file (a truncated copy, a disk error)."""
    folders = sorted(p for p in (root / table).rglob("hour=*") if p.is_dir())
    bad = folders[0] / name
    bad.write_bytes(b"PAR1 this file was cut short")
    return bad


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    base = tmp_path_factory.mktemp("bad")
    rec = base / "rec"
    req = write_recording(rec, SynthSpec(periods=2, period_s=3600.0, n_rows=400, anomaly=None, seed=3))
    clean = base / "clean"
    write_recording(clean, SynthSpec(periods=2, period_s=3600.0, n_rows=400, anomaly=None, seed=3))
    write_replay(base / "a", req, clean)
    write_replay(base / "b", req, clean, latency_scale=1.1, seed=8)
    bad = {"rec": plant(rec, "requests"), "a": plant(base / "a", "replay_results")}
    replayable = base / "replayable"
    write_replayable(replayable, [chat_row(i, i * 0.1) for i in range(20)])
    bad["replayable"] = plant(replayable, "requests")
    return base, bad


def commands(base):
    return {
        "analyze": (["analyze", base / "rec"], "rec"),
        "analyze anomalies": (["analyze", "anomalies", base / "rec", "--period", "1h", "--bucket", "10m"], "rec"),
        "report": (["report", base / "rec", "--out", base / "r.html"], "rec"),
        "sql": (["sql", base / "rec", "-c", "SELECT count(*) AS n FROM requests"], "rec"),
        "compare": (["compare", base / "a", base / "b"], "a"),
        "replay": (["replay", base / "replayable", "--target", "http://127.0.0.1:1", "--out", base / "o", "--dry-run"],
                   "replayable"),
        "export": (["export", "mooncake", base / "replayable", "--out", base / "t.jsonl", "--no-hash-ids"], "replayable"),
    }


@pytest.mark.parametrize("name", ["analyze", "analyze anomalies", "report", "sql", "compare", "replay", "export"])
def test_every_reading_command_names_the_file_and_the_option(data, capsys, name):
    base, bad = data
    argv, which = commands(base)[name]
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and str(bad[which]) in err and "--skip-bad-files" in err, err


@pytest.mark.parametrize("name", ["analyze", "analyze anomalies", "report", "sql", "compare", "replay", "export"])
def test_with_skip_bad_files_the_rest_is_read_and_the_skipped_listed(data, capsys, name):
    base, bad = data
    argv, which = commands(base)[name]
    rc, out, err = run_cli(capsys, *argv, "--skip-bad-files")
    assert rc == 0, err
    assert "skipped 1 unreadable file" in err and str(bad[which]) in err, err
    if name == "sql":
        assert "400" in out or "4" in out


def test_a_replay_counts_the_skipped_files_in_its_manifest(data, tmp_path):
    from shadowreplay.replayer.replay import ReplayOptions, replay
    from tests.sse_server import SseServer

    base, bad = data
    with SseServer() as shadow:
        with pytest.raises(Exception, match="--skip-bad-files"):
            replay(ReplayOptions(recording=str(base / "replayable"), target=shadow.url, out=str(tmp_path / "o"),
                                 no_metrics=True, progress=False), echo=lambda s: None)
        res = replay(ReplayOptions(recording=str(base / "replayable"), target=shadow.url, out=str(tmp_path / "o"),
                                   no_metrics=True, progress=False, skip_bad_files=True), echo=lambda s: None)
    assert res.summary["errors"] == 0 and res.summary["sent"] == 20
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["skipped_files"] == [str(bad["replayable"])]


def test_report_of_two_replays_points_at_compare(tmp_path, capsys):
    rec = tmp_path / "rec"
    req = write_recording(rec, SynthSpec(periods=2, period_s=3600.0, n_rows=200, anomaly=None, seed=4))
    write_replay(tmp_path / "a", req, rec)
    write_replay(tmp_path / "b", req, rec, latency_scale=1.2, seed=9)
    rc, out, err = run_cli(capsys, "report", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "r.html")
    assert rc == 2 and "shadowreplay compare" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r.html").exists()


# ---- a sound footer, a damaged page ----------------------------------------------------------
def damage_a_page(path, garble: bool, column: str | None = None) -> None:
    """Damages a column chunk (`column`'s, else the largest), its footer left sound: one flipped
    byte (bit rot that DuckDB reads without a word) or up to 2 kB garbled (a failed decompression)."""
    import pyarrow.parquet as pq

    md = pq.read_metadata(path)
    chunks = [md.row_group(r).column(c) for r in range(md.num_row_groups) for c in range(md.num_columns)]
    chunk = max((c for c in chunks if column in (None, c.path_in_schema)), key=lambda c: c.total_compressed_size)
    first = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    end = first + chunk.total_compressed_size
    b = bytearray(path.read_bytes())
    # garbled: the data pages (past the dictionary), which DuckDB then fails to decompress
    span = range(chunk.data_page_offset, min(end, chunk.data_page_offset + 2048)) if garble else [first + chunk.total_compressed_size // 3]
    for i in span:
        b[i] ^= 0xA5
    path.write_bytes(b)
    assert pq.read_metadata(path).num_rows == md.num_rows  # the footer still reads


@pytest.fixture(scope="module")
def paged(tmp_path_factory):
    """A recording and a replayable recording, one file of each with a damaged page; and which."""
    base = tmp_path_factory.mktemp("paged")
    write_recording(base / "rec", SynthSpec(periods=2, period_s=3600.0, n_rows=400, anomaly=None, seed=3))
    write_replayable(base / "replayable", [chat_row(i, i * 0.1) for i in range(20)])
    write_replayable(base / "replayable", [chat_row(i, 2 + i * 0.1) for i in range(20, 40)])
    bad = {}
    # the recording's TTFT column (what analyze reads), garbled; a replayable file's bit flipped
    for name, garble, column in (("rec", True, "ttft_ms"), ("replayable", False, None)):
        files = sorted((base / name / "requests").rglob("*.parquet"))
        assert len(files) >= 2
        damage_a_page(files[0], garble, column)
        bad[name] = files[0]
    return base, bad


def test_every_file_written_carries_page_checksums(paged):
    """The bit flip is found by the pages' CRCs, which every file the project writes carries."""
    import pyarrow.parquet as pq

    base, bad = paged
    with pytest.raises(OSError, match="CRC checksum verification failed"):
        pf = pq.ParquetFile(bad["replayable"], page_checksum_verification=True)
        for i in range(pf.num_row_groups):
            pf.read_row_group(i)


def test_a_damaged_page_without_the_option_names_the_file_and_the_option(paged, capsys):
    base, bad = paged
    rc, out, err = run_cli(capsys, "analyze", base / "rec")
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and str(bad["rec"]) in err and "--skip-bad-files" in err, err


@pytest.mark.parametrize("argv,which", [
    (["analyze", "{base}/rec"], "rec"),
    (["sql", "{base}/rec", "-c", "SELECT count(*) AS n FROM requests"], "rec"),
    (["replay", "{base}/replayable", "--target", "http://127.0.0.1:1", "--out", "{base}/o", "--dry-run"], "replayable"),
], ids=["analyze", "sql", "replay"])
def test_with_skip_bad_files_a_file_with_a_damaged_page_is_left_out(paged, capsys, argv, which):
    base, bad = paged
    rc, out, err = run_cli(capsys, *[a.format(base=base) for a in argv], "--skip-bad-files")
    assert rc == 0, err
    assert "skipped 1 unreadable file" in err and str(bad[which]) in err and "a damaged page" in err, err
    if which == "replayable":
        assert "20 requests" in out + err, out + err  # the sound file's 20, not the 40 recorded
