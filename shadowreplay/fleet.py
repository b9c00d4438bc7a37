"""A fleet of recorders writing one dataset: instance ids and the status objects' layout.

Every recorder instance has an id (`--instance NAME`, else host name + pid + random) that goes
into the names of its Parquet files and names its status object, DATASET/recorder_status/ID.json,
so that any number of instances can write one prefix (local or s3://) without clashes. Datasets
written before there were instances hold one DATASET/recorder_status.json; it is still read (as
instance `recorder_status`), and a recorder writing a local folder keeps it up to date too (for
tools that read the single file; with several instances in one folder it holds the latest one's).
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import socket
from typing import Any

from .errors import ConfigError
from .storage import Location, S3Path, location, remove_temporaries, write_atomic

log = logging.getLogger(__name__)

STATUS_DIR = "recorder_status"
LEGACY_STATUS_FILE = "recorder_status.json"
LEGACY_INSTANCE = "recorder_status"
_INSTANCE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_instance(name: str) -> str:
    """`name` when it can be an instance id (letters, digits, . _ -; at most 64), else ConfigError."""
    if not _INSTANCE_RE.match(name):
        raise ConfigError(f"--instance {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return name


def default_instance() -> str:
    """host name + pid + 6 random hex digits: unique across a fleet without coordination."""
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0])[:40].strip("-") or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def status_path(root: str | os.PathLike | Location, instance: str) -> Location:
    return location(root) / STATUS_DIR / f"{instance}.json"


def _status_targets(root: Location, instance: str) -> list[Location]:
    """Where an instance's status is written: its object, and locally also the legacy file."""
    path = status_path(root, instance)
    return [path] if isinstance(root, S3Path) else [path, root / LEGACY_STATUS_FILE]


def clear_status_temporaries(root: str | os.PathLike | Location, instance: str) -> None:
    """Removes what a status write cut by a killed writer left behind (see write_status)."""
    for path in _status_targets(location(root), instance):
        remove_temporaries(path)  # (nothing to do on S3: one PUT leaves no temporary)


def write_status(root: str | os.PathLike | Location, instance: str, status: dict[str, Any]) -> None:
    """Replaces the instance's status object atomically (counters only: never content); locally
    also the single recorder_status.json. A failure (disk full, store down) is logged: the old
    status stays and no partial object is left."""
    root = location(root)
    text = (json.dumps(status, indent=1) + "\n").encode()
    targets = _status_targets(root, instance)
    if not isinstance(root, S3Path):
        targets[0].parent.mkdir(parents=True, exist_ok=True)
    for path in targets:
        try:
            write_atomic(path, text)
        except Exception as e:  # OSError locally, a ShadowReplayError from the object store
            log.error("recorder: cannot write %s (%s)", path, e)


def read_status(root: str | os.PathLike | Location, instance: str | None = None) -> dict[str, Any]:
    """One instance's status; without `instance`, the only one there (or the single legacy file).
    Raises FileNotFoundError when there is none."""
    root = location(root)
    if instance is not None:
        return json.loads(status_path(root, instance).read_text())
    if (root / LEGACY_STATUS_FILE).is_file():
        return json.loads((root / LEGACY_STATUS_FILE).read_text())
    found = read_statuses(root)
    if len(found) != 1:
        raise FileNotFoundError(f"{root}: {len(found)} recorder status objects, expected one")
    return next(iter(found.values()))


def read_statuses(root: str | os.PathLike | Location) -> dict[str, dict[str, Any]]:
    """Every instance's status under a dataset root, by instance id (the legacy single file as
    instance `recorder_status` when no per-instance object exists). Unreadable ones are skipped
    with a warning."""
    root = location(root)
    out: dict[str, dict[str, Any]] = {}
    d = root / STATUS_DIR
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    if not files and (root / LEGACY_STATUS_FILE).is_file():
        files = [root / LEGACY_STATUS_FILE]
    for f in files:
        name = LEGACY_INSTANCE if f.name == LEGACY_STATUS_FILE else f.name[: -len(".json")]
        try:
            st = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            log.warning("%s: unreadable recorder status, ignored (%s)", f, e)
            continue
        if isinstance(st, dict):
            out[name] = st
    return out
