"""Mooncake traces (kvcache-ai/Mooncake FAST25-release): JSONL with timestamp (ms since the
start of the trace), input_length, output_length, hash_ids (ids of 512-token prompt blocks;
equal ids are equal prefixes). Rows are placed at --origin + timestamp."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from shadowreplay.errors import DatasetError

from .base import Chunk, Report
from .jsonl import records

FORMAT = "mooncake"
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
BLOCK = 512
BATCH = 4096


def _int(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def read(path: Path, report: Report, *, start_us: int, **_) -> Iterator[Chunk]:
    buf: dict[str, list] = {"row": [], "ts": [], "pt": [], "ct": [], "h": []}
    checked = False

    def flush():
        c = Chunk(row=np.array(buf["row"], dtype=np.int64), ts_us=np.array(buf["ts"], dtype=np.int64),
                  prompt_tokens=np.array(buf["pt"], dtype=np.int64), completion_tokens=np.array(buf["ct"], dtype=np.int64),
                  hash_ids=buf["h"])
        for k in buf:
            buf[k] = []
        return c

    for lineno, obj in records(path, report):
        if not checked:
            missing = [k for k in FIELDS[:3] if k not in obj]
            if missing:
                raise DatasetError(f"{path}:{lineno}: not a mooncake trace: missing {', '.join(missing)} "
                                   f"(expected keys {', '.join(FIELDS)}; found {', '.join(obj) or 'none'})")
            checked = True
        ts, il, ol = obj.get("timestamp"), _int(obj.get("input_length")), _int(obj.get("output_length"))
        h = obj.get("hash_ids", [])
        if not isinstance(ts, (int, float)) or isinstance(ts, bool) or il is None or ol is None or il < 0 or ol < 0:
            report.warn("unparseable", f"{path.name}:{lineno}: skipped, bad timestamp/input_length/output_length")
            continue
        if not isinstance(h, list) or not all(_int(x) is not None for x in h):
            report.warn("unparseable", f"{path.name}:{lineno}: skipped, hash_ids is not a list of integers")
            continue
        if len(h) != -(-il // BLOCK):
            report.warn("hash_ids_length", f"{path.name}:{lineno}: {len(h)} hash_ids for input_length {il} "
                        f"(expected {-(-il // BLOCK)} blocks of {BLOCK})")
        buf["row"].append(lineno)
        buf["ts"].append(start_us + round(ts * 1000))
        buf["pt"].append(il)
        buf["ct"].append(ol)
        buf["h"].append([int(x) for x in h])
        if len(buf["row"]) >= BATCH:
            yield flush()
    if buf["row"]:
        yield flush()
