"""A shadow replay must never hit production by accident: refuse every target (the main one and
every --route target, HTTP and gRPC alike; `--b-target` and shards run this check too) that is
an endpoint the traffic was recorded from, unless --allow-recorded-host (which warns).

The endpoints a recording came from: each row's recorded `host` (the Host header as recorded,
often with its port: `vllm:8000`, `[::1]:8000`), its `port` and `scheme`, the `Host` and
`:authority` of its recorded request headers, and the recorder's `--upstream` URL, which the
recorder writes into every file's metadata (`shadowreplay.recorder.upstream`). A missing port is
the scheme's default (http 80, https 443).

Endpoints are compared by port and by what the names resolve to, not by spelling: a recording
from `vllm-prod.internal:8000` is refused when replayed to that host's IP address, and
`localhost`, any 127.x address, `::1`, `::ffff:127.0.0.1`, the unspecified `0.0.0.0`/`::` and
this machine's own name and addresses are all this machine. A name that does not resolve here
is compared by its spelling (case-insensitive)."""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from shadowreplay.errors import ConfigError

from .routes import Target

DEFAULT_PORT = {"http": 80, "https": 443, "grpc": 80, "ws": 80, "wss": 443}
UPSTREAM_KEY = "recorder.upstream"  # dataset metadata key (write_table's extra_metadata) of the recorder's --upstream
_THIS_MACHINE = "this machine"  # every loopback and unspecified address, and this host's own


@dataclass(frozen=True)
class Endpoint:
    host: str  # lower case, without IPv6 brackets or port
    port: int | None  # None: not known, any port matches
    source: str = "recorded host"  # where the recording names it, for the message


def split_authority(text: str | None, default_port: int | None = None) -> tuple[str, int | None] | None:
    """(host, port) of `host`, `host:port`, `[v6]`, `[v6]:port`, a bare IPv6 address, or a URL
    (`http://host:port/path`: the scheme's default port when it names none); None when empty or
    malformed."""
    if not text or not text.strip():
        return None
    t = text.strip()
    if "://" in t:
        u = urlsplit(t)
        try:
            port = u.port
        except ValueError:
            return None
        if not u.hostname:
            return None
        return u.hostname.lower(), port if port is not None else DEFAULT_PORT.get(u.scheme.lower(), default_port)
    t = t.split("/", 1)[0].rsplit("@", 1)[-1]  # no path, no userinfo
    if t.startswith("["):
        host, _, rest = t[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif t.count(":") == 1:
        host, _, port_text = t.partition(":")
    else:  # a name, or a bare IPv6 address (more than one colon)
        host, port_text = t, ""
    host = host.strip().rstrip(".").lower()
    if not host:
        return None
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return None
        return host, int(port_text)
    return host, default_port


def recorded_endpoints(
    hosts: Iterable[str | None], ports: Iterable[int | None], schemes: Iterable[str | None],
    authorities: Iterable[str | None] = (), upstreams: Iterable[str] = (),
) -> set[Endpoint]:
    """The endpoints named by a recording's rows (host, port, scheme columns, position by
    position), by their recorded Host/`:authority` headers and by the recorder's --upstream
    URLs from the files' metadata."""
    out: set[Endpoint] = set()
    for h, p, s in set(zip(hosts, ports, schemes)):
        default = p if p is not None else DEFAULT_PORT.get((s or "").lower())
        parsed = split_authority(h, default)
        if parsed is None:
            continue
        out.add(Endpoint(parsed[0], parsed[1]))
        if p is not None and parsed[1] != p:  # the Host header's port and the connection's differ: both
            out.add(Endpoint(parsed[0], p))
    for a in set(authorities):
        parsed = split_authority(a)
        if parsed is not None:
            out.add(Endpoint(parsed[0], parsed[1], "recorded Host header"))
    for u in set(upstreams):
        parsed = split_authority(u if "://" in u else f"http://{u}")
        if parsed is not None:
            out.add(Endpoint(parsed[0], parsed[1], "the recorder's --upstream"))
    return out


@functools.cache
def _own_addresses() -> frozenset[str]:
    """This host's own addresses, as its name resolves (through /etc/hosts, typically)."""
    out: set[str] = set()
    try:
        for *_, sa in socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM):
            out.add(_plain(str(sa[0])))
    except (OSError, UnicodeError):
        pass
    return frozenset(out)


def _plain(addr: str) -> str:
    try:
        ip = ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return addr.lower()
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.compressed


def _normalize(addr: str) -> str:
    plain = _plain(addr)
    try:
        ip = ipaddress.ip_address(plain)
    except ValueError:
        return plain
    if ip.is_loopback or ip.is_unspecified or plain in _own_addresses():
        return _THIS_MACHINE
    return plain


def resolve(host: str) -> frozenset[str]:
    """Every address `host` stands for (A and AAAA records; this machine's addresses as one),
    plus the name itself, so that a name that does not resolve still matches its own spelling."""
    host = host.lower().strip("[]").rstrip(".")
    names = {_normalize(host)}
    if host == "localhost" or host.endswith(".localhost") or host == socket.gethostname().lower():
        names.add(_THIS_MACHINE)
    try:
        for *_, sockaddr in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM):
            names.add(_normalize(str(sockaddr[0])))
    except (OSError, UnicodeError):
        pass  # not resolvable from here: only the spelling can be compared
    return frozenset(names)


def check_targets(
    targets: Iterable[Target], recorded: set[Endpoint], allow: bool, resolver: Callable[[str], frozenset[str]] = resolve
) -> list[str]:
    """Raises ConfigError for the first target that is a recorded endpoint; with `allow`, returns
    one warning line per such target instead (the caller prints them)."""
    if not recorded:
        return []
    cache: dict[str, frozenset[str]] = {}

    def addrs(host: str) -> frozenset[str]:
        if host not in cache:
            cache[host] = resolver(host)
        return cache[host]

    warnings = []
    for t in targets:
        mine = addrs(t.host)
        for ep in sorted(recorded, key=lambda e: (e.source != "the recorder's --upstream", e.host, e.port or 0)):
            if (ep.port is None or ep.port == t.port) and mine & addrs(ep.host):
                same = "" if ep.host == t.host.lower().strip("[]") else ", the same address"
                what = f"{ep.source} {ep.host}:{ep.port if ep.port is not None else '*'}{same}"
                if allow:
                    warnings.append(f"replaying into {t.url}, an endpoint this traffic was recorded from ({what}), "
                                    "because of --allow-recorded-host")
                    break
                raise ConfigError(
                    f"target {t.url} is an endpoint this traffic was recorded from ({what}); refusing to replay "
                    "into production (pass --allow-recorded-host if you really mean it)"
                )
    return warnings
