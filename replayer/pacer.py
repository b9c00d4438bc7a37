"""Open-loop timing: waiting in an asyncio loop until an absolute CLOCK_MONOTONIC instant.

Every send time is `start + offset`, fixed before the replay starts; errors never accumulate.
Three strategies (benchmarks/replayer_bench.py measures them; docs/bench/replayer.md has figures):

- "timerfd": an absolute timerfd (CLOCK_MONOTONIC, ns resolution) registered with the loop's
             epoll, armed `lead_us` before the target; the rest of the wait is polled through the
             loop (responses are still handled) until the target. Linux only
             (os.timerfd_create on Python >= 3.13, ctypes before); elsewhere "spin".
- "spin":    asyncio.sleep until `lead_us` before the target, then the same polling. asyncio's
             epoll timeout has 1 ms granularity, so the sleep may end up to ~1 ms late.
- "sleep":   asyncio.sleep(target - now), no polling: a wake-up is typically up to ~1 ms late.

Why the polled lead: a CPU that goes idle until the instant must be woken, and on a virtual
machine that wake-up goes through the hypervisor. On the project's 2-core VM a bare timerfd
sleeper at 1,000 wake-ups/s was 0.34-0.68 ms late at p99 and up to 4.4 ms (a spinning one:
0.00-0.03 ms at p99). Polling the last stretch keeps the CPU awake for it; it costs CPU time,
up to `lead_us` per send (a whole core at 1,000 requests/s with a 1 ms lead).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import time

STRATEGIES = ("timerfd", "spin", "sleep")
CLOCK_MONOTONIC = 1
TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _TimerFd:
    """An absolute one-shot CLOCK_MONOTONIC timer as a readable file descriptor."""

    def __init__(self) -> None:
        flags = os.O_NONBLOCK | os.O_CLOEXEC  # TFD_NONBLOCK / TFD_CLOEXEC have these values
        if hasattr(os, "timerfd_create"):
            self.fd = os.timerfd_create(CLOCK_MONOTONIC, flags=flags)
            self._set = lambda ns: os.timerfd_settime_ns(self.fd, flags=TFD_TIMER_ABSTIME, initial=ns)
            return
        # dlopen(NULL): the process's own symbols, libc's among them; find_library("c") would
        # run `ldconfig -p` in a subprocess on every start.
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.timerfd_create(CLOCK_MONOTONIC, flags)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        self.fd = fd
        settime = libc.timerfd_settime
        settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
        spec = _Itimerspec()
        ref = ctypes.byref(spec)

        def _set(ns: int) -> None:
            spec.it_value.tv_sec, spec.it_value.tv_nsec = divmod(ns, 1_000_000_000)
            if settime(fd, TFD_TIMER_ABSTIME, ref, None) != 0:
                raise OSError(ctypes.get_errno(), "timerfd_settime failed")

        self._set = _set

    def arm(self, ns: int) -> None:
        self._set(ns)

    def drain(self) -> None:
        try:
            os.read(self.fd, 8)
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.fd)


class Pacer:
    """`pacer.wait_until(t_ns)` gives an awaitable that completes at (or just after) the monotonic
    instant t_ns, or None when t_ns has already passed (the caller then sends at once, without
    yielding to the loop)."""

    def __init__(self, strategy: str = "timerfd", lead_us: int = 1000):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown pacing strategy {strategy!r}")
        if lead_us < 0:
            raise ValueError("the polling lead must be 0 or more")
        self.strategy = strategy
        self.lead_ns = lead_us * 1000 if strategy != "sleep" else 0
        self._tfd: _TimerFd | None = None
        self._fut: asyncio.Future | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if strategy == "timerfd":
            try:
                self._tfd = _TimerFd()
            except (OSError, AttributeError):
                self.strategy = "spin"

    def wait_until(self, t_ns: int, poll: bool = True):
        """`poll=False`: no polled lead for this wait (sleep to the instant)."""
        if time.monotonic_ns() >= t_ns:
            return None
        lead = self.lead_ns if poll else 0
        if self.strategy == "timerfd":
            return self._timerfd(t_ns, lead)
        if self.strategy == "spin":
            return self._spin(t_ns, lead)
        return asyncio.sleep((t_ns - time.monotonic_ns()) / 1e9)

    async def _spin(self, t_ns: int, lead: int) -> None:
        now = time.monotonic_ns()
        if t_ns - now > lead:
            await asyncio.sleep((t_ns - now - lead) / 1e9)
        while time.monotonic_ns() < t_ns:
            await asyncio.sleep(0)

    async def _timerfd(self, t_ns: int, lead: int) -> None:
        loop = asyncio.get_running_loop()
        if t_ns - time.monotonic_ns() > lead:
            if self._loop is not loop:  # register once; the reader stays on for the whole replay
                loop.add_reader(self._tfd.fd, self._fired)
                self._loop = loop
            fut = self._fut = loop.create_future()
            self._tfd.arm(t_ns - lead)
            try:
                await fut
            finally:
                self._fut = None
        while time.monotonic_ns() < t_ns:  # the lead, polled (and a guard against clock edge cases)
            await asyncio.sleep(0)

    def _fired(self) -> None:
        self._tfd.drain()
        fut = self._fut
        if fut is not None and not fut.done():
            fut.set_result(None)

    def callbacks(self, loop: asyncio.AbstractEventLoop, cb) -> None:
        """Callback mode (timerfd only): `cb()` runs directly from the loop's epoll dispatch each
        time the timer fires; re-arm with `arm(t_ns)` (the caller polls the lead itself). Saves
        the task wake-up hop of `wait_until`, which queues the sender behind every response
        callback of that iteration."""
        def fired() -> None:
            self._tfd.drain()
            cb()

        loop.add_reader(self._tfd.fd, fired)
        self._loop = loop

    def arm(self, t_ns: int) -> None:
        self._tfd.arm(t_ns)

    def close(self) -> None:
        if self._loop is not None and self._tfd is not None:
            try:
                self._loop.remove_reader(self._tfd.fd)
            except (RuntimeError, ValueError):
                pass
            self._loop = None
        if self._tfd is not None:
            self._tfd.close()
            self._tfd = None
