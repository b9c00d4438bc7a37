"""`shadowreplay export`: a requests dataset -> the JSONL the benchmark tools read.

- mooncake: {"timestamp": ms since the first request, "input_length", "output_length",
  "hash_ids"}, read by vLLM bench (timed_trace), AIPerf/GenAI-Perf and SGLang. hash_ids are the
  dataset's own when every row has them (an imported Mooncake trace: reproduced exactly), else
  computed from our prompts: tokenized (--tokenizer), cut into 512-token blocks, each block
  identified by its tokens and everything before it, numbered in order of first appearance.
- guidellm: {"timestamp": seconds since the first request, "input_length", "output_length"}
  (+ "hash_ids" when known), GuideLLM's replay input (`--profile kind=replay --data
  kind=trace_synthetic,...` or `kind=mooncake` with hash_ids)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from shadowreplay import sqlfiles
from shadowreplay.dataset import absent_columns, check_files, find_tables, parquet_files
from shadowreplay.storage import is_remote, register_duckdb
from shadowreplay.errors import ConfigError, DatasetError
from shadowreplay.schema import REQUESTS

from .base import Report
from .openai_jsonl import prompt_text

FORMATS = ("mooncake", "guidellm")
BLOCK = 512


class BlockHasher:
    """Prefix-chained block ids over a whole export (identical block + prefix -> identical id)."""

    def __init__(self, block: int = BLOCK):
        self.block = block
        self.ids: dict[bytes, int] = {}

    def __call__(self, tokens) -> list[int]:
        arr = np.asarray(tokens, dtype=np.int64)
        prev, row = b"", []
        for s in range(0, len(arr), self.block):
            prev = hashlib.sha256(prev + arr[s : s + self.block].tobytes()).digest()
            row.append(self.ids.setdefault(prev, len(self.ids)))
        return row


@dataclass
class ExportOptions:
    fmt: str
    recording: Path
    out: Path
    tokenizer: object | None = None
    recompute_hashes: bool = False
    hash_ids: bool = True


def _connect(root):
    import duckdb

    con = duckdb.connect()
    if is_remote(root):
        register_duckdb(con)  # s3:// is read through s3fs
    return con


def _rows(root: Path) -> Iterator[dict]:
    files = parquet_files(root, REQUESTS)
    if not files:
        raise DatasetError(f"{root}: no requests table to export")
    checked = check_files(files, REQUESTS)
    absent = absent_columns(REQUESTS, checked.columns)
    con = _connect(root)
    try:
        sql = sqlfiles.fill(sqlfiles.load(__package__, "export_requests.sql"), absent=absent)
        for batch in sqlfiles.arrow_batches(con, sql, {"glob": [str(f) for f in checked.files]}, 8192,
                                            context=f"{root}: cannot read requests"):
            yield from batch.to_pylist()
    finally:
        con.close()


def _all_have_hash_ids(root: Path) -> bool:
    checked = check_files(parquet_files(root, REQUESTS), REQUESTS)
    if "hash_ids" not in checked.columns:
        return False
    con = _connect(root)
    try:
        (r,) = sqlfiles.rows(con, sqlfiles.load(__package__, "export_hash_ids.sql"), {"glob": [str(f) for f in checked.files]},
                             context=f"{root}: cannot read requests")
    finally:
        con.close()
    return r["missing"] == 0


def run_export(o: ExportOptions, report: Report | None = None) -> Report:
    if o.fmt not in FORMATS:
        raise ConfigError(f"unknown export format {o.fmt!r} (one of {', '.join(FORMATS)})")
    report = report or Report()
    tables = find_tables(o.recording)
    if REQUESTS not in tables:
        raise DatasetError(f"{o.recording}: no requests table found")
    root = tables[REQUESTS]
    keep = o.hash_ids and not o.recompute_hashes and _all_have_hash_ids(root)
    compute = o.hash_ids and not keep
    if compute and o.tokenizer is None:
        raise ConfigError("computing hash_ids from the prompts needs --tokenizer DIR_OR_URL "
                          "(or --no-hash-ids)")
    hasher = BlockHasher()
    o.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = o.out.with_name(o.out.name + ".tmp")
    t0 = None
    pending: list[tuple[dict, str]] = []

    def emit(f, items):
        if compute:
            toks = o.tokenizer.encode([t for _, t in items])
        for j, (rec, _) in enumerate(items):
            if compute:
                rec["hash_ids"] = hasher(toks[j])
            f.write(json.dumps(rec, separators=(", ", ": ")) + "\n")
            report.rows_written += 1

    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for r in _rows(root):
                report.rows_read += 1
                text = None
                if compute or r["prompt_tokens"] is None:
                    try:
                        text = prompt_text(json.loads(r["request_body"]), r["kind"]) if r["request_body"] else None
                    except ValueError:
                        text = None
                    if text is None:
                        report.warn("no_prompt", f"{r['request_id']}: no prompt text in request_body; skipped")
                        continue
                pt = r["prompt_tokens"]
                if pt is None:
                    if o.tokenizer is None:
                        report.warn("no_length", f"{r['request_id']}: prompt_tokens unknown (pass --tokenizer); skipped")
                        continue
                    pt = o.tokenizer.count([text])[0]
                if r["output_tokens"] is None:
                    report.warn("no_length", f"{r['request_id']}: completion_tokens unknown; skipped")
                    continue
                if t0 is None:
                    t0 = r["ts_us"]
                dt_us = r["ts_us"] - t0
                if o.fmt == "mooncake":
                    ts = dt_us // 1000 if dt_us % 1000 == 0 else round(dt_us / 1000, 3)
                else:
                    ts = round(dt_us / 1e6, 6)
                rec = {"timestamp": ts, "input_length": int(pt), "output_length": int(r["output_tokens"])}
                if keep:
                    rec["hash_ids"] = list(r["hash_ids"])
                pending.append((rec, text or ""))
                if len(pending) >= 256:
                    emit(f, pending)
                    pending = []
            emit(f, pending)
        os.replace(tmp, o.out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if report.rows_written == 0:
        report.warn("empty", f"{o.recording}: nothing exported")
    return report
