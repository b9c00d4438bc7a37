"""The recorder's writer: a bounded queue drained by one thread that converts exchanges to rows
(scrubbing them), buffers rows, and writes rotated Parquet files into DIR/requests/.

The proxy side only calls `submit`, which never blocks: when the queue is full the record is
dropped and counted; proxy errors (upstream resets, client disconnects) are counted there too.
Write failures (disk full, permissions) drop the buffered rows and are counted too; an output
folder removed while recording is created again and counted; headers over the caps are not kept
(the row says so). Traffic is never affected. Counters go to the log, to the instance's status
object DIR/recorder_status/INSTANCE.json (shadowreplay.fleet), and into every file's Parquet
metadata. DIR is a local folder or an s3:// prefix; the instance id is in every file's name.
"""

from __future__ import annotations

import bisect
import logging
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowreplay import fleet
from shadowreplay.anonymize.extras import scrub_metadata
from shadowreplay.dataset import rows_to_table, write_table
from shadowreplay.errors import ShadowReplayError
from shadowreplay.schema import REQUESTS
from shadowreplay.storage import Location

from .exchange import Exchange, RowOptions, fallback_row, proxy_error_kind
from .options import default

if TYPE_CHECKING:
    from shadowreplay.anonymize import Scrubber

log = logging.getLogger("shadowreplay.recorder")

STATUS_FILE = fleet.LEGACY_STATUS_FILE
SWITCH_INTERVAL_S = 0.0005
_STOP = object()
_FLUSH = object()

# Hostile-input caps on one message's headers (request or response), the defaults of the options
# shadowreplay_header_count_cap / shadowreplay_header_bytes_cap. Size = name + value + 4 bytes a
# header (": " and CRLF, as on the wire).
HEADER_COUNT_CAP: int = default("header_count_cap")
HEADER_BYTES_CAP: int = default("header_bytes_cap")
# Over a cap only these are kept (first of each name, value cut), so the row can still decode the
# body and derive client_id; every other header is dropped before scrubbing.
KEPT_OVER_CAP = (
    "content-type", "content-encoding", "user-agent", "authorization", "x-api-key", "api-key",
    "openai-api-key", "grpc-encoding", "grpc-status", "grpc-message",
)
KEPT_VALUE_CHARS = 1024


def cap_headers(pairs: list[tuple[str, str]], count_cap: int, bytes_cap: int) -> tuple[list[tuple[str, str]], str | None]:
    """(headers, None) within the caps; over one: (the few the row needs, why)."""
    n = len(pairs)
    if n <= count_cap:
        size = 0
        for k, v in pairs:
            size += len(k) + len(v) + 4
        if size <= bytes_cap:
            return pairs, None
    else:
        size = sum(len(k) + len(v) + 4 for k, v in pairs)
    kept: list[tuple[str, str]] = []
    seen: set[str] = set()
    for k, v in pairs:
        lk = k.lower()
        if lk in KEPT_OVER_CAP and lk not in seen:
            seen.add(lk)
            kept.append((k, v[:KEPT_VALUE_CHARS]))
    return kept, f"{n} headers / {size} bytes over the cap ({count_cap} / {bytes_cap}), not kept"


@dataclass
class WriterConfig:
    out_dir: Location  # a local Path or an S3Path
    rotate_seconds: float = default("rotate_seconds")
    rotate_bytes: int = default("rotate_bytes")  # estimated in-memory size of buffered rows
    queue_size: int = default("queue_size")
    header_count_cap: int = HEADER_COUNT_CAP
    header_bytes_cap: int = HEADER_BYTES_CAP
    instance: str = field(default_factory=fleet.default_instance)  # in file names and the status object's name
    upstream: str = ""  # the proxy's upstream URL(s), comma-separated: in every file's metadata (replayer/safety.py)
    file_metadata: dict[str, str] = field(default_factory=dict)  # fixed keys for every file (the sample rate)


