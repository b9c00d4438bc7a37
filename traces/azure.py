"""Azure LLM inference traces, 2023 (Splitwise) and 2024 (week-long):
CSV TIMESTAMP, ContextTokens, GeneratedTokens; TIMESTAMP is absolute UTC wall-clock time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .base import Chunk, Report
from .csvread import check_columns, read_header, stream_sql

FORMAT = "azure-llm"
COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def _np(col: pa.Array, fill) -> np.ndarray:
    return (col.fill_null(fill) if col.null_count else col).to_numpy(zero_copy_only=False)


def report_bad(report: Report, path: Path, batch: pa.RecordBatch, first_row: int, what: str) -> np.ndarray:
    """Warns about rows whose values did not parse (naming their line) and returns the keep mask."""
    bad = batch.column("bad")
    if bad.null_count == len(bad):
        return None
    mask = pc.is_valid(bad).to_numpy(zero_copy_only=False)
    where = np.flatnonzero(mask)
    for i in where[:5]:
        line = first_row + int(i) + 1  # +1: the header is line 1
        report.warn("unparseable", f"{path.name}:{line}: skipped, cannot parse {what}: {bad[int(i)].as_py()!r}")
    if len(where) > 5:
        report.counts["unparseable"] += len(where) - 5
    return ~mask


def read(path: Path, report: Report, **_) -> Iterator[Chunk]:
    header = read_header(path)
    check_columns(path, header, COLUMNS, FORMAT)
    cols = {"__header__": header, "ts": "TIMESTAMP", "prompt": "ContextTokens", "completion": "GeneratedTokens"}
    first = 1
    for batch in stream_sql(path, "azure.sql", cols):
        n = batch.num_rows
        rows = np.arange(first, first + n, dtype=np.int64)
        keep = report_bad(report, path, batch, first, "TIMESTAMP,ContextTokens,GeneratedTokens")
        ts = _np(batch.column("ts").cast(pa.int64()), 0)
        pt = _np(batch.column("prompt_tokens"), -1)
        ct = _np(batch.column("completion_tokens"), -1)
        first += n
        report.rows_read += n
        if keep is not None:
            rows, ts, pt, ct = rows[keep], ts[keep], pt[keep], ct[keep]
        yield Chunk(row=rows, ts_us=ts, prompt_tokens=pt, completion_tokens=ct)
