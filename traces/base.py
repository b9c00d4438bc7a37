"""What every importer produces (a Chunk of normalized rows) and the warnings it collects."""

from __future__ import annotations

import gzip
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from shadowreplay.errors import DatasetError

WARN_EXAMPLES = 5  # messages printed per warning kind; the rest are only counted


@dataclass
class Chunk:
    """A batch of trace rows in one shape for every format. Arrays have equal length."""

    row: np.ndarray  # int64: 1-based data row (CSV) or line number (JSONL) in the source file
    ts_us: np.ndarray  # int64: request start, microseconds since the Unix epoch (UTC)
    prompt_tokens: np.ndarray  # int64, -1 where unknown
    completion_tokens: np.ndarray  # int64, -1 where unknown
    model: list | None = None
    client_id: list | None = None
    hash_ids: list | None = None  # list of lists of int
    request_body: list | None = None  # real bodies (openai-jsonl); synthesized otherwise
    kind: list | None = None
    request_id: list | None = None  # ids the source carries (openai-jsonl)

    def __len__(self) -> int:
        return len(self.row)


@dataclass
class Report:
    """Counts of trace artifacts and skipped rows, printed as they occur (first few per kind)."""

    quiet: bool = False
    counts: Counter = field(default_factory=Counter)
    rows_read: int = 0
    rows_written: int = 0
    notes: list = field(default_factory=list)
    stream: IO = field(default=None)

    def warn(self, kind: str, message: str, n: int = 1) -> None:
        before = self.counts[kind]
        self.counts[kind] += n
        if not self.quiet and before < WARN_EXAMPLES:
            print(f"warning: {message}", file=self.stream or sys.stderr)

    def note(self, message: str) -> None:
        self.notes.append(message)
        if not self.quiet:
            print(f"note: {message}", file=self.stream or sys.stderr)

    def summary(self) -> str:
        parts = [f"{self.rows_written:,} rows written of {self.rows_read:,} read"]
        if self.counts:
            parts.append("warnings: " + ", ".join(f"{k} {v:,}" for k, v in sorted(self.counts.items())))
        return "; ".join(parts)


def open_text(path: Path) -> IO[str]:
    """Opens a text file, gunzipping when it starts with the gzip magic bytes."""
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="")
    return open(path, encoding="utf-8", errors="replace", newline="")


def source_stem(path: Path) -> str:
    name = path.name
    for suf in (".gz", ".csv", ".jsonl", ".json", ".txt"):
        if name.endswith(suf):
            name = name[: -len(suf)]
    return name
