"""Per-instance recorder counters of a recording written by a fleet (the status objects that
shadowreplay.fleet lays out): rows written, drops and errors of each instance, and their sum."""

from __future__ import annotations

from typing import Any

from shadowreplay import fleet
from shadowreplay.schema import REQUESTS

from . import fmt
from .session import Sources

DROPS = ("dropped_queue_full", "dropped_write_failed", "dropped_writer_died", "dropped_unpicklable")
ERRORS = ("write_failed", "convert_failed", "proxy_errors")


def _int(st: dict[str, Any], key: str) -> int:
    try:
        return int(st.get(key) or 0)
    except (TypeError, ValueError):
        return 0


def collect(src: Sources) -> list[dict[str, Any]]:
    """One row per recorder instance found beside the requests table(s): its counters, and
    `drops` / `errors` summed over their kinds. Empty when no status object exists."""
    rows = []
    for root in src.roots.get(REQUESTS, []):
        for instance, st in fleet.read_statuses(root).items():
            rows.append({
                "instance": instance,
                "root": str(root),
                "writer": st.get("writer"),
                "rows_written": _int(st, "rows_written"),
                "submitted": _int(st, "submitted"),
                "drops": sum(_int(st, k) for k in DROPS),
                "errors": sum(_int(st, k) for k in ERRORS),
                **{k: _int(st, k) for k in DROPS + ERRORS},
                "updated_at": st.get("updated_at"),
            })
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    body = [[r["instance"], r["rows_written"], r["submitted"], r["drops"], r["errors"]] for r in rows]
    if len(rows) > 1:
        body.append(["ALL"] + [sum(r[k] for r in rows) for k in ("rows_written", "submitted", "drops", "errors")])
    return fmt.table(["instance", "rows written", "submitted", "drops", "errors"], body, "Recorders (their status objects)")
