"""The writer process: `python -m shadowreplay.recorder.writer_proc`, started by the recorder (ProcessWriter).

It reads length-prefixed pickles from stdin (a pipe from the proxy; raw exchanges never touch
disk), scrubs them and writes rotated Parquet files with the ordinary `Writer`. Messages:

    ("config", {...})             first message: WriterConfig fields, RowOptions, key file path
                                  (the path, never the key), counters carried over from an
                                  earlier writer process
    ("batch", counters, [ex...])  exchanges to record, plus the proxy's live counters
    ("flush", counters)           write everything buffered now, then answer b"F" on stdout

Once configured (imports done, key loaded, status file written) it answers b"R" on stdout.

End of input (the proxy closed the pipe, or was killed) means: write everything, exit 0. SIGINT
and SIGTERM are ignored so that Ctrl-C on the terminal's process group cannot cut a flush short;
the proxy closes the pipe when it stops.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import struct
import sys
from typing import Any, BinaryIO

from shadowreplay.errors import ShadowReplayError
from shadowreplay.storage import location

from .writer import HEADER_BYTES_CAP, HEADER_COUNT_CAP, Writer, WriterConfig

log = logging.getLogger("shadowreplay.recorder")

HEADER = struct.Struct(">I")
CHILD_QUEUE = 2048  # exchanges waiting for the scrubber inside the child (back-pressure beyond)
# counters that accumulate across writer processes (the proxy carries them over on a restart)
CARRIED = (
    "rows_written", "files_written", "dropped_write_failed", "write_failed", "output_dir_recreated",
    "headers_over_cap", "convert_failed",
)


def encode(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def read_message(f: BinaryIO) -> Any | None:
    """The next message, or None at end of input (a message cut short counts as the end)."""
    head = f.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (n,) = HEADER.unpack(head)
    data = f.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


class ChildWriter(Writer):
    """The ordinary writer, reporting the proxy's counters (queue drops, restarts) as well."""

    lower_switch_interval = False

    def __init__(self, *args: Any, carried: dict[str, int] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.carried = dict(carried or {})
        self.proxy: dict[str, Any] = {}

    def counters(self) -> dict[str, Any]:
        c = super().counters()
        for k in CARRIED:
            c[k] += int(self.carried.get(k, 0))
        c.update(self.proxy)  # submitted, dropped_queue_full, dropped_writer_died, writer_restarts, proxy errors
        return c

    def status(self) -> dict[str, Any]:
        return {**super().status(), "writer": "process", "writer_alive": True, "writer_pid": os.getpid()}


def serve(inp: BinaryIO, out: BinaryIO) -> int:
    first = read_message(inp)
    if not first or first[0] != "config":
        log.error("recorder writer process: no configuration received; exiting")
        return 2
    cfg = first[1]
    from shadowreplay.anonymize import Scrubber, load_key

    key = load_key(cfg["key_file"])  # the path (or the inherited environment), never argv
    wcfg = WriterConfig(
        out_dir=location(cfg["out_dir"]),
        instance=cfg["instance"],
        rotate_seconds=cfg["rotate_seconds"],
        rotate_bytes=cfg["rotate_bytes"],
        queue_size=CHILD_QUEUE,
        header_count_cap=cfg.get("header_count_cap", HEADER_COUNT_CAP),
        header_bytes_cap=cfg.get("header_bytes_cap", HEADER_BYTES_CAP),
    )
    w = ChildWriter(wcfg, Scrubber(key), cfg["row_options"], carried=cfg.get("carried"))
    w.proxy = dict(cfg.get("proxy") or {})
    w.started_at = cfg.get("started_at", w.started_at)
    w.start()
    out.write(b"R")  # ready: imports done, key loaded, status file written
    out.flush()
    try:
        while True:
            msg = read_message(inp)
            if msg is None:
                break
            if msg[0] == "batch":
                w.proxy = msg[1]
                for ex in msg[2]:
                    w.put(ex)
            elif msg[0] == "flush":
                w.proxy = msg[1]
                w.flush()
                out.write(b"F")
                out.flush()
    finally:
        w.close()
    return 0


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    try:
        return serve(sys.stdin.buffer, sys.stdout.buffer)
    except ShadowReplayError as e:  # e.g. an unreadable key file: a one-line message
        log.error("recorder writer process: %s", e)
        return 1
    except Exception as e:  # never the exception text: it could quote content
        log.error("recorder writer process failed: %s", type(e).__name__)
        return 1


if __name__ == "__main__":
    sys.exit(main())
