"""A one-line live progress display on a terminal (shadowreplay.console); silent when stderr
is not a TTY. With `json_lines`, one JSON object per interval instead ({"progress": snapshot}),
for a parent process that combines the progress of several shards."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable

from shadowreplay.console import StatusLine


class Progress:
    def __init__(self, snapshot: Callable[[], dict], interval_s: float = 0.5, stream=None, force: bool = False,
                 json_lines: bool = False):
        self.snapshot = snapshot
        self.interval_s = interval_s
        self.stream = stream or sys.stderr
        self._line = None if json_lines else StatusLine(self.stream, force=force)
        self.enabled = json_lines or bool(self._line and self._line.enabled)
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
        if self._line is None:
            self.stream.write(json.dumps({"progress": self.snapshot()}) + "\n")
        elif final:
            self._line.close(self.line())
        else:
            self._line.update(self.line())

    def start(self) -> None:
        if self.enabled:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._write(True)
            self.stream.flush()
            self._task = None
