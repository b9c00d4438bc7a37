"""Send-lag benchmark of `shadowreplay replay`, side by side with `vllm bench serve` (timed_trace).

Schedules:
  azure500  - the Azure LLM inference 2023 code trace (../shared/data/traces), its first N arrivals
              compressed in time to a mean of 500 requests/s (burstiness kept)
  steady1000 - a steady 1,000 requests/s

Both tools replay the same schedule into the same fast local server (tests/replayer_helpers.py,
run as its own process: it streams 2 tokens per request, chunked SSE, like vLLM's API). The
server stamps each request's arrival with CLOCK_MONOTONIC when its first bytes arrive. vllm bench
does not report per-request send lag, so lag is measured the same way for both tools, at the
server: the i-th arrival is paired with the i-th scheduled offset, lag_i = arrival_i - (t0 +
offset_i), with t0 chosen so the smallest lag is 0 (neither tool's start instant is visible to
the server). shadowreplay's own per-request send_lag_ms (client side) is reported too.

Usage:
  .venv/bin/python benchmarks/replayer_bench.py [--runs 3] [--azure-requests 3000]
                                                [--steady-seconds 5] [--strategies]
                                                [--flush-intervals 1,10] [--compare-repo DIR] [--pin [--isolate]]
                                                [--floor] [--no-lead] [--arrival-warm] [--no-vllm]

--flush-intervals runs shadowreplay once per interval (results written during the run every S
seconds); --compare-repo DIR also runs the shadowreplay of another checkout (e.g. an older commit:
`git worktree add /tmp/rep-before <commit>`) in the same rounds, interleaved with this one.
--pin puts the server on the last CPU and the tools on the others; --isolate also moves the
kernel threads that may move (DAMON's kdamond here) onto the server's CPU for the run.
--floor adds two senders that send nothing (one spins, one sleeps on a timerfd until each instant):
what the machine alone costs. --no-lead also runs shadowreplay with --spin-lead-ms 0.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from shadowreplay.dataset import write_rows  # noqa: E402
from shadowreplay.replayer.runner import warm_size  # noqa: E402

AZURE = REPO.parent / "shared" / "data" / "traces" / "AzureLLMInferenceTrace_code_2023.csv"
VLLM_PY = REPO / ".venv-vllm" / "bin" / "python"
SERVER = REPO / "tests" / "replayer_helpers.py"
MODEL = "tiny-llama"

VLLM_WRAPPER = """
import sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
p = FlexibleArgumentParser(); add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""


# ---- schedules ----------------------------------------------------------------------------------
def azure_schedule(n: int, rate: float) -> list[tuple[float, int, int]]:
    """(offset_s, input_tokens, output_tokens) of the first n arrivals, compressed to `rate`/s."""
    rows = []
    with open(AZURE) as f:
        for r in csv.DictReader(f):
            ts = dt.datetime.strptime(r["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f")
            rows.append((ts, int(r["ContextTokens"]), int(r["GeneratedTokens"])))
            if len(rows) >= n:
                break
    t0 = rows[0][0]
    raw = [(r[0] - t0).total_seconds() for r in rows]
    scale = ((len(rows) - 1) / rate) / raw[-1]
    return [(x * scale, i, o) for x, (_, i, o) in zip(raw, rows)]


def steady_schedule(rate: float, seconds: float) -> list[tuple[float, int, int]]:
    n = int(rate * seconds)
    return [(i / rate, 64, 2) for i in range(n)]


def response_s(out_tokens: int) -> float:
    """How long the local server takes to stream a response (what a recording's e2e_ms holds)."""
    return max(0, min(out_tokens, STREAM["tokens"]) - 1) * STREAM["delay_s"]


def write_recording(root: Path, sched) -> None:
    t0 = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.timezone.utc)
    rows = []
    for i, (off, inp, out) in enumerate(sched):
        body = {"model": MODEL, "prompt": "hello " * 16, "stream": True, "max_tokens": out}
        rows.append(dict(request_id=f"b{i:06d}", ts_start=t0 + dt.timedelta(seconds=off), method="POST", scheme="http",
                         host="prod.example", port=80, path="/v1/completions", kind="completion", model=MODEL,
                         stream=True, completion_tokens=out, request_body=json.dumps(body), prompt_chars=96,
                         e2e_ms=1000 * response_s(out)))
    write_rows(root, "requests", rows)


