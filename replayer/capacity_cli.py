"""`shadowreplay capacity RECORDING --target URL --slo EXPR [--slo EXPR ...] --out DIR`, and
run_capacity(), the same sweep called from Python (the demo)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from shadowreplay.durations import add_duration_flag
from shadowreplay.errors import ConfigError


def share_arg(flag: str, *, below_one: bool = True):
    """A share: `10%` or `0.1`."""

    def parse(text: str) -> float:
        t = text.strip()
        try:
            v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag}: expected a share such as 10% or 0.1, not {text!r}") from None
        if v < 0 or (below_one and v >= 1):
            raise argparse.ArgumentTypeError(f"{flag}: {text!r} is out of range (0% to under 100%)")
        return v

    return parse


def loads_arg(text: str) -> list[float]:
    try:
        out = [float(x.strip().rstrip("x")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--loads: expected factors such as 0.5,1,2,4, not {text!r}") from None
    if not out or any(not x > 0 for x in out):
        raise argparse.ArgumentTypeError(f"--loads: expected positive factors such as 0.5,1,2,4, not {text!r}")
    return out


def register(subparsers) -> None:
    from .cli import add_replay_options

    p = subparsers.add_parser(
        "capacity",
        help="the largest load (a multiple of the recorded traffic) a shadow holds under its SLOs",
        description="Replays the recording at scaled loads into OUT/step-NN/ (each a replay dataset), judges each "
        "step with the --slo expressions, ramps by 2x to bracket the knee and bisects it; writes OUT/capacity.json "
        "with the knee, its 95% interval and the headroom over the recorded peak (docs/capacity.md).",
    )
    add_replay_options(p)
    p.add_argument("--slo", action="append", required=True, metavar="EXPR",
                   help="an SLO every step must meet, e.g. 'ttft_p99<=250ms', 'e2e_p95<=5s', 'error_rate<=1%%', "
                        "'goodput>=95%%', per client or model with @client=ID/@model=NAME (repeatable)")
    p.add_argument("--out", required=True, help="output folder: capacity.json and one replay dataset per step")
    p.add_argument("--mode", choices=("speed", "overlay"), default="speed",
                   help="speed: every recorded gap divided by the load (default); overlay: that many time-shifted "
                        "copies of the recording merged, each with its own cache_salt")
    p.add_argument("--loads", type=loads_arg, metavar="X,Y,...",
                   help="run exactly these loads (e.g. 0.5,1,2,4) instead of searching")
    p.add_argument("--start-load", type=float, default=1.0, metavar="X", help="the search's first load (default 1)")
    p.add_argument("--min-load", type=float, default=1 / 16, metavar="X", help="lowest load the search tries (default 0.0625)")
    p.add_argument("--max-load", type=float, default=64.0, metavar="X", help="highest load the search tries (default 64)")
    p.add_argument("--precision", type=share_arg("--precision"), default=0.1, metavar="SHARE",
                   help="bisect until the passing and the failing load are within this of each other (default 10%%)")
    p.add_argument("--max-steps", type=int, default=12, metavar="N", help="most steps of the search (default 12)")
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="replay every step N times (OUT/step-NN/run-MM/); its figures pool the runs (default 1)")
    p.add_argument("--step-requests", type=int, metavar="N",
                   help="measured requests per step (default: 1.2 times what the SLOs' percentiles need, "
                        "e.g. 600 for a P99, at least 100)")
    p.add_argument("--warmup", type=share_arg("--warmup"), default=0.1, metavar="SHARE",
                   help="share of each step sent first and left out of its figures (default 10%%)")
    add_duration_flag(p, "--cooldown", default="120s", zero=True,
                      help="before each step, wait at most this long for the target's /metrics to show the engine "
                           "idle (default 120s)")
    add_duration_flag(p, "--max-duration", default=None,
                      help="time budget of the sweep: no step starts that would end after it (default: none)")
    p.add_argument("--no-early-stop", dest="early_stop", action="store_false",
                   help="run every step to its end, even when its SLO is already broken beyond doubt")
    p.add_argument("--no-cache-salt", dest="cache_salt", action="store_false",
                   help="do not set cache_salt in request bodies (speed mode only; for targets that refuse it)")
    p.add_argument("--shards", type=int, metavar="N",
                   help="send every step from N local shard processes, each scaling the recording alike and sending "
                        "its share (for loads past one sender; no early stop; docs/capacity.md)")
    p.add_argument("--fail-below", type=float, metavar="FACTOR",
                   help="exit 3 when the headroom (knee rate over the recorded peak rate) is under FACTOR, e.g. 1.5")
    p.add_argument("--junit", metavar="FILE", help="write the SLOs at the knee and the headroom gate as JUnit XML")
    p.add_argument("--json", action="store_true", help="print capacity.json at the end")
    p.set_defaults(func=run)


def run(args) -> int:
    from .capacity import CapacityOptions
    from .cli import replay_options

    if args.max_steps < 1:
        raise ConfigError("--max-steps must be at least 1")
    if args.step_requests is not None and args.step_requests < 10:
        raise ConfigError("--step-requests must be at least 10")
    if args.fail_below is not None and not args.fail_below > 0:
        raise ConfigError("--fail-below must be greater than 0")
    o = CapacityOptions(
        replay=replay_options(args, out=args.out), slos=list(args.slo), out=args.out, mode=args.mode,
        loads=args.loads, start=args.start_load, min_load=args.min_load, max_load=args.max_load,
        precision=args.precision, max_steps=args.max_steps, repeats=args.repeats, step_requests=args.step_requests,
        warmup=args.warmup, cooldown_s=args.cooldown, max_seconds=args.max_duration, early_stop=args.early_stop,
        cache_salt=args.cache_salt, fail_below=args.fail_below, shards=args.shards,
    )
    return finish(o, args.junit, args.json)


def finish(o, junit: str | None = None, as_json: bool = False, echo: Callable[[str], None] | None = None) -> int:
    """Runs the sweep, writes --junit, and raises GateFailed when the headroom is under --fail-below."""
    import json

    from shadowreplay.errors import GateFailed

    from .capacity import gates, run_sweep

    echo = echo or (lambda s: print(s, flush=True))
    result = run_sweep(o, echo=echo)
    if result.get("interrupted"):
        print(f"shadowreplay capacity: interrupted; the steps done are in {o.out}/capacity.json", file=sys.stderr)
        return 130
    if as_json:
        print(json.dumps(result, indent=2, default=str))
    headroom_gate = gates(result) if o.fail_below is not None else None
    if junit:
        from shadowreplay.analysis.junit import write_junit

        write_junit(junit, "capacity", _knee_gates(o, result) + ([headroom_gate] if headroom_gate else []))
    if headroom_gate is not None and not headroom_gate.passed:
        raise GateFailed(headroom_gate.message)
    return 0


def _knee_gates(o, result: dict[str, Any]) -> list:
    """The SLOs judged at the knee step (GateResults rebuilt from capacity.json's figures)."""
    from shadowreplay.analysis.expr import GateResult, parse

    step = next((s for s in result["steps"] if s["load"] == result["max_speed"]), None)
    if step is None:
        return []
    out = []
    for f in step["figures"]:
        e = parse(f["slo"])
        out.append(GateResult(e, f["pass"], observed=f["observed"], interval=tuple(f["interval"]) if f["interval"] else None,
                              n=f["n"], outcome=f["outcome"], certain=f["certain"],
                              message=f"{f['slo']} at the knee ({result['max_speed']:g}x): {f['figure']} {f['observed']}"))
    return out


def run_capacity(recording: str, target: str, slos: list[str], out: str, *, loads: list[float] | None = None,
                 mode: str = "speed", max_seconds: float | None = 180.0, step_requests: int | None = None,
                 start_load: float = 1.0, min_load: float = 1 / 16, max_steps: int = 12,
                 echo: Callable[[str], None] = print, **replay_fields: Any) -> dict[str, Any]:
    """A capacity sweep from Python (the demo): `loads` fixed (e.g. [0.5, 1, 2, 4]) or None to
    search from `start_load` (at most `max_steps` steps, none below `min_load`), within
    `max_seconds`; `replay_fields` are ReplayOptions fields (model_map=[...], no_metrics=True, ...).
    Returns capacity.json's content: max_speed, max_rate_rps, headroom, interval, steps, ..."""
    from .capacity import CapacityOptions, run_sweep
    from .replay import ReplayOptions

    if max_steps < 1:
        raise ConfigError("max_steps must be at least 1")
    replay_fields.setdefault("progress", False)
    ro = ReplayOptions(recording=str(recording), target=target, out=str(out), **replay_fields)
    o = CapacityOptions(replay=ro, slos=list(slos), out=str(out), mode=mode, loads=loads, max_seconds=max_seconds,
                        step_requests=step_requests, start=start_load, min_load=min_load, max_steps=max_steps)
    return run_sweep(o, echo=echo)
