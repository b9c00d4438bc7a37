"""The replay itself: one asyncio loop, one sender coroutine that fires each request at
`start + offset` (open loop; it never awaits a response), responses handled in protocol
callbacks, per-request measurements kept in flat lists. Each request's row is handed to the
results writer (results_writer.py) once, after the request is done: completion only queues its index; rows
are built and handed over on a 0.2 s tick, in the gaps of the schedule (never while a send is
due or about to be), so a burst's sends never wait behind result handling."""

from __future__ import annotations

import asyncio
import bisect
import gc
import heapq
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shadowreplay.errors import ConfigError

from .client import Exchange, Pool, SendDue
from .grpc_replay import GrpcChannels, GrpcResult
from .pacer import Pacer
from .plan import Plan
from .progress import Progress

START_LEAD_NS = 100_000_000  # the first send is this far after the start instant is fixed
# With a shared start (--start-at): the pool is warmed this long before it (not earlier: servers
# close idle keep-alive connections after a few seconds), and the shard must be ready at least
# READY_MARGIN_NS before it, else the start is an error rather than a late burst.
WARM_BEFORE_NS = 3_000_000_000
READY_MARGIN_NS = 20_000_000
YIELD_EVERY = 32  # when behind schedule, let the loop handle responses every N sends
SEND_BATCH = 64  # callback sender: most sends per timer firing before the loop reads responses
WARM_WINDOW_NS = 250_000_000  # warm pool size: a request holds a connection at least this long
WARM_MIN, WARM_MAX = 32, 2048
# Connections opened per request the recording had in flight at its peak: a shadow under test is
# often slower than production, and every request that finds no idle connection waits for a
# connect (on a loaded target, milliseconds). An idle connection costs a descriptor and a few kB.
WARM_HEADROOM = 2
ROWS_TICK_S = 0.2  # how often done requests' rows are handed to the sink
ROWS_CHUNK = 32  # rows built and handed over per loop iteration (~50 µs on the 2-core VM)
ROWS_GAP_NS = 300_000  # ... only when the next send is at least this far away
ROWS_MARGIN_NS = 150_000  # ... and only until this long before it
STOP_CHECK_S = 0.5  # how often RunConfig.stop_check is asked whether to end the run early


def warm_size(offsets_ns: list[int], durations_ns: list[int | None] | None = None, window_ns: int = WARM_WINDOW_NS,
              lo: int = WARM_MIN, hi: int = WARM_MAX, headroom: int = WARM_HEADROOM) -> int:
    """How many connections to open before the start instant: `headroom` times the schedule's
    peak number of requests in flight, clamped to [lo, hi], where each request holds its
    connection for its recorded response time (`durations_ns`, e.g. e2e_ms) and at least
    `window_ns`. A burst then finds idle connections instead of queueing behind TCP connects
    (connects were the largest part of burst lag), also when LLM responses stream for seconds and
    keep their connections."""
    peak = 0
    ends: list[int] = []  # min-heap of the instants the requests in flight give their connection back
    for i, t in enumerate(offsets_ns):  # offsets are sorted
        while ends and ends[0] <= t:
            heapq.heappop(ends)
        d = durations_ns[i] if durations_ns is not None else None
        heapq.heappush(ends, t + max(window_ns, d or 0))
        peak = max(peak, len(ends))
    return max(lo, min(hi, peak * headroom))


