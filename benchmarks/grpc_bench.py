"""gRPC recording cost, side by side in one run: direct to a grpcio server, through bare mitmdump
(h2c + streaming pass-through only, the least mitmproxy needs to carry gRPC unbuffered), and
through mitmdump with the gRPC recorder's capture side only (no writer), and through mitmdump
with the shadowreplay recorder (recorder/record_addon.py).

Workloads, run in interleaved rounds so CPU contention hits every target alike:
- stream: server-streaming Generate calls (8 messages, 5 ms apart) from C client threads;
  per call the client's time to first message (TTFT) and total time.
- unary: CountTokens calls as fast as C client threads can go: calls/s.

    .venv/bin/python benchmarks/grpc_bench.py [--calls 150] [--concurrency 4] [--rounds 3]

Prints a Markdown table (medians over rounds of p50/p99 per round) for docs/bench/grpc.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

import grpc  # noqa: E402

from tests.grpc_llm_server import LlmServer  # noqa: E402

MITMDUMP = Path(sys.executable).parent / "mitmdump"

BARE_SCRIPT = '''
from mitmproxy import http
from shadowreplay.recorder.h2c import H2CUpgrade

class StreamGrpc:
    def requestheaders(self, flow: http.HTTPFlow):
        if flow.request.headers.get("content-type", "").startswith("application/grpc"):
            flow.request.stream = True
    def responseheaders(self, flow: http.HTTPFlow):
        if flow.request.headers.get("content-type", "").startswith("application/grpc"):
            flow.response.stream = True

addons = [H2CUpgrade(), StreamGrpc()]
'''

# The gRPC recorder's capture side alone (frames and timing, no writer, no scrubbing): separates
# the cost on mitmproxy's event loop from the writer thread's.
CAPTURE_SCRIPT = '''
from shadowreplay.recorder.h2c import H2CUpgrade
from shadowreplay.recorder.grpc_addon import GrpcRecorder

class Discard:
    def submit(self, exchange):
        return True

addons = [H2CUpgrade(), GrpcRecorder(Discard())]
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mitm(upstream_port: int, script: Path, extra: list[str], logdir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    cmd = [str(MITMDUMP), "--set", "flow_detail=0", "--mode", f"reverse:http://127.0.0.1:{upstream_port}", "--listen-host",
           "127.0.0.1", "--listen-port", str(port), "-s", str(script), *extra]  # fmt: skip
    log = open(logdir / f"{script.stem}.{port}.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"mitmdump exited: {Path(log.name).read_text()[-1000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("mitmdump did not start")


def cpu_seconds(pid: int | None) -> float:
    """user+system CPU of a process (all its threads), from /proc; 0 for the direct target."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], q: float) -> float:
    if not xs:
        raise SystemExit("no call succeeded: see the errors above")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def run_stream(port: int, pb2, stubs, calls: int, conc: int) -> dict:
    ttft: list[float] = []
    total: list[float] = []
    lock = threading.Lock()
    todo = iter(range(calls))

    def worker():
        try:
            stream_worker()
        except grpc.RpcError as e:
            print(f"stream worker on port {port}: {e.code()}", file=sys.stderr)

    def stream_worker():
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = stubs.LlmStub(ch)
            list(stub.Generate(pb2.GenerateRequest(prompt="warm", max_tokens=1), timeout=30))
            while True:
                with lock:
                    if next(todo, None) is None:
                        return
                req = pb2.GenerateRequest(prompt="my name is Ann Lee, write a poem " * 20, max_tokens=8, gap_ms=5)
                t0 = time.perf_counter()
                first = None
                for _ in stub.Generate(req, timeout=30):
                    if first is None:
                        first = time.perf_counter()
                end = time.perf_counter()
                with lock:
                    ttft.append((first - t0) * 1000)
                    total.append((end - t0) * 1000)

    ts = [threading.Thread(target=worker) for _ in range(conc)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return {"ttft_p50": pct(ttft, 0.5), "ttft_p99": pct(ttft, 0.99), "total_p50": pct(total, 0.5),
            "total_p99": pct(total, 0.99)}  # fmt: skip


def run_unary(port: int, pb2, stubs, seconds: float, conc: int) -> dict:
    n = [0]
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def worker():
        try:
            unary_worker()
        except grpc.RpcError as e:
            print(f"unary worker on port {port}: {e.code()}", file=sys.stderr)

    def unary_worker():
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = stubs.LlmStub(ch)
            req = pb2.CountRequest(text="count the words of this sentence for ann.lee@example.com")
            stub.CountTokens(req, timeout=10)
            while time.perf_counter() < stop:
                stub.CountTokens(req, timeout=10)
                with lock:
                    n[0] += 1

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(conc)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return {"unary_rps": n[0] / (time.perf_counter() - t0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=150, help="streaming calls per target per round")
    ap.add_argument("--unary-seconds", type=float, default=4.0)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="grpc_bench_"))
    bare = tmp / "bare_grpc.py"
    bare.write_text(BARE_SCRIPT)
    capture = tmp / "capture_only.py"
    capture.write_text(CAPTURE_SCRIPT)
    key = tmp / "keys" / "k"
    key.parent.mkdir()
    key.write_bytes(os.urandom(32))
    out = tmp / "out"
    server = LlmServer()
    pb2, stubs = server.pb2, server.pb2_grpc
    procs = {}
    try:
        procs["bare mitmdump"] = start_mitm(server.port, bare, [], tmp)
        procs["mitmdump + gRPC capture only"] = start_mitm(server.port, capture, [], tmp)
        procs["mitmdump + recorder"] = start_mitm(
            server.port, REPO / "recorder" / "record_addon.py",
            ["--set", f"shadowreplay_out={out}", "--set", f"shadowreplay_key_file={key}"], tmp,
        )  # fmt: skip
        ports = {"direct": server.port, **{k: p for k, (_, p) in procs.items()}}
        pids = {"direct": None, **{k: proc.pid for k, (proc, _) in procs.items()}}
        results: dict[str, list[dict]] = {k: [] for k in ports}
        for r in range(a.rounds):
            for name, port in ports.items():
                for pname, (proc, _) in procs.items():
                    if proc.poll() is not None:
                        raise SystemExit(f"{pname} exited with {proc.returncode}; logs in {tmp}")
                cpu0 = cpu_seconds(pids[name])
                res = run_stream(port, pb2, stubs, a.calls, a.concurrency)
                cpu1 = cpu_seconds(pids[name])
                res.update(run_unary(port, pb2, stubs, a.unary_seconds, a.concurrency))
                # proxy CPU per streaming call (ms): robust to other load on the machine
                res["proxy_cpu_ms_per_stream_call"] = (cpu1 - cpu0) * 1000 / (a.calls + a.concurrency)
                results[name].append(res)
                print(f"round {r + 1} {name}: " + ", ".join(f"{k}={v:.1f}" for k, v in res.items()), file=sys.stderr)
    finally:
        for proc, _ in procs.values():
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        server.stop()

    med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in results.items()}
    print(f"\nMachine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{a.rounds} rounds x {a.calls} streaming calls (8 msgs, 5 ms apart), {a.unary_seconds} s unary, "
          f"concurrency {a.concurrency}; medians over rounds.\n")  # fmt: skip
    print("| target | TTFT p50 ms | TTFT p99 ms | call p50 ms | call p99 ms | unary calls/s | proxy CPU ms per streaming call |")
    print("|---|---|---|---|---|---|---|")
    for n, m in med.items():
        print(f"| {n} | {m['ttft_p50']:.2f} | {m['ttft_p99']:.2f} | {m['total_p50']:.2f} | {m['total_p99']:.2f} "
              f"| {m['unary_rps']:.0f} | {m['proxy_cpu_ms_per_stream_call']:.2f} |")  # fmt: skip
    b, rec = med["bare mitmdump"], med["mitmdump + recorder"]
    print(f"\nrecorder vs bare mitmdump: unary throughput {rec['unary_rps'] / b['unary_rps']:.2f}x, "
          f"TTFT p50 {rec['ttft_p50'] - b['ttft_p50']:+.2f} ms, p99 {rec['ttft_p99'] - b['ttft_p99']:+.2f} ms, "
          f"proxy CPU per streaming call {rec['proxy_cpu_ms_per_stream_call'] / b['proxy_cpu_ms_per_stream_call']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
