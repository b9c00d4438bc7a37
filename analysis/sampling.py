"""A sampled recording (`record --sample`): the sample rate each file's metadata carries, and the
traffic it stands for. Counts and rates of a sample, scaled by 1/rate, are estimates of the whole
traffic's: `analyze` shows them labelled so."""

from __future__ import annotations

from typing import Any

from shadowreplay.dataset import parquet_files
from shadowreplay.schema import REQUESTS
from shadowreplay.storage import read_parquet_metadata

from . import fmt
from .session import Sources

RATE_KEY = b"shadowreplay.recorder.sample_rate"
BY_KEY = b"shadowreplay.recorder.sample_by"


def collect(src: Sources) -> dict[str, Any] | None:
    """{rates, by, rows, estimated_requests, scale} over the recording's files, or None when no file
    was sampled. `scale` (estimated / rows) turns a count or rate of the rows into an estimate."""
    rows = 0
    estimated = 0.0
    rates: set[float] = set()
    by: set[str] = set()
    for root in src.roots.get(REQUESTS, []):
        for path in parquet_files(root, REQUESTS):
            try:
                md = read_parquet_metadata(path)
            except (OSError, ValueError):  # unreadable: refused or skipped (--skip-bad-files) by the dataset check
                continue
            kv = md.metadata or {}
            try:
                rate = float(kv.get(RATE_KEY, b"1"))
            except ValueError:
                rate = 1.0
            if not 0.0 < rate <= 1.0:
                rate = 1.0
            rows += md.num_rows
            estimated += md.num_rows / rate
            rates.add(rate)
            if rate < 1.0:
                by.add(kv.get(BY_KEY, b"?").decode(errors="replace"))
    if not rows or all(r == 1.0 for r in rates):
        return None
    return {"rates": sorted(rates), "by": sorted(by), "rows": rows, "estimated_requests": estimated,
            "scale": estimated / rows}  # fmt: skip


def estimate(group: dict[str, Any], scale: float) -> dict[str, float | None]:
    """A group's counts and rates scaled to the whole traffic."""
    return {k: (None if group.get(k) is None else group[k] * scale)
            for k in ("requests", "rps", "tokens_per_s", "goodput_rps")}  # fmt: skip


def describe(s: dict[str, Any]) -> str:
    rates = ", ".join(f"{r * 100:g}%" for r in s["rates"])
    return f"sampled at {rates} by {', '.join(s['by'])}"


def render(s: dict[str, Any], groups: list[dict[str, Any]], name) -> str:
    rows = [list(name(g)) + [fmt.cell(g["estimated"]["requests"], 0), fmt.cell(g["estimated"]["rps"], 2),
                             fmt.cell(g["estimated"]["tokens_per_s"], 1), fmt.cell(g["estimated"]["goodput_rps"], 2)]
            for g in groups]  # fmt: skip
    title = f"Estimated totals (a sample: {describe(s)}; counts and rates scaled by 1/rate)"
    return fmt.table(["kind", "model", "client", "requests (est.)", "rps (est.)", "tok/s (est.)", "goodput/s (est.)"],
                     rows, title)  # fmt: skip
