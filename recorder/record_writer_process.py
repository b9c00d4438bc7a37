"""The proxy side of the writer process (`shadowreplay_writer=process`): a bounded queue and a
feeder thread that pickles batches of raw exchanges down a pipe to the child
`python -m shadowreplay.recorder.record_writer_child` (started, framed and shut down by
shadowreplay.writer_pipe).

Scrubbing (~1 ms of CPU per chat row) and Parquet encoding then run in another process with its
own GIL, so they no longer stall mitmproxy's event loop; what stays here is `submit` (a
non-blocking put) and pickling about one batch per wake-up in the feeder.

Raw exchanges only ever travel through the pipe. The child gets the key file's path (or inherits
the environment variable), never the key. If the child dies, traffic keeps flowing: the batches
it had not written are counted as `dropped_writer_died`, the status file says `writer_alive:
false` with the exit code, and a new child is started (backing off up to 30 s).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from shadowreplay import fleet
from shadowreplay.writer_pipe import ChildError, ChildProcess, describe_exit
from shadowreplay.errors import ShadowReplayError

from .exchange import RowOptions
from .record_writer import BoundedIntake, WriterConfig, merge_stats, read_status, write_status
from .record_writer_child import CARRIED, CODEC, NAME

log = logging.getLogger("shadowreplay.recorder")

BATCH_MAX = 64  # exchanges per pipe message (pickling a batch holds the GIL: keep it short)
POLL_S = 1.0  # how often an idle feeder checks the child and reports drops
RESTART_MAX_S = 30.0
CHILD_ARGV = ("-m", "shadowreplay.recorder.record_writer_child")
_STOP = object()


class ProcessWriter(BoundedIntake):
    """Same interface as `Writer` (submit, start, flush, close, counters, queued)."""

    def __init__(self, config: WriterConfig, key_file: str | None, options: RowOptions) -> None:
        super().__init__(config.queue_size)
        self.config = config
        self.key_file = key_file
        self.options = options
        self._feeder: threading.Thread | None = None
        self._child: ChildProcess | None = None
        self.started_at = time.time()
        self.dropped_writer_died = 0
        self.dropped_unpicklable = 0
        self.writer_restarts = 0
        self._sent = 0  # exchanges sent to the current child
        self._carried: dict[str, int] = {k: 0 for k in CARRIED}
        self.last_error: str | None = None
        self._closing = False
        self._stats_lock = threading.Lock()
        self._child_stats: dict[str, Any] = {}  # the running child's last ("stats", ...) message
        self._reader: threading.Thread | None = None  # reads the running child's replies
        self._flushed = threading.Event()
        self._stats_base: dict[str, Any] = {}  # added up over the children that have exited

    def start(self) -> "ProcessWriter":
        self.config.out_dir.mkdir(parents=True, exist_ok=True)
        if not self._spawn():
            self._child_died(self._child.returncode if self._child else None)
            self._write_status(alive=False)
        self._feeder = threading.Thread(target=self._run, name="shadowreplay-feeder", daemon=True)
        self._feeder.start()
        return self

    def flush(self, timeout: float = 30.0) -> None:
        done = threading.Event()
        self._q.put(("flush", done))
        done.wait(timeout)

    def close(self, timeout: float = 60.0) -> None:
        """Sends what is queued, closes the pipe and waits (bounded) for the child to write it."""
        t = self._feeder
        if t is None:
            return
        self._feeder = None
        self._closing = True
        self._q.put(_STOP)
        t.join(timeout)
        child = self._child
        if child is None:
            return
        code = child.finish(max(1.0, timeout))  # normally a no-op: the feeder closed its input
        self._join_reader()  # its last figures
        if code is None:
            log.error(
                "recorder: the writer process (pid %d) is still writing after %.0f s; it finishes on its own",
                child.pid,
                timeout,
            )
            return
        child.close()
        if code != 0:
            self._child_died(code)
            self._write_status(alive=False)

    def counters(self) -> dict[str, Any]:
        c: dict[str, Any] = {
            "submitted": self.submitted,
            **self._carried,
            "dropped_queue_full": self.dropped_queue_full,
            "dropped_writer_died": self.dropped_writer_died,
            "dropped_unpicklable": self.dropped_unpicklable,
            "writer_restarts": self.writer_restarts,
            "proxy_errors": self.proxy_errors,
            "upstream_resets": self.upstream_resets,
            "client_disconnects": self.client_disconnects,
            "queued": self.queued,
        }
        st = self._child_status()
        if st:
            for k in CARRIED:
                c[k] = max(c[k], int(st.get(k, 0)))
        return c

    def stats(self) -> dict[str, Any]:
        """The writer processes' figures (Writer.stats), added up over every child so far."""
        with self._stats_lock:
            return merge_stats(self._stats_base, self._child_stats)

    @property
    def alive(self) -> bool:
        child = self._child
        return child is not None and child.returncode is None

    # --- feeder thread ---
    def _read_replies(self, child: ChildProcess) -> None:
        """The reader thread of one child: its ("stats", ...) figures and ("flushed",) answers,
        read as they come, so that the child never waits on a full pipe back to us."""
        while (msg := child.recv()) is not None:
            if isinstance(msg, tuple) and msg and msg[0] == "stats" and isinstance(msg[1], dict):
                with self._stats_lock:
                    self._child_stats = msg[1]
            elif msg == ("flushed",):
                self._flushed.set()
        self._flushed.set()  # the child is gone: nobody waits for a flush that cannot come

    def _join_reader(self, timeout: float = 5.0) -> None:
        r, self._reader = self._reader, None
        if r is not None:
            r.join(timeout)

    def _proxy_counters(self) -> dict[str, Any]:
        return {
            "submitted": self.submitted,
            "dropped_queue_full": self.dropped_queue_full,
            "dropped_writer_died": self.dropped_writer_died,
            "dropped_unpicklable": self.dropped_unpicklable,
            "writer_restarts": self.writer_restarts,
            "writer_last_exit": self.last_error,
            "proxy_errors": self.proxy_errors,
            "upstream_resets": self.upstream_resets,
            "client_disconnects": self.client_disconnects,
        }

    def _spawn(self) -> bool:
        """Starts a child and waits (bounded) until it is ready, so that its start-up (imports,
        ~1 s of CPU) is over before traffic is measured; False when it did not come up."""
        self._child = child = ChildProcess(f"the {NAME}", CHILD_ARGV, CODEC)
        self._sent = 0
        config = {
            "out_dir": str(self.config.out_dir),
            "instance": self.config.instance,
            "upstream": self.config.upstream,
            "rotate_seconds": self.config.rotate_seconds,
            "rotate_bytes": self.config.rotate_bytes,
            "header_count_cap": self.config.header_count_cap,
            "header_bytes_cap": self.config.header_bytes_cap,
            "key_file": self.key_file,
            "row_options": self.options,
            "carried": dict(self._carried),
            "proxy": self._proxy_counters(),
            "started_at": self.started_at,
            "file_metadata": dict(self.config.file_metadata),
        }
        try:
            child.start(config)
            self._flushed.clear()
            self._reader = threading.Thread(target=self._read_replies, args=(child,), name="shadowreplay-writer-replies",
                                            daemon=True)  # fmt: skip
            self._reader.start()
            return True
        except ChildError as e:
            self.last_error = str(e)
            log.error("recorder: %s", e)
            if child.proc is None:  # never started: nothing died, nothing to count
                self._child = None
            return False

    def _encode_batch(self, batch: list[Any]) -> bytes:
        """The batch message; an exchange that cannot be pickled (a bug in another addon's
        exchange type) is dropped and counted rather than taking the batch down with it."""
        encode = CODEC.dumps
        try:
            return encode(("batch", self._proxy_counters(), batch))
        except Exception:
            ok = []
            for ex in batch:
                try:
                    encode(ex)
                    ok.append(ex)
                except Exception as e:
                    self.dropped_unpicklable += 1
                    self._sent -= 1
                    log.error("recorder: an exchange could not be sent to the writer process (%s); dropped", type(e).__name__)
            return encode(("batch", self._proxy_counters(), ok))

    def _send(self, message: Any) -> bool:
        child = self._child
        if child is None:
            return False
        return child.send_bytes(message if isinstance(message, bytes) else CODEC.dumps(message))

    def _child_status(self) -> dict[str, Any] | None:
        try:
            st = read_status(self.config.out_dir, self.config.instance)
        except (OSError, ValueError, ShadowReplayError):  # missing, being replaced, store unreachable
            return None
        return st if st.get("writer") == "process" else None

    def _child_died(self, code: int | None) -> None:
        """Counts what the dead child had not written, carries its counters over."""
        self._join_reader()
        with self._stats_lock:
            self._stats_base = merge_stats(self._stats_base, self._child_stats)
            self._child_stats = {}
        st = self._child_status() or {}
        written = 0
        for k in CARRIED:
            total = int(st.get(k, self._carried[k]))
            if k in ("rows_written", "dropped_write_failed"):
                written += total - self._carried[k]
            self._carried[k] = max(self._carried[k], total)
        lost = max(0, self._sent - written)
        self.dropped_writer_died += lost
        self._sent = 0
        self.last_error = f"writer process {describe_exit(code)}"
        log.error(
            "recorder: the writer process exited (it %s); %d records lost with it, %d in total; traffic is not affected",
            describe_exit(code),
            lost,
            self.dropped_writer_died,
        )
        if self._child is not None:
            self._child.close()
        self._child = None
        fleet.clear_status_temporaries(self.config.out_dir, self.config.instance)

    def _check_child(self, backoff: list[float]) -> bool:
        """True when a child is running (restarting a dead one when its back-off has passed)."""
        child = self._child
        if child is not None and child.returncode is None:
            return True
        if child is not None:
            self._child_died(child.wait(None))
            self._write_status(alive=False)
            backoff[1] = time.monotonic() + backoff[0]
        if time.monotonic() < backoff[1]:
            return False
        self.writer_restarts += 1  # before the spawn: the new child's status file reports it
        if not self._spawn():
            if self._child is not None:
                self._child_died(self._child.wait(None))
                self._write_status(alive=False)
            backoff[0] = min(RESTART_MAX_S, backoff[0] * 2)
            backoff[1] = time.monotonic() + backoff[0]
            return False
        backoff[0] = min(RESTART_MAX_S, backoff[0] * 2)
        log.warning("recorder: writer process restarted (%d restarts)", self.writer_restarts)
        return True

    def _run(self) -> None:
        while True:  # the feeder must outlive any bug: a dead feeder would silently stop recording
            try:
                self._loop()
                return
            except Exception as e:
                log.error("recorder: feeder error (%s); continuing", type(e).__name__)
                time.sleep(0.1)

    def _loop(self) -> None:
        backoff = [0.5, 0.0]  # [next delay, restart not before (monotonic)]
        pending: Any = None  # an item taken from the queue that could not be sent yet
        while True:
            item = pending
            pending = None
            if item is None:
                try:
                    item = self._q.get(timeout=POLL_S)
                except queue.Empty:
                    self._report_drops()
                    self._check_child(backoff)
                    continue
            if item is _STOP:
                self._send(("batch", self._proxy_counters(), []))
                if self._child is not None:
                    self._child.close_input()  # end of input: the child writes everything and exits
                return
            if not self._check_child(backoff):
                # no child (backing off): keep the item, let the bounded queue absorb (and count)
                if isinstance(item, tuple) and item and item[0] == "flush":
                    item[1].set()
                else:
                    pending = item
                    time.sleep(0.05)
                continue
            if isinstance(item, tuple) and item and item[0] == "flush":
                self._flush_child(item[1])
                continue
            batch = [item]
            while len(batch) < BATCH_MAX:
                try:
                    nxt = self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP or (isinstance(nxt, tuple) and nxt and nxt[0] == "flush"):
                    pending = nxt
                    break
                batch.append(nxt)
            self._sent += len(batch)
            if not self._send(self._encode_batch(batch)):
                self._check_child(backoff)  # counts the batch (it is in _sent) with the child's loss
            self._report_drops()

    def _flush_child(self, done: threading.Event) -> None:
        child = self._child
        self._flushed.clear()
        if child is not None and self._send(("flush", self._proxy_counters())):
            while not self._flushed.wait(0.5) and child.returncode is None:  # set when written, or the child died
                pass
        done.set()

    def _write_status(self, alive: bool) -> None:
        write_status(
            self.config.out_dir,
            {
                **self.counters(),
                "writer": "process" if alive else "process-dead",
                "writer_alive": alive,
                "started_at": self.started_at,
                "updated_at": time.time(),
                "last_error": self.last_error,
                "out_dir": str(self.config.out_dir),
                "instance": self.config.instance,
            },
            self.config.instance,
        )
