"""The production guard compares what names resolve to, not how they are spelled, for every
target (main, --route, gRPC); --allow-recorded-host is the one way past it."""

from __future__ import annotations

import socket

import pytest

from shadowreplay.errors import ConfigError
from shadowreplay.replayer.replay import ReplayOptions, replay
from shadowreplay.replayer.routes import parse_target
from shadowreplay.replayer.safety import check_targets, recorded_endpoints, resolve, split_authority
from tests.replayer_helpers import write_recording
from tests.test_replayer_grpc import grpc_row


def refused(target: str, host: str, port: int | None, scheme: str = "http", **kw) -> bool:
    try:
        check_targets([parse_target(target)], recorded_endpoints([host], [port], [scheme]), allow=False, **kw)
    except ConfigError as e:
        assert "--allow-recorded-host" in str(e)
        return True
    return False


@pytest.mark.parametrize("target", ["http://127.0.0.1:8000", "http://127.0.1.1:8000", "http://[::1]:8000",
                                    "http://[::ffff:127.0.0.1]:8000", "http://LOCALHOST:8000"])
def test_every_spelling_of_this_machine_is_this_machine(target):
    assert refused(target, "localhost", 8000)
    assert not refused(target.rsplit(":", 1)[0] + ":8001", "localhost", 8000)  # another port is another server


def test_a_name_and_its_address_are_one_endpoint():
    # this machine's own name resolves through /etc/hosts (no DNS needed)
    name = socket.gethostname()
    addr = next(iter(a for a in resolve(name) if a != name.lower()))
    target = "http://127.0.0.1:9000" if addr == "loopback" else f"http://{addr}:9000"
    assert refused(target, name, 9000)
    # a production name that only the production network resolves (given here as a resolver)
    prod = {"vllm-prod.internal": frozenset({"vllm-prod.internal", "10.20.30.40"}), "10.20.30.40": frozenset({"10.20.30.40"}),
            "10.20.30.41": frozenset({"10.20.30.41"})}  # fmt: skip
    assert refused("http://10.20.30.40:8000", "vllm-prod.internal", 8000, resolver=prod.__getitem__)
    assert not refused("http://10.20.30.41:8000", "vllm-prod.internal", 8000, resolver=prod.__getitem__)


@pytest.mark.parametrize("text,default,want", [
    ("127.0.0.1:18000", 80, ("127.0.0.1", 18000)), ("vllm:8000", None, ("vllm", 8000)), ("VLLM", 443, ("vllm", 443)),
    ("[::1]:8000", None, ("::1", 8000)), ("[::ffff:127.0.0.1]", 80, ("::ffff:127.0.0.1", 80)), ("::1", 80, ("::1", 80)),
    ("http://vllm", None, ("vllm", 80)), ("https://vllm/v1", None, ("vllm", 443)), ("grpc://g:50051", None, ("g", 50051)),
    ("", 80, None), ("h:99999", 80, None), ("h:x", 80, None),
])
def test_authorities_are_split_into_host_and_port(text, default, want):
    assert split_authority(text, default) == want


def test_a_recorded_host_with_its_port_is_that_endpoint():
    # the recorder stores the Host header as sent: with its port
    rec = recorded_endpoints(["127.0.0.1:18000"], [18000], ["http"])
    assert refused_by("http://localhost:18000", rec) and not refused_by("http://localhost:18001", rec)
    rec = recorded_endpoints([None], [None], [None], authorities=["localhost:9000"], upstreams=["http://localhost:9001"])
    assert refused_by("http://127.0.0.1:9000", rec) and refused_by("http://[::1]:9001", rec)
    assert refused_by("http://0.0.0.0:9001", rec)  # the unspecified address is this machine too


def refused_by(target: str, recorded) -> bool:
    try:
        check_targets([parse_target(target)], recorded, allow=False)
    except ConfigError:
        return True
    return False


def test_unresolvable_names_compare_by_spelling_and_allow_passes():
    assert refused("https://API.prod.invalid", "api.prod.invalid", None, "https")
    assert not refused("https://api2.prod.invalid", "api.prod.invalid", None, "https")
    check_targets([parse_target("https://api.prod.invalid")], recorded_endpoints(["api.prod.invalid"], [443], ["https"]), allow=True)


def test_route_and_grpc_targets_are_checked(tmp_path):
    rows = [grpc_row(0, 0.0, "Generate", b"\x0a\x02hi")]
    rows[0].update(host="localhost", port=50051)
    write_recording(tmp_path / "rec", rows)
    opts = dict(recording=str(tmp_path / "rec"), out=str(tmp_path / "out"), no_metrics=True, progress=False, dry_run=True)
    with pytest.raises(ConfigError, match="recorded from"):  # 127.0.0.1:50051 is localhost:50051
        replay(ReplayOptions(target="http://127.0.0.1:50051", **opts), echo=lambda s: None)
    with pytest.raises(ConfigError, match="recorded from"):  # a --route target too
        replay(ReplayOptions(target="http://127.0.0.1:50052", routes=["kind = 'grpc'=http://[::1]:50051"], **opts), echo=lambda s: None)
    with pytest.raises(ConfigError, match="must not have a path"):  # the gRPC target check runs
        replay(ReplayOptions(target="http://127.0.0.1:50052/v1", **opts), echo=lambda s: None)
    res = replay(ReplayOptions(target="http://127.0.0.1:50051", allow_recorded_host=True, **opts), echo=lambda s: None)
    assert res.schedule["requests"] == 1


# --- recordings made by the real recorder (mitmdump + addon) in front of a stand-in production ---

