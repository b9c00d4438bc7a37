"""Send lag at every step of a capacity sweep, up to 1,000 requests/s (issue 39).

`shadowreplay capacity` reports a load as the load sent only while its sender keeps its floor.
This runs sweeps (run_capacity, as the CLI and the demo run them) of a steady recording at fixed
loads into the stand-in engine of tests/capacity_helpers.py, sized far above the highest load so
that every step is paced by the schedule, not by the engine, and prints for each load the
replayer's own send-lag p99 (`send_lag_p99_ms`, the worst shard's), the sent over scheduled rate,
and the machine's timing floor during the sweep (a process that only waits for instants, as the
sender does: tests/capacity_helpers.Floor). Medians over the runs; every run's value beside them.

    .venv/bin/python benchmarks/capacity_bench.py [--runs 3] [--base-rate 100] [--seconds 30]
                                                  [--loads 1,2.5,5,10] [--step-requests 2000]
                                                  [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.capacity_helpers import Floor, StandIn, write_steady  # noqa: E402

from shadowreplay.replayer.capacity_cli import run_capacity  # noqa: E402


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base-rate", type=float, default=100.0, help="the recording's rate, requests/s")
    ap.add_argument("--seconds", type=float, default=30.0, help="the recording's length")
    ap.add_argument("--loads", default="1,2.5,5,10", help="loads (speed factors) of each sweep")
    ap.add_argument("--step-requests", type=int, default=2000)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--service-ms", type=float, default=20.0)
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    a = ap.parse_args()
    loads = [float(x) for x in a.loads.split(",")]
    runs = []
    with tempfile.TemporaryDirectory(prefix="capbench-") as tmp:
        rec = write_steady(Path(tmp) / "rec", a.base_rate, a.seconds)
        for k in range(a.runs):
            r = one_sweep(rec, Path(tmp) / f"cap{k}", loads, a.step_requests, a.slots, a.service_ms)
            runs.append(r)
            lags = ", ".join(f"{s['load']:g}x {s['send_lag_p99_ms']:.2f}" for s in r["steps"])
            print(f"run {k + 1}/{a.runs}: {r['wall_s']} s, floor p99 {r['floor_p99_ms']:.2f} ms, "
                  f"load average {r['loadavg_1m']:.2f}; send lag p99 ms: {lags}", flush=True)
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
    if a.json:
        a.json.write_text(json.dumps({"args": vars(a) | {"json": str(a.json)}, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
