"""H2CUpgrade: lets mitmproxy proxy cleartext HTTP/2 (h2c, "prior knowledge"), as used by gRPC
without TLS.

mitmproxy 12 picks HTTP/2 only from TLS ALPN; a cleartext client opening with the HTTP/2
preface `PRI * HTTP/2.0` gets an HTTP/1 parser and fails (mitmproxy issues #2116, #6998;
open PR #8127). This addon watches the `next_layer` decision: when the client's first bytes are
the HTTP/2 preface on a cleartext connection (or the upstream already sent an HTTP/2 SETTINGS
frame before the client said anything, see `is_h2c_client`), it marks the client connection as h2 (the HTTP
layer then starts an HTTP/2 server) and marks the upstream connection as h2 too, so mitmproxy
talks HTTP/2 prior knowledge to the upstream. The upstream of an h2c client must therefore
speak h2c (every gRPC server does). Everything else is left to mitmproxy's own decision.

Optional `shadowreplay_h2c_upstream=true` also speaks h2c upstream for TLS clients that
negotiated h2 (gRPC over TLS to the proxy, cleartext gRPC behind it).
"""

from __future__ import annotations

import logging

from mitmproxy import connection, ctx
from mitmproxy.proxy import layer, layers, mode_specs
from mitmproxy.proxy.layers.http import HTTPMode

log = logging.getLogger(__name__)

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def starts_like_h2c(data: bytes) -> bool | None:
    """True if data starts with the HTTP/2 client preface, None if too short to say, else False."""
    n = min(len(data), len(H2_PREFACE))
    if data[:n] != H2_PREFACE[:n]:
        return False
    return True if n == len(H2_PREFACE) else None


def is_h2c_client(data_client: bytes, data_server: bytes) -> bool | None:
    """Whether a cleartext connection speaks HTTP/2 with prior knowledge; None: cannot tell.

    "PRI" (3 bytes) already decides: RFC 9113 reserves that method for the preface. A server
    that speaks first with an HTTP/2 SETTINGS frame (type 4 on stream 0; grpc servers do, on
    accept, which races the client's preface when mitmproxy connects upstream eagerly) is an
    h2-only server, so its client speaks h2c too."""
    if data_client:
        verdict = starts_like_h2c(data_client)
        if verdict is None and len(data_client) >= 3:
            return True
        return verdict
    if len(data_server) >= 9 and data_server[3] == 0x04 and data_server[5:9] == b"\0\0\0\0":
        return True
    return None


class H2CUpgrade:
    def __init__(self) -> None:
        self.h2c_clients: set[str] = set()  # ids of client connections speaking h2c

    def load(self, loader) -> None:
        loader.add_option(
            "shadowreplay_h2c_upstream",
            bool,
            False,
            "Speak cleartext HTTP/2 (prior knowledge) to a cleartext upstream also for TLS "
            "clients that negotiated h2 (gRPC over TLS in front of an h2c server).",
        )

    def next_layer(self, nextlayer: layer.NextLayer) -> None:
        # Script addons run before mitmproxy's own NextLayer addon, which decides whenever we
        # leave nextlayer.layer unset: decide here only for h2c, never "wait".
        if nextlayer.layer is not None:
            return
        context = nextlayer.context
        if context.client.transport_protocol != "tcp" or context.client.tls or len(context.layers) != 1:
            return
        if not isinstance(context.client.proxy_mode, (mode_specs.ReverseMode, mode_specs.TransparentMode)):
            return
        if not is_h2c_client(nextlayer.data_client(), nextlayer.data_server()):
            return
        mode = context.client.proxy_mode
        if isinstance(mode, mode_specs.ReverseMode) and mode.scheme not in ("http", "https"):
            return
        context.client.alpn = b"h2"
        self.h2c_clients.add(context.client.id)
        if isinstance(mode, mode_specs.ReverseMode) and mode.scheme == "https":
            # TLS to the upstream: ALPN negotiates h2 there, offered from the client's protocols.
            context.client.alpn_offers = [b"h2"]
            stack = layers.ServerTLSLayer(context)
            stack.child_layer = layers.HttpLayer(context, HTTPMode.transparent)
            nextlayer.layer = stack
        else:
            if context.server.address and not context.server.tls:
                context.server.alpn = b"h2"  # an eagerly opened upstream connection
            nextlayer.layer = layers.HttpLayer(context, HTTPMode.transparent)
        log.debug("h2c (prior knowledge) from %s", context.client.peername)

    def server_connect(self, data) -> None:
        server: connection.Server = data.server
        if server.tls or server.transport_protocol != "tcp":
            return
        client: connection.Client = data.client
        if client.id in self.h2c_clients or (
            ctx.options.shadowreplay_h2c_upstream and client.tls and client.alpn == b"h2"
        ):
            server.alpn = b"h2"

    def tls_established_client(self, data) -> None:
        # An eagerly opened cleartext upstream was connected before the client's ALPN was known.
        context = data.context
        if (
            ctx.options.shadowreplay_h2c_upstream
            and context.client.alpn == b"h2"
            and not context.server.tls
            and context.server.transport_protocol == "tcp"
        ):
            context.server.alpn = b"h2"

    def client_disconnected(self, client: connection.Client) -> None:
        self.h2c_clients.discard(client.id)
