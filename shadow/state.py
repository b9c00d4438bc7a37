"""Where `shadow up` leaves what `shadow down` and `shadow status` need: one small JSON file per
running shadow (pid, port, log path) in the run folder ($SHADOWREPLAY_RUN_DIR, default
~/.cache/shadowreplay/run)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from .tiny_model import cache_root


def run_dir() -> Path:
    env = os.environ.get("SHADOWREPLAY_RUN_DIR")
    return Path(env) if env else cache_root() / "run"


def proc_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot: with the pid, it names one process
    (a pid alone may be reused by an unrelated process after ours ended)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class ShadowState:
    pid: int
    port: int
    host: str
    url: str
    model: str
    served_model_name: str
    log: str
    started_at: str
    start_ticks: int | None
    foreground: bool = False

    @property
    def metrics_url(self) -> str:
        return self.url + "/metrics"

    def is_running(self) -> bool:
        ticks = proc_start_ticks(self.pid)
        return ticks is not None and (self.start_ticks is None or ticks == self.start_ticks)


def state_path(port: int, folder: Path | None = None) -> Path:
    return (folder or run_dir()) / f"shadow-{port}.json"


def log_path(port: int, folder: Path | None = None) -> Path:
    return (folder or run_dir()) / f"shadow-{port}.log"


def save(state: ShadowState, folder: Path | None = None) -> Path:
    p = state_path(state.port, folder)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n")
    os.replace(tmp, p)
    return p


def load_all(folder: Path | None = None) -> list[tuple[Path, ShadowState]]:
    d = folder or run_dir()
    out = []
    for p in sorted(d.glob("shadow-*.json")):
        try:
            out.append((p, ShadowState(**json.loads(p.read_text()))))
        except (OSError, ValueError, TypeError):
            continue  # a damaged state file names no process we could stop safely
    return out
