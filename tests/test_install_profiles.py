"""The base install (what a gateway host needs) works without the extras: recording, scrubbing,
replay's modules and DuckDB analysis never import s3fs or pyspark, and asking for S3 or Spark
without their extra is one line naming it. Run in a fresh interpreter where those packages (and
the AWS libraries s3fs brings, the Japanese analyser) cannot be imported: a meta path finder
refuses them. Without the ja extra the scrubber still runs and every file says it lacked it."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

BLOCKED = ("s3fs", "aiobotocore", "botocore", "boto3", "pyspark", "py4j", "fugashi", "unidic_lite")

SCRIPT = r"""
import importlib.abc, io, json, sys, contextlib
BLOCKED = set(sys.argv[2].split(","))

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
out = sys.argv[1]

# record: the addon, the writer process's module, a real exchange scrubbed into a Parquet file
import shadowreplay.recorder.addon, shadowreplay.recorder.record_writer_child, shadowreplay.recorder.record_addon
from pathlib import Path
from shadowreplay.anonymize import Scrubber
from shadowreplay.recorder.exchange import HttpExchange, RowOptions
from shadowreplay.recorder.record_writer import Writer, WriterConfig
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "mail me at ann@example.com"}]}).encode()
ex = HttpExchange(request_id="r1", ts_start=1.7e9, ts_end=1.7e9 + 0.2, method="POST", path="/v1/chat/completions",
                  request_headers=[("content-type", "application/json")], request_body=body, status=200,
                  response_body=b'{"choices": [{"message": {"content": "ok"}}]}')
w = Writer(WriterConfig(out_dir=Path(out), instance="t"), Scrubber(b"k" * 32), RowOptions()).start()
w.submit(ex)
w.close()
assert w.rows_written == 1, w.counters()
import pyarrow.parquet as pq
from shadowreplay.anonymize.extras import missing_warnings
ja_meta = [pq.read_metadata(f).metadata.get(b"shadowreplay.anonymize.extra.ja", b"").decode()
           for f in Path(out).rglob("*.parquet")]
# replay and the scrub command import; analyze runs on DuckDB
import shadowreplay.replayer.cli, shadowreplay.replayer.runner, shadowreplay.anonymize.cli, shadowreplay.analysis.cli
from shadowreplay.cli import main

def run(*argv):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, err.getvalue()

rc, err = run("analyze", out)
assert rc == 0, err
loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
s3 = run("analyze", "s3://bucket/recording")
s3_record = run("record", "--upstream", "http://127.0.0.1:1", "--out", "s3://bucket/rec", "--key-file", sys.argv[3])
spark = run("analyze", out, "--engine", "spark")
print(json.dumps({"loaded": loaded, "s3": s3, "s3_record": s3_record, "spark": spark, "ja_meta": ja_meta,
                  "warnings": missing_warnings()}))
"""


def test_the_base_profile_runs_without_the_extras_and_names_them_when_asked(tmp_path, key_file):
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "rec"), ",".join(BLOCKED), str(key_file)],
                       capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["loaded"] == []  # recording, scrubbing, analysis: none of the extras' packages
    # without the ja extra the scrubber says so: in every file's metadata and at the recorder's start
    assert got["ja_meta"] and all(m.startswith("absent: Japanese names from name lists") for m in got["ja_meta"])
    assert got["warnings"] == [w for w in got["warnings"] if "pip install 'shadowreplay[ja]'" in w] != []
    for what, extra in (("s3", "s3"), ("s3_record", "s3"), ("spark", "spark")):
        rc, err = got[what]
        assert rc == 2, (what, err)
        assert f"pip install 'shadowreplay[{extra}]'" in err, (what, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (what, err)
