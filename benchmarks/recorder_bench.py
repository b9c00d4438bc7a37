"""Recorder benchmark: direct vs bare mitmdump vs mitmdump + recorder, side by side in one run.

    .venv/bin/python benchmarks/recorder_bench.py [--runs 3] [--seconds 5] [--concurrency 32]
        [--rate 100] [--check-rate 1000] [--check-seconds 10] [--writers thread,process] [--json out.json]

Starts tests/sse_server.py (a vLLM-like SSE server, no delays) and three front doors:
  direct            the server itself
  mitm-bare         mitmdump --mode reverse:SERVER (buffers response bodies, its default)
  mitm-bare-stream  the same with stream_large_bodies=1 (streams every body, as the recorder does)
  mitm-recorder     mitmdump -s recorder/record_addon.py (streams, records, scrubs, writes Parquet)
Each run measures, per front door and interleaved:
  throughput  closed loop, --concurrency connections, --seconds: completed chat streams per second
  latency     open loop at --rate req/s: TTFT (first content event) and total, p50/p99, in ms
Then a recording check: open loop at --check-rate req/s for --check-seconds through the recorder;
afterwards the recorder is stopped (SIGINT) and its status file and DuckDB row count are compared
with the requests sent. CPU ms/req counts the front-door process plus, for the process writer,
its child. Figures are medians over --runs. The client is a lean asyncio HTTP/1.1
client (keep-alive, chunked), so the load generator is not the bottleneck it would be with httpx.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
MITMDUMP = str(Path(PY).parent / "mitmdump")

BODY = json.dumps(
    {
        "model": "fake-llm",
        "messages": [{"role": "user", "content": "Write a short note to jane.doe@example.com about the quarterly numbers."}],
        "max_tokens": 8,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
).encode()


def quantile(xs: list[float], p: float) -> float:
    """The value at fraction p of the sorted values (NaN for none)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def request_bytes(host: str) -> bytes:
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer sk-bench-0123456789abcdef\r\ncontent-length: {len(BODY)}\r\n\r\n"
    ).encode() + BODY


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    def alive() -> None:
        if proc.poll() is not None:
            raise SystemExit(f"process exited early: {proc.args}")

    from shadowreplay.ports import wait_listening

    if not wait_listening(port, timeout, alive=alive):
        raise SystemExit(f"port {port} did not open")


