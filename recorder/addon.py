"""The Recorder addon: captures HTTP exchanges passing mitmproxy and hands them to the writer.

Hooks only copy references and timestamps; all parsing, scrubbing and writing happens in the
writer: a child process by default (recorder.process_writer -> recorder.writer_proc), or a
thread inside mitmproxy (recorder.writer) with shadowreplay_writer=thread. Responses are streamed through (`flow.response.stream` is set
to an observer that returns each chunk unchanged), so SSE reaches the client as it arrives.

Options (mitmproxy `--set name=value`, also settable in mitmweb):
    shadowreplay_out, shadowreplay_key_file, shadowreplay_prefix_chars, shadowreplay_body_cap,
    shadowreplay_stream_cap, shadowreplay_rotate_seconds, shadowreplay_rotate_bytes,
    shadowreplay_queue_size, shadowreplay_header_count_cap, shadowreplay_header_bytes_cap, shadowreplay_metrics_url, shadowreplay_metrics_interval,
    shadowreplay_writer (process | thread), shadowreplay_instance

shadowreplay_keep=shape keeps no text at all (recorder/shape.py).
shadowreplay_out is a local folder or an s3://bucket/prefix (shadowreplay.storage).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from mitmproxy import ctx, http

from .exchange import Exchange, HttpExchange, RowOptions
from .shape import KEEP_MODES
from .writer import HEADER_BYTES_CAP, HEADER_COUNT_CAP

log = logging.getLogger("shadowreplay.recorder")

_META = "shadowreplay.exchange"  # flow.metadata key of the HttpExchange being captured
_DONE = "shadowreplay.submitted"


def is_grpc(flow: http.HTTPFlow) -> bool:
    return flow.request.headers.get("content-type", "").startswith("application/grpc")


def _inside(child: Path, parent: Any) -> bool:
    if not isinstance(parent, Path):  # an s3:// prefix holds no local file
        return False
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def _seconds(value: str, name: str) -> float:
    """An option's duration: `60s`, `500ms`; a bare number is seconds (the option's name says so)."""
    from shadowreplay.durations import parse_duration

    return parse_duration(value, flag=name, bare="s", quiet=True)


WRITERS = ["process", "thread"]
DEFAULT_WRITER = "process"


class Recorder:
    def __init__(self) -> None:
        self.writer: Any = None
        self.sampler: Any = None
        self._opts = RowOptions()
        self._stream_cap = RowOptions().stream_cap
        self.enabled = False

    # --- mitmproxy lifecycle ---
    def load(self, loader) -> None:
        loader.add_option("shadowreplay_out", str, "", "Dataset folder or s3://bucket/prefix the recorder writes (DIR/requests/...).")
        loader.add_option(
            "shadowreplay_instance",
            str,
            "",
            "This recorder's instance id, in its file names and DIR/recorder_status/ID.json (default: host-pid-random).",
        )
        loader.add_option(
            "shadowreplay_key_file",
            str,
            "",
            "File holding the scrub key (else env SHADOWREPLAY_SCRUB_KEY). Must not be inside shadowreplay_out.",
        )
        loader.add_option(
            "shadowreplay_keep",
            str,
            "text",
            "What rows keep of the traffic: 'text' (scrubbed bodies) or 'shape' (no text at all: lengths, "
            "structure, prefix-block hashes; recorder/shape.py).",
            choices=list(KEEP_MODES),
        )
        loader.add_option("shadowreplay_prefix_chars", int, 1000, "prefix_hash covers the first N prompt characters.")
        loader.add_option(
            "shadowreplay_body_cap", int, 1 << 20, "Bytes of request body / chars of response text kept per row."
        )
        loader.add_option(
            "shadowreplay_stream_cap", int, 16 << 20, "Raw bytes of one streamed response kept for reassembly."
        )
        loader.add_option(
            "shadowreplay_rotate_seconds", str, "60", "Start a new Parquet file after this long (60s, 500ms; a bare number is seconds)."
        )
        loader.add_option(
            "shadowreplay_rotate_bytes", int, 64 << 20, "Start a new Parquet file after this many buffered bytes."
        )
        loader.add_option(
            "shadowreplay_queue_size", int, 10_000, "Exchanges waiting for the writer; more are dropped and counted."
        )
        loader.add_option(
            "shadowreplay_header_count_cap", int, HEADER_COUNT_CAP, "Headers of one message kept at most; over it they are not kept."
        )
        loader.add_option(
            "shadowreplay_header_bytes_cap", int, HEADER_BYTES_CAP, "Header bytes of one message kept at most; over it they are not kept."
        )
        loader.add_option(
            "shadowreplay_metrics_url", str, "", "Upstream Prometheus /metrics URL to sample into DIR/engine_metrics/."
        )
        loader.add_option(
            "shadowreplay_metrics_interval", str, "1", "Time between /metrics samples (1s, 500ms; a bare number is seconds)."
        )
        loader.add_option(
            "shadowreplay_writer",
            str,
            DEFAULT_WRITER,
            "Where scrubbing and Parquet writing run: 'process' (a child process fed through a pipe, "
            "off the proxy's GIL) or 'thread' (a thread inside mitmproxy).",
            choices=WRITERS,
        )

    def configure(self, updated: set[str]) -> None:
        if not any(k.startswith("shadowreplay_") for k in updated):
            return
        self._stop()
        try:
            self._start()
        except Exception as e:  # ShadowReplayError and friends: one clear line, no traceback
            # An error logged during startup makes mitmdump exit 1 (its errorcheck addon).
            log.error("shadowreplay recorder: %s", e)
            self.enabled = False

    def _start(self) -> None:
        from shadowreplay import fleet
        from shadowreplay.anonymize import Scrubber, load_key
        from shadowreplay.errors import ConfigError
        from shadowreplay.storage import location

        from .writer import Writer, WriterConfig

        o = ctx.options
        if not o.shadowreplay_out:
            raise ConfigError("set shadowreplay_out (the dataset folder) to record")
        out = location(o.shadowreplay_out)
        instance = fleet.check_instance(o.shadowreplay_instance) if o.shadowreplay_instance else fleet.default_instance()
        key_file = o.shadowreplay_key_file or None
        if key_file:
            kf = Path(os.path.expanduser(key_file))
            if _inside(kf, out):
                raise ConfigError(f"the key file {kf} is inside the output folder {out}; keep keys away from the data")
        key = load_key(key_file)
        for name in ("prefix_chars", "body_cap", "stream_cap", "rotate_bytes", "queue_size", "header_count_cap", "header_bytes_cap"):
            if getattr(o, f"shadowreplay_{name}") <= 0:
                raise ConfigError(f"shadowreplay_{name} must be > 0")
        rotate_s = _seconds(o.shadowreplay_rotate_seconds, "shadowreplay_rotate_seconds")
        metrics_s = _seconds(o.shadowreplay_metrics_interval, "shadowreplay_metrics_interval")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot create {out}: {e.strerror}") from None
        self._opts = RowOptions(
            prefix_chars=o.shadowreplay_prefix_chars,
            body_cap=o.shadowreplay_body_cap,
            stream_cap=o.shadowreplay_stream_cap,
            keep=o.shadowreplay_keep,
        )
        self._stream_cap = self._opts.stream_cap
        cfg = WriterConfig(
            out_dir=out,
            rotate_seconds=rotate_s,
            rotate_bytes=o.shadowreplay_rotate_bytes,
            queue_size=o.shadowreplay_queue_size,
            header_count_cap=o.shadowreplay_header_count_cap,
            header_bytes_cap=o.shadowreplay_header_bytes_cap,
            instance=instance,
        )
        if o.shadowreplay_writer == "process":
            from .process_writer import ProcessWriter

            # the child loads the key itself from the file (or the inherited environment)
            kf_abs = str(Path(os.path.expanduser(key_file)).resolve()) if key_file else None
            self.writer = ProcessWriter(cfg, kf_abs, self._opts).start()
        else:
            self.writer = Writer(cfg, Scrubber(key), self._opts).start()
        self.enabled = True
        log.info("shadowreplay recorder: instance %s writing %s/requests/ (status in %s)", instance, out,
                 fleet.status_path(out, instance))
        if o.shadowreplay_metrics_url:
            from shadowreplay.metrics import MetricsSampler

            self.sampler = MetricsSampler(o.shadowreplay_metrics_url, out, metrics_s, name_tag=instance).start()
            log.info("shadowreplay recorder: sampling %s into %s/engine_metrics/", o.shadowreplay_metrics_url, out)

    def _stop(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler = None
        if self.writer is not None:
            self.writer.close()
            log.info("shadowreplay recorder: %s", self.writer.counters())
            self.writer = None
        self.enabled = False

    def done(self) -> None:
        self._stop()

    # --- API for other addons (GrpcRecorder) ---
    def options_snapshot(self) -> RowOptions:
        return self._opts

    def submit(self, exchange: Exchange) -> bool:
        """Queues an exchange for the writer without blocking; False (and counted) when full."""
        w = self.writer
        if w is None:
            return False
        return w.submit(exchange)

    # --- hooks ---
    def _exchange(self, flow: http.HTTPFlow) -> HttpExchange:
        ex = flow.metadata.get(_META)
        if ex is None:
            req = flow.request
            peer = flow.client_conn.peername
            ex = HttpExchange(
                request_id=flow.id,
                ts_start=req.timestamp_start,
                ts_request_end=req.timestamp_end,
                client_addr=str(peer[0]) if peer else None,
                method=req.method,
                scheme=req.scheme,
                host=req.host_header or req.host,
                port=req.port,
                path=req.path,
                http_version=req.http_version,
                request_headers=list(req.headers.items(multi=True)),
                request_body=req.raw_content,
            )
            flow.metadata[_META] = ex
        return ex

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if not self.enabled or is_grpc(flow) or flow.response is None:
            return
        ex = self._exchange(flow)
        resp = flow.response
        ex.status = resp.status_code
        ex.ts_response_headers = resp.timestamp_start
        ex.response_headers = list(resp.headers.items(multi=True))
        if resp.stream or resp.status_code == 101:  # streamed by someone else, or a protocol switch
            return
        ex.streamed = True
        cap = self._stream_cap
        observe = ex.observe
        clock = time.time

        def passthrough(chunk: bytes) -> bytes:
            if chunk:
                observe(clock(), chunk, cap)
            return chunk

        resp.stream = passthrough

    def response(self, flow: http.HTTPFlow) -> None:
        if not self.enabled or is_grpc(flow) or flow.metadata.get(_DONE):
            return
        ex = self._exchange(flow)
        resp = flow.response
        if resp is not None:
            ex.status = resp.status_code
            ex.ts_end = resp.timestamp_end
            if ex.ts_response_headers is None:
                ex.ts_response_headers = resp.timestamp_start
                ex.response_headers = list(resp.headers.items(multi=True))
            if not ex.streamed:
                ex.response_body = resp.raw_content
        if flow.websocket is not None:
            ex.websocket = True
        flow.metadata[_DONE] = True
        self.submit(ex)

    def error(self, flow: http.HTTPFlow) -> None:
        if not self.enabled or is_grpc(flow) or flow.metadata.get(_DONE):
            return
        ex = self._exchange(flow)
        if flow.response is not None:
            ex.status = ex.status or flow.response.status_code
        ex.error = f"proxy: {flow.error.msg}" if flow.error else "proxy: unknown error"
        ex.ts_end = time.time()
        flow.metadata[_DONE] = True
        self.submit(ex)
