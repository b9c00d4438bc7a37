"""Import throughput and peak memory of `shadowreplay import azure-llm FILE --out DIR --no-text`
on a generated 27-million-row Azure-2024-shaped CSV (~1 GB; TIMESTAMP mixes 7-digit, trimmed
and whole-second precisions like the real week-long files).

    .venv/bin/python benchmarks/traces_bench.py [--rows 27000000] [--runs 3] [--peer-rows 2700000]

Each run is a separate process (peak RSS from getrusage(RUSAGE_CHILDREN) of a fresh child).
Peer: the usual way of loading these traces, pandas.read_csv + pd.to_datetime(format="mixed"),
on --peer-rows rows (it holds everything in memory). The generated files are deleted at the end."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

GEN_SQL = """
COPY (
  WITH t AS (
    SELECT i,
           TIMESTAMP '2024-05-10 00:00:00' + to_microseconds(i * 22400 + (hash(i) % 20)::BIGINT * 1000) AS ts,
           1 + hash(i * 3) % 8000 AS ctx,
           1 + hash(i * 7) % 800 AS gen
    FROM range({rows}) r(i)
  )
  SELECT CASE i % 10
           WHEN 0 THEN CASE WHEN microsecond(ts) % 1000000 < 2000 THEN strftime(ts, '%Y-%m-%d %H:%M:%S')
                            ELSE strftime(ts, '%Y-%m-%d %H:%M:%S') || rtrim('.' || lpad(CAST(microsecond(ts) % 1000000 AS VARCHAR), 6, '0'), '0.') END
           WHEN 1 THEN strftime(ts, '%Y-%m-%d %H:%M:%S') || rtrim('.' || lpad(CAST(microsecond(ts) % 1000000 AS VARCHAR), 6, '0'), '0.')
           ELSE strftime(ts, '%Y-%m-%d %H:%M:%S') || '.' || lpad(CAST(microsecond(ts) % 1000000 AS VARCHAR), 6, '0') || '0'
         END AS "TIMESTAMP",
         ctx AS "ContextTokens", gen AS "GeneratedTokens"
  FROM t ORDER BY i
) TO '{path}' (HEADER, DELIMITER ',', QUOTE '')
"""


def generate(path: Path, rows: int) -> float:
    import duckdb

    t = time.perf_counter()
    con = duckdb.connect()
    con.execute(GEN_SQL.format(rows=rows, path=str(path)))
    con.close()
    return time.perf_counter() - t


WRAPPER = """
import json, resource, subprocess, sys, time
cmd = json.loads(sys.argv[1])
t = time.perf_counter()
p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
dt = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "s": dt, "rss": ru.ru_maxrss / 1024, "cpu": ru.ru_utime + ru.ru_stime,
                  "err": p.stderr[-500:]}))
"""


def child(cmd: list[str]) -> tuple[float, float, float]:
    """Runs cmd under a fresh wrapper process whose only child it is, so getrusage(RUSAGE_CHILDREN)
    there is this command's: (wall seconds, peak RSS MiB, user+system CPU seconds)."""
    out = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(cmd)], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout)
    if res["rc"] != 0:
        raise SystemExit(f"{cmd} failed: {res['err']}")
    return res["s"], res["rss"], res["cpu"]


PANDAS = """
import sys, pandas as pd
df = pd.read_csv(sys.argv[1])
ts = pd.to_datetime(df["TIMESTAMP"], format="mixed")
df.assign(ts=ts)[["ts", "ContextTokens", "GeneratedTokens"]].to_parquet(sys.argv[2])
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=27_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--peer-rows", type=int, default=2_700_000)
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--csv", help="reuse this generated CSV instead of generating one (it is kept)")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="traces_bench_", dir=a.tmp))
    try:
        if a.csv:
            src = Path(a.csv)
            print(f"reusing {src} ({src.stat().st_size / 2**30:.2f} GiB, --rows {a.rows:,} assumed)", flush=True)
        else:
            src = work / "azure2024_like.csv"
            g = generate(src, a.rows)
            print(f"generated {a.rows:,} rows, {src.stat().st_size / 2**30:.2f} GiB in {g:.1f} s", flush=True)
        exe = [sys.executable, "-m", "shadowreplay.cli", "import", "azure-llm", str(src), "--no-text", "--quiet"]
        runs = []
        for k in range(a.runs):
            out = work / f"out{k}"
            s, rss, cpu = child(exe + ["--out", str(out)])
            runs.append((s, rss, cpu))
            print(f"shadowreplay run {k + 1}: {s:.1f} s wall, {a.rows / s:,.0f} rows/s, {cpu:.1f} CPU-s "
                  f"({cpu / a.rows * 1e6:.2f} CPU-s per million rows), peak RSS {rss:,.0f} MiB, "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            shutil.rmtree(out)
        med_s = statistics.median(r[0] for r in runs)
        med_rss = statistics.median(r[1] for r in runs)
        med_cpu = statistics.median(r[2] for r in runs)
        print(f"shadowreplay median: {a.rows / med_s:,.0f} rows/s wall, {med_cpu / a.rows * 1e6:.2f} CPU-s per million rows "
              f"(= {a.rows / med_cpu * os.cpu_count():,.0f} rows/s if all {os.cpu_count()} cores were ours), "
              f"peak RSS {med_rss:,.0f} MiB (goal > 1,000,000 rows/s, < 2048 MiB)")
        try:
            import pandas  # noqa: F401
            import pyarrow  # noqa: F401
        except ImportError:
            print("peer: pandas not installed, skipped")
            return
        if a.peer_rows:
            peer = work / "peer.csv"
            subprocess.run(["head", "-n", str(a.peer_rows + 1), str(src)], stdout=open(peer, "wb"), check=True)
            s, rss, cpu = child([sys.executable, "-c", PANDAS, str(peer), str(work / "peer.parquet")])
            print(f"pandas read_csv+to_datetime(mixed) on {a.peer_rows:,} rows: {s:.1f} s, "
                  f"{a.peer_rows / s:,.0f} rows/s, {cpu:.1f} CPU-s, peak RSS {rss:,.0f} MiB")
            cmd = [sys.executable, "-m", "shadowreplay.cli", "import", "azure-llm", str(peer), "--no-text", "--quiet",
                   "--out", str(work / "ours_small")]
            s2, rss2, cpu2 = child(cmd)
            print(f"shadowreplay on the same {a.peer_rows:,} rows: {s2:.1f} s, {a.peer_rows / s2:,.0f} rows/s, "
                  f"{cpu2:.1f} CPU-s, peak RSS {rss2:,.0f} MiB; wall ratio {s / s2:.1f}x, CPU ratio {cpu / cpu2:.1f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