def allow_open_files(n: int, reserve: int = 256) -> int:
    """Raises the soft open-files limit (often 1024) towards the hard one so that n connections
    fit; returns how many do fit."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return n
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + reserve
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
        except (ValueError, OSError):
            pass
    return n if soft == resource.RLIM_INFINITY else max(1, min(n, soft - reserve))


@dataclass
class RunConfig:
    max_in_flight: int | None = None
    timeout_s: float = 600.0
    pacing: str = "timerfd"
    drain_s: float = 30.0  # after Ctrl-C: how long in-flight requests may finish
    warm_connections: int | None = None  # None: warm_size() of each target's share of the schedule
    gc_off: bool = True  # no cyclic-GC pauses while sending (gc.freeze + gc.disable, restored after)
    progress: bool | None = None  # None: on when stderr is a TTY
    idle_expiry_s: float | None = None  # keep-alive connections idle longer are not reused (None: no limit)
    spin_lead_ns: int = 1_000_000  # wake this long before each send and poll the loop until it (pacer.py)
    # A shared start (`--start-at`, ns since the epoch): offset 0 of the schedule is this wall-clock
    # instant, converted once to CLOCK_MONOTONIC. None: START_LEAD_NS after the pool is warm.
    start_wall_ns: int | None = None
    progress_json: bool = False  # progress as JSON lines on stdout (a shard under `replay --shards N`)
    # Asked every STOP_CHECK_S with the Replayer: a reason (str) ends the run early, as if
    # interrupted, but every request in flight is given up at once (`capacity`: an SLO already broken).
    stop_check: Callable[["Replayer"], str | None] | None = None


@dataclass
class RunOutcome:
    start_mono_ns: int
    wall_minus_mono_ns: int
    sent_ns: list[int]
    cap_delay_ns: list[int]
    first_byte_ns: list[int]
    end_ns: list[int]
    status: list[int | None]
    error: list[str | None]
    token_ns: list[list[int] | None]
    usage: list[dict | None]
    interrupted: bool = False
    interrupted_by: str | None = None
    sent: int = 0
    errors: int = 0
    resent: int = 0  # requests sent again because the target closed their idle connection unanswered
    notes: list[str] = field(default_factory=list)
    fixed_wall_ns: int = 0  # the wall clock when the start instant was fixed
    stopped: str | None = None  # why RunConfig.stop_check ended the run early


class Replayer:
    def __init__(self, plan: Plan, cfg: RunConfig, sink=None):
        """`sink`: gets `started(start_mono_ns, wall_minus_mono_ns)` before the first send, then
        `add(rows)` (lists of rows.Row): one row per request that was sent or failed, after it is
        done, each exactly once. Its `flushing` is read before each wait for a send: while it is
        true the sender sleeps to the instant instead of polling the lead."""
        self.plan = plan
        self.cfg = cfg
        self.sink = sink
        n = len(plan)
        self._row_out = bytearray(n)  # 1 once the request's row went to the sink
        self._done_q: list[int] = []  # requests done, in order; rows of _done_q[:_done_pos] handed over
        self._done_pos = 0
        self._next_send = 0  # index of the next request the sender will send
        self._due = SendDue()  # shared with the pools: response callbacks run a send that is due
        self._sending = False
        self._rows_timer: asyncio.TimerHandle | asyncio.Handle | None = None
        self._start_ns = 0
        self.sent_ns = [0] * n
        self.cap_delay_ns = [0] * n
        self.first_byte_ns = [0] * n
        self.end_ns = [0] * n
        self.status: list[int | None] = [None] * n
        self.error: list[str | None] = [None] * n
        self.token_ns: list[list[int] | None] = [None] * n
        self.usage: list[dict | None] = [None] * n
        self.in_flight = 0
        self.done = 0
        self.sent = 0
        self.errors = 0
        self.last_lag_ms: float | None = None
        self.pools: dict[int, Pool] = {}
        self.grpc = GrpcChannels()
        self.live: dict[int, Exchange] = {}
        self.live_grpc: dict[int, asyncio.Task] = {}
        self._slot = asyncio.Event()
        self._idle = asyncio.Event()
        self.interrupted = False
        self.interrupted_by: str | None = None  # SIGINT or SIGTERM
        self.stopped: str | None = None  # RunConfig.stop_check's reason
        self._sigints = 0
        self._fired_ns: dict[int, int] = {}  # requests waiting for a new connection: when fired
        self.cap_waits: list[tuple[int, int]] = []  # (start, end) of each wait for a free slot
        self._cap_ends: list[int] = []  # the ends of cap_waits (ascending), for bisect
        self._cap_wait_since = 0  # start of the wait in progress, 0 when none
        self.warmed: dict[int, int] = {}  # target index -> connections opened before the start

    # ---- completion ---------------------------------------------------------------------------
    def _done_http(self, ex: Exchange) -> None:
        i = ex.idx
        self.live.pop(i, None)
        self._fired_ns.pop(i, None)
        self.sent_ns[i] = ex.sent_ns
        self.first_byte_ns[i] = ex.first_byte_ns
        self.end_ns[i] = ex.end_ns
        self.status[i] = ex.status
        if ex.error is None and ex.status is not None and ex.status >= 400:
            ex.error = f"HTTP {ex.status}"
        self.error[i] = ex.error
        self.token_ns[i] = ex.token_ns
        self.usage[i] = ex.usage
        self._finished(ex.error is not None)
        self._done_q.append(i)

    def _row(self, i: int):
        """Request i's result row (rows.Row), once; None when already handed over or never sent."""
        if self._row_out[i]:
            return None
        sent = self.sent_ns[i]
        if not sent and self.error[i] is None:
            return None
        self._row_out[i] = 1
        cap = 0
        if self.cap_waits or self._cap_wait_since:
            cap = self.cap_delay_ns[i] = self._cap_delay(i, sent)
        return (i, sent, self.first_byte_ns[i], self.end_ns[i], self.status[i], self.error[i],
                self.token_ns[i], self.usage[i], cap)

    def _rows_tick(self) -> None:
        """Hands the rows of done requests to the sink, ROWS_CHUNK per loop iteration, only in a
        gap of the schedule: while the sender is due (or behind), it comes back after the send."""
        loop = asyncio.get_running_loop()
        q, pos = self._done_q, self._done_pos
        deadline = 0  # stop building rows at this instant (0: no send coming)
        if pos < len(q) and self._sending and not self._cap_wait_since:  # (a capped sender waits anyway)
            nxt = self._next_send
            if nxt < len(self.plan):
                t_send = self._start_ns + self.plan.offsets_ns[nxt]
                wait = t_send - time.monotonic_ns()
                if wait < ROWS_GAP_NS:  # just after that send; when behind, look again in 1 ms
                    self._rows_timer = loop.call_later(wait / 1e9 + 0.0002 if wait > 0 else 0.001, self._rows_tick)
                    return
                deadline = t_send - ROWS_MARGIN_NS
        stop = min(len(q), pos + ROWS_CHUNK)
        rows = []
        end = pos
        clock = time.monotonic_ns
        while end < stop:
            r = self._row(q[end])
            end += 1
            if r is not None:
                rows.append(r)
            if deadline and clock() >= deadline:  # a send is near: the rest after it
                break
        self._done_pos = end
        if rows:
            self.sink.add(rows)
        self._rows_timer = loop.call_soon(self._rows_tick) if end < len(q) else loop.call_later(ROWS_TICK_S, self._rows_tick)

    def _finished(self, failed: bool) -> None:
        self.in_flight -= 1
        self.done += 1
        if failed:
            self.errors += 1
        self._slot.set()
        if self.in_flight == 0:
            self._idle.set()

    # ---- sending ------------------------------------------------------------------------------
    def _fire(self, i: int) -> None:
        plan = self.plan
        self.in_flight += 1
        self._idle.clear()
        if plan.grpc[i] is not None:
            res = GrpcResult()
            task = asyncio.get_running_loop().create_task(self._grpc(i, res))
            self.live_grpc[i] = task
            self.sent_ns[i] = time.monotonic_ns()  # the call is started by the task's first step
            return
        ex = Exchange(i, plan.http[i], self._done_http)
        self.live[i] = ex
        self._fired_ns[i] = time.monotonic_ns()
        self.pools[plan.target_idx[i]].send(ex)
        self.sent_ns[i] = ex.sent_ns  # 0 while queued for a connection; set at completion

    async def _reaper(self) -> None:
        """Times out requests. One sweep every 50 ms instead of a timer per request: a timer
        handle per send costs the sender more than a sweep over the (few) requests in flight."""
        limit = int(self.cfg.timeout_s * 1e9)
        while True:
            await asyncio.sleep(0.05)
            now = time.monotonic_ns()
            for ex in list(self.live.values()):
                t = ex.sent_ns or self._fired_ns.get(ex.idx, now)
                if not ex.end_ns and now - t >= limit:
                    ex.finish(now, f"timeout after {self.cfg.timeout_s:g} s")
                    self._abort_conn_of(ex)

    def _abort_conn_of(self, ex: Exchange) -> None:
        for pool in self.pools.values():
            for c in list(pool.all):
                if c.ex is ex:
                    c.ex = None
                    c.abort()

    async def _grpc(self, i: int, res: GrpcResult) -> None:
        plan = self.plan
        try:
            await self.grpc.call(plan.targets[plan.target_idx[i]], plan.grpc[i], self.cfg.timeout_s, res)
        except asyncio.CancelledError:
            res.error = res.error or "interrupted: no response within the drain time"
            res.end_ns = time.monotonic_ns()
        finally:
            self.live_grpc.pop(i, None)
            if res.sent_ns:
                self.sent_ns[i] = res.sent_ns
            self.first_byte_ns[i] = res.first_ns
            self.end_ns[i] = res.end_ns or time.monotonic_ns()
            self.status[i] = res.code
            self.error[i] = res.error
            self.token_ns[i] = res.msg_ns
            self._finished(res.error is not None)
            self._done_q.append(i)

    def _send_one(self, i: int, target_ns: int) -> None:
        plan = self.plan
        if plan.skip[i] is not None:
            now = time.monotonic_ns()
            self.sent_ns[i] = now
            self.end_ns[i] = now
            self.error[i] = plan.skip[i]
            self.errors += 1
            self.done += 1
            self.sent += 1
            self._done_q.append(i)
            return
        self._fire(i)
        self.sent += 1
        if self.sent_ns[i]:
            self.last_lag_ms = (self.sent_ns[i] - target_ns) / 1e6

    async def _sender(self, start_ns: int) -> None:
        pacer = Pacer(self.cfg.pacing, lead_us=self.cfg.spin_lead_ns // 1000)
        try:
            if pacer.strategy == "timerfd" and self.cfg.max_in_flight is None:
                await self._sender_callbacks(start_ns, pacer)
            else:
                await self._sender_task(start_ns, pacer)
        finally:
            pacer.close()

    async def _sender_callbacks(self, start_ns: int, pacer: Pacer) -> None:
        """Sends from the timerfd's own epoll callback: each firing sends every request that is
        due (at most SEND_BATCH before letting the loop read responses), then re-arms."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        offs = self.plan.offsets_ns
        n = len(offs)
        nxt = 0

        due = self._due
        lead = pacer.lead_ns
        sink = self.sink

        def wake_for(t: int, now: int) -> None:
            if sink is not None and sink.flushing:
                # Sleep to the instant: the writer process gets the gaps (polling, it would get
                # whole scheduler ticks in the middle of a burst).
                pacer.arm(t)
            elif t - now <= lead:
                loop.call_soon(tick)  # the lead: polled through the loop, so the CPU stays awake
            else:
                pacer.arm(t - lead)

        def tick() -> None:
            nonlocal nxt
            due.ns = SendDue.NEVER
            if done.done():
                return
            i = nxt
            now = time.monotonic_ns()
            stop = min(n, i + SEND_BATCH)
            while i < stop:
                t = start_ns + offs[i]
                if t > now:
                    now = time.monotonic_ns()
                    if t > now:
                        break
                self._send_one(i, t)
                i += 1
            nxt = self._next_send = i
            if i >= n:
                done.set_result(None)
            elif i == stop and start_ns + offs[i] <= now:
                loop.call_soon(tick)  # still behind: continue after the loop reads responses
            else:
                due.ns = start_ns + offs[i]
                wake_for(due.ns, now)

        due.fire = tick
        pacer.callbacks(loop, tick)
        if n:
            due.ns = start_ns + offs[0]
            wake_for(due.ns, time.monotonic_ns())
        else:
            done.set_result(None)
        await done

    async def _sender_task(self, start_ns: int, pacer: Pacer) -> None:
        plan = self.plan
        cap = self.cfg.max_in_flight
        offs = plan.offsets_ns
        burst = 0
        sink = self.sink
        for i in range(len(plan)):
            target_ns = start_ns + offs[i]
            w = pacer.wait_until(target_ns, poll=sink is None or not sink.flushing)  # as _sender_callbacks
            if w is not None:
                await w
                burst = 0
            else:
                burst += 1
                if burst >= YIELD_EVERY:
                    burst = 0
                    await asyncio.sleep(0)
            self._next_send = i
            if cap is not None and self.in_flight >= cap:
                t_wait = self._cap_wait_since = time.monotonic_ns()
                while self.in_flight >= cap:
                    self._slot.clear()
                    await self._slot.wait()
                t_end = time.monotonic_ns()
                self.cap_waits.append((t_wait, t_end))
                self._cap_ends.append(t_end)
                self._cap_wait_since = 0
            self._send_one(i, target_ns)

    @property
    def done_order(self) -> list[int]:
        """The indices of the requests done so far, in the order they finished (not a copy)."""
        return self._done_q

    def snapshot(self) -> dict:
        return {"sent": self.sent, "total": len(self.plan), "in_flight": self.in_flight,
                "done": self.done, "errors": self.errors, "lag_ms": self.last_lag_ms}

    def _warm_size(self, ti: int) -> int:
        """Connections to open to target ti before the start: --warm-connections, else warm_size()
        of the target's share of the schedule, with the recorded response times."""
        if self.cfg.warm_connections is not None:
            return self.cfg.warm_connections
        mine = [i for i in range(len(self.plan)) if self.plan.target_idx[i] == ti]
        e2e = self.plan.recorded_e2e_ns
        return warm_size([self.plan.offsets_ns[i] for i in mine], [e2e[i] for i in mine] if e2e else None)

    async def run(self) -> RunOutcome:
        loop = asyncio.get_running_loop()
        for ti, t in enumerate(self.plan.targets):
            if any(self.plan.target_idx[i] == ti and self.plan.http[i] is not None for i in range(len(self.plan))):
                self.pools[ti] = Pool(t, due=self._due, idle_expiry_s=self.cfg.idle_expiry_s)
        sizes = {ti: self._warm_size(ti) for ti in self.pools}
        start_wall = self.cfg.start_wall_ns
        if start_wall is not None:
            wait_ns = start_wall - WARM_BEFORE_NS - time.time_ns()
            if wait_ns > 0:
                await asyncio.sleep(wait_ns / 1e9)
        fit = allow_open_files(sum(sizes.values()))  # descriptors for every pool together
        for ti, pool in self.pools.items():
            self.warmed[ti] = await pool.warm(max(0, min(sizes[ti], fit - sum(self.warmed.values()))))
        self._idle.set()
        gc_was_on = gc.isenabled()
        if self.cfg.gc_off:
            # Everything allocated so far (plan, request bytes) is moved out of the collector's
            # view, and no collection pauses the sender. Restored as soon as sending ends. Done
            # before the readiness check and before the start instant is fixed: a full collection
            # of a large heap can take longer than START_LEAD_NS (it made the first sends of a
            # replay run in pytest 23 ms late, and a --start-at instant pass unnoticed).
            gc.collect()
            gc.freeze()
            gc.disable()
        if start_wall is not None and start_wall - time.time_ns() < READY_MARGIN_NS:
            for pool in self.pools.values():
                pool.close()
            if self.cfg.gc_off:
                gc.unfreeze()
                if gc_was_on:
                    gc.enable()
            late = (time.time_ns() - start_wall) / 1e6
            raise ConfigError(f"this shard was not ready before --start-at (start-up, loading and warming its "
                              f"connections took until {late:+.0f} ms from it); give a later --start-at")
        progress = (Progress(self.snapshot, interval_s=1.0, stream=sys.stdout, json_lines=True) if self.cfg.progress_json
                    else Progress(self.snapshot, force=bool(self.cfg.progress)))
        if self.cfg.progress is False and not self.cfg.progress_json:
            progress.enabled = False
        wall_minus_mono = time.time_ns() - time.monotonic_ns()
        if start_wall is not None:  # converted once: every send instant is on CLOCK_MONOTONIC from here on
            start_ns = self._start_ns = start_wall - wall_minus_mono
        else:
            start_ns = self._start_ns = time.monotonic_ns() + START_LEAD_NS
        fixed_wall = wall_minus_mono + time.monotonic_ns()
        if self.sink is not None:
            self.sink.started(start_ns, wall_minus_mono)
            self._rows_timer = loop.call_later(ROWS_TICK_S, self._rows_tick)
        self._sending = True
        sender = loop.create_task(self._sender(start_ns))

        def on_sigint(signame: str = "SIGINT") -> None:
            self._sigints += 1
            self.interrupted = True
            self.interrupted_by = self.interrupted_by or signame
            if not sender.done():
                sender.cancel()
            elif self._sigints >= 2:
                self._abort_all("interrupted: second Ctrl-C")

        installed = False
        try:
            # SIGTERM (a container stop, kill, a CI timeout) ends the replay like Ctrl-C: sending
            # stops, requests in flight get --drain seconds, every result is written.
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            loop.add_signal_handler(signal.SIGTERM, on_sigint, "SIGTERM")
            installed = True
        except (RuntimeError, ValueError, NotImplementedError):
            pass  # not the main thread: Ctrl-C handling is the caller's business
        progress.start()
        reaper = loop.create_task(self._reaper())
        watcher = loop.create_task(self._watch(sender)) if self.cfg.stop_check is not None else None
        try:
            try:
                await sender
            except asyncio.CancelledError:
                if not (self.interrupted or self.stopped):
                    raise
            finally:
                self._sending = False
                if self.cfg.gc_off:
                    gc.unfreeze()
                    if gc_was_on:
                        gc.enable()
            grace = 0 if self.stopped else self.cfg.drain_s if self.interrupted else self.cfg.timeout_s + 5
            if grace:
                try:
                    await asyncio.wait_for(self._idle.wait(), grace)
                except asyncio.TimeoutError:
                    pass
            self._abort_all(f"stopped early: {self.stopped}" if self.stopped
                            else "interrupted: no response within the drain time" if self.interrupted
                            else "no response when the replay ended")
            if self.live_grpc:
                await asyncio.gather(*self.live_grpc.values(), return_exceptions=True)
        finally:
            reaper.cancel()
            if watcher is not None:
                watcher.cancel()
            if self._rows_timer is not None:
                self._rows_timer.cancel()
            progress.stop()
            if installed:
                loop.remove_signal_handler(signal.SIGINT)
                loop.remove_signal_handler(signal.SIGTERM)
            for pool in self.pools.values():
                pool.close()
            await self.grpc.close()
        # every row not handed over yet (also of requests given up at the end)
        rows = [r for r in map(self._row, self._done_q[self._done_pos:]) if r is not None]
        rows += [r for r in map(self._row, range(len(self.plan))) if r is not None]
        self._done_pos = len(self._done_q)
        if rows and self.sink is not None:
            self.sink.add(rows)
        return RunOutcome(start_ns, wall_minus_mono, self.sent_ns, self.cap_delay_ns, self.first_byte_ns,
                          self.end_ns, self.status, self.error, self.token_ns, self.usage,
                          interrupted=self.interrupted, interrupted_by=self.interrupted_by, sent=self.sent, errors=self.errors,
                          resent=sum(p.resent for p in self.pools.values()), fixed_wall_ns=fixed_wall,
                          stopped=self.stopped)

    async def _watch(self, sender: asyncio.Task) -> None:
        """Ends the run when RunConfig.stop_check gives a reason: stops sending, or, once every
        request is sent, gives up the ones still in flight."""
        check = self.cfg.stop_check
        while True:
            await asyncio.sleep(STOP_CHECK_S)
            why = check(self)
            if why:
                self.stopped = why
                if not sender.done():
                    sender.cancel()
                else:
                    self._abort_all(f"stopped early: {why}")
                return

    def _cap_delay(self, i: int, sent: int) -> int:
        """cap_delay of a request = time the sender spent waiting for a free slot between the
        request's scheduled instant and its send (so requests queued behind a capped one count
        too). Computed when the request is done: every wait that began before its send has
        ended by then, or is the wait in progress."""
        if not sent or not (self.cap_waits or self._cap_wait_since):
            return 0
        sched = self._start_ns + self.plan.offsets_ns[i]
        if sent <= sched:
            return 0
        waits = self.cap_waits
        k = bisect.bisect_right(self._cap_ends, sched)
        total = 0
        while k < len(waits) and waits[k][0] < sent:
            a, b = waits[k]
            total += max(0, min(b, sent) - max(a, sched))
            k += 1
        if self._cap_wait_since and self._cap_wait_since < sent:
            total += max(0, sent - max(self._cap_wait_since, sched))
        return total

    def _abort_all(self, why: str) -> None:
        now = time.monotonic_ns()
        for ex in list(self.live.values()):
            if not ex.end_ns:
                ex.finish(now, why)
                self._abort_conn_of(ex)
        for task in list(self.live_grpc.values()):
            task.cancel()
