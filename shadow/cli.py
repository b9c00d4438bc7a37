"""`shadowreplay shadow up|down|status` and `shadowreplay demo`."""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import os
import sys
from pathlib import Path

from shadowreplay.durations import add_duration_flag, format_duration
from shadowreplay.errors import ConfigError, ShadowReplayError

from .engine import DEFAULT_KV_CACHE_GIB, DEFAULT_READY_TIMEOUT_S, SCHEDULING_POLICIES, STOP_GRACE_S


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    """The vLLM flags a shadow needs, shared by `shadow up` and `demo`."""
    g = p.add_argument_group("engine (vLLM) flags")
    g.add_argument("--max-num-batched-tokens", type=int, help="tokens per engine step (vLLM default on CPU: 2048)")
    g.add_argument("--max-num-seqs", type=int, help="requests per engine step")
    g.add_argument(
        "--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=None,
        help="split long prefills across steps (vLLM default: on)",
    )  # fmt: skip
    g.add_argument(
        "--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None,
        help="reuse KV blocks of shared prompt prefixes (vLLM default: on)",
    )  # fmt: skip
    g.add_argument("--scheduling-policy", choices=SCHEDULING_POLICIES, help="fcfs (default) or priority")
    g.add_argument("--long-prefill-token-threshold", type=int, help="cap each long prompt's prefill chunk per step")
    g.add_argument("--gpu-memory-utilization", type=float, help="GPU hosts: fraction of GPU memory (0.85-0.9)")
    g.add_argument(
        "--kv-cache-gib", type=float, default=DEFAULT_KV_CACHE_GIB,
        help=f"CPU hosts: KV cache size, VLLM_CPU_KVCACHE_SPACE (default {DEFAULT_KV_CACHE_GIB})",
    )  # fmt: skip
    g.add_argument("--engine-args", metavar="'ARGS'", help="further vLLM flags, passed through as they are")
    g.add_argument("--vllm-python", metavar="PATH", help="python of the vLLM venv (default: $SHADOWREPLAY_VLLM_PYTHON, .venv-vllm)")