def _loopback_name() -> str:
    """A name other than `localhost` that resolves to a loopback address here (this machine's own
    name usually does, through /etc/hosts), else `localhost` itself."""
    import ipaddress

    for name in (socket.gethostname(), "localhost.localdomain", "ip6-localhost"):
        try:
            addrs = {a[4][0] for a in socket.getaddrinfo(name, None)}
        except OSError:
            continue
        if addrs and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs):
            return name
    return "localhost"


UPSTREAM_SPELLINGS = ["127.0.0.1", "localhost", "loopback-name"]


@pytest.fixture(scope="module", params=UPSTREAM_SPELLINGS)
def production_recording(request, tmp_path_factory):
    """(stand-in production server, recording folder, the --upstream it was recorded with): the
    real recorder in front of it, three requests recorded through it."""
    import httpx

    from shadowreplay.ports import free_port
    from tests.recorder_helpers import Proxy, chat
    from tests.sse_server import SseServer

    base = tmp_path_factory.mktemp("prod")
    key = base / "keys" / "scrub.key"
    key.parent.mkdir()
    key.write_bytes(b"a-test-key-that-is-long-enough-0123456789")
    host = _loopback_name() if request.param == "loopback-name" else request.param
    with SseServer() as prod:
        upstream = f"http://{host}:{prod.port}"
        out = base / "rec"
        with Proxy(upstream, out, key, free_port(), shadowreplay_rotate_seconds="0.2s") as proxy:
            with httpx.Client(base_url=proxy.url, timeout=30) as c:
                for i in range(3):
                    assert c.post("/v1/chat/completions", json=chat(f"hello {i}", max_tokens=2)).status_code == 200
            assert proxy.stop() == 0
        assert len(prod.requests) == 3
        yield prod, out, upstream


def _targets_for(port: int) -> list[str]:
    return [f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::ffff:127.0.0.1]:{port}",
            f"http://{_loopback_name()}:{port}", f"http://127.0.0.2:{port}", f"http://LOCALHOST:{port}/"]


@pytest.mark.slow
def test_a_recording_made_by_the_recorder_is_never_replayed_onto_its_upstream(production_recording, tmp_path):
    prod, rec, upstream = production_recording
    before = len(prod.requests)
    for i, target in enumerate(_targets_for(prod.port)):
        opts = dict(recording=str(rec), out=str(tmp_path / f"out{i}"), no_metrics=True, progress=False)
        with pytest.raises(ConfigError, match="--allow-recorded-host"):
            replay(ReplayOptions(target=target, **opts), echo=lambda s: None)
        # a --route or a second target onto production is refused as well
        with pytest.raises(ConfigError, match="--allow-recorded-host"):
            replay(ReplayOptions(target="http://127.0.0.1:1", routes=[f"true={target}"], **opts), echo=lambda s: None)
        assert not (tmp_path / f"out{i}").exists()
    assert len(prod.requests) == before, "a replay reached the recorded upstream"


@pytest.mark.slow
def test_the_recorded_upstream_is_in_the_files_metadata_and_refused(production_recording, tmp_path):
    import pyarrow.parquet as pq

    from shadowreplay.dataset import parquet_files

    prod, rec, upstream = production_recording
    files = parquet_files(rec, "requests")
    assert files and all(pq.read_metadata(f).metadata[b"shadowreplay.recorder.upstream"] == upstream.encode() for f in files)
    # rows that say nothing of their host (another tool's, or edited) are still refused by the metadata
    import pyarrow.compute as pc

    t = pq.read_table(files[0])
    t = t.set_column(t.schema.get_field_index("host"), "host", pc.cast(pa_nulls(t.num_rows), t.schema.field("host").type))
    t = t.set_column(t.schema.get_field_index("port"), "port", pc.cast(pa_nulls(t.num_rows), t.schema.field("port").type))
    t = t.set_column(t.schema.get_field_index("request_headers"), "request_headers",
                     pc.cast(pa_nulls(t.num_rows), t.schema.field("request_headers").type))
    bare = tmp_path / "bare" / "requests" / "date=2026-01-01" / "hour=00"
    bare.mkdir(parents=True)
    pq.write_table(t, bare / "part.parquet")
    with pytest.raises(ConfigError, match="--allow-recorded-host"):
        replay(ReplayOptions(recording=str(tmp_path / "bare"), target=f"http://localhost:{prod.port}", out=str(tmp_path / "o"),
                             no_metrics=True, progress=False), echo=lambda s: None)


def pa_nulls(n: int):
    import pyarrow as pa

    return pa.nulls(n)


@pytest.mark.slow
def test_another_port_works_and_the_override_is_loud(production_recording, tmp_path, capsys):
    from shadowreplay.cli import main
    from tests.sse_server import SseServer

    prod, rec, upstream = production_recording
    before = len(prod.requests)
    with SseServer() as shadow:
        res = replay(ReplayOptions(recording=str(rec), target=f"http://localhost:{shadow.port}", out=str(tmp_path / "ok"),
                                   no_metrics=True, progress=False), echo=lambda s: None)
        assert res.summary["errors"] == 0 and len(shadow.requests) == 3
    # the CLI: one line, exit 2, no output folder
    rc = main(["replay", str(rec), "--target", f"http://127.0.0.1:{prod.port}", "--out", str(tmp_path / "cli"),
               "--no-metrics", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "--allow-recorded-host" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "cli").exists()
    assert len(prod.requests) == before
    # the override: it does reach the recorded upstream, and says so on stderr
    rc = main(["replay", str(rec), "--target", f"http://127.0.0.1:{prod.port}", "--out", str(tmp_path / "meant"),
               "--no-metrics", "--no-progress", "--allow-recorded-host"])
    assert rc == 0
    assert "warning" in capsys.readouterr().err.lower()
    assert len(prod.requests) == before + 3
