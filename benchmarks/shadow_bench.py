"""Which vLLM flags shield short requests from a batch client's long prompts, on this machine?

For each engine configuration: start a fresh tiny-model vLLM, calibrate the load on it (the same
way `shadowreplay demo` does), drive the demo's traffic straight at it (open loop; short agent
chats plus long batch prompts in one 10 s slot of every 60 s), and report the short chats' TTFT
inside the slot and elsewhere. Engines run one at a time; the same seed gives the same traffic.

    .venv/bin/python benchmarks/shadow_bench.py                       # default configurations
    .venv/bin/python benchmarks/shadow_bench.py --seconds 120 \\
        --config 'baseline=' --config 'lptt256=--long-prefill-token-threshold 256'

Also times one engine start with and without torch.compile (--startup).
Results: docs/bench/shadow.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path


from shadowreplay.shadow.calibrate import measure, rates  # noqa: E402
from shadowreplay.shadow.demo import free_ports  # noqa: E402
from shadowreplay.shadow.engine import EngineConfig, VllmServer  # noqa: E402
from shadowreplay.shadow.tiny_model import MODEL_NAME, build_tiny_model  # noqa: E402
from shadowreplay.shadow.traffic import TrafficConfig, drive  # noqa: E402

DEFAULT_CONFIGS = [
    "baseline=",
    "lptt256=--long-prefill-token-threshold 256",
    "mnbt256=--max-num-batched-tokens 256",
]


def q(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def run_config(name: str, flags: str, model: Path, seconds: float, eager: bool, log_dir: Path, fixed=None) -> dict:
    port = free_ports(1)[0]
    extra = (["--enforce-eager"] if eager else []) + shlex.split(flags)
    cfg = EngineConfig(model=model, served_model_name=MODEL_NAME, port=port, kv_cache_space_gib=1, extra_args=extra)
    t = time.monotonic()
    with VllmServer(cfg, log_dir / f"vllm-{name}.log") as s:
        startup = time.monotonic() - t
        probe = TrafficConfig(model=MODEL_NAME, duration_s=0)
        short_s, long_s = measure(s.url, probe)
        cal = fixed or rates(short_s, long_s, 10.0)
        tc = TrafficConfig(
            model=MODEL_NAME, duration_s=seconds, period_s=60, slot_start_s=30, slot_len_s=10,
            short_rate=cal.short_rate, batch_interval_s=cal.batch_interval_s,
        )  # fmt: skip
        res = drive(s.url, tc)
    return {
        "config": name, "flags": " ".join(extra), "startup_s": round(startup, 1),
        "short_ms": round(short_s * 1000), "long_ms": round(long_s * 1000),
        "short_rate": cal.short_rate, "batch_interval_s": cal.batch_interval_s,
        "sent": res.sent, "failed": res.failed,
        "slot_ttft_p50": q(res.ttft_short_slot_ms, 0.5), "slot_ttft_p99": q(res.ttft_short_slot_ms, 0.99),
        "all_ttft_p50": q(res.ttft_short_ms, 0.5), "all_ttft_p99": q(res.ttft_short_ms, 0.99),
        "_cal": cal,
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", help="NAME=FLAGS (repeatable)")
    ap.add_argument("--seconds", type=float, default=120.0, help="traffic per configuration (default 120: two slots)")
    ap.add_argument("--compiled", action="store_true", help="let vLLM torch.compile (the demo uses --enforce-eager)")
    ap.add_argument("--startup", action="store_true", help="also time one start with and one without torch.compile")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    model = build_tiny_model()
    log_dir = Path(tempfile.mkdtemp(prefix="shadow-bench-"))
    results = []
    if args.startup:
        for eager in (False, True):
            port = free_ports(1)[0]
            cfg = EngineConfig(model=model, served_model_name=MODEL_NAME, port=port, kv_cache_space_gib=1,
                               extra_args=["--enforce-eager"] if eager else [])  # fmt: skip
            t = time.monotonic()
            with VllmServer(cfg, log_dir / f"startup-{eager}.log"):
                print(f"startup {'eager' if eager else 'compiled'}: {time.monotonic() - t:.1f} s", flush=True)
    fixed = None
    for spec in args.config or DEFAULT_CONFIGS:
        name, _, flags = spec.partition("=")
        r = run_config(name, flags, model, args.seconds, not args.compiled, log_dir, fixed)
        fixed = fixed or r["_cal"]  # every configuration gets the load calibrated on the first
        r.pop("_cal")
        results.append(r)
        print(json.dumps(r), flush=True)
    print()
    print(f"{'config':<10}{'short TTFT p50/p99 in slot':>28}{'all short p50/p99':>22}{'failed':>8}  flags")
    for r in results:
        f = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
        print(f"{r['config']:<10}{f(r['slot_ttft_p50']) + ' / ' + f(r['slot_ttft_p99']) + ' ms':>28}"
              f"{f(r['all_ttft_p50']) + ' / ' + f(r['all_ttft_p99']) + ' ms':>22}{r['failed']:>8}  {r['flags']}")  # fmt: skip
    base = results[0]["slot_ttft_p99"]
    for r in results[1:]:
        if base and r["slot_ttft_p99"]:
            print(f"{r['config']}: slot TTFT p99 {r['slot_ttft_p99'] / base:.2f}x of {results[0]['config']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"engine logs: {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
