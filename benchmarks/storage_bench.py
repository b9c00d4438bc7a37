"""Benchmark: the same recording in a local folder and under s3:// (moto's S3 server on this
machine), written once each, then `analyze` and `analyze anomalies` on each.

    .venv/bin/python benchmarks/storage_bench.py [--days 2] [--rate 0.05] [--runs 3]

The store is local (moto_server in its own process), so the figures are the cost of the
object-storage path itself (pyarrow's S3 filesystem for listings and footers, s3fs under DuckDB
for the Parquet), not of a network. Prints a Markdown table of medians and the s3/local ratio;
docs/bench/storage.md holds a run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _synth():
    spec = importlib.util.spec_from_file_location("analysis_synth", REPO / "tests" / "analysis_synth.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["analysis_synth"] = mod
    spec.loader.exec_module(mod)
    return mod


def _moto(log: Path) -> tuple[subprocess.Popen, str]:
    from shadowreplay import ports

    port = ports.free_ports(1)[0]
    exe = Path(sys.executable).parent / "moto_server"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env)
    if ports.wait_listening(port, 30):
        return proc, f"http://127.0.0.1:{port}"
    proc.kill()
    raise SystemExit("moto_server did not start")


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--rate", type=float, default=0.05, help="requests/s of normal traffic")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="storage-bench-"))
    proc, endpoint = _moto(tmp / "moto.log")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
           "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": endpoint, "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    os.environ.update(env)
    try:
        import boto3

        boto3.client("s3").create_bucket(Bucket="bench")
        synth = _synth()
        spec = synth.SynthSpec(periods=a.days, period_s=86400, rate_per_s=a.rate, itl_lists=False,
                               anomaly=synth.PlantedAnomaly(offset_s=14 * 3600, batch_rate_per_s=a.rate * 3))
        where = {"local": str(tmp / "rec"), "s3": "s3://bench/rec"}
        write_s = {}
        for name, root in where.items():
            t = time.perf_counter()
            rows = synth.write_recording(root, spec).num_rows
            write_s[name] = time.perf_counter() - t
        cli = [sys.executable, "-m", "shadowreplay.cli"]
        cmds = {"analyze": lambda root: ["analyze", root],
                "analyze anomalies": lambda root: ["analyze", "anomalies", root, "--period", "1d"]}
        med: dict[tuple[str, str], float] = {}
        for label, argv in cmds.items():
            for name, root in where.items():
                med[label, name] = statistics.median(_timed(cli + argv(root), env) for _ in range(a.runs))
        print(f"{rows:,} rows in {a.days * 24} hourly files; median of {a.runs} runs (wall s)\n")
        print("| step | local | s3 (moto) | s3 / local |\n|---|---|---|---|")
        print(f"| write the recording | {write_s['local']:.2f} | {write_s['s3']:.2f} | {write_s['s3'] / write_s['local']:.1f}x |")
        for label in cmds:
            lo, s3 = med[label, "local"], med[label, "s3"]
            print(f"| `{label}` | {lo:.2f} | {s3:.2f} | {s3 / lo:.1f}x |")
    finally:
        proc.terminate()
        proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