# Upper bounds (seconds) of the scrub-time histogram's buckets (`shadowreplay_scrub_seconds`).
SCRUB_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class Histogram:
    """Counts per bucket and a sum, as Prometheus' histogram has them; plain numbers, so that the
    writer process can send them to the proxy that serves the metrics."""

    __slots__ = ("buckets", "counts", "total")

    def __init__(self, buckets: tuple[float, ...] = SCRUB_BUCKETS) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)  # the last one: above every bound
        self.total = 0.0

    def observe(self, v: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, v)] += 1
        self.total += v

    def snapshot(self) -> dict[str, Any]:
        return {"buckets": self.buckets, "counts": list(self.counts), "sum": self.total}


def _row_size(row: dict[str, Any]) -> int:
    n = 200
    for k in ("request_body", "response_text", "request_headers"):
        v = row.get(k)
        if v:
            n += len(v)
    itl = row.get("itl_ms")
    if itl:
        n += 8 * len(itl)
    return n


class BoundedIntake:
    """The proxy side shared by both writers: a bounded queue that `submit` never blocks on; a
    record that does not fit is dropped and counted, and new drops are logged once per check."""

    def __init__(self, queue_size: int) -> None:
        self._q: queue.Queue = queue.Queue(maxsize=queue_size)
        self._queue_size = queue_size
        self.submitted = 0  # submitted/dropped_queue_full are touched by the proxy thread only
        self.dropped_queue_full = 0
        self._reported_drops = 0
        # proxy errors of submitted exchanges (counted whether or not the queue had room)
        self.proxy_errors = 0
        self.upstream_resets = 0
        self.client_disconnects = 0

    def _count_proxy_error(self, exchange: Any) -> None:
        err = getattr(exchange, "error", None)
        if not isinstance(err, str) or not err.startswith("proxy:"):
            return
        self.proxy_errors += 1
        kind = proxy_error_kind(err, getattr(exchange, "status", None))
        if kind == "client":
            self.client_disconnects += 1
        elif kind == "upstream":
            self.upstream_resets += 1

    def submit(self, exchange: Exchange) -> bool:
        self._count_proxy_error(exchange)
        try:
            self._q.put_nowait(exchange)
        except queue.Full:
            self.dropped_queue_full += 1
            return False
        self.submitted += 1
        return True

    @property
    def queued(self) -> int:
        return self._q.qsize()

    def _report_drops(self) -> None:
        if self.dropped_queue_full > self._reported_drops:
            log.warning("recorder: %d records dropped so far because the queue (%d) was full",
                        self.dropped_queue_full, self._queue_size)
            self._reported_drops = self.dropped_queue_full


