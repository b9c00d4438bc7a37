"""Line-by-line JSONL reading (plain or gzip) that skips bad lines with a warning naming them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from shadowreplay.errors import DatasetError

from .base import Report, open_text


def records(path: Path, report: Report) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line that is a JSON object."""
    empty = True
    with open_text(path) as f:
        try:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                empty = False
                report.rows_read += 1
                try:
                    obj = json.loads(line)
                except ValueError as e:
                    report.warn("unparseable", f"{path.name}:{lineno}: skipped, not JSON ({e.msg})")
                    continue
                if not isinstance(obj, dict):
                    report.warn("unparseable", f"{path.name}:{lineno}: skipped, not a JSON object")
                    continue
                yield lineno, obj
        except (OSError, EOFError) as e:  # truncated gzip, unreadable file
            raise DatasetError(f"{path}: cannot read ({e})") from None
    if empty:
        raise DatasetError(f"{path}: empty file (no JSON lines)")