def proc_cpu_s(pid: int) -> float:
    """user+system CPU seconds of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- client
class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.r = reader
        self.w = writer


async def connect(port: int) -> Conn:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    return Conn(r, w)


async def do_request(conn: Conn, payload: bytes) -> tuple[float, float]:
    """(ttft_s, total_s); raises on protocol errors."""
    t0 = time.perf_counter()
    conn.w.write(payload)
    head = await conn.r.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head[:40])
    ttft = None
    low = head.lower()
    if b"transfer-encoding: chunked" in low:
        while True:
            line = await conn.r.readuntil(b"\r\n")
            size = int(line.split(b";")[0], 16)
            data = await conn.r.readexactly(size + 2)
            if ttft is None and b'"content"' in data:
                ttft = time.perf_counter() - t0
            if size == 0:
                break
    else:
        i = low.index(b"content-length:")
        n = int(low[i + 15 : low.index(b"\r\n", i)])
        await conn.r.readexactly(n)
        ttft = time.perf_counter() - t0
    total = time.perf_counter() - t0
    return (ttft if ttft is not None else total), total


async def closed_loop(port: int, concurrency: int, seconds: float) -> dict:
    payload = request_bytes(f"127.0.0.1:{port}")
    done = 0
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done, errors
        try:
            conn = await connect(port)
        except OSError:
            errors += 1
            return
        while time.perf_counter() < stop_at:
            try:
                await do_request(conn, payload)
                done += 1
            except Exception:
                errors += 1
                conn.w.close()
                try:
                    conn = await connect(port)
                except OSError:
                    return
        conn.w.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {"rps": done / (time.perf_counter() - t0), "done": done, "errors": errors}


async def open_loop(port: int, rate: float, seconds: float, max_conns: int = 256) -> dict:
    """Sends at fixed times (rate/s). At most max_conns connections; when all are busy a request
    waits for one, and that wait counts in its latency (no coordinated omission)."""
    payload = request_bytes(f"127.0.0.1:{port}")
    pool: asyncio.Queue[Conn | None] = asyncio.Queue()
    for _ in range(max_conns):
        pool.put_nowait(None)  # a slot without a connection yet
    ttfts: list[float] = []
    totals: list[float] = []
    errors = 0
    late: list[float] = []
    n = int(rate * seconds)
    start = time.perf_counter() + 0.05

    async def one(target: float) -> None:
        nonlocal errors
        conn = await pool.get()
        try:
            if conn is None:
                conn = await connect(port)
            waited = time.perf_counter() - target
            a, b = await do_request(conn, payload)
            ttfts.append(a + waited)
            totals.append(b + waited)
            pool.put_nowait(conn)
        except Exception:
            errors += 1
            if conn is not None:
                conn.w.close()
            pool.put_nowait(None)

    tasks = []
    for i in range(n):
        target = start + i / rate
        d = target - time.perf_counter()
        if d > 0:
            await asyncio.sleep(d)
        late.append(time.perf_counter() - target)
        tasks.append(asyncio.create_task(one(target)))
    await asyncio.gather(*tasks)
    while not pool.empty():
        c = pool.get_nowait()
        if c is not None:
            c.w.close()

    def q(xs: list[float], p: float) -> float:
        return quantile(xs, p) * 1000

    elapsed = time.perf_counter() - start
    return {
        "sent": n,
        "ok": len(totals),
        "errors": errors,
        "achieved_rps": len(totals) / elapsed,
        "send_lag_p99_ms": q(late, 0.99),
        "ttft_p50_ms": q(ttfts, 0.5),
        "ttft_p99_ms": q(ttfts, 0.99),
        "total_p50_ms": q(totals, 0.5),
        "total_p99_ms": q(totals, 0.99),
    }


# ---------------------------------------------------------------- processes
def start(cmd: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=REPO, env=env)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_drained(out: Path, expected: int, timeout: float = 60.0) -> None:
    """Waits until the recorder has written `expected` rows (it writes when rotate_seconds pass),
    so its writer's CPU is counted for the requests that caused it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if json.loads((out / "recorder_status.json").read_text())["rows_written"] >= expected:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.1)



def sse_chunks() -> list[bytes]:
    """The benchmark's stream: 8 content events, then the usage event and [DONE]."""
    words = json.loads(BODY)["messages"][0]["content"].split()
    chunks = []
    for i, w in enumerate(words[:8]):
        ev = {"id": "c", "object": "chat.completion.chunk", "model": "fake-llm",
              "choices": [{"index": 0, "delta": {"content": (" " if i else "") + w}, "finish_reason": None}]}
        chunks.append(f"data: {json.dumps(ev)}\n\n".encode())
    chunks.append(b'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":8}}\n\ndata: [DONE]\n\n')
    return chunks


