"""Pure parser of the Prometheus text exposition format (what vLLM serves on /metrics)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(frozen=True)
class Sample:
    metric: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)


def _unescape(v: str) -> str:
    return v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def _value(s: str) -> float | None:
    try:
        return float(s)  # handles NaN, +Inf, -Inf
    except ValueError:
        return None


def parse(text: str, *, keep_buckets: bool = False) -> list[Sample]:
    """Samples in `text`; malformed lines are skipped. Histogram `_bucket` series are dropped
    unless keep_buckets (they are many and the `_sum`/`_count` pair is what analysis uses)."""
    out: list[Sample] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        name, _, labels_text, raw = m.groups()
        if not keep_buckets and name.endswith("_bucket"):
            continue
        value = _value(raw)
        if value is None or math.isnan(value):
            continue
        labels = {k: _unescape(v) for k, v in _LABEL.findall(labels_text or "")}
        out.append(Sample(name, value, labels))
    return out
