"""`replay --repeat N`: one replay run N times, each run into OUT/run-NN/ (dataset.run_dir), which
`compare` and `analyze` pool. With a second configuration (`--b-target`, `--b-route`,
`--b-out`), the runs of A and B interleave in pairs A B, B A, A B, ... so that a drift of the
machine over time falls on both alike. OUT/repeats.json lists the runs in the order they ran."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import replace

from shadowreplay.dataset import run_dir
from shadowreplay.storage import location, write_atomic

from .replay import ReplayOptions, ReplayResult, replay


def interleaved(n: int, configs: int) -> list[int]:
    """The order of the runs: configuration indices, n of each, alternate pairs reversed."""
    out: list[int] = []
    for k in range(n):
        pair = list(range(configs))
        out += pair if k % 2 == 0 else pair[::-1]
    return out


def run_repeats(configs: list[ReplayOptions], n: int, echo: Callable[[str], None] = print) -> list[ReplayResult]:
    """Runs each configuration n times (interleaved); stops after an interrupted run."""
    done = [0] * len(configs)
    results: list[ReplayResult] = []
    log: list[list[dict]] = [[] for _ in configs]
    labels = "AB" if len(configs) == 2 else "A"
    for idx in interleaved(n, len(configs)):
        done[idx] += 1
        base = location(configs[idx].out)
        out = run_dir(base, done[idx])
        echo(f"run {done[idx]}/{n}{' of ' + labels[idx] if len(configs) > 1 else ''} -> {out}")
        started = dt.datetime.now(dt.timezone.utc).isoformat()
        res = replay(replace(configs[idx], out=str(out)), echo=echo)
        results.append(res)
        log[idx].append({"run": done[idx], "folder": out.name, "started_at": started, "interrupted": res.interrupted,
                         "order": len(results)})
        base.mkdir(parents=True, exist_ok=True)
        write_atomic(base / "repeats.json",
                     (json.dumps({"repeat": n, "configuration": labels[idx], "runs": log[idx]}, indent=2) + "\n").encode())
        if res.interrupted:
            break
    return results
