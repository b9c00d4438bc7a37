"""BurstGPT (HPMLL/BurstGPT), every published CSV layout, columns found by header name:

- v1 `BurstGPT_1.csv`/`_2.csv`: Timestamp, Model, Request tokens, Response tokens, Total tokens,
  Log Type (failed requests have Response tokens 0);
- v1 `BurstGPT_without_fails_*.csv`: the same columns, failures removed;
- v2 `BurstGPT_3.csv`: Timestamp, Session ID, Elapsed time, Model, Request tokens,
  Response tokens, Total tokens, Log Type.

Timestamp is seconds since the start of the collection (float); rows are placed at --origin +
Timestamp. client_id is the Session ID where present, else the Log Type ("Conversation log" /
"API log"); model is the Model column (ChatGPT, GPT-4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .azure import report_bad
from .base import Chunk, Report
from .csvread import check_columns, read_header, stream_sql

FORMAT = "burstgpt"
COLUMNS = ("Timestamp", "Request tokens", "Response tokens")
OPTIONAL = ("Model", "Log Type", "Session ID", "Elapsed time", "Total tokens")


def read(path: Path, report: Report, *, start_us: int, **_) -> Iterator[Chunk]:
    header = read_header(path)
    check_columns(path, header, COLUMNS, FORMAT)
    client = "Session ID" if "Session ID" in header else ("Log Type" if "Log Type" in header else None)
    cols = {"__header__": header, "ts": "Timestamp", "prompt": "Request tokens", "completion": "Response tokens",
            "model": "Model" if "Model" in header else None, "client": client}
    first = 1
    for batch in stream_sql(path, "burstgpt.sql", cols):
        n = batch.num_rows
        rows = np.arange(first, first + n, dtype=np.int64)
        keep = report_bad(report, path, batch, first, "Timestamp,Request tokens,Response tokens")
        rel = batch.column("rel_s").fill_null(0.0).to_numpy()
        ts = start_us + np.rint(rel * 1e6).astype(np.int64)
        pt = batch.column("prompt_tokens").fill_null(-1).to_numpy()
        ct = batch.column("completion_tokens").fill_null(-1).to_numpy()
        model = batch.column("model").to_pylist()
        cid = batch.column("client_id").to_pylist()
        first += n
        report.rows_read += n
        if keep is not None:
            idx = np.flatnonzero(keep)
            rows, ts, pt, ct = rows[idx], ts[idx], pt[idx], ct[idx]
            model = [model[i] for i in idx]
            cid = [cid[i] for i in idx]
        yield Chunk(row=rows, ts_us=ts, prompt_tokens=pt, completion_tokens=ct, model=model, client_id=cid)