def write_mooncake(path: Path, sched) -> None:
    with open(path, "w") as f:
        for i, (off, inp, out) in enumerate(sched):
            f.write(json.dumps({"timestamp": off * 1000.0, "input_length": 16, "output_length": out,
                                "hash_ids": [i]}) + "\n")


# ---- CPU pinning (--pin) ------------------------------------------------------------------------
# With --pin the server gets the last CPU and the client under test the others, as when the
# replayer runs on its own load-generator host; without it they share every CPU.
PIN: dict[str, set[int] | None] = {"server": None, "client": None}


def pinned(role: str):
    cpus = PIN[role]
    return None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))


def isolate_kernel_threads(cpus: set[int]) -> dict[int, tuple[str, set[int]]]:
    """Moves every kernel thread that may move (not bound to one CPU) onto `cpus` (the server's),
    so they do not preempt the tool under test; returns {pid: (name, old affinity)} for
    restore_affinity. On this VM, DAMON's kdamond thread takes 1-8 ms slices of whichever CPU
    it lands on (a spinning loop on the tools' CPU sees several stalls over 1 ms per 6 s).
    Needs root; without it nothing moves."""
    moved = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) != 2 and pid != 2:  # ppid 2: a child of kthreadd, a kernel thread
                continue
            old = os.sched_getaffinity(pid)
            if len(old) < 2 or old <= cpus:
                continue  # bound to one CPU (per-CPU workers), or already off the tools' CPUs
            os.sched_setaffinity(pid, cpus)
            moved[pid] = (name, old)
        except (OSError, ValueError):
            continue  # gone, or not movable
    return moved


def restore_affinity(moved: dict[int, tuple[str, set[int]]]) -> None:
    for pid, (_, old) in moved.items():
        try:
            os.sched_setaffinity(pid, old)
        except OSError:
            pass


# ---- server -------------------------------------------------------------------------------------
# What the fast local server streams per request (--stream-tokens/--token-delay): by default 2
# tokens at once; an LLM server streams one SSE event per token, tens of ms apart.
STREAM = {"tokens": 2, "delay_s": 0.0}


class Server:
    def __init__(self, tmp: Path):
        self.arrivals_file = tmp / f"arrivals-{time.monotonic_ns()}.jsonl"
        self.p = subprocess.Popen([sys.executable, str(SERVER), "--port", "0", "--arrivals", str(self.arrivals_file),
                                   "--tokens-cap", str(STREAM["tokens"]), "--token-delay", str(STREAM["delay_s"])],
                                  stdout=subprocess.PIPE, text=True, preexec_fn=pinned("server"))
        line = self.p.stdout.readline()
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> list[int]:
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(30)
        out = []
        with open(self.arrivals_file) as f:
            for line in f:
                a = json.loads(line)
                if a["method"] == "POST" and a["path"] == "/v1/completions":
                    out.append(a["mono_ns"])
        return sorted(out)


# ---- measurement --------------------------------------------------------------------------------
def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, math.ceil(q / 100 * len(xs)) - 1))]


def server_side(arrivals: list[int], sched) -> dict:
    n = len(sched)
    if len(arrivals) < n:
        return {"error": f"only {len(arrivals)} of {n} requests arrived"}
    arr = arrivals[-n:]  # vllm bench sends one test request first
    offs = [round(s[0] * 1e9) for s in sched]
    d = [a - o for a, o in zip(arr, offs)]
    base = min(d)
    lags = [(x - base) / 1e6 for x in d]
    return {"p50": pct(lags, 50), "p99": pct(lags, 99), "max": max(lags),
            "late1": sum(1 for x in lags if x > 1), "late10": sum(1 for x in lags if x > 10),
            "rate": (n - 1) / ((arr[-1] - arr[0]) / 1e9)}


