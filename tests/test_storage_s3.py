"""The location layer (shadowreplay.storage) against a real S3-compatible server (moto's server
mode in its own process): paths, atomic writes, listings, DuckDB reads through s3fs, the
analysis commands on s3://, and one clear line for a missing bucket, refused credentials and an
unreachable endpoint."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest

from shadowreplay import fleet, storage
from shadowreplay.dataset import check_file, find_tables, glob_for, parquet_files, run_dirs, write_table
from shadowreplay.errors import ConfigError, DatasetError, TargetError
from shadowreplay.ports import free_ports
from shadowreplay.schema import REQUESTS
from tests.analysis_helpers import run_cli
from tests.analysis_synth import PlantedAnomaly, SynthSpec, write_recording
from tests.s3_helpers import MotoServer, aws_env, moto_server, s3, set_aws_env  # noqa: F401 (fixtures)


def test_s3_path_operations_are_pure_and_normalized():
    p = storage.location("s3://bkt/a//b/")
    assert isinstance(p, storage.S3Path) and str(p) == "s3://bkt/a/b"
    assert str(p / "requests" / "x.parquet") == "s3://bkt/a/b/requests/x.parquet"
    assert p.name == "b" and str(p.parent) == "s3://bkt/a" and str(p.parent.parent) == "s3://bkt"
    assert (p / "x.json").with_name("y.json") == p / "y.json"
    assert p.fs_path == "bkt/a/b" and storage.location("s3://bkt").fs_path == "bkt"
    assert storage.is_remote("s3://bkt/x") and not storage.is_remote("/tmp/s3:/x")
    assert glob_for("s3://bkt/pre", REQUESTS) == "s3://bkt/pre/requests/**/*.parquet"
    with pytest.raises(ConfigError, match="no bucket"):
        storage.location("s3:///prefix")


def test_endpoint_and_region_come_from_the_standard_variables(monkeypatch):
    for k in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    assert storage.endpoint_url() is None
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert storage.endpoint_url() == "http://127.0.0.1:9" and storage.region() == "eu-west-1"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:10")  # the service-specific one wins
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    assert storage.endpoint_url() == "http://127.0.0.1:10" and storage.region() == "ap-south-1"
    assert storage.arrow_filesystem().region == "ap-south-1"


def test_endpoint_from_the_aws_profile(monkeypatch, tmp_path):
    cfg = tmp_path / "config"
    cfg.write_text("[profile store]\nregion = eu-north-1\nendpoint_url = http://127.0.0.1:9000\n")
    for k in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(cfg))
    monkeypatch.setenv("AWS_PROFILE", "store")
    assert storage.endpoint_url() == "http://127.0.0.1:9000" and storage.region() == "eu-north-1"


def _table(n: int, start_us: int = 1_780_000_000_000_000) -> pa.Table:
    return pa.table({
        "request_id": [f"r{i}" for i in range(n)],
        "ts_start": pa.array([start_us + i * 1_000_000_000 for i in range(n)], pa.timestamp("us", tz="UTC")),
        "client_id": ["c"] * n,
    })


def test_write_list_find_and_check_on_s3(s3):
    root = s3.url("rec")
    written = write_table(root, REQUESTS, _table(10), name_tag="gw-1")  # 10 rows over 3 hours
    assert len(written) == 3 and all(isinstance(p, storage.S3Path) for p in written)
    assert all("-gw-1-" in p.name for p in written)
    keys = s3.keys("rec/")
    assert sorted(f"s3://{s3.bucket}/{k}" for k in keys) == sorted(str(p) for p in written)
    assert not [k for k in keys if not k.endswith(".parquet")]  # no temporary object left behind
    assert parquet_files(root, REQUESTS) == sorted(written)
    assert find_tables(root) == {REQUESTS: storage.location(root)}
    assert find_tables(f"s3://{s3.bucket}") == {REQUESTS: storage.location(root)}  # a prefix holding datasets
    assert sum(check_file(p, REQUESTS).num_rows for p in written) == 10
    assert run_dirs(root) == [storage.location(root)]
    assert parquet_files(s3.url("nothing"), REQUESTS) == []
    with pytest.raises(DatasetError, match="no such file or folder"):
        find_tables(s3.url("nothing"))


def test_write_atomic_and_text_round_trip(s3, tmp_path):
    p = storage.location(s3.url("x/status.json"))
    storage.write_atomic(p, b'{"a": 1}')
    storage.write_atomic(p, b'{"a": 2}')
    assert json.loads(p.read_text()) == {"a": 2} and p.is_file() and p.parent.is_dir()
    local = tmp_path / "s.json"
    storage.write_atomic(local, b"x")
    assert local.read_bytes() == b"x" and [f.name for f in tmp_path.iterdir()] == ["s.json"]


def test_a_status_write_cut_by_a_kill_leaves_nothing_after_the_clean_up(tmp_path):
    fleet.write_status(tmp_path, "gw-a", {"rows_written": 1})
    status = fleet.status_path(tmp_path, "gw-a")
    cut = [status.with_name(f".{status.name}.1234abcd.tmp"), tmp_path / ".recorder_status.json.99aa00ff.tmp"]
    other = status.with_name(".gw-ab.json.1234abcd.tmp")  # another instance's write in flight
    for p in cut + [other]:
        p.write_bytes(b'{"rows_wr')
    fleet.clear_status_temporaries(tmp_path, "gw-a")
    assert not any(p.exists() for p in cut) and other.exists()
    assert fleet.read_status(tmp_path, "gw-a") == {"rows_written": 1}


def test_fleet_status_objects_per_instance_and_the_legacy_file(s3, tmp_path):
    root = s3.url("fleet")
    fleet.write_status(root, "gw-a", {"rows_written": 3})
    fleet.write_status(root, "gw-b", {"rows_written": 5})
    assert s3.keys("fleet/") == ["fleet/recorder_status/gw-a.json", "fleet/recorder_status/gw-b.json"]
    assert {k: v["rows_written"] for k, v in fleet.read_statuses(root).items()} == {"gw-a": 3, "gw-b": 5}
    assert fleet.read_status(root, "gw-b")["rows_written"] == 5
    old = tmp_path / "old"
    old.mkdir()
    (old / "recorder_status.json").write_text('{"rows_written": 7}')
    assert fleet.read_statuses(old) == {"recorder_status": {"rows_written": 7}}
    assert fleet.read_status(old)["rows_written"] == 7
    with pytest.raises(ConfigError, match="--instance"):
        fleet.check_instance("../x")
    a, b = fleet.default_instance(), fleet.default_instance()
    assert a != b and fleet.check_instance(a) == a


def _analyze(capsys, path: str) -> dict:
    rc, out, err = run_cli(capsys, "analyze", path, "--json")
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.slow  # about 30 s: DuckDB reads each object through s3fs from moto
def test_analyze_anomalies_and_sql_read_s3_as_they_read_a_folder(s3, tmp_path, capsys):
    # two days of hourly files (48 objects), a batch client planted at 14:00 each day
    spec = SynthSpec(periods=2, period_s=86400, rate_per_s=0.03, seed=5, itl_lists=False,
                     anomaly=PlantedAnomaly(offset_s=14 * 3600, batch_rate_per_s=0.1))
    write_recording(tmp_path / "rec", spec)
    write_recording(s3.url("rec"), spec)
    local, remote = _analyze(capsys, str(tmp_path / "rec")), _analyze(capsys, s3.url("rec"))
    assert remote["requests"] > 1000
    assert json.dumps(local, sort_keys=True, default=str).replace(str(tmp_path / "rec"), "ROOT") == \
        json.dumps(remote, sort_keys=True, default=str).replace(s3.url("rec"), "ROOT")
    found = {}
    for where in (s3.url("rec"), str(tmp_path / "rec")):
        rc, out, err = run_cli(capsys, "analyze", "anomalies", where, "--period", "1d", "--json")
        assert rc == 0, err
        found[where] = json.loads(out)["anomalies"]
    assert found[s3.url("rec")] == found[str(tmp_path / "rec")] and found[s3.url("rec")]
    rc, out, err = run_cli(capsys, "sql", s3.url("rec"), "-c", "SELECT count(*) AS n FROM requests", "--csv")
    assert rc == 0, err
    assert out.split()[-1] == str(remote["requests"])


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shadowreplay.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def _one_line(p: subprocess.CompletedProcess) -> str:
    assert p.returncode != 0
    assert "Traceback" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_missing_bucket_is_one_clear_line(s3, tmp_path):
    import os

    env = dict(os.environ)
    assert "no such bucket" in _one_line(_cli("analyze", "s3://no-such-bucket-here/rec", env=env))
    with pytest.raises(DatasetError, match="no such bucket"):
        write_table("s3://no-such-bucket-here/rec", REQUESTS, _table(2))


def test_bad_credentials_are_one_clear_line(tmp_path, monkeypatch):
    srv = MotoServer(tmp_path, auth=True).start()  # checks signatures: every key is unknown to it
    try:
        set_aws_env(monkeypatch, srv.endpoint)
        env = {**{k: v for k, v in __import__("os").environ.items() if not k.startswith("AWS_")}, **aws_env(srv.endpoint)}
        line = _one_line(_cli("analyze", "s3://some-bucket/rec", env=env))
        assert "access denied" in line and "AWS_ACCESS_KEY_ID" in line
        with pytest.raises(ConfigError, match="access denied"):
            storage.location("s3://some-bucket/rec").check_bucket()
    finally:
        srv.stop()


def test_unreachable_endpoint_is_one_clear_line(monkeypatch):
    import os

    dead = f"http://127.0.0.1:{free_ports(1)[0]}"  # nothing listens there
    set_aws_env(monkeypatch, dead)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **aws_env(dead)}
    line = _one_line(_cli("analyze", "s3://bkt/rec", env=env))
    assert "cannot reach the object store" in line and dead in line
    with pytest.raises(TargetError):
        storage.location("s3://bkt/rec").check_bucket()


def test_record_checks_an_s3_out_and_the_instance_before_starting_mitmdump(s3, key_file):
    import os

    env = dict(os.environ)
    base = ["record", "--upstream", "http://127.0.0.1:9", "--key-file", str(key_file)]
    assert "no such bucket" in _one_line(_cli(*base, "--out", "s3://no-such-bucket-here/rec", env=env))
    assert "--instance" in _one_line(_cli(*base, "--out", s3.url("rec"), "--instance", "a/b", env=env))
    assert s3.keys() == []  # nothing was written


def test_export_reads_an_s3_recording(s3, tmp_path, capsys):
    from tests.replayer_helpers import chat_row, write_recording as write_rows_recording

    write_rows_recording(s3.url("rec"), [chat_row(i, i * 0.5) | {"prompt_tokens": 10 + i} for i in range(5)])
    out = tmp_path / "trace.jsonl"
    rc, _, err = run_cli(capsys, "export", "guidellm", s3.url("rec"), "--out", str(out), "--no-hash-ids")
    assert rc == 0, err
    assert [json.loads(ln)["input_length"] for ln in out.read_text().splitlines()] == [10, 11, 12, 13, 14]


def test_pyarrow_alone_ignores_aws_endpoint_url_so_storage_passes_it(s3):
    """The gap storage.py fills: pyarrow's S3FileSystem() does not read AWS_ENDPOINT_URL (it
    would go to AWS), s3fs/botocore does; storage hands the endpoint to both."""
    import pyarrow.fs as pafs

    write_table(s3.url("rec"), REQUESTS, _table(2))
    bare = pafs.S3FileSystem(retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1), connect_timeout=2,
                             request_timeout=2)
    with pytest.raises(OSError):
        bare.get_file_info(pafs.FileSelector(f"{s3.bucket}/rec", recursive=True))
    assert len([i for i in storage.arrow_filesystem().get_file_info(pafs.FileSelector(f"{s3.bucket}/rec", recursive=True))
                if i.type == pafs.FileType.File]) == 1
    assert [p for p in storage.fsspec_filesystem().find(f"{s3.bucket}/rec") if p.endswith(".parquet")]
