"""Sharded replay on one machine: one replay process vs `replay --shards N`.

Two measurements, each against the fast local server of the replayer tests
(tests/replayer_helpers.py as its own process: 1 streamed token per request, arrival stamped
with CLOCK_MONOTONIC when a request's first bytes arrive):

  capacity  - a schedule far faster than any sender (all requests 20 µs apart): the sender falls
              behind and sends back to back, so the arrival rate at the server is the most the
              configuration can send. Reported: arrivals per second between the first and the
              last arrival, 1 process vs N.
  ladder    - steady schedules at rising rates (every rate is run): for each, the replayer's own
              send lag p99 (the worst shard's, for N processes); the highest rate whose median
              p99 over --runs runs is under 1 ms (and, for a loaded machine, under 5 ms).

Every run, also the single process, starts from a common `--start-at` a few seconds ahead, so
both go through the same start path. Runs of the configurations alternate (1, N, 1, N, ...), so
drift of the shared machine falls on both.

Usage (under the heavy lock; about 10 minutes with the defaults):
  flock /tmp/shadowreplay-heavy.lock .venv/bin/python benchmarks/replayer_shards_bench.py \
      [--runs 3] [--shards 2] [--capacity-requests 20000] [--rates 100,400,1000,2000] [--seconds 4]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "tests" / "replayer_helpers.py"
LEAD_S = 10.0  # the common start is this far ahead (process start-up, load, warm-up)

from shadowreplay.dataset import write_rows  # noqa: E402


def write_recording(root: Path, offsets_s: list[float]) -> None:
    t0 = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.timezone.utc)
    body = json.dumps({"model": "m", "prompt": "hello " * 16, "stream": True, "max_tokens": 1})
    write_rows(root, "requests", [
        dict(request_id=f"s{i:07d}", ts_start=t0 + dt.timedelta(seconds=off), method="POST", scheme="http",
             host="prod.example", port=80, path="/v1/completions", kind="completion", model="m", stream=True,
             completion_tokens=1, request_body=body, prompt_chars=96, e2e_ms=1.0)
        for i, off in enumerate(offsets_s)])


class Server:
    def __init__(self, tmp: Path):
        self.file = tmp / f"arrivals-{time.monotonic_ns()}.jsonl"
        self.p = subprocess.Popen([sys.executable, str(SERVER), "--port", "0", "--arrivals", str(self.file),
                                   "--tokens-cap", "1"], stdout=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{int(self.p.stdout.readline().split()[1])}"

    def stop(self) -> list[int]:
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(60)
        with open(self.file) as f:
            return sorted(a["mono_ns"] for a in map(json.loads, f) if a["method"] == "POST")


def run(rec: Path, tmp: Path, shards: int) -> dict:
    srv = Server(tmp)
    out = tmp / f"out-{time.monotonic_ns()}"
    start_at = f"{time.time() + LEAD_S:.6f}"
    cmd = [sys.executable, "-m", "shadowreplay", "replay", str(rec), "--target", srv.url, "--out", str(out),
           "--no-metrics", "--no-progress", "--timeout", "30", "--start-at", start_at]
    cmd += ["--shards", str(shards)] if shards > 1 else []
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    finally:
        arrivals = srv.stop()
    if p.returncode != 0:
        return {"error": " | ".join(x for x in p.stderr.splitlines() if "error" in x) or f"rc {p.returncode}"}
    files = sorted((out / "manifests").glob("*.json")) if shards > 1 else [out / "manifest.json"]
    manifests = [json.loads(f.read_text()) for f in files]
    summaries = [m["summary"] for m in manifests]
    span = (arrivals[-1] - arrivals[0]) / 1e9 if len(arrivals) > 1 else 0.0
    ahead = [m.get("start", {}).get("ready_ahead_ms") for m in manifests]
    return {"load1": float(open("/proc/loadavg").read().split()[0]), "arrived": len(arrivals), "ready_ahead_ms": min(a for a in ahead if a is not None), "rate": (len(arrivals) - 1) / span if span else None,
            "p99": max(s["lag_p99_ms"] for s in summaries), "p50": max(s["lag_p50_ms"] for s in summaries),
            "errors": sum(s["errors"] for s in summaries)}


def med(runs: list[dict], key: str):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--capacity-requests", type=int, default=20000, help="0: no capacity runs")
    ap.add_argument("--rates", default="100,400,1000,2000")
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    configs = (1, args.shards)
    tmp = Path(tempfile.mkdtemp(prefix="shards-bench-"))
    print(f"# {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, load average {open('/proc/loadavg').read().split()[:3]}",
          flush=True)

    if args.capacity_requests:
        capacity(args, configs, tmp)
    ladder(args, configs, tmp)


def capacity(args, configs: tuple[int, int], tmp: Path) -> None:
    cap_rec = tmp / "capacity"
    write_recording(cap_rec, [i * 20e-6 for i in range(args.capacity_requests)])
    cap = {c: [] for c in configs}
    for _ in range(args.runs):
        for c in configs:
            r = run(cap_rec, tmp, c)
            cap[c].append(r)
            print(f"capacity, {c} process(es): {r}", flush=True)
    print("\n| configuration | median arrivals/s | runs |\n|---|---|---|")
    for c in configs:
        print(f"| {c} process{'es' if c > 1 else ''} | {med(cap[c], 'rate') or 0:.0f} | "
              f"{', '.join(f'{r['rate']:.0f}' for r in cap[c] if r.get('rate'))} |")
    r1, rn = med(cap[1], "rate"), med(cap[args.shards], "rate")
    print(f"\nratio {args.shards} processes / 1: {rn / r1:.2f}\n" if r1 and rn else "\nratio: -\n", flush=True)


def ladder(args, configs: tuple[int, int], tmp: Path) -> None:
    rows = []
    alive = set(configs)
    for rate in (float(x) for x in args.rates.split(",")):
        rec = tmp / f"steady-{rate:g}"
        n = int(rate * args.seconds)
        write_recording(rec, [i / rate for i in range(n)])
        res = {c: [] for c in alive}
        for _ in range(args.runs):
            for c in sorted(alive):
                r = run(rec, tmp, c)
                res[c].append(r)
                print(f"ladder {rate:g}/s, {c} process(es): {r}", flush=True)
        for c in sorted(alive):
            rows.append((rate, c, med(res[c], "p99"), med(res[c], "p50"), [r.get("p99") for r in res[c]],
                         med(res[c], "errors"), med(res[c], "load1")))
    print("\n| rate /s | processes | median send lag p99 (worst shard) | median p50 | p99 of each run | errors | load avg |")
    print("|---|---|---|---|---|---|---|")
    for rate, c, p99, p50, each, err, load in rows:
        print(f"| {rate:g} | {c} | {p99:.3f} ms | {p50:.3f} ms | {', '.join(f'{x:.3f}' for x in each if x is not None)} "
              f"| {err} | {load:.1f} |")
    print()
    for limit in (1.0, 5.0):
        for c in configs:
            ok = [rate for rate, cc, p99, *_ in rows if cc == c and p99 is not None and p99 < limit]
            print(f"highest steady rate with median p99 < {limit:g} ms, {c} process(es): {max(ok) if ok else None}")


if __name__ == "__main__":
    main()
