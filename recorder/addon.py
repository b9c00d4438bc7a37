"""The Recorder addon: captures HTTP exchanges passing mitmproxy and hands them to the writer.

Hooks only copy references and timestamps; all parsing, scrubbing and writing happens in the
writer: a child process by default (recorder.record_writer_process -> recorder.record_writer_child), or a
thread inside mitmproxy (recorder.record_writer) with shadowreplay_writer=thread. Responses are streamed through (`flow.response.stream` is set
to an observer that returns each chunk unchanged), so SSE reaches the client as it arrives.

Which flows are recorded (filters, `--sample`) is decided once per flow at its first response
hook (recorder/selection.py); one left out is streamed through and never copied, queued or
scrubbed. `--metrics-port` serves the recorder's own metrics (recorder/selfmetrics.py).

Options (mitmproxy `--set shadowreplay_<name>=value`, also settable in mitmweb) are declared in
recorder/options.py; a bad value set while running is refused (OptionsError), at start-up it is
one error line and mitmdump exits 1.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from mitmproxy import ctx, http

from shadowreplay.errors import ConfigError

from . import options
from .exchange import Exchange, HttpExchange, RowOptions
from .selection import SAMPLED_OUT, Request, Selection

log = logging.getLogger("shadowreplay.recorder")

_META = "shadowreplay.exchange"  # flow.metadata key of the HttpExchange being captured
_DONE = "shadowreplay.submitted"
_LEFT_OUT = "shadowreplay.left_out"  # flow.metadata: why the flow is not recorded ("" : it is)


def is_grpc(flow: http.HTTPFlow) -> bool:
    return flow.request.headers.get("content-type", "").startswith("application/grpc")


def reverse_upstreams(modes: list[str]) -> str:
    """The upstream URLs of mitmproxy's reverse modes (`reverse:http://vllm:8000`), comma-separated:
    written into every file's metadata, so that a replay refuses them (replayer/safety.py)."""
    from mitmproxy.proxy.mode_specs import ProxyMode, ReverseMode

    out = []
    for spec in modes:
        try:
            mode = ProxyMode.parse(spec)
        except ValueError:
            continue
        if isinstance(mode, ReverseMode):
            out.append(mode.data)
    return ",".join(out)


# Loggers with a line per connection (mitmproxy's proxy server) and per metrics sample (httpx).
CHATTY_LOGGERS = ("mitmproxy.proxy.server", "httpx")


def quiet_logs(quiet: bool) -> None:
    """Only warnings and errors from CHATTY_LOGGERS (shadowreplay_log=quiet), or all of it again."""
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.NOTSET)


_seconds = options.seconds  # a duration option's value in seconds (tests read --set values with it)