def hook_cost(n: int, writer_mode: str, rate: float) -> dict:
    """The recorder's own cost on the proxy's event loop, per request: mitmproxy's real flow
    objects through the real addon chain (h2c, gRPC, HTTP recorder) with a running writer, timed
    in-process. `to_first_byte` is what runs before the first SSE chunk is passed on (the
    responseheaders hooks plus the first chunk's observer): the most the addon can add to TTFT
    on an idle proxy. `per_request` adds the other chunks and the response hook (the submit).
    Requests start open loop at `rate` per second, so the writer works at that rate meanwhile and
    its share of the GIL shows in the tail."""
    from mitmproxy.test import taddons, tflow

    from shadowreplay.recorder import record_addon

    events = sse_chunks()
    body = BODY if isinstance(BODY, bytes) else BODY.encode()
    tmp = Path(tempfile.mkdtemp(prefix="recorder-hooks-"))
    (tmp / "scrub.key").write_bytes(os.urandom(32).hex().encode())
    chain = record_addon.addons
    first, total = [], []
    with taddons.context(*chain) as tctx:
        tctx.configure(record_addon.rec, shadowreplay_out=str(tmp / "data"), shadowreplay_key_file=str(tmp / "scrub.key"),
                       shadowreplay_writer=writer_mode, shadowreplay_rotate_seconds="1")
        hooks = {name: [h for a in chain if (h := getattr(a, name, None))]
                 for name in ("requestheaders", "responseheaders", "response")}
        clock = time.perf_counter_ns
        begin = time.perf_counter()
        for i in range(n):
            d = begin + i / rate - time.perf_counter()
            if d > 0:
                time.sleep(d)
            f = tflow.tflow(resp=True)
            f.request.method, f.request.path, f.request.content = "POST", "/v1/chat/completions", body
            f.request.headers["content-type"] = "application/json"
            f.request.headers["authorization"] = "Bearer sk-bench"
            f.response.headers["content-type"] = "text/event-stream"
            f.response.content = b""
            t0 = clock()
            for h in hooks["requestheaders"]:
                h(f)
            for h in hooks["responseheaders"]:
                h(f)
            stream = f.response.stream
            stream(events[0])
            t1 = clock()
            for ev in events[1:]:
                stream(ev)
            for h in hooks["response"]:
                h(f)
            t2 = clock()
            first.append((t1 - t0) / 1e3)
            total.append((t2 - t0) / 1e3)
        record_addon.rec.done()
    st = json.loads((tmp / "data" / "recorder_status.json").read_text())
    return {"writer": writer_mode, "rate": rate, "requests": n, "rows_written": st.get("rows_written"),
            "to_first_byte_us_p50": quantile(first, 0.5), "to_first_byte_us_p99": quantile(first, 0.99),
            "to_first_byte_us_max": max(first), "per_request_us_p50": quantile(total, 0.5),
            "per_request_us_p99": quantile(total, 0.99)}


