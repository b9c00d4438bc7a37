"""The production guard compares what names resolve to, not how they are spelled, for every
target (main, --route, gRPC); --allow-recorded-host is the one way past it."""

from __future__ import annotations

import socket

import pytest

from shadowreplay.errors import ConfigError
from shadowreplay.replayer.replay import ReplayOptions, replay
from shadowreplay.replayer.routes import parse_target
from shadowreplay.replayer.safety import check_targets, recorded_endpoints, resolve
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
