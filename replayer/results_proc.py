"""The result writer process: `python -m shadowreplay.replayer.results_proc`, started by the replay (sink.py).

It reads length-prefixed marshal messages from stdin and writes OUT/replay_results/ Parquet
files (zstd, via shadowreplay.dataset: temp name, then rename) every `flush_interval_s`, so Arrow
building and compression never take the replay's GIL or delay a send. Messages:

    ("config", {out, run_id, flush_interval_s, manifest (JSON text)[, manifest_name, name_tag, metadata]})   first
    ("plan", static columns)                                             rows.static_columns
    ("start", start_mono_ns, wall_minus_mono_ns)                         before the first row
and row batches (lists of rows.Row of done requests), framed with ROWS_FLAG set in the length:
they are kept as bytes and decoded at the next write, so that taking them in costs a few µs. (The
sender polls the last stretch before each send, so on Linux's EEVDF scheduler even this
SCHED_IDLE process gets the CPU at the next scheduler tick when it has work: it must not have
much then.)

Before a write it prints "F" on stdout (the sender then sleeps between sends instead of polling,
so that the write runs in those gaps and not in stolen ticks); after it, it rewrites
OUT/manifest.json with `rows_flushed` and `flushed_at` and prints one JSON line: {"rows": total
rows written, "files": [paths]}. It answers "R" on stdout once configured. End of input (the
replay closed the pipe, or was killed) means: write what it has, print {"done": total}, exit 0.
SIGINT and SIGTERM are ignored so that Ctrl-C on the terminal's process group cannot cut the last
write short; the replay closes the pipe when it is done.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import marshal
import os
import select
import signal
import struct
import sys
import time
from pathlib import Path

from shadowreplay.errors import ShadowReplayError
from shadowreplay.storage import Location, location, write_atomic

HEADER = struct.Struct(">I")
ROWS_FLAG = 1 << 31  # set in a frame's length: the frame is a marshalled list of rows


def encode(message: tuple) -> bytes:
    data = marshal.dumps(message)
    return HEADER.pack(len(data)) + data


def encode_rows(rows: list) -> bytes:
    data = marshal.dumps(rows)  # ValueError for a value marshal cannot carry
    return HEADER.pack(len(data) | ROWS_FLAG) + data


def write_manifest(out: Location, manifest: dict, name: str = "manifest.json") -> None:
    """Writes OUT/NAME atomically (a sharded replay's is manifests/shard-K-of-N.json); OUT is a
    folder or an s3:// prefix."""
    final = location(out) / name
    if isinstance(final, Path):
        final.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(final, (json.dumps(manifest, indent=2, default=str) + "\n").encode())


class Child:
    def __init__(self) -> None:
        self.buf = bytearray()
        self.config: dict | None = None
        self.static: dict | None = None
        self.start: tuple[int, int] | None = None
        self.pending: list[tuple] = []
        self.batches: list[bytes] = []  # row batches not decoded yet
        self.rows_written = 0
        self.files = 0
        self.manifest: dict | None = None

    def feed(self, data: bytes) -> None:
        self.buf += data
        off = 0
        n = len(self.buf)
        while n - off >= HEADER.size:
            (size,) = HEADER.unpack_from(self.buf, off)
            rows, size = size & ROWS_FLAG, size & ~ROWS_FLAG
            if n - off - HEADER.size < size:
                break
            frame = bytes(self.buf[off + HEADER.size : off + HEADER.size + size])
            off += HEADER.size + size
            if rows:
                self.batches.append(frame)
            else:
                self.handle(marshal.loads(frame))
        del self.buf[:off]

    def handle(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == "rows":
            self.pending.extend(msg[1])
        elif kind == "config":
            self.config = msg[1]
            self.manifest = json.loads(self.config["manifest"])
        elif kind == "plan":
            self.static = msg[1]
            say("R")
        elif kind == "start":
            self.start = (msg[1], msg[2])

    def flush(self) -> None:
        if (not self.pending and not self.batches) or self.config is None or self.static is None or self.start is None:
            return
        say("F")
        for b in self.batches:
            self.pending.extend(marshal.loads(b))
        self.batches = []
        from shadowreplay.dataset import write_table
        from shadowreplay.schema import REPLAY_RESULTS

        from .results import columns_table
        from .rows import columns

        rows, self.pending = self.pending, []
        out = location(self.config["out"])
        table = columns_table(columns(self.static, rows, *self.start))
        try:
            paths = write_table(out, REPLAY_RESULTS, table, extra_metadata=self.config.get("metadata") or {"run_id": self.config["run_id"]},
                                name_tag=self.config.get("name_tag"))
        except Exception as e:  # disk full, permissions: keep the rows and try again next time
            self.pending = rows + self.pending
            say(json.dumps({"error": f"{e.__class__.__name__}: {e}"}))
            return
        self.rows_written += len(rows)
        self.files += len(paths)
        if self.manifest is not None:
            self.manifest["rows_flushed"] = self.rows_written
            self.manifest["flushed_at"] = dt.datetime.now(dt.timezone.utc).isoformat()
            try:
                write_manifest(out, self.manifest, self.config.get("manifest_name") or "manifest.json")
            except (OSError, ShadowReplayError):  # disk full, store unreachable: the next flush rewrites it
                pass
        say(json.dumps({"rows": self.rows_written, "files": [str(p) for p in paths]}))


def say(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass  # the replay is gone: the files are what matters


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        # Runs when a CPU is otherwise idle, and a waking sender preempts it at once (with nice
        # alone the kernel may let it finish its time slice first). Under EEVDF a sender that
        # never sleeps (polling the last stretch before each send) still loses a scheduler tick
        # to it now and then: hence batches taken in undecoded, and "F" before a write.
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.nice(19)
        except OSError:
            pass
    importlib.import_module("shadowreplay.dataset")  # pyarrow's import cost, paid before the replay starts

    child = Child()
    fd = sys.stdin.fileno()
    deadline = None
    while True:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            data = os.read(fd, 1 << 20)
            if not data:
                break
            child.feed(data)
            if deadline is None and child.start is not None:  # intervals count from the start instant
                deadline = time.monotonic() + float(child.config["flush_interval_s"])
        if deadline is not None and time.monotonic() >= deadline:
            child.flush()
            deadline = time.monotonic() + float(child.config["flush_interval_s"])
    child.flush()
    say(json.dumps({"done": child.rows_written}))
    return 1 if child.pending or child.batches else 0


if __name__ == "__main__":
    sys.exit(main())
