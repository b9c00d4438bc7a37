"""Checks that planted PII strings appear nowhere in a dataset (every column of every Parquet
file, nested values included) nor in any other file of a folder (logs, reports). Used by the
demo after recording; the planted strings only ever live in memory."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq


@dataclass
class ScanResult:
    files: int = 0
    rows: int = 0
    request_rows: int = 0  # rows of the requests table
    columns: int = 0
    leaks: list[str] = field(default_factory=list)  # "FILE: column COL holds a planted value"
    pii_counts: dict[str, int] = field(default_factory=dict)  # the scrubber's own counts


def _column_text(values: list) -> str:
    return json.dumps(values, ensure_ascii=False, default=lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)).lower()


def find_planted(text: str, planted_lower: list[str]) -> str | None:
    for p in planted_lower:
        if p in text:
            return p
    return None


def scan_dataset(root: str | Path, planted: set[str]) -> ScanResult:
    """Every Parquet file under root, every column (strings, lists, maps, binary payloads)."""
    root = Path(root)
    res = ScanResult()
    needles = sorted({p.lower() for p in planted if p})
    counts: Counter[str] = Counter()
    for f in sorted(Path(root).rglob("*.parquet")):
        table = pq.read_table(f)
        res.files += 1
        res.rows += table.num_rows
        if "requests" in f.relative_to(root).parts:
            res.request_rows += table.num_rows
        for name in table.column_names:
            col = table.column(name)
            values = col.to_pylist()
            res.columns += 1
            hit = find_planted(_column_text(values), needles)
            if hit is not None:
                res.leaks.append(f"{f}: column {name} holds a planted value")
            if name == "pii_counts":
                for m in values:
                    for k, v in (m or []):
                        counts[k] += v or 0
    res.pii_counts = dict(counts)
    return res


def scan_text_files(root: str | Path, planted: set[str], max_bytes: int = 64 << 20) -> list[str]:
    """Every non-Parquet file under root (logs, JSON, HTML, text), read as text."""
    needles = sorted({p.lower() for p in planted if p})
    hits = []
    for f in sorted(Path(root).rglob("*")):
        if not f.is_file() or f.suffix == ".parquet":
            continue
        try:
            text = f.read_bytes()[:max_bytes].decode("utf-8", "replace").lower()
        except OSError:
            continue
        if find_planted(text, needles) is not None:
            hits.append(f"{f} holds a planted value")
    return hits
