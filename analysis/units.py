"""Parsing of durations ("500ms", "5s", "1w") and SLO specs ("ttft=500ms,e2e=5s")."""

from __future__ import annotations

import re

from shadowreplay.errors import ConfigError

_UNITS_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DUR = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$")

SLO_METRICS = ("ttft", "e2e", "itl")


def parse_duration_s(text: str, default_unit: str = "s") -> float:
    """A duration in seconds. A bare number is in `default_unit`."""
    m = _DUR.match(str(text).lower())
    if not m:
        raise ConfigError(f"{text!r} is not a duration (examples: 500ms, 5s, 10m, 1h, 1d, 1w)")
    unit = m.group(2) or default_unit
    if unit not in _UNITS_S:
        raise ConfigError(f"{text!r}: unknown unit {unit!r} (use one of {', '.join(_UNITS_S)})")
    value = float(m.group(1)) * _UNITS_S[unit]
    if value <= 0:
        raise ConfigError(f"{text!r}: a duration must be positive")
    return value


def parse_slo(text: str | None) -> dict[str, float]:
    """'ttft=500ms,e2e=5s,itl=50ms' -> {'ttft': 500.0, 'e2e': 5000.0, 'itl': 50.0} (milliseconds).
    A bare number is in milliseconds."""
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
        out[name] = parse_duration_s(value, default_unit="ms") * 1000.0
    return out


def format_duration(seconds: float) -> str:
    """Shortest readable form: 604800 -> '1w', 3600 -> '1h', 10 -> '10s', 0.5 -> '500ms'."""
    for unit in ("w", "d", "h", "m", "s"):
        size = _UNITS_S[unit]
        if seconds >= size and abs(seconds / size - round(seconds / size)) < 1e-9:
            return f"{round(seconds / size)}{unit}"
    if seconds >= 1:
        return f"{seconds:g}s"
    return f"{seconds * 1000:g}ms"
