"""The Recorder addon: captures HTTP exchanges passing mitmproxy and hands them to the writer.

Hooks only copy references and timestamps; all parsing, scrubbing and writing happens in the
writer: a child process by default (recorder.process_writer -> recorder.writer_child), or a
thread inside mitmproxy (recorder.writer) with shadowreplay_writer=thread. Responses are streamed through (`flow.response.stream` is set
to an observer that returns each chunk unchanged), so SSE reaches the client as it arrives.

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

log = logging.getLogger("shadowreplay.recorder")

_META = "shadowreplay.exchange"  # flow.metadata key of the HttpExchange being captured
_DONE = "shadowreplay.submitted"


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
            self._stop()
            if v["out"] or not self._running:  # emptied while running: recording is off
                self._start(v)
        except Exception as e:  # OptionsError, ShadowReplayError and friends: one clear line
            self.enabled = False
            options.refuse(e, self._running, log)

    def _start(self, v: dict[str, Any]) -> None:
        from shadowreplay import fleet
        from shadowreplay.storage import location

        from .writer import Writer, WriterConfig

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
        )
        if v["writer"] == "process":
            from .process_writer import ProcessWriter

            # the child loads the key itself from the file (or the inherited environment)
            self.writer = ProcessWriter(cfg, key_file, self._opts).start()
        else:
            from shadowreplay.anonymize import Scrubber, load_key

            self.writer = Writer(cfg, Scrubber(load_key(key_file)), self._opts).start()
        self.enabled = True
        log.info("shadowreplay recorder: instance %s writing %s/requests/ (status in %s)", instance, out,
                 fleet.status_path(out, instance))
        if v["metrics_url"]:
            from shadowreplay.metrics import MetricsSampler

            self.sampler = MetricsSampler(v["metrics_url"], out, v["metrics_interval"], name_tag=instance).start()
            log.info("shadowreplay recorder: sampling %s into %s/engine_metrics/", v["metrics_url"], out)

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
