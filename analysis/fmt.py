"""Aligned text tables and JSON output for the analysis commands."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from typing import Any


def cell(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


def pct(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{100 * v:.1f}%"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    """Text columns are left-aligned, numbers right-aligned."""
    texts = [[c if isinstance(c, str) else cell(c) for c in r] for r in rows]
    numeric = [
        all((not isinstance(r[i], str)) or _looks_numeric(r[i]) for r in rows) if rows else False
        for i in range(len(headers))
    ]
    widths = [max([len(h)] + [len(t[i]) for t in texts]) for i, h in enumerate(headers)]

    def line(vals):
        return "  ".join(v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(vals, widths))).rstrip()

    out = []
    if title:
        out.append(title)
    out.append(line(list(headers)))
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(t) for t in texts)
    return "\n".join(out)


def _looks_numeric(s: str) -> bool:
    s = s.strip().rstrip("%x").replace(",", "")
    if s in ("-", "inf"):
        return True
    try:
        float(s)
        return True
    except ValueError:
        return False


def _clean(o: Any) -> Any:
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, (dt.datetime, dt.date)):
        return o.isoformat()
    if hasattr(o, "item"):  # numpy scalars
        return _clean(o.item())
    return o


def to_json(obj: Any) -> str:
    return json.dumps(_clean(obj), indent=2, default=str)