def register(sub: argparse._SubParsersAction) -> None:
    sh = sub.add_parser("shadow", help="start/stop a real vLLM server as the shadow engine")
    ssub = sh.add_subparsers(dest="shadow_command", metavar="ACTION")
    sh.set_defaults(func=lambda a: (sh.print_help(), 2)[1])

    up = ssub.add_parser(
        "up",
        help="start a vLLM shadow and wait until it answers",
        description="Starts vLLM's OpenAI-compatible server (vllm-cpu without a GPU) and waits until "
        "/v1/models answers; prints its URL and metrics URL. Runs in the background (stop it with "
        "`shadowreplay shadow down`) unless --foreground.",
    )
    m = up.add_mutually_exclusive_group()
    m.add_argument("--model", metavar="DIR", help="a local model folder (Hugging Face layout)")
    m.add_argument("--tiny", action="store_true", help="the tiny random-weight model, built once and cached (default)")
    up.add_argument("--served-model-name", help="model name clients send (default: tiny-llama, or the folder name)")
    up.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    up.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    up.add_argument("--max-model-len", type=int, default=8192, help="context length (default 8192)")
    up.add_argument("--dtype", default="bfloat16", help="weights dtype (default bfloat16)")
    up.add_argument("--foreground", action="store_true", help="stay attached; Ctrl-C stops the server")
    up.add_argument("--log", metavar="FILE", help="server log (default: RUN_DIR/shadow-PORT.log)")
    add_duration_flag(up, "--ready-timeout", default=format_duration(DEFAULT_READY_TIMEOUT_S), bare="s",
                      help=f"how long to wait for readiness (default {format_duration(DEFAULT_READY_TIMEOUT_S)})")
    add_engine_flags(up)
    up.set_defaults(func=cmd_up)

    down = ssub.add_parser("down", help="stop a shadow started by `shadow up`")
    down.add_argument("--port", type=int, help="which shadow (default: the only one running)")
    down.add_argument("--all", action="store_true", help="stop every shadow started by `shadow up`")
    add_duration_flag(down, "--grace", default=format_duration(STOP_GRACE_S[0]), bare="s",
                      help=f"how long a shadow gets to exit after SIGINT, and half as long after SIGTERM, before SIGKILL "
                      f"(default {format_duration(STOP_GRACE_S[0])})")
    down.set_defaults(func=cmd_down)

    st = ssub.add_parser("status", help="list shadows started by `shadow up`")
    st.set_defaults(func=cmd_status)

    demo = sub.add_parser(
        "demo",
        help="the end-to-end story on a tiny local vLLM: record, find the anomaly, replay, remediate, report",
        description="Starts a tiny vLLM as 'production' and the recorder in front of it, drives synthetic "
        "gateway traffic with a scheduled batch client, checks the recording for PII, finds the anomalous "
        "slot, replays into a baseline shadow, two remediations and the baseline again (A/A), compares "
        "them with 95% intervals and verdicts, measures the baseline's capacity (the knee and the headroom over "
        "the recorded peak, at most 3 minutes), and writes the HTML reports. "
        "Everything goes under --out; every process it starts is stopped, also on Ctrl-C.",
    )
    demo.add_argument("--out", default="demo-out", help="output folder (default ./demo-out; an earlier demo's output there is replaced)")
    demo.add_argument("--quick", action="store_true",
                      help="the whole pipeline in about 5 minutes: two engines, 1 minute of traffic, one replay and its fidelity "
                      "check, a capacity step of 3 loads (at most 40 s), the reports; no remediations and no verdicts")
    demo.add_argument("--minutes", type=float, help="minutes of recorded traffic (default: 1.5 where three batch slots hold the 130 short requests "
                      "the verdicts need at the engine's calibrated rate, else 2; 1 with --quick)")
    demo.add_argument("--week", type=float, metavar="SECONDS", help="length of one compressed 'week' of 10 s slots (default 30)")
    demo.add_argument(
        "--remediation", metavar="'FLAGS'",
        help="vLLM flags of the remediated shadow, written --remediation='...' (default: '--long-prefill-token-threshold 128'); "
        "the route fix (the batch client on an engine of its own) is measured beside it",
    )  # fmt: skip
    demo.add_argument("--seed", type=int, default=7, help="random seed of the synthetic traffic")
    demo.add_argument("--vllm-python", metavar="PATH", help="python of the vLLM venv")
    demo.set_defaults(func=cmd_demo)