class Writer(BoundedIntake):
    lower_switch_interval = True  # False where no event loop shares this process (writer process)

    def __init__(self, config: WriterConfig, scrubber: Scrubber, options: RowOptions) -> None:
        super().__init__(config.queue_size)
        self.config = config
        self.scrubber = scrubber
        self.options = options
        self._thread: threading.Thread | None = None
        self._stopping = False  # close() was called: the next status is the last
        self._lock = threading.Lock()
        self.started_at = time.time()
        self.dropped_write_failed = 0
        self.write_failed = 0  # write attempts that failed (each drops its rows)
        self.output_dir_recreated = 0
        self.headers_over_cap = 0
        self.convert_failed = 0
        self.rows_written = 0
        self.files_written = 0
        self.bytes_written = 0
        self.scrub_seconds = Histogram()
        self.last_error: str | None = None

    def put(self, exchange: Any, timeout: float | None = None) -> None:
        """Queues an exchange, waiting while the queue is full (the writer process's reader uses
        this: back-pressure goes to the pipe, and from there to the proxy's bounded queue). Proxy
        errors were counted by the proxy's submit already."""
        self._q.put(exchange, timeout=timeout)
        self.submitted += 1

    def start(self) -> "Writer":
        # The writer thread shares the GIL with mitmproxy's event loop. With CPython's default
        # 5 ms switch interval a busy writer delays each wake-up of the loop (a streamed chunk,
        # a new request) by up to 5 ms; 0.5 ms bounds that delay at a small cost in switches.
        if self.lower_switch_interval and sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.config.out_dir.mkdir(parents=True, exist_ok=True)
        self._write_status()
        self._thread = threading.Thread(target=self._run, name="shadowreplay-writer", daemon=True)
        self._thread.start()
        return self

    def flush(self, timeout: float = 30.0) -> None:
        """Writes what is queued and buffered now (blocks until done or timeout)."""
        done = threading.Event()
        self._q.put((_FLUSH, done))
        done.wait(timeout)

    def close(self, timeout: float = 60.0) -> None:
        """Drains the queue, writes everything, updates the status file. Idempotent."""
        t = self._thread
        if t is None:
            return
        self._thread = None
        self._stopping = True
        self._q.put(_STOP)  # blocking put: the stop marker must get in even when the queue is full
        t.join(timeout)
        if t.is_alive():
            log.error("recorder: writer did not finish within %.0f s; unwritten rows are lost", timeout)

    # --- writer thread ---
    def _run(self) -> None:
        rows: list[dict[str, Any]] = []
        size = 0
        window_start: float | None = None
        while True:
            timeout = None
            if window_start is not None:
                timeout = max(0.0, window_start + self.config.rotate_seconds - time.monotonic())
            try:
                item = self._q.get(timeout=timeout)
            except queue.Empty:
                item = None
            if item is _STOP:
                self._flush(rows)
                self._write_status()
                return
            if isinstance(item, tuple) and item and item[0] is _FLUSH:
                self._flush(rows)
                rows, size, window_start = [], 0, None
                self._write_status()
                item[1].set()
                continue
            if item is not None:
                row = self._convert(item)
                if row is not None:
                    if window_start is None:
                        window_start = time.monotonic()
                    rows.append(row)
                    size += _row_size(row)
            due = window_start is not None and (
                size >= self.config.rotate_bytes or time.monotonic() - window_start >= self.config.rotate_seconds
            )
            if due:
                self._flush(rows)
                rows, size, window_start = [], 0, None
                self._write_status()

    def _cap_headers(self, ex: Any) -> None:
        """Headers over a cap are replaced by the few the row needs, before any scrubbing; the
        exchange's error says so."""
        notes = []
        for attr, what in (("request_headers", "request headers"), ("response_headers", "response headers")):
            pairs = getattr(ex, attr, None)
            if isinstance(pairs, list) and pairs:
                kept, why = cap_headers(pairs, self.config.header_count_cap, self.config.header_bytes_cap)
                if why:
                    setattr(ex, attr, kept)
                    notes.append(f"{what}: {why}")
        if not notes:
            return
        self.headers_over_cap += 1
        note = "; ".join(notes)
        if isinstance(getattr(ex, "errors", None), list):  # GrpcExchange
            ex.errors = [*ex.errors, note]
        elif hasattr(ex, "error"):
            ex.error = f"{ex.error}; {note}" if ex.error else note

    def _convert(self, ex: Any) -> dict[str, Any] | None:
        try:
            t0 = time.perf_counter()
            self._cap_headers(ex)
            row = ex.to_row(self.scrubber, self.options)
            self.scrub_seconds.observe(time.perf_counter() - t0)
            return row
        except Exception as e:  # a bug in conversion must not stop recording
            self.convert_failed += 1
            log.error("recorder: could not convert an exchange (%s); recorded without content", type(e).__name__)
            return fallback_row(ex, self.options, e)

    def counters(self) -> dict[str, Any]:
        return {
            "submitted": self.submitted,
            "rows_written": self.rows_written,
            "files_written": self.files_written,
            "dropped_queue_full": self.dropped_queue_full,
            "dropped_write_failed": self.dropped_write_failed,
            "write_failed": self.write_failed,
            "output_dir_recreated": self.output_dir_recreated,
            "headers_over_cap": self.headers_over_cap,
            "convert_failed": self.convert_failed,
            "proxy_errors": self.proxy_errors,
            "upstream_resets": self.upstream_resets,
            "client_disconnects": self.client_disconnects,
            "queued": self.queued,
        }

    def _ensure_out_dir(self) -> None:
        """Creates the output folder again when it was removed (or moved away) while recording;
        counted and logged. Raises OSError when it cannot. (An s3:// prefix needs no making.)"""
        d = self.config.out_dir
        if not isinstance(d, Path) or d.is_dir():
            return
        d.mkdir(parents=True, exist_ok=True)
        self.output_dir_recreated += 1
        log.warning("recorder: the output folder %s had gone; created it again (%d times)", d, self.output_dir_recreated)

    def _flush(self, rows: list[dict[str, Any]]) -> None:
        self._report_drops()
        if not rows:
            return
        try:
            self._ensure_out_dir()
            table = rows_to_table(rows, REQUESTS)
            meta = {f"recorder.{k}": v for k, v in self.counters().items()}
            meta["recorder.instance"] = self.config.instance
            if self.config.upstream:
                meta["recorder.upstream"] = self.config.upstream
            meta.update(self.config.file_metadata)
            meta.update(scrub_metadata())
            paths = write_table(self.config.out_dir, REQUESTS, table, extra_metadata=meta, name_tag=self.config.instance)
        except Exception as e:  # write_table removes its temporary file: no partial file remains
            self.dropped_write_failed += len(rows)
            self.write_failed += 1
            self.last_error = f"{type(e).__name__}: {e}"[:300]  # rows are scrubbed already
            log.error("recorder: could not write %d rows (%s); %d dropped in total", len(rows), self.last_error, self.dropped_write_failed)
            return
        self.rows_written += len(rows)
        self.files_written += len(paths)
        self.bytes_written += sum(_size(p) for p in paths)
        self.on_written()

    def on_written(self) -> None:
        """Called in the writer thread after each file written (the writer process reports its
        figures to the proxy from here)."""

    def stats(self) -> dict[str, Any]:
        """This writer's own figures for the recorder's metrics (not carried over from earlier
        writer processes: the proxy adds those up)."""
        return {
            "rows_written": self.rows_written,
            "files_written": self.files_written,
            "bytes_written": self.bytes_written,
            "dropped_write_failed": self.dropped_write_failed,
            "write_failed": self.write_failed,
            "convert_failed": self.convert_failed,
            "queued": self.queued,
            "scrub_seconds": self.scrub_seconds.snapshot(),
        }

    def status(self) -> dict[str, Any]:
        return {
            **self.counters(),
            "writer": "thread",
            "writer_alive": not self._stopping,  # False in the status written as it stops
            "instance": self.config.instance,
            "started_at": self.started_at,
            "updated_at": time.time(),
            "last_error": self.last_error,
            "out_dir": str(self.config.out_dir),
        }

    def _write_status(self) -> None:
        try:
            self._ensure_out_dir()
        except OSError as e:
            log.error("recorder: cannot create %s (%s)", self.config.out_dir, e)
            return
        fleet.write_status(self.config.out_dir, self.config.instance, self.status())


