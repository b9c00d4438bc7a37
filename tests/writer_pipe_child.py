"""A small child writer for tests/test_writer_pipe.py, run as `python tests/writer_pipe_child.py`:
it appends each ("line", text) message to the config's file and answers ("flushed", n) to
("flush",) once those n lines are on disk. config["start"]: "ok", "fail" (exit 3 before ready),
"hang" (never ready, never reads)."""

from __future__ import annotations

import sys
import threading

from shadowreplay.writer_pipe import MARSHAL, PICKLE, ParentLink, run_child


def serve(link: ParentLink, config: dict) -> int:
    if config["start"] == "fail":
        return 3
    if config["start"] == "hang":
        threading.Event().wait()
    print("a stray print goes to stderr, not into the replies")
    n = 0
    with open(config["out"], "a", encoding="utf-8") as f:
        link.ready()
        while (msg := link.recv()) is not None:
            if msg[0] == "line":
                f.write(msg[1] + "\n")
                n += 1
            elif msg[0] == "flush":
                f.flush()
                link.reply(("flushed", n))
    return 0


if __name__ == "__main__":
    sys.exit(run_child("test child writer", serve, PICKLE if sys.argv[1] == "pickle" else MARSHAL))
