"""SLO specs ("ttft=500ms,e2e=5s"). Durations are parsed by shadowreplay.durations; its
`format_duration` is re-exported here for the analysis modules that import it from this one."""

from __future__ import annotations

from shadowreplay.durations import deprecation_note, format_duration, is_bare_number, parse_duration
from shadowreplay.errors import ConfigError

__all__ = ["SLO_METRICS", "format_duration", "parse_slo"]

SLO_METRICS = ("ttft", "e2e", "itl")


def parse_slo(text: str | None, flag: str | None = "--slo") -> dict[str, float]:
    """'ttft=500ms,e2e=5s,itl=50ms' -> {'ttft': 500.0, 'e2e': 5000.0, 'itl': 50.0} (milliseconds).
    A bare number is in milliseconds (deprecated: with `flag`, a note says how to write it)."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ConfigError(f"--slo: {part!r} is not NAME=DURATION (e.g. ttft=500ms,e2e=5s)")
        name, value = (s.strip().lower() for s in part.split("=", 1))
        if name == "tpot":
            name = "itl"
        if name not in SLO_METRICS:
            raise ConfigError(f"--slo: unknown metric {name!r} (use {', '.join(SLO_METRICS)})")
        out[name] = parse_duration(value, flag=f"--slo {name}", bare="ms", quiet=True) * 1000.0
        if flag and is_bare_number(value) and out[name]:
            deprecation_note(f"{flag} {name}={value}: a number without a unit; write {name}={value}ms")
    return out