def run_ours(rec: Path, tmp: Path, sched, pacing: str, extra: list[str] = (), repo: Path = REPO) -> dict:
    srv = Server(tmp)
    out = tmp / f"out-{time.monotonic_ns()}"
    # another checkout runs with its own venv (made by its `make setup`), so its packages are used
    python = repo / ".venv" / "bin" / "python"
    python = str(python) if repo != REPO and python.exists() else sys.executable
    env = dict(os.environ, PYTHONPATH=str(repo)) if repo != REPO else None  # older checkouts had top-level packages
    try:
        p = subprocess.run([python, "-m", "shadowreplay", "replay", str(rec), "--target", srv.url, "--out", str(out),
                            "--no-metrics", "--no-progress", "--pacing", pacing, "--timeout", "30", *extra],
                           capture_output=True, text=True, cwd=repo, env=env, timeout=600, preexec_fn=pinned("client"))
    finally:
        arrivals = srv.stop()
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}"}
    res = server_side(arrivals, sched)
    s = json.loads((out / "manifest.json").read_text())["summary"]
    res["self_p50"], res["self_p99"], res["self_max"] = s["lag_p50_ms"], s["lag_p99_ms"], s["lag_max_ms"]
    res["errors"] = s["errors"]
    res["files"] = sum(1 for _ in (out / "replay_results").rglob("*.parquet"))
    return res


# The timing floor of this CPU at this minute: a sender with nothing to send, spinning on the clock
# until each scheduled instant. Its lag is what the machine alone costs (the VM taking the CPU
# away, the process being descheduled), which no user-space sender can avoid.
FLOOR = r"""
import json, sys, time
offs = json.load(open(sys.argv[1]))
clock = time.monotonic_ns
start = clock() + 200_000_000
lags = []
for off in offs:
    t = start + off
    now = clock()
    while now < t:
        now = clock()
    lags.append((now - t) / 1e6)
print(json.dumps(lags))
"""


# The same with a sender that sleeps on a timerfd until each instant (nothing else to do): its lag
# is what waking an idle CPU costs at that minute (on a VM, the hypervisor's wake-up).
FLOOR_SLEEPING = r"""
import json, select, sys, time
from shadowreplay.replayer.pacer import _TimerFd
offs = json.load(open(sys.argv[1]))
tfd = _TimerFd()
ep = select.epoll()
ep.register(tfd.fd, select.EPOLLIN)
clock = time.monotonic_ns
start = clock() + 200_000_000
lags = []
for off in offs:
    t = start + off
    if clock() < t:
        tfd.arm(t)
        ep.poll()
        tfd.drain()
    lags.append((clock() - t) / 1e6)
print(json.dumps(lags))
"""


def run_floor(tmp: Path, sched, code: str = FLOOR) -> dict:
    offs_file = tmp / f"offsets-{time.monotonic_ns()}.json"
    offs_file.write_text(json.dumps([round(s[0] * 1e9) for s in sched]))
    p = subprocess.run([sys.executable, "-c", code, str(offs_file)], capture_output=True, text=True, timeout=600,
                       cwd=REPO, preexec_fn=pinned("client"))
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}"}
    lags = json.loads(p.stdout)
    return {"self_p50": pct(lags, 50), "self_p99": pct(lags, 99), "self_max": max(lags)}


def run_vllm(trace: Path, tmp: Path, sched, tokenizer: Path) -> dict:
    srv = Server(tmp)
    wrapper = tmp / "bench_serve.py"
    wrapper.write_text(VLLM_WRAPPER)
    try:
        p = subprocess.run([str(VLLM_PY), str(wrapper), "--backend", "openai", "--base-url", srv.url,
                            "--endpoint", "/v1/completions", "--model", MODEL, "--tokenizer", str(tokenizer),
                            "--dataset-name", "timed_trace", "--dataset-path", str(trace),
                            "--timed-trace-sec-multiplier", "0.001", "--ignore-eos", "--num-prompts", str(len(sched)),
                            "--disable-tqdm"],
                           capture_output=True, text=True, cwd=tmp, timeout=900, preexec_fn=pinned("client"))
    finally:
        arrivals = srv.stop()
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()
        return {"error": tail[-1] if tail else f"rc {p.returncode}"}
    res = server_side(arrivals, sched)
    for line in p.stdout.splitlines():
        if line.startswith("Failed requests:"):
            res["errors"] = int(line.split()[-1])
    return res


