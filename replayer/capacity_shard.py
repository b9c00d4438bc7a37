"""One shard of one capacity step, in its own process (`capacity --shards N`): internal.

`python -m shadowreplay.replayer.capacity_shard SPEC` where SPEC is JSON: the ReplayOptions
fields (the window resolved to ISO times, `shard` K/N and a common `start_at`) and the step's
`load` (replayer/load.py). Every shard scales the whole selection alike and sends its share
(request index mod N), so the shards together send the step's load; the coordinator (the capacity
process) judges the step from all shards' results and picks the next load."""

from __future__ import annotations

import json
import sys
from typing import Any

from .load import Load
from .replay import ReplayOptions, replay


def spec(o: ReplayOptions, load: Load) -> dict[str, Any]:
    """A shard's SPEC (without shard/start_at/out), JSON-ready."""
    from dataclasses import asdict

    d = asdict(o)
    for k in ("load", "stop_check", "start", "end"):
        d.pop(k, None)
    d["load"] = asdict(load)
    return d


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    d = json.loads(args[0])
    load = Load(**d.pop("load"))
    d["progress"] = False
    res = replay(ReplayOptions(**d, load=load), echo=lambda s: None)
    return 130 if res.interrupted else 0


if __name__ == "__main__":
    raise SystemExit(main())
