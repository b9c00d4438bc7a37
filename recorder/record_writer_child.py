"""The recorder's writer child: `python -m shadowreplay.recorder.record_writer_child`, started by
`ProcessWriter` (record_writer_process.py) through shadowreplay.writer_pipe.

It takes pickled messages from the pipe (raw exchanges never touch disk), scrubs them and writes
rotated Parquet files with the ordinary `Writer`. Messages:

    {...}                         the config (first): WriterConfig fields, RowOptions, key file path
                                  (the path, never the key), counters carried over from an
                                  earlier writer process; answered with the ready message once
                                  imports are done, the key loaded and the status file written
    ("batch", counters, [ex...])  exchanges to record, plus the proxy's live counters
    ("flush", counters)           write everything buffered now, then answer ("flushed",)

Besides ("flushed",), the child sends ("stats", Writer.stats()) after each file it writes and at
most every STATS_EVERY_S while batches arrive: the proxy serves them as the recorder's metrics.

End of input (the proxy closed the pipe, or was killed) means: write everything, exit 0.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from shadowreplay.writer_pipe import PICKLE, ParentLink, run_child
from shadowreplay.storage import location

from .record_writer import HEADER_BYTES_CAP, HEADER_COUNT_CAP, Writer, WriterConfig

NAME = "recorder writer process"
CODEC = PICKLE  # exchanges are objects: marshal cannot carry them
STATS_EVERY_S = 1.0
CHILD_QUEUE = 2048  # exchanges waiting for the scrubber inside the child (back-pressure beyond)
# counters that accumulate across writer processes (the proxy carries them over on a restart)
CARRIED = (
    "rows_written", "files_written", "dropped_write_failed", "write_failed", "output_dir_recreated",
    "headers_over_cap", "convert_failed",
)


class ChildWriter(Writer):
    """The ordinary writer, reporting the proxy's counters (queue drops, restarts) as well."""

    lower_switch_interval = False

    def __init__(self, *args: Any, carried: dict[str, int] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.carried = dict(carried or {})
        self.proxy: dict[str, Any] = {}
        self.link: ParentLink | None = None
        self._stats_at = 0.0

    def send_stats(self) -> None:
        if self.link is not None:
            self._stats_at = time.monotonic()
            self.link.reply(("stats", self.stats()))

    def on_written(self) -> None:
        self.send_stats()

    def maybe_send_stats(self) -> None:
        if time.monotonic() - self._stats_at >= STATS_EVERY_S:
            self.send_stats()

    def counters(self) -> dict[str, Any]:
        c = super().counters()
        for k in CARRIED:
            c[k] += int(self.carried.get(k, 0))
        c.update(self.proxy)  # submitted, dropped_queue_full, dropped_writer_died, writer_restarts, proxy errors
        return c

    def status(self) -> dict[str, Any]:
        return {**super().status(), "writer": "process", "writer_pid": os.getpid()}  # writer_alive: False as it stops


def serve(link: ParentLink, cfg: dict[str, Any]) -> int:
    from shadowreplay.anonymize import Scrubber, load_key

    key = load_key(cfg["key_file"])  # the path (or the inherited environment), never argv
    wcfg = WriterConfig(
        out_dir=location(cfg["out_dir"]),
        instance=cfg["instance"],
        upstream=cfg.get("upstream", ""),
        rotate_seconds=cfg["rotate_seconds"],
        rotate_bytes=cfg["rotate_bytes"],
        queue_size=CHILD_QUEUE,
        header_count_cap=cfg.get("header_count_cap", HEADER_COUNT_CAP),
        header_bytes_cap=cfg.get("header_bytes_cap", HEADER_BYTES_CAP),
        file_metadata=dict(cfg.get("file_metadata") or {}),
    )
    w = ChildWriter(wcfg, Scrubber(key), cfg["row_options"], carried=cfg.get("carried"))
    w.proxy = dict(cfg.get("proxy") or {})
    w.started_at = cfg.get("started_at", w.started_at)
    w.start()
    link.ready()
    w.link = link
    try:
        while (msg := link.recv()) is not None:
            if msg[0] == "batch":
                w.proxy = msg[1]
                for ex in msg[2]:
                    w.put(ex)
                w.maybe_send_stats()
            elif msg[0] == "flush":
                w.proxy = msg[1]
                w.flush()
                link.reply(("flushed",))
    finally:
        w.close()
        w.send_stats()  # the last figures (the proxy reads them when the pipe is still open)
    return 0


def main() -> int:
    return run_child(NAME, serve, CODEC)


if __name__ == "__main__":
    sys.exit(main())
