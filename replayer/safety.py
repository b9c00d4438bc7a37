"""A shadow replay must never hit production by accident: refuse every target (the main one and
every --route target, HTTP and gRPC alike) that is an endpoint the traffic was recorded from,
unless --allow-recorded-host.

Endpoints are compared by port and by what the names resolve to, not by spelling: a recording
from `vllm-prod.internal:8000` is refused when replayed to that host's IP address, and
`localhost`, `127.0.0.1`, any other 127.x address, `::1` and `::ffff:127.0.0.1` are all this
machine. A name that does not resolve here is compared by its spelling (case-insensitive)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from shadowreplay.errors import ConfigError

from .routes import Target

_DEFAULT_PORT = {"http": 80, "https": 443, "grpc": 80}
_LOOPBACK = "loopback"  # every address of this machine's loopback interface


@dataclass(frozen=True)
class Endpoint:
    host: str  # as recorded, lower case, without IPv6 brackets
    port: int | None  # None: not recorded, any port matches


def recorded_endpoints(hosts: Iterable[str | None], ports: Iterable[int | None], schemes: Iterable[str | None]) -> set[Endpoint]:
    out = set()
    for h, p, s in zip(hosts, ports, schemes):
        if not h:
            continue
        out.add(Endpoint(h.lower().strip("[]"), p if p is not None else _DEFAULT_PORT.get(s or "")))
    return out


def _normalize(addr: str) -> str:
    try:
        ip = ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return addr.lower()
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return _LOOPBACK if ip.is_loopback else ip.compressed


def resolve(host: str) -> frozenset[str]:
    """Every address `host` stands for (A and AAAA records; loopback addresses as one), plus the
    name itself, so that a name that does not resolve still matches its own spelling."""
    host = host.lower().strip("[]")
    names = {_normalize(host)}
    if host == "localhost" or host.endswith(".localhost"):
        names.add(_LOOPBACK)
    try:
        for *_, sockaddr in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM):
            names.add(_normalize(str(sockaddr[0])))
    except (OSError, UnicodeError):
        pass  # not resolvable from here: only the spelling can be compared
    return frozenset(names)


def check_targets(
    targets: Iterable[Target], recorded: set[Endpoint], allow: bool, resolver: Callable[[str], frozenset[str]] = resolve
) -> None:
    if allow or not recorded:
        return
    cache: dict[str, frozenset[str]] = {}

    def addrs(host: str) -> frozenset[str]:
        if host not in cache:
            cache[host] = resolver(host)
        return cache[host]

    for t in targets:
        mine = addrs(t.host)
        for ep in recorded:
            if (ep.port is None or ep.port == t.port) and mine & addrs(ep.host):
                raise ConfigError(
                    f"target {t.url} is an endpoint this traffic was recorded from ({ep.host}:{ep.port if ep.port is not None else '*'}"
                    f"{'' if ep.host == t.host.lower().strip('[]') else ', the same address'}); refusing to replay into "
                    "production (pass --allow-recorded-host if you really mean it)"
                )
