"""A one-line live progress display on a terminal; silent when stderr is not a TTY. With
`json_lines`, one JSON object per interval instead ({"progress": snapshot}), for a parent
process that combines the progress of several shards."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable


class Progress:
    def __init__(self, snapshot: Callable[[], dict], interval_s: float = 0.5, stream=None, force: bool = False,
                 json_lines: bool = False):
        self.snapshot = snapshot
        self.json_lines = json_lines
        self.interval_s = interval_s
        self.stream = stream or sys.stderr
        self.enabled = force or json_lines or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self._task: asyncio.Task | None = None

    def line(self) -> str:
        s = self.snapshot()
        lag = s.get("lag_ms")
        lag_txt = "-" if lag is None else f"{lag:.2f} ms"
        return (f"sent {s['sent']}/{s['total']}  in flight {s['in_flight']}  done {s['done']}  "
                f"errors {s['errors']}  lag {lag_txt}")

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            self._write(False)
            self.stream.flush()

    def _write(self, final: bool) -> None:
        if self.json_lines:
            self.stream.write(json.dumps({"progress": self.snapshot()}) + "\n")
        else:
            self.stream.write("\r\x1b[2K" + self.line() + ("\n" if final else ""))

    def start(self) -> None:
        if self.enabled:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._write(True)
            self.stream.flush()
            self._task = None
