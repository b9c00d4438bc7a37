"""A shadow replay must never hit production by accident: refuse targets that are the host the
traffic was recorded from (same host name and port), unless --allow-recorded-host."""

from __future__ import annotations

from collections.abc import Iterable

from shadowreplay.errors import ConfigError

from .routes import Target

_DEFAULT_PORT = {"http": 80, "https": 443}


def recorded_endpoints(hosts: Iterable[str | None], ports: Iterable[int | None], schemes: Iterable[str | None]) -> set[tuple[str, int | None]]:
    out = set()
    for h, p, s in zip(hosts, ports, schemes):
        if not h:
            continue
        out.add((h.lower().strip("[]"), p if p is not None else _DEFAULT_PORT.get(s or "")))
    return out


def check_targets(targets: Iterable[Target], recorded: set[tuple[str, int | None]], allow: bool) -> None:
    if allow:
        return
    for t in targets:
        host = t.host.lower().strip("[]")
        for h, p in recorded:
            if h == host and (p is None or p == t.port):
                raise ConfigError(
                    f"target {t.url} is the host this traffic was recorded from ({h}:{p if p is not None else '*'}); "
                    "refusing to replay into production (pass --allow-recorded-host if you really mean it)"
                )
