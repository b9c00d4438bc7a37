"""The sender on its own OS thread, so response handling never holds a send back.

With one asyncio loop doing both, a send that falls due while the loop parses a burst of
responses waits for those callbacks to end (docs/bench/replayer.md: the cause of the remaining
burst lag). Here the loop thread only reads responses; this thread sleeps on a blocking
absolute timerfd and sends each request at `start + offset` itself:

- its scheduler slice is shortened (sched_setattr, unprivileged since Linux 6.12's EEVDF custom
  slices), so on waking it preempts the loop thread at once instead of after the loop's slice;
- while it sends, it keeps the GIL: socket writes go through a libc `write` called without
  releasing it, so the loop thread cannot take the GIL in the middle of a burst;
- the loop thread gets the GIL back within `sys.setswitchinterval` (shortened while sending),
  and gives it up at once when it sees a send due (SendDue.fire = os.sched_yield).

Only the sender writes on an idle connection it claims (under Pool.lock); everything else about
connections (opening, reading, closing, resends) stays on the loop thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Sequence

from .pacer import TimerFd

SLICE_NS = 100_000  # the sender thread's scheduler slice (EEVDF custom slice; 0.1 ms is the minimum)
SWITCH_INTERVAL_S = 0.00005  # GIL switch interval while the sender thread runs (Python's default: 5 ms)
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}.get(platform.machine())


class _SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32), ("flags", ctypes.c_uint64),
                ("nice", ctypes.c_int32), ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64),
                ("util_min", ctypes.c_uint32), ("util_max", ctypes.c_uint32)]


def shorten_slice(ns: int = SLICE_NS) -> bool:
    """Asks the kernel for a short scheduler slice for the calling thread (SCHED_OTHER, same nice).
    False where the kernel or architecture does not offer it; nothing else changes then."""
    if _SCHED_SETATTR is None or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        attr = _SchedAttr(size=ctypes.sizeof(_SchedAttr), policy=0, nice=os.getpriority(os.PRIO_PROCESS, 0),
                          runtime=ns)
        return libc.syscall(_SCHED_SETATTR, 0, ctypes.byref(attr), 0) == 0
    except (OSError, AttributeError):
        return False


def _gil_holding_write() -> Callable[[int, bytes], int]:
    """`write(fd, data) -> bytes written, or -errno`, without releasing the GIL (ctypes.PyDLL)."""
    try:
        w = ctypes.PyDLL(None, use_errno=True).write
    except (OSError, AttributeError):  # pragma: no cover - no libc symbols: plain os.write
        def plain(fd: int, data: bytes) -> int:
            try:
                return os.write(fd, data)
            except OSError as e:
                return -(e.errno or errno.EIO)
        return plain
    w.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    w.restype = ctypes.c_ssize_t
    get_errno = ctypes.get_errno

    def write(fd: int, data: bytes) -> int:
        n = w(fd, data, len(data))
        return n if n >= 0 else -get_errno()
    return write


raw_write = _gil_holding_write()


def unavailable() -> str | None:
    """Why the sender thread cannot run here, or None."""
    if not sys.platform.startswith("linux"):
        return "the sender thread needs Linux (timerfd)"
    try:
        TimerFd(blocking=True).close()
    except (OSError, AttributeError) as e:
        return f"no timerfd: {e}"
    return None


class SenderThread:
    """Calls `send(i, t_ns)` for each i at the monotonic instant `start_ns + offsets[i]`, in order,
    on a thread of its own. `start()` returns a future of the loop that completes when the thread
    has ended (with the thread's exception, if any); `stop()` ends it before its next send."""

    def __init__(self, offsets_ns: Sequence[int], start_ns: int, send: Callable[[int, int], None],
                 loop: asyncio.AbstractEventLoop, due=None):
        self.offsets_ns = offsets_ns
        self.start_ns = start_ns
        self.send = send
        self.loop = loop
        self.due = due  # SendDue: its `ns` is the instant the thread is waiting for (NEVER otherwise)
        self.next = 0  # index of the next request to send
        self.slice_shortened = False
        self._stop = False
        self._tfd = TimerFd(blocking=True)
        self._thread = threading.Thread(target=self._run, name="shadowreplay-sender", daemon=True)
        self._fut: asyncio.Future | None = None

    def start(self) -> asyncio.Future:
        self._fut = self.loop.create_future()
        self._thread.start()
        return self._fut

    def stop(self) -> None:
        self._stop = True
        self._tfd.arm(1)  # an instant long past: a wait in progress returns now

    def join(self) -> None:
        self._thread.join()
        self._tfd.close()

    def _run(self) -> None:
        err: BaseException | None = None
        try:
            self.slice_shortened = shorten_slice()
            self._loop_sends()
        except BaseException as e:  # handed to the loop thread, raised there
            err = e
        try:
            self.loop.call_soon_threadsafe(self._finish, err)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    def _finish(self, err: BaseException | None) -> None:
        fut = self._fut
        if fut is not None and not fut.done():
            if err is None:
                fut.set_result(None)
            else:
                fut.set_exception(err)

    def _loop_sends(self) -> None:
        offs, start, send, tfd, due = self.offsets_ns, self.start_ns, self.send, self._tfd, self.due
        clock = time.monotonic_ns
        never = due.NEVER if due is not None else 0
        for i in range(len(offs)):
            t = start + offs[i]
            if clock() < t:
                if due is not None:
                    due.ns = t
                tfd.arm(t)
                if self._stop:  # checked after arming: a stop() in between re-arms to the past
                    return
                tfd.wait()
                if due is not None:
                    due.ns = never
                if self._stop:
                    return
                while clock() < t:  # a timerfd never fires early; guard against clock edge cases
                    pass
            elif self._stop:
                return
            send(i, t)
            self.next = i + 1
