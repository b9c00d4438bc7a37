"""The recorder's own Prometheus metrics (`shadowreplay record --metrics-port P`), served by
prometheus_client from the proxy process. Each scrape reads the live figures: the proxy's
decisions (`addon.Counts`), its bounded queue, and the writer's `stats()`; with the writer process
those come from the child's ("stats", ...) messages, added up over every child (a restarted
child's figures continue its predecessors', so the counters never go back). Names and meanings are
listed in docs/recorder.md ("Metrics")."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from shadowreplay.errors import ConfigError

from .selection import FILTER_REASONS

log = logging.getLogger("shadowreplay.recorder")

PREFIX = "shadowreplay_"
DROP_REASONS = {  # the `reason` label of shadowreplay_requests_dropped_total: the counter it reads
    "queue_full": "dropped_queue_full",
    "write_failed": "dropped_write_failed",
    "writer_died": "dropped_writer_died",
    "unpicklable": "dropped_unpicklable",
}


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(PREFIX + name, doc, value=value)


class RecorderCollector:
    """A prometheus_client collector over one `Recorder` (whatever writer it has right now)."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder

    def collect(self) -> Iterator[Metric]:
        rec = self.recorder
        c = rec.counts
        w = rec.writer
        stats: dict[str, Any] = w.stats() if w is not None else {}
        proxy = {k: getattr(w, k, 0) for k in ("dropped_queue_full", "dropped_writer_died", "dropped_unpicklable",
                                               "writer_restarts", "proxy_errors")}  # fmt: skip
        yield _counter("requests_seen", "Exchanges the recorder looked at (HTTP flows and gRPC calls)", c.seen)
        yield _counter("requests_recorded", "Exchanges selected and handed to the writer", c.recorded)
        yield _counter("requests_sampled_out", "Exchanges left out by the sample (--sample)", c.sampled_out)
        f = CounterMetricFamily(PREFIX + "requests_filtered", "Exchanges left out by a filter, by the filter's kind "
                                "(default: a health check, /metrics or model listing)", labels=["reason"])  # fmt: skip
        for reason in FILTER_REASONS:
            f.add_metric([reason], c.filtered.get(reason, 0))
        yield f
        d = CounterMetricFamily(PREFIX + "requests_dropped", "Selected exchanges that were lost, by why",
                                labels=["reason"])  # fmt: skip
        for reason, key in DROP_REASONS.items():
            d.add_metric([reason], stats.get(key, 0) if key == "dropped_write_failed" else proxy[key])
        yield d
        yield _counter("rows_written", "Rows written to Parquet files", stats.get("rows_written", 0))
        yield _counter("bytes_written", "Bytes of Parquet files written", stats.get("bytes_written", 0))
        yield _counter("files_written", "Parquet files written (one per rotation and hour)", stats.get("files_written", 0))
        yield _counter("write_failures", "File writes that failed (their rows are dropped)", stats.get("write_failed", 0))
        yield _counter("convert_failures", "Exchanges the writer could not convert (recorded without content)",
                       stats.get("convert_failed", 0))  # fmt: skip
        yield _counter("proxy_errors", "Recorded exchanges that ended in a proxy error", proxy["proxy_errors"])
        yield _counter("writer_restarts", "Writer processes started again after one died", proxy["writer_restarts"])
        q = GaugeMetricFamily(PREFIX + "writer_queue_depth", "Exchanges waiting: in the proxy's bounded queue, and "
                              "inside the writer process", labels=["queue"])  # fmt: skip
        q.add_metric(["proxy"], getattr(w, "queued", 0) if w is not None else 0)
        q.add_metric(["writer"], stats.get("queued", 0) if hasattr(w, "alive") else 0)
        yield q
        alive = getattr(w, "alive", w is not None)
        yield GaugeMetricFamily(PREFIX + "writer_up", "1 while the writer (thread or process) is running", value=1 if alive else 0)
        yield GaugeMetricFamily(PREFIX + "sample_rate", "The share of traffic recorded (--sample)", value=rec.selection.rate)
        h = stats.get("scrub_seconds")
        if h:
            cum, buckets = 0, []
            for bound, n in zip([*h["buckets"], float("inf")], h["counts"]):
                cum += n
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cum))
            yield HistogramMetricFamily(PREFIX + "scrub_seconds", "Time to turn one exchange into a scrubbed row "
                                        "(decode, parse, scrub)", buckets=buckets, sum_value=h["sum"])  # fmt: skip


class MetricsServer:
    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server, self._thread = server, thread

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


def serve(recorder: Any, host: str, port: int) -> MetricsServer:
    """Serves `recorder`'s metrics on http://HOST:PORT/metrics until closed; ConfigError when the
    port cannot be had."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RecorderCollector(recorder))
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as e:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {e.strerror or e}") from None
    return MetricsServer(server, thread)