def engine_config(args: argparse.Namespace, model: Path, name: str, port: int, host: str = "127.0.0.1"):
    from .engine import EngineConfig, parse_engine_args

    return EngineConfig(
        model=model,
        served_model_name=name,
        port=port,
        host=host,
        max_model_len=getattr(args, "max_model_len", 8192),
        dtype=getattr(args, "dtype", "bfloat16"),
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
        enable_chunked_prefill=args.enable_chunked_prefill,
        enable_prefix_caching=args.enable_prefix_caching,
        scheduling_policy=args.scheduling_policy,
        long_prefill_token_threshold=args.long_prefill_token_threshold,
        gpu_memory_utilization=args.gpu_memory_utilization,
        kv_cache_space_gib=args.kv_cache_gib,
        extra_args=parse_engine_args(args.engine_args),
    )


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_up(args: argparse.Namespace) -> int:
    from . import state
    from .engine import VllmServer
    from .tiny_model import MODEL_NAME, build_tiny_model
    from .venv import find_vllm_python

    python = find_vllm_python(args.vllm_python)  # says how to install vLLM before anything else
    if args.model:
        model = Path(args.model).expanduser().resolve()
        if not (model / "config.json").exists():
            raise ConfigError(f"--model {model}: not a model folder (no config.json)")
        # the folder's name as given: a link /models/llama-3-8b -> /store/abc123 serves llama-3-8b
        name = args.served_model_name or Path(os.path.abspath(os.path.expanduser(args.model))).name
    else:
        print("shadow: tiny model (built once, cached) ...", file=sys.stderr)
        model = build_tiny_model(python=python)
        name = args.served_model_name or MODEL_NAME
    cfg = engine_config(args, model, name, args.port, args.host)
    for _, st in state.load_all():
        if st.port == args.port and st.is_running():
            raise ConfigError(f"a shadow already runs on port {args.port} (pid {st.pid}); `shadowreplay shadow down --port {args.port}` first")
    log = Path(args.log).expanduser().resolve() if args.log else state.log_path(args.port)
    server = VllmServer(cfg, log, python=python)
    old = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        server.start()
        print(f"shadow: starting vLLM (pid {server.pid}, log {log}); this takes 1-2 minutes on a CPU ...", file=sys.stderr)
        try:
            server.wait_ready(args.ready_timeout)
        except BaseException:
            server.stop()
            raise
        st = state.ShadowState(
            pid=server.pid,
            port=args.port,
            host=args.host,
            url=server.url,
            model=str(model),
            served_model_name=name,
            log=str(log),
            started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            start_ticks=state.proc_start_ticks(server.pid),
            foreground=args.foreground,
        )
        spath = state.save(st)
        print(f"shadow ready: {server.url}  (model {name})")
        print(f"metrics:      {server.metrics_url}")
        print(f"log:          {log}")
        if not args.foreground:
            print(f"stop with:    shadowreplay shadow down --port {args.port}")
            return 0
        print("foreground: Ctrl-C stops the server", file=sys.stderr)
        try:
            rc = server.proc.wait()
            raise ShadowReplayError(f"vLLM exited with code {rc} (log: {log})")
        except KeyboardInterrupt:
            print("shadow: stopping ...", file=sys.stderr)
            return 0
        finally:
            server.stop()
            spath.unlink(missing_ok=True)
    finally:
        signal.signal(signal.SIGTERM, old)


def cmd_down(args: argparse.Namespace) -> int:
    from . import state
    from .engine import stop_group

    entries = state.load_all()
    if args.port is not None:
        entries = [(p, s) for p, s in entries if s.port == args.port]
        if not entries:
            raise ConfigError(f"no shadow started by `shadow up` on port {args.port} (state folder {state.run_dir()})")
    elif not args.all:
        running = [(p, s) for p, s in entries if s.is_running()]
        if len(running) > 1:
            ports = ", ".join(str(s.port) for _, s in running)
            raise ConfigError(f"several shadows run (ports {ports}); say which with --port, or --all")
        if not running:
            for p, _ in entries:
                p.unlink(missing_ok=True)
            print("shadow: none running")
            return 0
        entries = running
    for path, st in entries:
        if st.is_running():
            print(f"shadow: stopping pid {st.pid} on {st.url} ...", file=sys.stderr)
            stop_group(st.pid, grace_s=(args.grace, args.grace / 2))
            print(f"shadow on port {st.port} stopped")
        else:
            print(f"shadow on port {st.port} was not running (stale state removed)")
        path.unlink(missing_ok=True)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from . import state
    from .engine import http_ok

    entries = state.load_all()
    if not entries:
        print("shadow: none running")
        return 0
    for _, st in entries:
        if not st.is_running():
            what = "not running (stale)"
        elif http_ok(st.url + "/health"):
            what = "ready"
        else:
            what = "starting or not answering"
        print(f"{st.url}  {what}  pid {st.pid}  model {st.served_model_name}  metrics {st.metrics_url}  log {st.log}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import DEFAULT_REMEDIATION, DemoConfig, run_demo

    if args.quick and args.remediation is not None:
        raise ConfigError("--quick measures no remediation: leave out --remediation, or --quick")

    cfg = DemoConfig.for_mode(
        quick=args.quick,
        out=Path(args.out).expanduser().resolve(),
        minutes=args.minutes,
        week_s=args.week,
        seed=args.seed,
        remediation=args.remediation if args.remediation is not None else DEFAULT_REMEDIATION,
    )
    return run_demo(cfg, vllm_python=args.vllm_python)