class Recorder:
    def __init__(self) -> None:
        self.writer: Any = None
        self.sampler: Any = None
        self._opts = RowOptions()
        self._stream_cap = RowOptions().stream_cap
        self.enabled = False
        self._running = False
        self.selection = Selection()
        self.counts = Counts()
        self.metrics_server: Any = None

    # --- mitmproxy lifecycle ---
    def load(self, loader) -> None:
        options.add_mitmproxy_options(loader, options.RECORDER)

    def running(self) -> None:
        self._running = True

    def configure(self, updated: set[str]) -> None:
        if not any(k.startswith(options.PREFIX) for k in updated):
            return
        try:
            v = options.read_values(ctx.options)  # a bad value: refused before the writer stops
            quiet_logs(v["log"] == "quiet")
            selection = Selection.of(v)
            self._stop()
            if v["out"] or not self._running:  # emptied while running: recording is off
                self._select(v, selection)
                self._start(v)
                self._serve_metrics(v)
        except Exception as e:  # OptionsError, ShadowReplayError and friends: one clear line
            self.enabled = False
            options.refuse(e, self._running, log)

    def _start(self, v: dict[str, Any]) -> None:
        from shadowreplay import fleet
        from shadowreplay.storage import location

        from .record_writer import Writer, WriterConfig

        if not v["out"]:
            raise ConfigError(f"set {options.PREFIX}out (the dataset folder) to record")
        out = location(v["out"])
        instance = fleet.check_instance(v["instance"]) if v["instance"] else fleet.default_instance()
        key_file = options.key_file_source(v["key_file"], out)  # checked here, loaded by the writer
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot create {out}: {e.strerror}") from None
        self._opts = RowOptions(
            prefix_chars=v["prefix_chars"], body_cap=v["body_cap"], stream_cap=v["stream_cap"], keep=v["keep"]
        )
        self._stream_cap = self._opts.stream_cap
        cfg = WriterConfig(
            out_dir=out,
            rotate_seconds=v["rotate_seconds"],
            rotate_bytes=v["rotate_bytes"],
            queue_size=v["queue_size"],
            header_count_cap=v["header_count_cap"],
            header_bytes_cap=v["header_bytes_cap"],
            instance=instance,
            upstream=reverse_upstreams(list(getattr(ctx.options, "mode", []) or [])),
            file_metadata=self.selection.file_metadata(),
        )
        if v["writer"] == "process":
            from .record_writer_process import ProcessWriter

            # the child loads the key itself from the file (or the inherited environment)
            self.writer = ProcessWriter(cfg, key_file, self._opts).start()
        else:
            from shadowreplay.anonymize import Scrubber, load_key

            self.writer = Writer(cfg, Scrubber(load_key(key_file)), self._opts).start()
        self.enabled = True
        from shadowreplay.anonymize.extras import missing_warnings

        for line in missing_warnings():
            log.warning("shadowreplay recorder: %s", line)
        log.info("shadowreplay recorder: instance %s writing %s/requests/ (status in %s)", instance, out,
                 fleet.status_path(out, instance))
        if v["metrics_url"]:
            from shadowreplay.metrics import MetricsSampler

            self.sampler = MetricsSampler(v["metrics_url"], out, v["metrics_interval"], name_tag=instance).start()
            log.info("shadowreplay recorder: sampling %s into %s/engine_metrics/", v["metrics_url"], out)

    def _select(self, v: dict[str, Any], selection: Selection) -> None:
        """Sampling and filters, before the writer starts (its files carry the sample rate)."""
        if selection.needs_key and v["out"]:  # the keyed hashes of sampling / client ids, in memory only
            from shadowreplay.anonymize import load_key
            from shadowreplay.anonymize.keyedhash import KeyedIds

            selection.ids = KeyedIds(load_key(options.key_file_source(v["key_file"], None)))
        self.selection = selection
        self.counts = Counts()
        if selection.sampling:
            log.info("shadowreplay recorder: recording %s of the traffic by %s", f"{v['sample'] * 100:g}%", selection.by)

    def _serve_metrics(self, v: dict[str, Any]) -> None:
        """The recorder's own metrics endpoint (docs/recorder.md, "Metrics")."""
        if v["metrics_port"]:
            from .selfmetrics import serve

            self.metrics_server = serve(self, v["metrics_host"], v["metrics_port"])
            log.info("shadowreplay recorder: metrics on http://%s:%d/metrics", v["metrics_host"], v["metrics_port"])

    def _stop(self) -> None:
        if self.metrics_server is not None:
            self.metrics_server.close()
            self.metrics_server = None
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
        """Queues an exchange for the writer without blocking; False (and counted) when full, or
        when the filters or the sample leave it out (decided on its path, host, headers and
        client address, where it has them)."""
        if self.writer is None:
            return False
        why = self.selection.decide(Request(
            path=getattr(exchange, "path", None), host=getattr(exchange, "host", None),
            headers=getattr(exchange, "request_headers", None) or [], client_addr=getattr(exchange, "client_addr", None),
            request_id=str(getattr(exchange, "request_id", "") or id(exchange)),
        ))  # fmt: skip
        if self.counts.left_out(why):
            return False
        return self._queue(exchange)

    def _queue(self, exchange: Exchange) -> bool:
        w = self.writer
        if w is None:
            return False
        ok = w.submit(exchange)
        if ok:
            self.counts.recorded += 1
        return ok

    def _wanted(self, flow: http.HTTPFlow) -> bool:
        """Whether to record this flow: decided once, at its first response hook (the request is
        on its way upstream by then), before anything of it is copied."""
        why = flow.metadata.get(_LEFT_OUT)
        if why is None:
            req = flow.request
            peer = flow.client_conn.peername
            why = self.selection.decide(Request(
                path=req.path, host=req.host_header or req.host, headers=req.headers,
                client_addr=str(peer[0]) if peer else None, request_id=flow.id, body=req.raw_content,
            )) or ""  # fmt: skip
            flow.metadata[_LEFT_OUT] = why
            self.counts.left_out(why or None)
        return not why

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
        if not self._wanted(flow):
            if not flow.response.stream:
                flow.response.stream = True  # passed through unbuffered, as a recorded one is
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
        if not self.enabled or is_grpc(flow) or flow.metadata.get(_DONE) or not self._wanted(flow):
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
        self._queue(ex)

    def error(self, flow: http.HTTPFlow) -> None:
        if not self.enabled or is_grpc(flow) or flow.metadata.get(_DONE) or not self._wanted(flow):
            return
        ex = self._exchange(flow)
        if flow.response is not None:
            ex.status = ex.status or flow.response.status_code
        ex.error = f"proxy: {flow.error.msg}" if flow.error else "proxy: unknown error"
        ex.ts_end = time.time()
        flow.metadata[_DONE] = True
        self._queue(ex)


class Counts:
    """What the recorder decided in the proxy (read by the metrics endpoint)."""

    def __init__(self) -> None:
        self.seen = 0  # exchanges the recorder looked at (HTTP flows and gRPC calls)
        self.recorded = 0  # handed to the writer
        self.sampled_out = 0
        self.filtered: dict[str, int] = {}  # by the filter kind that left it out

    def left_out(self, why: str | None) -> bool:
        """Counts one decision; True when the exchange is not recorded."""
        self.seen += 1
        if not why:
            return False
        if why == SAMPLED_OUT:
            self.sampled_out += 1
        else:
            self.filtered[why] = self.filtered.get(why, 0) + 1
        return True