def merge_stats(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two writers' `stats()` added up (a writer process and the ones before it); `queued` is b's."""
    out = dict(a)
    for k, v in b.items():
        if k == "scrub_seconds":
            old = a.get(k)
            if old and len(old["counts"]) == len(v["counts"]):
                v = {**v, "counts": [x + y for x, y in zip(old["counts"], v["counts"])], "sum": old["sum"] + v["sum"]}
            out[k] = v
        elif k == "queued":
            out[k] = v
        else:
            out[k] = out.get(k, 0) + v
    return out


def _size(path: Location) -> int:
    """A written file's size in bytes (0 when it cannot be told)."""
    try:
        if isinstance(path, Path):
            return path.stat().st_size
        from shadowreplay.storage import arrow_filesystem

        return int(arrow_filesystem().get_file_info(path.fs_path).size or 0)
    except (OSError, AttributeError, ShadowReplayError):  # gone already
        return 0


def write_status(out_dir: Location, status: dict[str, Any], instance: str) -> None:
    """Replaces the instance's status object atomically (counters only: never content)."""
    fleet.write_status(out_dir, instance, status)


def read_status(out_dir: str | os.PathLike | Location, instance: str | None = None) -> dict[str, Any]:
    """The instance's status (without `instance`: the folder's only, or its recorder_status.json)."""
    return fleet.read_status(out_dir, instance)