def wait_for_quiet_cpu(busy_below: float = 0.10, timeout_s: float = 60.0) -> None:
    """Returns once the whole machine was under `busy_below` busy over one second (/proc/stat),
    or after timeout_s."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait

    deadline = time.monotonic() + timeout_s
    t0, i0 = snap()
    while time.monotonic() < deadline:
        time.sleep(1.0)
        t1, i1 = snap()
        if t1 > t0 and 1 - (i1 - i0) / (t1 - t0) < busy_below:
            return
        t0, i0 = t1, i1


def median_of(runs: list[dict], key: str):
    vals = [r[key] for r in runs if key in r and r[key] is not None]
    return statistics.median(vals) if vals else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--azure-requests", type=int, default=3000)
    ap.add_argument("--azure-rate", type=float, default=500.0)
    ap.add_argument("--steady-rate", type=float, default=1000.0)
    ap.add_argument("--steady-seconds", type=float, default=5.0)
    ap.add_argument("--strategies", action="store_true", help="also compare the pacing strategies (sleep, spin)")
    ap.add_argument("--stream-tokens", type=int, default=2, metavar="N",
                    help="tokens the local server streams per request, as one SSE event each (default 2)")
    ap.add_argument("--token-delay", type=float, default=0.0, metavar="S",
                    help="seconds between those events (default 0: all at once); e.g. 16 and 0.02 for LLM-like streams")
    ap.add_argument("--arrival-warm", action="store_true",
                    help="also run shadowreplay with the warm pool sized as before: the peak of arrivals in 250 ms, "
                         "no recorded response times, no headroom")
    ap.add_argument("--ablation", action="store_true",
                    help="also run shadowreplay without each lag fix (task sender, --warm-connections 32, --keep-gc, none)")
    ap.add_argument("--flush-intervals", help="comma-separated --flush-interval values to run shadowreplay with")
    ap.add_argument("--compare-repo", type=Path, help="also run the shadowreplay of this checkout, interleaved")
    ap.add_argument("--no-vllm", action="store_true")
    ap.add_argument("--json", help="write all figures here")
    ap.add_argument("--pin", action="store_true",
                    help="pin the server to the last CPU and the tools to the others (as on separate hosts)")
    ap.add_argument("--floor", action="store_true",
                    help="also run the timing floors: a sender that sends nothing and spins until each scheduled "
                         "instant, and one that sleeps on a timerfd until it")
    ap.add_argument("--no-lead", action="store_true",
                    help="also run shadowreplay with --spin-lead-ms 0 (sleeping until each send, as before 2026-11-30)")
    ap.add_argument("--isolate", action="store_true",
                    help="with --pin: also move the kernel threads that may move to the server's CPU during the "
                         "run (needs root; restored at the end)")
    args = ap.parse_args()
    STREAM["tokens"], STREAM["delay_s"] = args.stream_tokens, args.token_delay
    if args.isolate and not args.pin:
        ap.error("--isolate needs --pin")
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            ap.error("--pin needs at least 2 CPUs")
        PIN["server"], PIN["client"] = {cpus[-1]}, set(cpus[:-1])
    moved = isolate_kernel_threads(PIN["server"]) if args.isolate else {}
    if args.isolate:
        print("kernel threads moved to the server's CPU for the run: "
              + (", ".join(sorted({name for name, _ in moved.values()})) or "none (not root, or none movable)"), flush=True)
    try:
        run_all(args)
    finally:
        restore_affinity(moved)


def run_all(args) -> None:
    tokenizer = None
    if not args.no_vllm:
        from shadowreplay.shadow.tiny_model import build_tiny_model

        tokenizer = build_tiny_model()
    schedules = {
        f"azure{int(args.azure_rate)}": azure_schedule(args.azure_requests, args.azure_rate),
        f"steady{int(args.steady_rate)}": steady_schedule(args.steady_rate, args.steady_seconds),
    }
    tools = ["shadowreplay"] + (["shadowreplay-spin", "shadowreplay-sleep"] if args.strategies else [])
    tools += ["shadowreplay-no-lead"] if args.no_lead else []
    tools += ["floor", "floor-sleeping"] if args.floor else []
    # A cap that never binds selects the task-based sender (the callback sender needs no cap).
    task = ["--max-in-flight", "1000000"]
    ablations = {"shadowreplay-task-sender": task,
                 "shadowreplay-warm32": ["--warm-connections", "32"], "shadowreplay-keepgc": ["--keep-gc"],
                 "shadowreplay-before": [*task, "--warm-connections", "32", "--keep-gc"]}
    tools += list(ablations) if args.ablation else []
    tools += ["shadowreplay-arrival-warm"] if args.arrival_warm else []
    if args.flush_intervals:
        for f in args.flush_intervals.split(","):
            ablations[f"shadowreplay-flush{f}s"] = ["--flush-interval", f]
            tools.append(f"shadowreplay-flush{f}s")
    if args.compare_repo:
        tools.insert(0, "shadowreplay@compare")
    tools += [] if args.no_vllm else ["vllm-bench"]
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="replayer-bench-") as t:
        tmp = Path(t)
        for name, sched in schedules.items():
            rec = tmp / f"rec-{name}"
            write_recording(rec, sched)
            trace = tmp / f"{name}.jsonl"
            write_mooncake(trace, sched)
            for run in range(args.runs):
                # Our tools in a rotating order (none always first), the peer last: whatever its
                # exit leaves the machine doing (a Python 3.11 process with torch, several GB, going
                # away) must not always fall on the same one of ours. Then wait for a quiet CPU.
                ours = [t for t in tools if t != "vllm-bench"]
                k = run % len(ours)
                for tool in ours[k:] + ours[:k] + [t for t in tools if t == "vllm-bench"]:
                    if tool == ours[k] and run:
                        wait_for_quiet_cpu()
                    if tool == "vllm-bench":
                        r = run_vllm(trace, tmp, sched, tokenizer)
                    elif tool == "floor":
                        r = run_floor(tmp, sched)
                    elif tool == "floor-sleeping":
                        r = run_floor(tmp, sched, FLOOR_SLEEPING)
                    elif tool == "shadowreplay-no-lead":
                        r = run_ours(rec, tmp, sched, "timerfd", ["--spin-lead-ms", "0"])
                    elif tool == "shadowreplay@compare":
                        r = run_ours(rec, tmp, sched, "timerfd", repo=args.compare_repo.resolve())
                    elif tool == "shadowreplay-arrival-warm":
                        n = warm_size([round(x[0] * 1e9) for x in sched], headroom=1)
                        r = run_ours(rec, tmp, sched, "timerfd", ["--warm-connections", str(n)])
                    elif tool in ablations:
                        r = run_ours(rec, tmp, sched, "timerfd", ablations[tool])
                    else:
                        pacing = {"shadowreplay": "timerfd", "shadowreplay-spin": "spin", "shadowreplay-sleep": "sleep"}[tool]
                        r = run_ours(rec, tmp, sched, pacing)
                    r["load1"] = os.getloadavg()[0]
                    results.setdefault(name, {}).setdefault(tool, []).append(r)
                    print(f"{name} run {run + 1} {tool}: " + json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
    print()
    loads = [r["load1"] for per in results.values() for runs in per.values() for r in runs]
    pin = f"server pinned to CPU {sorted(PIN['server'])}, tools to {sorted(PIN['client'])}; " if args.pin else ""
    pin += "movable kernel threads on the server's CPU; " if args.isolate else ""
    print(f"machine: {os.uname().machine}, {os.cpu_count()} cores (shared); {pin}medians of {args.runs} runs; "
          f"1-min load average during the runs {min(loads):.1f}-{max(loads):.1f}")
    print("| schedule | tool | requests | server-side lag p50 / p99 / max (ms) | late >1 / >10 ms | achieved rate (/s) | self-reported lag p50 / p99 / max (ms) |")
    print("|---|---|---|---|---|---|---|")
    for name, per_tool in results.items():
        for tool, runs in per_tool.items():
            ok = [r for r in runs if "error" not in r]
            if not ok:
                print(f"| {name} | {tool} | {len(schedules[name])} | failed: {runs[0].get('error')} | | | |")
                continue

            def f(k):
                v = median_of(ok, k)
                return "-" if v is None else (f"{v:.3f}" if k != "rate" and not k.startswith("late") else f"{v:.0f}")

            self_cols = f"{f('self_p50')} / {f('self_p99')} / {f('self_max')}" if "self_p50" in ok[0] else "not reported"
            print(f"| {name} | {tool} | {len(schedules[name])} | {f('p50')} / {f('p99')} / {f('max')} | "
                  f"{f('late1')} / {f('late10')} | {f('rate')} | {self_cols} |")
    print()
    for name, per_tool in results.items():
        for tool, runs in per_tool.items():
            p99s = [f"{r['self_p99']:.2f}" for r in runs if r.get("self_p99") is not None]
            if p99s:
                print(f"{name} {tool}: self-reported lag p99 per run (ms): {', '.join(p99s)}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
