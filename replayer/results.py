"""Building and writing OUT/replay_results/ tables (via shadowreplay.dataset), the run's manifest
and its summary."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa

from shadowreplay.dataset import conform, write_table
from shadowreplay.schema import REPLAY_RESULTS
from shadowreplay.storage import Location, location, write_atomic

from . import damaged


def columns_table(columns: dict[str, list[Any]]) -> pa.Table:
    return conform(pa.table({k: pa.array(v) for k, v in columns.items()}), REPLAY_RESULTS)


def write_results(out: Path, columns: dict[str, list[Any]], run_id: str, shard_tag: str | None = None) -> list[Path]:
    """`shard_tag` (shard-K-of-N): into the file names and the files' metadata (`shadowreplay.shard`)."""
    meta = {"run_id": run_id} | ({"shard": shard_tag} if shard_tag else {})
    return write_table(out, REPLAY_RESULTS, columns_table(columns), extra_metadata=meta, name_tag=shard_tag)


def write_manifest(out: Location, manifest: dict, name: str = "manifest.json") -> None:
    """Writes OUT/NAME atomically (a sharded replay's is manifests/shard-K-of-N.json); OUT is a
    folder or an s3:// prefix."""
    final = location(out) / name
    if isinstance(final, Path):
        final.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(final, (json.dumps(manifest, indent=2, default=str) + "\n").encode())


def percentile(sorted_vals: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, math.ceil(q / 100 * len(sorted_vals)) - 1))
    return sorted_vals[k]


def summarize(lags_ms: list[float], cap_ms: list[float], errors: int, sent: int, selected: int,
              first_sent_ns: int | None, last_sent_ns: int | None, schedule_span_s: float) -> dict:
    lags = sorted(lags_ms)
    span = (last_sent_ns - first_sent_ns) / 1e9 if first_sent_ns is not None and last_sent_ns is not None else 0.0
    capped = [c for c in cap_ms if c > 0]
    return {
        "selected": selected,
        "sent": sent,
        "not_sent": selected - sent,
        "errors": errors,
        "lag_p50_ms": percentile(lags, 50),
        "lag_p99_ms": percentile(lags, 99),
        "lag_max_ms": lags[-1] if lags else None,
        "late_over_1ms": sum(1 for x in lags if x > 1.0),
        "late_over_10ms": sum(1 for x in lags if x > 10.0),
        "achieved_rate_per_s": round((sent - 1) / span, 2) if span > 0 and sent > 1 else None,
        "scheduled_rate_per_s": round((selected - 1) / schedule_span_s, 2) if schedule_span_s > 0 and selected > 1 else None,
        "capped_sends": len(capped),
        "cap_delay_max_ms": max(capped) if capped else 0.0,
    }


def error_kinds(errors) -> dict[str, int]:
    """Counts of the results' errors by kind (the manifest's `errors_by_kind`): the target refused
    or was unreachable (connect), did not answer in time (timeout), dropped the connection
    (reset), answered 4xx/5xx, or the replay was interrupted or ended first."""
    out: dict[str, int] = {}
    for e in errors:
        if e is None:
            continue
        low = e.lower()
        if low.startswith("connect"):
            kind = "connect"
        elif low.startswith("http 5"):
            kind = "http_5xx"
        elif low.startswith("http 4"):
            kind = "http_4xx"
        elif low.startswith("interrupted") or low.startswith("no response when the replay ended"):
            kind = "interrupted"
        elif "timeout" in low or "timed out" in low:
            kind = "timeout"
        elif any(w in low for w in ("reset", "closed", "eof", "broken pipe", "disconnect")):
            kind = "reset"
        else:
            kind = "other"
        out[kind] = out.get(kind, 0) + 1
    return out


def format_summary(s: dict) -> str:
    def f(v, unit=""):
        return "-" if v is None else (f"{v:.3f}{unit}" if isinstance(v, float) else f"{v}{unit}")

    lines = [
        f"replay: {s['sent']} sent of {s['selected']} selected ({s['not_sent']} not sent), {s['errors']} errors",
        f"send lag: p50 {f(s['lag_p50_ms'], ' ms')}  p99 {f(s['lag_p99_ms'], ' ms')}  max {f(s['lag_max_ms'], ' ms')}  "
        f"late >1 ms: {s['late_over_1ms']}  >10 ms: {s['late_over_10ms']}",
        f"rate: achieved {f(s['achieved_rate_per_s'], '/s')}  scheduled {f(s['scheduled_rate_per_s'], '/s')}",
    ]
    if s["capped_sends"]:
        lines.append(f"--max-in-flight delayed {s['capped_sends']} sends (max {s['cap_delay_max_ms']:.1f} ms)")
    if s.get("errors_by_kind"):
        lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(s["errors_by_kind"].items())))
    if s.get("interrupted_by"):
        lines.append(f"interrupted by {s['interrupted_by']}")
    if s.get("resent"):
        lines.append(f"resent: {s['resent']} requests whose idle keep-alive connection the target closed unanswered")
    for key, included in (("damaged_left_out", False), ("damaged_included", True)):
        if s.get(key):
            lines.append(damaged.line(s[key], included))
    return "\n".join(lines)
