"""What the commands draw on a terminal while they work: one status line that rewrites itself
(`StatusLine`), drawn by rich.

The line is redrawn only when the caller says so (rich's `Live` with `auto_refresh=False`): no
drawing thread runs beside the replayer's send loop. Text is shown as given (no rich markup, no
control characters from the data)."""

from __future__ import annotations

import sys
from typing import IO

_CONTROLS = dict.fromkeys([*range(0x20), 0x7F, *range(0x80, 0xA0)], "?")  # C0, DEL, C1: never sent to a terminal


def plain(text: str) -> str:
    """`text` with every control character (ESC included) shown as `?`."""
    return text.translate(_CONTROLS)

from rich.console import Console
from rich.live import Live
from rich.text import Text


def console(stream: IO[str] | None = None, force_terminal: bool | None = None) -> Console:
    """A rich console on `stream` (stderr by default) that takes text literally."""
    return Console(file=stream or sys.stderr, force_terminal=force_terminal, markup=False, highlight=False,
                   emoji=False, soft_wrap=False)


class StatusLine:
    """A live one-line status on a terminal; does nothing when the stream is not one (unless
    `force`). `update(text)` redraws it; `close()` leaves the last text on screen."""

    def __init__(self, stream: IO[str] | None = None, force: bool = False) -> None:
        self.console = console(stream, force_terminal=True if force else None)
        self.enabled = self.console.is_terminal
        self._live: Live | None = None
        self.last = ""

    def update(self, text: str) -> None:
        self.last = text
        if not self.enabled:
            return
        line = Text(plain(text), no_wrap=True, overflow="ellipsis")
        if self._live is None:
            self._live = Live(line, console=self.console, auto_refresh=False, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
        else:
            self._live.update(line, refresh=True)

    def print(self, text: str) -> None:
        """A line of its own above the status line (or on the stream when there is none)."""
        if self._live is not None:
            self.console.print(Text(plain(text)), soft_wrap=True)
        else:  # a terminal gets no control characters either; a file or pipe gets the line as it is
            print(plain(text) if self.enabled else text, file=self.console.file, flush=True)

    def close(self, text: str | None = None) -> None:
        if text is not None:
            self.update(text)
        if self._live is not None:
            self._live.stop()
            self._live = None
