"""Send lag at every step of a capacity sweep, up to 1,000 requests/s (issue 39).

`shadowreplay capacity` reports a load as the load sent only while its sender keeps its floor.
This runs sweeps (run_capacity, as the CLI and the demo run them) of a steady recording at fixed
loads into the stand-in engine of tests/capacity_helpers.py, sized far above the highest load so
that every step is paced by the schedule, not by the engine, and prints for each load the
replayer's own send-lag p99 (`send_lag_p99_ms`, the worst shard's), the sent over scheduled rate,
and the machine's timing floor during the sweep (a process that only waits for instants, as the
sender does: tests/capacity_helpers.Floor). Medians over the runs; every run's value beside them.

With --peer, each run then sends the same schedule at each load's rate (--step-requests requests,
steady, jittered) once with `shadowreplay replay` and once with the peer, vLLM's `vllm bench
serve` (timed_trace dataset: it self-times from the trace's timestamps, open loop), both into a
stand-in engine that logs when each request arrived. Server-side lag is the same yardstick for
both tools: arrival_i - (T0 + offset_i) over arrivals and offsets in order, T0 chosen so the
earliest request has lag 0 (so it is lag beyond the tool's best request, whatever its fixed
start-up cost). Ours also reports its own send lag. --hog K keeps K busy processes running for
the whole benchmark (a loaded machine).

    .venv/bin/python benchmarks/capacity_bench.py [--runs 3] [--base-rate 100] [--seconds 30]
                                                  [--loads 1,2.5,5,10] [--step-requests 2000]
                                                  [--peer .venv-vllm/bin/python] [--hog 0]
                                                  [--json OUT.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.capacity_helpers import Floor, StandIn, steady_rows, write_steady  # noqa: E402
from tests.replayer_helpers import write_recording  # noqa: E402

from shadowreplay.replayer.capacity_cli import run_capacity  # noqa: E402
from shadowreplay.replayer.results import percentile  # noqa: E402


def one_sweep(rec: Path, out: Path, loads: list[float], step_requests: int, slots: int, service_ms: float) -> dict:
    with StandIn(slots=slots, service_ms=service_ms) as engine, Floor() as floor:
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        res = run_capacity(str(rec), engine.url, ["ttft_p99<=5s"], str(out), loads=loads, max_seconds=None,
                           step_requests=step_requests, echo=lambda _line: None)
        wall = time.monotonic() - t0
    steps = []
    for s in res["steps"]:
        sched = s.get("sent_scheduled_rate_rps") or s["rate_rps"]
        steps.append({"load": s["load"], "rate_rps": s["rate_rps"], "requests": s["requests"],
                      "send_lag_p99_ms": s["send_lag_p99_ms"], "send_lag_max_ms": s.get("send_lag_max_ms"),
                      "sent_over_scheduled": (s["sent_rate_rps"] / sched) if sched else None,
                      "client_limited": s.get("client_limited")})
    return {"steps": steps, "floor_p99_ms": floor.p99, "wall_s": round(wall, 1), "loadavg_1m": load0,
            "engine_capacity_rps": engine.capacity_rps}


PEER_WRAPPER = """import sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
p = FlexibleArgumentParser(); add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""
TOKENIZER = Path.home() / ".cache/shadowreplay/tiny-model-v1"  # the demo's model (shadowreplay.shadow)


def server_lag(arrivals_ns: list[int], offsets_s: list[float]) -> dict:
    """Lag of each arrival behind its scheduled offset, beyond the earliest request's (ms)."""
    n = len(offsets_s)
    if len(arrivals_ns) < n:
        raise SystemExit(f"the stand-in saw {len(arrivals_ns)} requests of {n}")
    a = sorted(arrivals_ns)[-n:]  # a peer's test request, if any, came first
    d = [ai / 1e6 - oi * 1e3 for ai, oi in zip(a, sorted(offsets_s))]
    lo = min(d)
    lags = sorted(x - lo for x in d)
    return {"p50_ms": percentile(lags, 50), "p99_ms": percentile(lags, 99), "max_ms": lags[-1]}


