"""Codec benchmark for shadowreplay.writer_pipe: what each user's messages cost to serialize.

    .venv/bin/python benchmarks/writer_pipe_bench.py [--repeat 5] [--number 2000]

Replay: a batch of 32 result rows (runner.ROWS_CHUNK) shaped like a 16-token stream's
(replayer/rows.py), dumped on the sender's loop, with marshal and with pickle. Recorder: a batch
of 64 chat exchanges (record_writer_process.BATCH_MAX) like benchmarks/recorder_bench.py's, dumped by
the feeder thread: pickle (marshal cannot carry objects). Prints the median µs per batch of
`--repeat` timings of `--number` calls each.
"""

from __future__ import annotations

import argparse
import json
import marshal
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any


def timed(f: Callable[[], Any], repeat: int, number: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(number):
            f()
        runs.append((time.perf_counter_ns() - t0) / number / 1000)
    return statistics.median(runs)


def replay_rows(n: int = 32) -> list[tuple]:
    t = 1_700_000_000_000_000_000
    return [(i, t + i, t + i + 5_000_000, t + i + 90_000_000, 200, None,
             [t + i + 5_000_000 + j * 1_000_000 for j in range(16)],
             {"prompt_tokens": 120, "completion_tokens": 16, "total_tokens": 136}, 0) for i in range(n)]


def recorder_exchanges(n: int = 64) -> list[Any]:
    from shadowreplay.recorder.exchange import HttpExchange

    def body(i: int) -> bytes:  # every exchange its own bytes (pickle would share equal objects)
        return json.dumps({"model": "m", "messages": [{"role": "user", "content": f"hello {i} " * 40}], "stream": True}).encode()

    def chunks(i: int) -> list[bytes]:
        return [b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": f"tok{i}.{j}"}}]}).encode() + b"\n\n"
                for j in range(8)] + [b"data: [DONE]\n\n"]

    t = time.time()
    headers = [("host", "127.0.0.1"), ("content-type", "application/json"), ("authorization", "Bearer sk-bench")]
    return [HttpExchange(request_id=f"p{i}", ts_start=t, client_addr="127.0.0.1", method="POST", scheme="http", host="h",
                         port=80, path="/v1/chat/completions", request_headers=headers, request_body=body(i), status=200,
                         response_headers=[("content-type", "text/event-stream")], streamed=True,
                         chunks=[(t + j * 0.0005, c) for j, c in enumerate(chunks(i))], stream_bytes=1200, ts_end=t)
            for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--number", type=int, default=2000)
    a = ap.parse_args()
    rows = replay_rows()
    for name, dumps, loads in (("marshal", marshal.dumps, marshal.loads),
                               ("pickle", lambda o: pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL), pickle.loads)):
        data, inner = dumps(("rows", dumps(rows))), dumps(rows)
        print(f"replay rows x{len(rows)} {name:7s}: dumps {timed(lambda: dumps(('rows', dumps(rows))), a.repeat, a.number):7.1f} µs"
              f"  loads (batch kept undecoded) {timed(lambda: loads(data), a.repeat, a.number):5.2f} µs"
              f"  loads (decoded at the write) {timed(lambda: loads(inner), a.repeat, a.number):7.1f} µs  {len(data)} bytes")
    batch = ("batch", {"submitted": 1}, recorder_exchanges())
    try:
        marshal.dumps(batch)
    except ValueError as e:
        print(f"recorder exchanges x64 marshal: cannot carry them ({e})")
    data = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
    print(f"recorder exchanges x64 pickle : dumps {timed(lambda: pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL), a.repeat, a.number // 10):7.1f} µs"
          f"  loads {timed(lambda: pickle.loads(data), a.repeat, a.number // 10):7.1f} µs  {len(data)} bytes")


if __name__ == "__main__":
    main()
