"""The Prometheus text exposition format (what vLLM serves on /metrics), read with
`prometheus_client.parser`, as flat samples."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

# what prometheus_client's parser raises on a line it cannot read
_BAD_LINE = (ValueError, IndexError, KeyError, TypeError)


@dataclass(frozen=True)
class Sample:
    metric: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)


def _samples(text: str) -> list:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def parse(text: str, *, keep_buckets: bool = False) -> list[Sample]:
    """Samples in `text`; malformed lines are skipped. Histogram `_bucket` series are dropped
    unless keep_buckets (they are many and the `_sum`/`_count` pair is what analysis uses)."""
    try:
        raw = _samples(text)
    except _BAD_LINE:  # the parser stops at a bad line: read line by line, skipping bad ones
        raw = []
        for line in text.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                try:
                    raw.extend(_samples(line + "\n"))
                except _BAD_LINE:
                    continue
    return [
        Sample(s.name, float(s.value), dict(s.labels))
        for s in raw
        if (keep_buckets or not s.name.endswith("_bucket")) and not math.isnan(s.value)
    ]