def ours_at(engine: StandIn, rows: list[dict], tmp: Path) -> dict:
    rec, out = tmp / "rec", tmp / "out"
    write_recording(rec, rows)
    engine.take_arrivals()
    p = subprocess.run([sys.executable, "-m", "shadowreplay", "replay", str(rec), "--target", engine.url, "--out", str(out),
                        "--no-progress"], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        raise SystemExit(f"shadowreplay replay failed ({p.returncode}): {p.stderr[-2000:]}")
    import duckdb

    lags = sorted(x for (x,) in duckdb.execute("select send_lag_ms from read_parquet(?) where send_lag_ms is not null",
                                               [f"{out}/replay_results/**/*.parquet"]).fetchall())
    return {"own_send_lag_p99_ms": percentile(lags, 99), "own_send_lag_max_ms": lags[-1], "sent": len(lags)}


def peer_at(engine: StandIn, peer_py: str, offsets_s: list[float], tmp: Path) -> dict:
    trace, wrapper = tmp / "trace.jsonl", tmp / "bench_serve.py"
    wrapper.write_text(PEER_WRAPPER)
    with trace.open("w") as f:  # Mooncake-style rows, as vllm bench's timed_trace dataset reads them
        for i, off in enumerate(offsets_s):
            f.write(json.dumps({"timestamp": off * 1000, "input_length": 4, "output_length": 4, "hash_ids": [i]}) + "\n")
    engine.take_arrivals()
    p = subprocess.run([str(Path(peer_py).absolute()), str(wrapper), "--backend", "openai", "--base-url", engine.url, "--endpoint", "/v1/completions",
                        "--model", "tiny", "--tokenizer", str(TOKENIZER), "--dataset-name", "timed_trace",
                        "--dataset-path", str(trace), "--timed-trace-sec-multiplier", "0.001",
                        "--timed-trace-chunk-hash-size", "4", "--ignore-eos", "--num-prompts", str(len(offsets_s)),
                        "--disable-tqdm"], capture_output=True, text=True, cwd=tmp)
    if p.returncode:
        raise SystemExit(f"vllm bench serve failed ({p.returncode}): {p.stdout[-1500:]}{p.stderr[-1500:]}")
    return {}  # the peer reports no send lag of its own


def peer_round(rates: list[float], n: int, peer_py: str, tmp: Path, slots: int, service_ms: float) -> list[dict]:
    """Both tools, the same steady schedule of n requests at each rate, into one stand-in engine."""
    out = []
    with StandIn(slots=slots, service_ms=service_ms, log_arrivals=True) as engine:
        for rate in rates:
            rows = steady_rows(rate, n / rate, seed=int(rate))
            t0 = rows[0]["ts_start"]
            offsets = [(r["ts_start"] - t0).total_seconds() for r in rows]
            row = {"rate_rps": rate, "requests": len(rows)}
            for tool in ("ours", "peer"):
                d = tmp / f"{tool}-{rate:g}"
                d.mkdir(parents=True)
                with Floor() as floor:
                    extra = ours_at(engine, rows, d) if tool == "ours" else peer_at(engine, peer_py, offsets, d)
                    lag = server_lag(engine.take_arrivals(), offsets)
                row[tool] = lag | extra | {"floor_p99_ms": floor.p99}
            out.append(row)
    return out


@contextlib.contextmanager
def hogs(k: int):
    """k processes that keep a CPU busy each, at normal priority, while the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base-rate", type=float, default=100.0, help="the recording's rate, requests/s")
    ap.add_argument("--seconds", type=float, default=30.0, help="the recording's length")
    ap.add_argument("--loads", default="1,2.5,5,10", help="loads (speed factors) of each sweep")
    ap.add_argument("--step-requests", type=int, default=2000)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--service-ms", type=float, default=20.0)
    ap.add_argument("--peer", metavar="PYTHON", help="the python of a venv with vllm: also run vllm bench serve")
    ap.add_argument("--hog", type=int, default=0, metavar="K", help="keep K busy processes running (a loaded machine)")
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    a = ap.parse_args()
    loads = [float(x) for x in a.loads.split(",")]
    runs, peer_runs = [], []
    with tempfile.TemporaryDirectory(prefix="capbench-") as tmp, hogs(a.hog):
        rec = write_steady(Path(tmp) / "rec", a.base_rate, a.seconds)
        for k in range(a.runs):
            r = one_sweep(rec, Path(tmp) / f"cap{k}", loads, a.step_requests, a.slots, a.service_ms)
            runs.append(r)
            lags = ", ".join(f"{s['load']:g}x {s['send_lag_p99_ms']:.2f}" for s in r["steps"])
            print(f"run {k + 1}/{a.runs}: {r['wall_s']} s, floor p99 {r['floor_p99_ms']:.2f} ms, "
                  f"load average {r['loadavg_1m']:.2f}; send lag p99 ms: {lags}", flush=True)
            if a.peer:
                pr = peer_round([a.base_rate * x for x in loads], a.step_requests, a.peer, Path(tmp) / f"peer{k}",
                                a.slots, a.service_ms)
                peer_runs.append(pr)
                print("  server-side lag p99 ms, ours / vllm bench: " + ", ".join(
                    f"{x['rate_rps']:g}/s {x['ours']['p99_ms']:.2f} / {x['peer']['p99_ms']:.2f}" for x in pr), flush=True)
    print(f"\nstand-in engine: {runs[0]['engine_capacity_rps']:g} requests/s ({a.slots} slots x {a.service_ms:g} ms); "
          f"{a.step_requests} requests per step; medians of {a.runs} runs\n")
    print("| load | rate /s | send lag p99 (ms), median | each run | max (ms), median | sent / scheduled rate | floor p99 (ms), each run |")
    print("|---|---|---|---|---|---|---|")
    floors = ", ".join(f"{r['floor_p99_ms']:.2f}" for r in runs)
    for i, load in enumerate(loads):
        st = [r["steps"][i] for r in runs if i < len(r["steps"])]
        p99 = [s["send_lag_p99_ms"] for s in st]
        mx = [s["send_lag_max_ms"] for s in st if s["send_lag_max_ms"] is not None]
        ratio = [s["sent_over_scheduled"] for s in st if s["sent_over_scheduled"] is not None]
        mx_text = f"{statistics.median(mx):.2f}" if mx else "-"
        print(f"| {load:g}x | {st[0]['rate_rps']:.0f} | {statistics.median(p99):.2f} | {', '.join(f'{x:.2f}' for x in p99)} | "
              f"{mx_text} | {statistics.median(ratio):.3f} | {floors} |")
    if peer_runs:
        print(f"\nthe same schedule ({a.step_requests} requests, steady) sent by each tool; server-side lag: arrival "
              f"behind schedule beyond the earliest request's, ms; medians of {len(peer_runs)} runs, each run's after\n")
        print("| rate /s | ours: server-side p99 | each run | ours: own send lag p99 | vllm bench serve: server-side p99 | "
              "each run | p99 ratio peer / ours | max, ours / peer | floor p99, ours / peer |")
        print("|---|---|---|---|---|---|---|---|---|")
        med = statistics.median
        for i, rate in enumerate(x["rate_rps"] for x in peer_runs[0]):
            o = [pr[i]["ours"] for pr in peer_runs]
            p = [pr[i]["peer"] for pr in peer_runs]
            ratio = med([pi["p99_ms"] / max(oi["p99_ms"], 1e-3) for oi, pi in zip(o, p)])
            print(f"| {rate:g} | {med([x['p99_ms'] for x in o]):.2f} | {', '.join(f'{x['p99_ms']:.2f}' for x in o)} | "
                  f"{med([x['own_send_lag_p99_ms'] for x in o]):.3f} | {med([x['p99_ms'] for x in p]):.2f} | "
                  f"{', '.join(f'{x['p99_ms']:.2f}' for x in p)} | {ratio:.1f}x | "
                  f"{med([x['max_ms'] for x in o]):.1f} / {med([x['max_ms'] for x in p]):.1f} | "
                  f"{med([x['floor_p99_ms'] for x in o]):.2f} / {med([x['floor_p99_ms'] for x in p]):.2f} |")
    if a.json:
        a.json.write_text(json.dumps({"args": vars(a) | {"json": str(a.json)}, "runs": runs, "peer_runs": peer_runs},
                                     indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
