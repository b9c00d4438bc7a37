"""The replay's results child: `python -m shadowreplay.replayer.results_writer_child`, started by
`ResultsWriter` (results_writer.py) through shadowreplay.writer_pipe.

It takes marshalled messages from the pipe and writes OUT/replay_results/ Parquet files (zstd,
via shadowreplay.dataset: temp name, then rename) every `flush_interval_s`, so Arrow building and
compression never take the replay's GIL or delay a send. Messages:

    {out, run_id, flush_interval_s, manifest (JSON text), plan (rows.static_columns)
     [, manifest_name, name_tag, metadata]}                  the config (first); answered "ready"
    ("start", start_mono_ns, wall_minus_mono_ns)             before the first row
    ("rows", marshalled list of rows.Row)                     rows of done requests

Row batches are kept as bytes and decoded at the next write, so that taking them in costs a few
µs. (The sender polls the last stretch before each send, so on Linux's EEVDF scheduler even this
SCHED_IDLE process gets the CPU at the next scheduler tick when it has work: it must not have
much then.)

Replies: ("flushing",) before a write (the sender then sleeps between sends instead of polling,
so that the write runs in those gaps and not in stolen ticks); after it, OUT/manifest.json is
rewritten with `rows_flushed` and `flushed_at` and ("written", total rows written, [paths]) is
sent, or ("error", text) when the write failed (the rows are kept for the next one). End of
input (the replay closed the pipe, or was killed) means: write what it has, reply ("done",
total), exit 0 (1 when rows could not be written).
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import marshal
import os
import sys
import time
from typing import Any

from shadowreplay.writer_pipe import MARSHAL, ParentLink, run_child
from shadowreplay.errors import ShadowReplayError
from shadowreplay.storage import location

NAME = "result writer process"
CODEC = MARSHAL  # rows are plain values: marshal dumps them about twice as fast as pickle


class ResultsChild:
    def __init__(self, config: dict[str, Any], link: ParentLink | None = None) -> None:
        self.config = config
        self.static: dict = config["plan"]
        self.manifest: dict | None = json.loads(config["manifest"])
        self.link = link
        self.start: tuple[int, int] | None = None
        self.pending: list[tuple] = []
        self.batches: list[bytes] = []  # row batches not decoded yet
        self.rows_written = 0
        self.files = 0

    def say(self, message: tuple) -> None:
        if self.link is not None:
            self.link.reply(message)

    def take(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == "rows":
            self.batches.append(msg[1])
        elif kind == "start":
            self.start = (msg[1], msg[2])

    def flush(self) -> None:
        if (not self.pending and not self.batches) or self.start is None:
            return
        self.say(("flushing",))
        for b in self.batches:
            self.pending.extend(marshal.loads(b))
        self.batches = []
        from shadowreplay.dataset import write_table
        from shadowreplay.schema import REPLAY_RESULTS

        from .results import columns_table, write_manifest
        from .rows import columns

        rows, self.pending = self.pending, []
        out = location(self.config["out"])
        table = columns_table(columns(self.static, rows, *self.start))
        try:
            paths = write_table(out, REPLAY_RESULTS, table, extra_metadata=self.config.get("metadata") or {"run_id": self.config["run_id"]},
                                name_tag=self.config.get("name_tag"))
        except Exception as e:  # disk full, permissions: keep the rows and try again next time
            self.pending = rows + self.pending
            self.say(("error", f"{e.__class__.__name__}: {e}"))
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
        self.say(("written", self.rows_written, [str(p) for p in paths]))


def serve(link: ParentLink, config: dict[str, Any]) -> int:
    try:
        # Runs when a CPU is otherwise idle, and a waking sender preempts it at once (with nice
        # alone the kernel may let it finish its time slice first). Under EEVDF a sender that
        # never sleeps (polling the last stretch before each send) still loses a scheduler tick
        # to it now and then: hence batches taken in undecoded, and "flushing" before a write.
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.nice(19)
        except OSError:
            pass
    importlib.import_module("shadowreplay.dataset")  # pyarrow's import cost, paid before the replay starts
    child = ResultsChild(config, link)
    link.ready()
    interval = float(config["flush_interval_s"])
    deadline = None
    while True:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        if link.poll(timeout):
            msg = link.recv()
            if msg is None:
                break
            child.take(msg)
            if deadline is None and child.start is not None:  # intervals count from the start instant
                deadline = time.monotonic() + interval
        if deadline is not None and time.monotonic() >= deadline:
            child.flush()
            deadline = time.monotonic() + interval
    child.flush()
    child.say(("done", child.rows_written))
    return 1 if child.pending or child.batches else 0


def main() -> int:
    return run_child(NAME, serve, CODEC)


if __name__ == "__main__":
    sys.exit(main())
