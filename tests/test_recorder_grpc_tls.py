"""gRPC over TLS through the real `mitmdump` recorder: the client trusts mitmproxy's CA (generated
in a confdir of the test's own), mitmproxy intercepts the TLS as HTTP/2 (ALPN h2) and records.

Upstreams: a TLS grpcio server (reverse:https://...) and a cleartext one (reverse:http://... with
shadowreplay_h2c_upstream=true: TLS at the proxy, h2c behind it); and an h2c client in front of a
TLS upstream."""

from __future__ import annotations

import datetime as dt
import json
import time

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.grpc_llm_server import LlmServer
from tests.test_recorder_grpc_e2e import read_rows, start_mitmdump, stop_mitmdump

pytestmark = pytest.mark.slow


def self_signed(host: str = "localhost") -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


def wait_file(path, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size > 0:
            return path.read_bytes()
        time.sleep(0.05)
    raise TimeoutError(f"{path} never appeared")


@pytest.mark.parametrize(
    ("client_tls", "upstream_tls"),
    [(True, True), (True, False), (False, True)],
    ids=["tls-to-tls-upstream", "tls-to-h2c-upstream", "h2c-to-tls-upstream"],
)
def test_grpc_over_tls_is_recorded(tmp_path_factory, client_tls, upstream_tls):
    keys = tmp_path_factory.mktemp("keys")
    key_file = keys / "scrub.key"
    key_file.write_bytes(b"grpc-tls-test-key-0123456789abcdef")
    out = tmp_path_factory.mktemp("grpc_tls_out")
    confdir = tmp_path_factory.mktemp("mitmconf")
    with LlmServer(tls=self_signed() if upstream_tls else None) as server:
        pb2, stubs = server.pb2, server.pb2_grpc
        if upstream_tls:
            upstream = f"https://127.0.0.1:{server.port}"
            extra = ("--set", "ssl_insecure=true")  # the upstream's certificate is self-signed
        else:
            upstream = f"http://127.0.0.1:{server.port}"
            extra = ("--set", "shadowreplay_h2c_upstream=true")
        proc, port = start_mitmdump(upstream, out, key_file, "--set", f"confdir={confdir}", *extra)
        try:
            if client_tls:
                ca = wait_file(confdir / "mitmproxy-ca-cert.pem")
                creds = grpc.ssl_channel_credentials(root_certificates=ca)
                opts = (("grpc.ssl_target_name_override", "localhost"),)
                channel = grpc.secure_channel(f"127.0.0.1:{port}", creds, options=opts)
            else:
                channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            with channel as ch:
                grpc.channel_ready_future(ch).result(timeout=15)
                stub = stubs.LlmStub(ch)
                call = stub.Generate(
                    pb2.GenerateRequest(prompt="my email is tls.user@example.com", max_tokens=4, gap_ms=20),
                    timeout=15,
                )
                got = [m.text for m in call]
                assert call.code() == grpc.StatusCode.OK and len(got) == 4
                resp = stub.CountTokens(pb2.CountRequest(text="one two three"), timeout=10)
                assert resp.tokens == 3
        finally:
            err = stop_mitmdump(proc)
    rows = sorted(read_rows(out), key=lambda r: r["ts_start"])
    assert [r["grpc_method"] for r in rows] == ["Generate", "CountTokens"], err[-2000:]
    gen, count = rows
    assert gen["scheme"] == ("https" if upstream_tls else "http")
    assert gen["protocol"] == "grpc" and gen["grpc_status"] == 0 and gen["chunks"] == 4
    # the server paused 3 x 20 ms: the gaps are kept, not flattened by buffering; a late first
    # message shortens the first gap on a shared CPU (seen: 0.2, 8.9, 20.3 ms), so by the largest
    assert len(gen["itl_ms"]) == 3 and max(gen["itl_ms"]) >= 15 and sum(gen["itl_ms"]) >= 20, gen["itl_ms"]
    assert json.loads(gen["grpc_trailers"])["x-served-by"] == "tiny-llm"
    req = pb2.GenerateRequest.FromString(gen["grpc_messages"][0]["data"])
    assert "tls.user@example.com" not in req.prompt and len(req.prompt) == len("my email is tls.user@example.com")
    for r in rows:
        assert b"tls.user@example.com" not in repr(r).encode()
    assert pb2.CountResponse.FromString(count["grpc_messages"][1]["data"]).tokens == 3
