"""GrpcRecorder: the mitmproxy addon that records gRPC calls (content-type application/grpc*).

Both directions are streamed through mitmproxy unbuffered (`flow.request.stream` /
`flow.response.stream` are observing callables that return each chunk unchanged); on the way,
an incremental parser cuts the bytes into gRPC messages and timestamps each one. Status and
trailers come from the `response` hook. The finished call goes to the shared recorder's bounded
queue (`Recorder.submit`), which never blocks; scrubbing happens in its writer (process or thread).

The HTTP Recorder skips gRPC flows. Put GrpcRecorder before it, so that at shutdown its `done`
(which records the calls still in flight) runs before the Recorder's `done` closes the writer:

    rec = Recorder(); addons = [H2CUpgrade(), GrpcRecorder(rec), rec]
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from mitmproxy import ctx, http

from . import options
from .grpc_exchange import GrpcExchange
from .grpc_frames import GrpcFrameParser, is_grpc_content_type

log = logging.getLogger("shadowreplay.recorder.grpc")


class Submitter(Protocol):
    def submit(self, exchange: Any) -> bool: ...


class _Capture:
    """Per-call state held while the call is live (never written anywhere)."""

    __slots__ = ("ex", "req", "resp")

    def __init__(self, ex: GrpcExchange, max_keep: int) -> None:
        self.ex = ex
        self.req = GrpcFrameParser(max_keep)
        self.resp = GrpcFrameParser(max_keep)

    def on_request(self, chunk: bytes) -> bytes:
        if chunk:
            self.ex.request_frames.extend(self.req.feed(chunk, time.time()))
        return chunk

    def on_response(self, chunk: bytes) -> bytes:
        if chunk:
            t = time.time()
            if self.ex.ts_first_data is None:
                self.ex.ts_first_data = t
            self.ex.response_frames.extend(self.resp.feed(chunk, t))
        return chunk


class GrpcRecorder:
    def __init__(self, recorder: Submitter) -> None:
        self.recorder = recorder
        self._live: dict[str, _Capture] = {}
        self._max_message: int = options.default("grpc_max_message")
        self._running = False

    def load(self, loader) -> None:
        options.add_mitmproxy_options(loader, options.GRPC)

    def running(self) -> None:
        self._running = True

    def configure(self, updated: set[str]) -> None:
        if any(k.startswith(options.PREFIX) for k in updated):
            try:
                self._max_message = options.read_values(ctx.options, options.GRPC)["grpc_max_message"]
            except Exception as e:
                options.refuse(e, self._running, log)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        if not is_grpc_content_type(req.headers.get("content-type")):
            return
        client = flow.client_conn
        ex = GrpcExchange(
            request_id=flow.id,
            ts_start=req.timestamp_start,
            client_addr=client.peername[0] if client.peername else None,
            method=req.method,
            scheme=req.scheme,
            host=req.pretty_host,
            port=req.port,
            path=req.path,
            request_headers=[(k, v) for k, v in req.headers.items(multi=True)],
        )
        cap = _Capture(ex, self._max_message)
        self._live[flow.id] = cap
        req.stream = cap.on_request

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        cap = self._live.get(flow.id)
        if cap is None or flow.response is None:
            return
        resp = flow.response
        cap.ex.status = resp.status_code
        cap.ex.ts_response_headers = resp.timestamp_start
        cap.ex.response_headers = [(k, v) for k, v in resp.headers.items(multi=True)]
        resp.stream = cap.on_response

    def response(self, flow: http.HTTPFlow) -> None:
        cap = self._live.pop(flow.id, None)
        if cap is None:
            return
        resp = flow.response
        if resp is not None:
            if not cap.ex.response_headers:
                cap.ex.status = resp.status_code
                cap.ex.ts_response_headers = resp.timestamp_start
                cap.ex.response_headers = [(k, v) for k, v in resp.headers.items(multi=True)]
            if resp.trailers is not None:
                cap.ex.trailers = [(k, v) for k, v in resp.trailers.items(multi=True)]
            if resp.raw_content and not cap.resp.bytes_seen:
                # not streamed (e.g. an addon replaced the response): parse what mitmproxy holds
                cap.on_response(resp.raw_content)
        self._finish(cap, resp.timestamp_end if resp is not None else None)

    def error(self, flow: http.HTTPFlow) -> None:
        cap = self._live.pop(flow.id, None)
        if cap is None:
            return
        if flow.error is not None:
            cap.ex.errors.append(f"proxy: {flow.error.msg}")
        if flow.response is not None and flow.response.trailers is not None:
            cap.ex.trailers = [(k, v) for k, v in flow.response.trailers.items(multi=True)]
        self._finish(cap, None)

    def _finish(self, cap: _Capture, t_end: float | None) -> None:
        ex = cap.ex
        ex.ts_end = t_end or time.time()
        ex.request_bytes = cap.req.bytes_seen
        ex.response_bytes = cap.resp.bytes_seen
        for direction, p in (("request", cap.req), ("response", cap.resp)):
            problem = p.finish()
            if problem:
                ex.errors.append(f"{direction}: {problem}")
        if not self.recorder.submit(ex):
            log.debug("gRPC record dropped (queue full): %s", ex.request_id)

    def done(self) -> None:
        # mitmproxy shutting down with calls in flight: record what was seen.
        for fid in list(self._live):
            cap = self._live.pop(fid)
            cap.ex.errors.append("proxy shut down during the call")
            self._finish(cap, None)
