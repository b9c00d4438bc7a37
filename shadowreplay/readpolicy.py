"""How reading commands treat a dataset's unreadable files: refuse the dataset (the default), or
leave such files out and list them (`--skip-bad-files`). Kept apart from shadowreplay.dataset
(pyarrow) so that the CLI dispatcher can set it without a heavy import."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

SKIP_BAD_FILES = "--skip-bad-files"
_skip_bad: contextvars.ContextVar[bool] = contextvars.ContextVar("skip_bad_files", default=False)
_reported: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("skipped_reported", default=None)
_read_whole: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("pages_read", default=None)
# the files the dataset check accepted in this block, and whether DuckDB then failed to read one
_accepted: contextvars.ContextVar[dict[str, object] | None] = contextvars.ContextVar("files_accepted", default=None)
_engine_failed: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("engine_failed", default=None)


@contextlib.contextmanager
def skipping_bad_files(skip: bool = True) -> Iterator[None]:
    """Within the block, shadowreplay.dataset.check_files leaves out (and lists on stderr, once
    each) the files it cannot read, instead of refusing the dataset."""
    token, listed, read = _skip_bad.set(skip), _reported.set(set()), _read_whole.set(set())
    accepted, failed = _accepted.set({}), _engine_failed.set([])
    try:
        yield
    finally:
        _skip_bad.reset(token)
        _reported.reset(listed)
        _read_whole.reset(read)
        _accepted.reset(accepted)
        _engine_failed.reset(failed)


def skip_bad_files() -> bool:
    """Whether unreadable files are left out here."""
    return _skip_bad.get()


def pages_read_before(path: str) -> bool:
    """Whether every page of `path` was read and found sound before in this block (a command that
    checks a table twice reads its files once)."""
    return path in (_read_whole.get() or ())


def pages_read(path: str) -> None:
    """Every page of `path` was read and found sound."""
    read = _read_whole.get()
    if read is not None:
        read.add(path)


def accepted(files: list[object]) -> None:
    """The dataset check accepted these files (shadowreplay.dataset Locations)."""
    seen = _accepted.get()
    if seen is not None:
        seen.update((str(f), f) for f in files)


def accepted_files() -> list[object]:
    """The files the dataset check accepted in this block."""
    return list((_accepted.get() or {}).values())


def engine_read_failed() -> None:
    """The query engine failed to read the data (a damaged page: DuckDB names the file only sometimes)."""
    failed = _engine_failed.get()
    if failed is not None:
        failed.append(True)


def engine_failed_reading() -> bool:
    return bool(_engine_failed.get())


def not_listed_yet(paths: list[str]) -> list[str]:
    """Those of `paths` not listed as skipped before in this block (and now counted as listed)."""
    seen = _reported.get()
    if seen is None:
        return list(paths)
    new = [p for p in paths if p not in seen]
    seen.update(new)
    return new
