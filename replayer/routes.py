"""`--route 'PREDICATE=URL'`: send the requests matching a DuckDB predicate over the requests
table to another target. Rules are tried in the order given; the first match wins; requests no
rule matches go to --target. The URL is what follows the last `=` that starts `http://`,
`https://` or `grpc://`, so predicates may use `=` themselves (`kind = 'chat'=http://h:8002`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from shadowreplay.errors import ConfigError

_RULE = re.compile(r"^(?P<pred>.+?)\s*=\s*(?P<url>(?:https?|grpc)://\S+)\s*$", re.S)


@dataclass(frozen=True)
class Target:
    url: str  # as given, without a trailing slash
    scheme: str  # http | https (grpc:// is treated as plain-text http/2)
    host: str
    port: int
    base_path: str  # path prefix prepended to recorded paths ('' normally)

    @property
    def hostport(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Route:
    predicate: str
    target: Target


def parse_target(url: str) -> Target:
    u = urlsplit(url.strip())
    if u.scheme not in ("http", "https", "grpc") or not u.hostname:
        raise ConfigError(f"bad target {url!r}: expected http://HOST[:PORT] or https://HOST[:PORT]")
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise ConfigError(f"bad target {url!r}: bad port") from None
    return Target(url.strip().rstrip("/"), u.scheme, u.hostname, port, u.path.rstrip("/"))


def parse_route(rule: str) -> Route:
    m = _RULE.match(rule.rstrip())
    if not m:
        raise ConfigError(f"bad --route {rule!r}: expected 'PREDICATE=URL', e.g. 'prompt_chars > 4000=http://127.0.0.1:8002'")
    # A route predicate ending in a comparison (`model =http://...`) would be ambiguous; the
    # greedy split above leaves the predicate non-empty, which is all DuckDB needs to judge it.
    return Route(m.group("pred").strip(), parse_target(m.group("url")))
