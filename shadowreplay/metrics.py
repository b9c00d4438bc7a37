"""Samples a server's Prometheus /metrics at a fixed interval into DIR/engine_metrics/.

Used by the recorder (upstream engine) and the replayer (shadow engine), so latency can later be
joined with batch size (`vllm:num_requests_running`) and queue depth (`vllm:num_requests_waiting`).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time

import httpx

from . import prometheus
from .dataset import write_rows
from .errors import ShadowReplayError, TargetError
from .schema import ENGINE_METRICS

log = logging.getLogger(__name__)


def probe(url: str, timeout: float = 2.0) -> bool:
    """True when `url` answers 200 with something that parses as Prometheus text."""
    try:
        r = httpx.get(url, timeout=timeout)
    except httpx.HTTPError:
        return False
    return r.status_code == 200 and bool(prometheus.parse(r.text))


class MetricsSampler:
    """Background thread: scrape `url` every `interval_s`, write rows every `flush_s` and at stop().

    Scrape failures are counted and logged once per streak; they never raise into the caller."""

    def __init__(
        self,
        url: str,
        out_dir: str | os.PathLike,
        interval_s: float = 1.0,
        *,
        flush_s: float = 30.0,
        keep_buckets: bool = False,
        timeout_s: float = 2.0,
        name_tag: str | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.url = url
        self.out_dir = out_dir
        self.interval_s = interval_s
        self.flush_s = flush_s
        self.keep_buckets = keep_buckets
        self.timeout_s = timeout_s
        self.name_tag = name_tag  # a recorder's instance id: in the files' names (dataset.write_table)
        self.scrapes = 0
        self.failures = 0
        self.rows_written = 0
        self._rows: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "MetricsSampler":
        self._thread = threading.Thread(target=self._run, name="metrics-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._flush()

    def __enter__(self) -> "MetricsSampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def scrape_once(self, client: httpx.Client) -> int:
        ts = dt.datetime.now(dt.timezone.utc)
        r = client.get(self.url)
        if r.status_code != 200:
            raise TargetError(f"{self.url} answered {r.status_code}")
        samples = prometheus.parse(r.text, keep_buckets=self.keep_buckets)
        self._rows.extend(
            {"ts": ts, "source": self.url, "metric": s.metric, "labels": s.labels, "value": s.value}
            for s in samples
        )
        self.scrapes += 1
        return len(samples)

    def _run(self) -> None:
        start = time.monotonic()
        last_flush = start
        failing = False
        tick = 0
        with httpx.Client(timeout=self.timeout_s) as client:
            while not self._stop.is_set():
                try:
                    self.scrape_once(client)
                    failing = False
                except (httpx.HTTPError, TargetError) as e:
                    self.failures += 1
                    if not failing:
                        log.warning("metrics: cannot scrape %s (%s); will keep trying", self.url, e)
                    failing = True
                now = time.monotonic()
                if now - last_flush >= self.flush_s:
                    self._flush()
                    last_flush = now
                tick += 1
                # Fixed grid from the start instant: no drift from scrape duration.
                self._stop.wait(max(0.0, start + tick * self.interval_s - time.monotonic()))

    def _flush(self) -> None:
        rows, self._rows = self._rows, []
        if not rows:
            return
        try:
            write_rows(self.out_dir, ENGINE_METRICS, rows, name_tag=self.name_tag)
            self.rows_written += len(rows)
        except (OSError, ShadowReplayError) as e:  # disk full; object store refused or unreachable
            log.error("metrics: could not write %d samples to %s: %s", len(rows), self.out_dir, e)


class SamplerProcess:
    """A MetricsSampler in a child process (`python -m shadowreplay.metrics URL DIR`), for callers
    whose own timing matters: the scrapes, the parsing of the metrics text and the Parquet writes
    then hold another interpreter's GIL, on another core, instead of delaying the replayer's sends.
    The child samples until its stdin closes (stop(), or the parent's death), then writes what it
    has; it ignores SIGINT/SIGTERM, so a Ctrl-C on the terminal's process group cannot cut its last
    write, and runs at a lower CPU priority than its parent."""

    def __init__(self, url: str, out_dir: str | os.PathLike, interval_s: float = 1.0) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.url, self.out_dir, self.interval_s = url, out_dir, interval_s
        self.proc = None

    def start(self) -> "SamplerProcess":
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shadowreplay.metrics", self.url, str(self.out_dir), "--interval", str(self.interval_s)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        # Returns once the child has imported its modules and started sampling (its one line), so
        # its start-up (a second of CPU on a small machine) is over before the caller's sends begin.
        self.proc.stdout.readline()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        import subprocess

        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("metrics: the sampler process did not finish within %.0f s; killed", timeout)
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import signal
    import sys

    ap = argparse.ArgumentParser(prog="python -m shadowreplay.metrics", description="sample URL into DIR/engine_metrics/ until stdin closes")
    ap.add_argument("url")
    ap.add_argument("out_dir")
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.nice(5)
    except OSError:
        pass
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    sampler = MetricsSampler(args.url, args.out_dir, args.interval).start()
    print("sampling", flush=True)  # SamplerProcess.start() waits for this line
    sys.stdin.buffer.read()  # until the parent closes the pipe (or dies)
    sampler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
