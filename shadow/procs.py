"""Every process the demo starts, so that all of them are stopped on success, failure or Ctrl-C.

Each child runs in its own process group (start_new_session): a terminal's Ctrl-C reaches only
the demo, which then stops each group in turn (SIGINT, SIGTERM, SIGKILL)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .engine import STOP_GRACE_S, VllmServer, stop_group


@dataclass
class _Entry:
    name: str
    proc: subprocess.Popen | None = None
    server: VllmServer | None = None


class ProcessSet:
    def __init__(self, grace_s: tuple[float, float] = STOP_GRACE_S) -> None:
        """`grace_s`: how long each process group gets after SIGINT, then after SIGTERM, before SIGKILL."""
        self._items: list[_Entry] = []
        self._lock = threading.Lock()
        self.grace_s = grace_s

    def add_server(self, name: str, server: VllmServer) -> VllmServer:
        with self._lock:
            self._items.append(_Entry(name, server=server))
        return server

    def add(self, name: str, proc: subprocess.Popen) -> subprocess.Popen:
        with self._lock:
            self._items.append(_Entry(name, proc=proc))
        return proc

    def pgids(self) -> list[int]:
        out = []
        for e in self._items:
            p = e.server.proc if e.server else e.proc
            if p is not None:
                out.append(p.pid)
        return out

    def stop(self, name: str) -> None:
        with self._lock:
            found = [e for e in self._items if e.name == name]
            self._items = [e for e in self._items if e.name != name]
        for e in found:
            _stop(e, self.grace_s)

    def stop_all(self) -> None:
        """Stops everything, all groups in parallel (each has its own grace periods)."""
        with self._lock:
            items, self._items = list(reversed(self._items)), []
        threads = [threading.Thread(target=_stop, args=(e, self.grace_s), daemon=True) for e in items]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def _stop(e: _Entry, grace_s: tuple[float, float]) -> None:
    if e.server is not None:
        e.server.stop(grace_s)
    elif e.proc is not None:
        # A child may have started its own process group (`shadowreplay record` runs mitmdump in
        # one): note them first, stop ours (which lets the child shut its own down), then stop
        # whatever is left of theirs.
        others = descendant_groups(e.proc.pid) - {e.proc.pid}
        stop_group(e.proc.pid, e.proc, grace_s=grace_s)
        for pgid in others:
            stop_group(pgid, grace_s=(5.0, 5.0))


def descendant_groups(pid: int) -> set[int]:
    """Process group ids of pid's descendants (read from /proc)."""
    children: dict[int, list[int]] = {}
    pgid: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(d.name))
        pgid[int(d.name)] = int(fields[2])
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(pgid.get(c, c))
            todo.append(c)
    return out


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_as_keyboard_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP end the demo like Ctrl-C does (through the same cleanup)."""
    old = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def no_interrupts() -> Iterator[None]:
    """Cleanup must finish: a second Ctrl-C while stopping is ignored (the stops are bounded)."""
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def signal_handlers_kept() -> Iterator[None]:
    """Puts back SIGINT, SIGTERM and SIGHUP's handlers after code that installs its own: an
    in-process replay's event loop leaves SIGTERM at its default (the process would die without
    its cleanup) when it removes its handlers."""
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.getsignal(s) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            if h is not None:
                signal.signal(s, h)