def pipeline_check(rate: float, seconds: float, writer: str = "thread") -> dict:
    """The recorder's own capacity, without mitmproxy: exchanges shaped like the benchmark's chat
    streams (body, 10 SSE events, usage chunk) are submitted to a Writer (thread) or a
    ProcessWriter (child process) at `rate` per second for `seconds`; returns drops, rows written
    and the writer's CPU per row (for the process writer: the feeder thread here, which pickles,
    and the child, which scrubs and writes)."""
    import resource

    from shadowreplay.anonymize import Scrubber
    from shadowreplay.recorder.exchange import HttpExchange, RowOptions
    from shadowreplay.recorder.record_writer_process import ProcessWriter
    from shadowreplay.recorder.record_writer import Writer, WriterConfig, read_status

    chunks = sse_chunks()
    headers = [("host", "127.0.0.1"), ("content-type", "application/json"),
               ("authorization", "Bearer sk-bench-0123456789abcdef"), ("content-length", str(len(BODY)))]
    out = Path(tempfile.mkdtemp(prefix="recorder-pipeline-"))
    cfg = WriterConfig(out_dir=out, rotate_seconds=5)
    child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if writer == "process":
        keydir = Path(tempfile.mkdtemp(prefix="recorder-pipeline-key-"))
        (keydir / "scrub.key").write_bytes(os.urandom(32).hex().encode())
        w = ProcessWriter(cfg, str(keydir / "scrub.key"), RowOptions()).start()
    else:
        w = Writer(cfg, Scrubber(os.urandom(32)), RowOptions()).start()
    n = int(rate * seconds)
    t_cpu = time.thread_time()  # this thread only: the submitting side
    c0 = time.process_time()
    start = time.perf_counter()
    for i in range(n):
        target = start + i / rate
        d = target - time.perf_counter()
        if d > 0:
            time.sleep(d)
        t = time.time()
        ex = HttpExchange(request_id=f"p{i}", ts_start=t - 0.01, client_addr="127.0.0.1", method="POST", scheme="http",
                          host="h", port=80, path="/v1/chat/completions", request_headers=headers, request_body=BODY,
                          status=200, response_headers=[("content-type", "text/event-stream")], streamed=True,
                          chunks=[(t - 0.005 + j * 0.0005, c) for j, c in enumerate(chunks)], stream_bytes=1200, ts_end=t)
        w.submit(ex)
    submit_end = time.perf_counter()
    w.close()
    total = time.perf_counter() - start
    cpu = time.process_time() - c0 - (time.thread_time() - t_cpu)  # writer/feeder threads in this process
    child1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (child1.ru_utime + child1.ru_stime) - (child0.ru_utime + child0.ru_stime)
    st = read_status(out)
    return {"writer": writer, "rate": rate, "seconds": seconds, "submitted": n, "achieved_submit_rps": n / (submit_end - start),
            "dropped_queue_full": st["dropped_queue_full"], "rows_written": st["rows_written"],
            "in_proxy_cpu_ms_per_row": cpu / n * 1000, "child_cpu_ms_per_row": child_cpu / n * 1000,
            "writer_cpu_ms_per_row": (cpu + child_cpu) / n * 1000, "drain_s_after_last_submit": total - (submit_end - start)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--check-rate", type=float, default=1000.0)
    ap.add_argument("--check-seconds", type=float, default=10.0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--pipeline-only", action="store_true", help="only the recording capacity check (no mitmproxy)")
    ap.add_argument("--writers", default="thread,process", help="recorder writer modes to measure (comma-separated)")
    ap.add_argument("--hooks", type=int, default=20000, metavar="N",
                    help="time the addon chain's hooks in-process over N requests at --check-rate (0: skip)")
    ap.add_argument("--hooks-only", action="store_true", help="only the in-process hook timing")
    a = ap.parse_args()
    writers = [x for x in a.writers.split(",") if x]
    hooks = {}
    for wm in writers if a.hooks > 0 else []:
        hooks[wm] = hook_cost(a.hooks, wm, a.check_rate)
        print(f"hooks in-process ({wm} writer): {json.dumps(hooks[wm])}", flush=True)
    if a.hooks_only:
        return
    pipe = {}
    for wm in writers:
        pipe[wm] = pipeline_check(a.check_rate, a.check_seconds, wm) if a.check_seconds > 0 else {}
        print(f"pipeline check ({wm} writer, no mitmproxy) at {a.check_rate:.0f}/s for {a.check_seconds:.0f} s: {pipe[wm]}", flush=True)
    if a.pipeline_only:
        return

    tmp = Path(tempfile.mkdtemp(prefix="recorder-bench-"))
    keydir = tmp / "keys"
    keydir.mkdir()
    (keydir / "scrub.key").write_bytes(os.urandom(32).hex().encode())
    srv_port = free_port()
    procs: dict[str, subprocess.Popen] = {}
    ports = {"direct": srv_port}
    procs["server"] = start([PY, "tests/sse_server.py", "--port", str(srv_port)], tmp / "server.log")
    wait_port(srv_port, procs["server"])
    common = ["--mode", f"reverse:http://127.0.0.1:{srv_port}", "--listen-host", "127.0.0.1",
              "--set", "flow_detail=0", "--set", "connection_strategy=lazy"]
    fronts = {
        "mitm-bare": [],
        "mitm-bare-stream": ["--set", "stream_large_bodies=1"],
    }
    outs: dict[str, Path] = {}
    for wm in writers:
        name = "mitm-recorder" if wm == "thread" else f"mitm-recorder-{wm}"
        outs[name] = tmp / f"data-{wm}"
        fronts[name] = ["-s", str(REPO / "recorder" / "record_addon.py"), "--set", f"shadowreplay_out={outs[name]}",
                        "--set", f"shadowreplay_key_file={keydir / 'scrub.key'}", "--set", "shadowreplay_rotate_seconds=1",
                        "--set", f"shadowreplay_writer={wm}"]
    for name, extra in fronts.items():
        ports[name] = free_port()
        procs[name] = start([MITMDUMP, *common, "--listen-port", str(ports[name]), *extra], tmp / f"{name}.log")
    for name in fronts:
        wait_port(ports[name], procs[name])
    for out in outs.values():
        deadline = time.monotonic() + 60
        while not (out / "recorder_status.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)

    def writer_pid(name: str) -> int | None:
        try:
            return json.loads((outs[name] / "recorder_status.json").read_text()).get("writer_pid")
        except (OSError, ValueError):
            return None

    def cpu_of(name: str) -> tuple[float, float]:
        """(front-door process CPU s, its writer process CPU s)"""
        main = proc_cpu_s(procs["server" if name == "direct" else name].pid)
        wp = writer_pid(name) if name in outs else None
        try:
            child = proc_cpu_s(wp) if wp else 0.0
        except OSError:
            child = 0.0
        return main, child

    sent = {name: 0 for name in outs}
    results: dict[str, list[dict]] = {k: [] for k in ports}
    checks: dict[str, dict] = {}
    try:
        for name, port in ports.items():  # warm-up
            w = asyncio.run(closed_loop(port, 4, 0.5))
            if name in outs:
                sent[name] += w["done"]
        for run in range(a.runs):
            for name, port in ports.items():
                c0, w0 = cpu_of(name)
                tp = asyncio.run(closed_loop(port, a.concurrency, a.seconds))
                if name in outs:
                    wait_drained(outs[name], sent[name] + tp["done"])
                c1, w1 = cpu_of(name)
                tp["proxy_cpu_ms_per_req"] = (c1 - c0) / max(1, tp["done"]) * 1000
                tp["cpu_ms_per_req"] = (c1 - c0 + w1 - w0) / max(1, tp["done"]) * 1000  # incl. a writer process
                lat = asyncio.run(open_loop(port, a.rate, a.seconds))
                results[name].append({**tp, **{f"lat_{k}": v for k, v in lat.items()}})
                if name in outs:
                    sent[name] += tp["done"] + lat["ok"]
                print(f"run {run + 1} {name:22s} {tp['rps']:7.0f} req/s  cpu {tp['cpu_ms_per_req']:.2f} ms/req "
                      f"(proxy process {tp['proxy_cpu_ms_per_req']:.2f})  ttft p50 {lat['ttft_p50_ms']:.2f} "
                      f"p99 {lat['ttft_p99_ms']:.2f}  total p50 {lat['total_p50_ms']:.2f} p99 {lat['total_p99_ms']:.2f} ms"
                      f"  errors {tp['errors'] + lat['errors']}", flush=True)
        for name in outs:
            checks[name] = asyncio.run(open_loop(ports[name], a.check_rate, a.check_seconds)) if a.check_seconds > 0 else {"ok": 0}
            sent[name] += checks[name]["ok"]
            print(f"check at {a.check_rate:.0f} req/s through {name}: {checks[name]}", flush=True)
    finally:
        for name in procs:
            if name != "server":
                stop(procs[name])
        stop(procs["server"])
    import duckdb

    statuses = {name: json.loads((out / "recorder_status.json").read_text()) for name, out in outs.items()}
    rows = {name: duckdb.connect().execute(f"select count(*) from read_parquet('{out}/requests/**/*.parquet')").fetchone()[0]
            for name, out in outs.items()}
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in results.items()}
    bare_s = med["mitm-bare-stream"]
    bare_b = med["mitm-bare"]
    rec_names = list(outs)
    recm = med[rec_names[0]]
    per_writer = {
        name: {
            "throughput_cost_vs_bare_stream": 1 - med[name]["rps"] / bare_s["rps"],
            "throughput_cost_vs_bare": 1 - med[name]["rps"] / bare_b["rps"],
            "added_ttft_p50_ms_vs_bare_stream": med[name]["lat_ttft_p50_ms"] - bare_s["lat_ttft_p50_ms"],
            "added_ttft_p99_ms_vs_bare_stream": med[name]["lat_ttft_p99_ms"] - bare_s["lat_ttft_p99_ms"],
            "added_ttft_p99_ms_vs_direct": med[name]["lat_ttft_p99_ms"] - med["direct"]["lat_ttft_p99_ms"],
            "cpu_ms_per_req_minus_bare_stream": med[name]["cpu_ms_per_req"] - bare_s["cpu_ms_per_req"],
            "proxy_process_cpu_ms_per_req_minus_bare_stream": med[name]["proxy_cpu_ms_per_req"] - bare_s["proxy_cpu_ms_per_req"],
        }
        for name in rec_names
    }
    status = statuses[rec_names[0]]
    check = checks.get(rec_names[0], {})
    summary = {
        "per_writer": per_writer,
        "statuses": statuses,
        "recorded_rows_by_writer": rows,
        "checks": checks,
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}, load avg {os.getloadavg()[0]:.1f}",
        "args": vars(a) | {"json": str(a.json) if a.json else None},
        "medians": med,
        "throughput_cost_vs_bare_stream": 1 - recm["rps"] / bare_s["rps"],
        "throughput_cost_vs_bare": 1 - recm["rps"] / bare_b["rps"],
        "added_ttft_p99_ms_vs_bare_stream": recm["lat_ttft_p99_ms"] - bare_s["lat_ttft_p99_ms"],
        "added_ttft_p50_ms_vs_bare_stream": recm["lat_ttft_p50_ms"] - bare_s["lat_ttft_p50_ms"],
        "added_ttft_p99_ms_vs_direct": recm["lat_ttft_p99_ms"] - med["direct"]["lat_ttft_p99_ms"],
        "check": check,
        "recorder_status": status,
        "recorded_rows": rows[rec_names[0]],
        "pipeline_check": pipe,
        "cpu_ms_per_req_recorder_minus_bare_stream": recm["cpu_ms_per_req"] - bare_s["cpu_ms_per_req"],
        "completed_through_recorder": sent,
    }
    print()
    print("| front door | req/s (closed loop) | CPU ms/req (all) | CPU ms/req (proxy process) | TTFT p50 | TTFT p99 | total p50 | total p99 |")
    print("|---|---|---|---|---|---|---|---|")
    for k, m in med.items():
        print(f"| {k} | {m['rps']:.0f} | {m['cpu_ms_per_req']:.2f} | {m['proxy_cpu_ms_per_req']:.2f} | {m['lat_ttft_p50_ms']:.2f} | "
              f"{m['lat_ttft_p99_ms']:.2f} | {m['lat_total_p50_ms']:.2f} | {m['lat_total_p99_ms']:.2f} |")
    print()
    for name, figs in per_writer.items():
        for k, v in figs.items():
            print(f"{name} {k}: {v:.3f}")
    for name in rec_names:
        st = statuses[name]
        submitted = st["submitted"] + st["dropped_queue_full"]
        print(f"{name}: {sent[name]} requests completed by the client, {submitted} exchanges seen, "
              f"{st['dropped_queue_full']} dropped (queue full), {st['dropped_write_failed']} dropped (write), "
              f"{st.get('dropped_writer_died', 0)} lost with a dead writer process, {rows[name]} rows on disk")
    if a.json:
        a.json.write_text(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
