"""h2c detection: pure cases, and the real mitmdump when the upstream speaks first (a grpc server
sends its SETTINGS on accept, and mitmproxy connects upstream eagerly) and the client's preface
comes late."""

from __future__ import annotations

import socket
import struct
import time

import h2.config
import h2.connection
import h2.events
import pytest

from shadowreplay.recorder.h2c import H2_PREFACE, is_h2c_client, starts_like_h2c
from tests.grpc_llm_server import LlmServer
from tests.test_recorder_grpc_e2e import read_rows, start_mitmdump, stop_mitmdump

SETTINGS = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x04\x00\x01\x00\x00"  # a server's first frame


def test_h2c_detection():
    assert starts_like_h2c(H2_PREFACE + b"\x00\x00") is True
    assert starts_like_h2c(b"PRI * HT") is None
    assert starts_like_h2c(b"POST / HTTP/1.1\r\n") is False
    assert is_h2c_client(H2_PREFACE, b"") is True
    assert is_h2c_client(b"PRI", b"") is True  # the reserved method decides
    assert is_h2c_client(b"PR", b"") is None  # could still be PROPFIND
    assert is_h2c_client(b"GET / HTTP/1.1\r\n", SETTINGS) is False  # the client's bytes win
    assert is_h2c_client(b"", SETTINGS) is True  # an h2-only server spoke first
    assert is_h2c_client(b"", b"HTTP/1.1 400 Bad Request\r\n") is None
    assert is_h2c_client(b"", b"") is None
    assert is_h2c_client(b"\x16\x03\x01\x02\x00", b"") is False  # TLS


def h2_call(port: int, pb2, delay: float) -> list[str]:
    """One unary CountTokens over a raw h2c connection whose preface is sent `delay` s late."""
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        time.sleep(delay)  # the proxy has connected upstream and received the server's SETTINGS
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        payload = pb2.CountRequest(text="a b c").SerializeToString()
        c.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":path", "/llm.Llm/CountTokens"),
                           (":authority", "llm"), ("content-type", "application/grpc"), ("te", "trailers")])  # fmt: skip
        c.send_data(1, b"\x00" + struct.pack(">I", len(payload)) + payload, end_stream=True)
        sock.sendall(c.data_to_send())
        sock.settimeout(10)
        events: list[str] = []
        while "StreamEnded" not in events:
            data = sock.recv(65535)
            if not data:
                break
            events += [type(e).__name__ for e in c.receive_data(data)]
            sock.sendall(c.data_to_send())
        return events
    finally:
        sock.close()


@pytest.mark.slow
def test_late_client_preface_after_server_settings(tmp_path_factory):
    keys = tmp_path_factory.mktemp("keys")
    key_file = keys / "scrub.key"
    key_file.write_bytes(b"grpc-h2c-test-key-0123456789abcdef")
    out = tmp_path_factory.mktemp("grpc_h2c_out")
    with LlmServer() as server:
        proc, port = start_mitmdump(f"http://127.0.0.1:{server.port}", out, key_file)
        try:
            for delay in (0.0, 0.5):
                events = h2_call(port, server.pb2, delay)
                assert "ResponseReceived" in events and "TrailersReceived" in events, (delay, events)
        finally:
            err = stop_mitmdump(proc)
    rows = read_rows(out)
    assert [r["grpc_method"] for r in rows] == ["CountTokens", "CountTokens"], err[-2000:]
    assert all(r["grpc_status"] == 0 for r in rows)
    assert "Unexpected data from server" not in err
