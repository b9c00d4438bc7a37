"""`shadowreplay replay RECORDING --target URL --out DIR [options]`."""

from __future__ import annotations

import argparse
import sys

from shadowreplay.durations import add_duration_flag, time_point_arg


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "replay",
        help="replay a recording open-loop (timestamp-faithful) into a shadow server",
        description="Replay a recording into a shadow server: every send time is fixed from one start "
        "instant (open loop), each request's send lag is measured, results go to OUT/replay_results/.",
    )
    add_replay_options(p)
    p.add_argument("--out", required=True, help="output folder for replay_results/, engine_metrics/, manifest.json")
    p.add_argument("--speed", type=float, default=1.0, help="time scale: 2 = twice as fast (default 1)")
    p.add_argument("--max-in-flight", type=int, help="safety cap on concurrent requests (delays are reported)")
    p.add_argument("--dry-run", action="store_true", help="print the schedule summary and exit")
    add_duration_flag(p, "--drain", default="30s", bare="s", zero=True,
                      help="after Ctrl-C, how long to wait for in-flight requests (default 30s)")
    add_duration_flag(p, "--flush-interval", default="10s", bare="s", zero=True,
                      help="write the results of finished requests to OUT/replay_results/ every DURATION "
                           "during the run (default 10s), so a crash loses at most the last DURATION; "
                           "0: write everything at the end, in this process")
    add_duration_flag(p, "--lead-in", default="0s", bare="s", zero=True,
                      help="also send the DURATION of traffic before --start, so the shadow is warm when the window "
                           "starts; those requests are marked lead_in and left out of every analysis (default 0s)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run the replay N times, into OUT/run-01/ ... OUT/run-NN/; compare and analyze pool the runs")
    p.add_argument("--b-target", metavar="URL",
                   help="a second configuration B, replayed to URL into --b-out, its runs interleaved with A's "
                        "(A B, B A, ...) so that drift over time falls on both")
    p.add_argument("--b-route", action="append", metavar="'PREDICATE=URL'", help="a --route of configuration B (repeatable)")
    p.add_argument("--b-out", metavar="DIR", help="output folder of configuration B")
    p.add_argument("--shard", metavar="K/N",
                   help="send only shard K's share of the schedule (0-based: requests whose index is K mod N); "
                        "every shard needs the same --start-at and --out (see docs/scale.md)")
    p.add_argument("--start-at", metavar="TIME",
                   help="shared wall-clock start of the schedule's first request: ISO-8601 UTC or epoch seconds "
                        "(must be ahead of now)")
    p.add_argument("--shards", type=int, metavar="N",
                   help="run N shards of this replay as local processes with a common --start-at a few seconds "
                        "ahead, and print one combined summary")
    p.add_argument("--progress-json", action="store_true", help=argparse.SUPPRESS)  # a shard under --shards N
    p.set_defaults(func=run)

    s = subparsers.add_parser(
        "shards",
        help="combined summary of a sharded replay (replay --shard K/N) from its shards' manifests",
        description="Reads OUT/manifests/shard-K-of-N.json of every shard (e.g. after a Kubernetes Indexed Job) and "
        "prints one summary: per-shard send lag, requests and errors, the spread of the shards' starts and the "
        "worst clock error their kernels estimated.",
    )
    s.add_argument("out", help="the shards' common --out (a folder or an s3:// prefix)")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=run_shards_summary)


def add_replay_options(p: argparse.ArgumentParser) -> None:
    """The options of `replay` that `capacity` shares: the recording, the target, the selection
    (window, --where, routes), how requests are built and how they are sent. Read back with
    replay_options()."""
    p.add_argument("recording", help="recording dataset folder (holding requests/)")
    p.add_argument("--target", required=True, help="shadow base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--start", type=time_point_arg("--start"), metavar="TIME",
                   help="first request time: ISO time or offset from the recording's first request (90s, 5m)")
    p.add_argument("--end", type=time_point_arg("--end"), metavar="TIME", help="end time (exclusive), same forms as --start")
    p.add_argument("--where", help="DuckDB predicate over the requests table, e.g. \"kind = 'chat'\"")
    p.add_argument("--limit", type=int, help="replay at most N requests (the first N in time)")
    p.add_argument("--model-map", action="append", metavar="RECORDED=SHADOW", help="rename a model (repeatable)")
    p.add_argument("--header", action="append", metavar="'Name: value'", help="header added to every request (repeatable)")
    add_duration_flag(p, "--timeout", default="600s", bare="s", help="per-request timeout (default 600s)")
    p.add_argument("--route", action="append", metavar="'PREDICATE=URL'",
                   help="send requests matching a DuckDB predicate to another target (repeatable, first match wins)")
    p.add_argument("--allow-recorded-host", action="store_true", help="allow replaying to the host the traffic was recorded from")
    p.add_argument("--include-damaged", action="store_true",
                   help="also send the rows the recorder marked damaged (request body stored truncated, undecodable, "
                        "a decompression bomb); by default they are left out and counted")
    p.add_argument("--no-ignore-eos", dest="ignore_eos", action="store_false", help="do not set ignore_eos on LLM requests")
    p.add_argument("--tokenizer", metavar="DIR_OR_URL",
                   help="the shadow model's tokenizer.json folder (or vLLM URL): synthesizes prompts for rows recorded with --keep shape")
    mg = p.add_mutually_exclusive_group()
    mg.add_argument("--metrics-url", help="Prometheus URL to sample (default: TARGET/metrics when it answers)")
    mg.add_argument("--no-metrics", action="store_true", help="do not sample engine metrics")
    add_duration_flag(p, "--metrics-interval", default="1s", bare="s", help="time between metric samples (default 1s)")
    add_duration_flag(p, "--spin-lead", default="1ms", bare="ms", zero=True, maximum=1.0, deprecated={"--spin-lead-ms": "ms"},
                      help="wake this long before each send time and poll until it, so the CPU is awake at the "
                           "instant (default 1ms, at most 1s; costs CPU time, up to DURATION per request; "
                           "0: sleep to the instant)")
    p.add_argument("--pacing", choices=("timerfd", "spin", "sleep"), default="timerfd",
                   help="how the sender waits for each send time (default timerfd; see docs/replayer.md)")
    p.add_argument("--no-progress", action="store_true", help="no live progress line")
    p.add_argument("--warm-connections", type=int, metavar="N",
                   help="keep-alive connections opened per target before the start "
                        "(default: twice the recording's peak of requests in flight, 32-2048)")
    add_duration_flag(p, "--keepalive-expiry", default=None, bare="s",
                      help="do not reuse a keep-alive connection idle for longer than DURATION (default: reuse it "
                           "while the target keeps it open; a request the target drops as it closes an idle "
                           "connection is resent once either way)")
    p.add_argument("--keep-gc", dest="gc_off", action="store_false",
                   help="leave Python's cyclic GC on while sending (default: off while sending)")


def run_shards_summary(args) -> int:
    import json

    from shadowreplay.errors import DatasetError

    from .shard import combine, format_combined, read_manifests

    manifests = read_manifests(args.out)
    if not manifests:
        raise DatasetError(f"{args.out}: no shard manifests (manifests/shard-K-of-N.json) found")
    summary = combine(manifests)
    print(json.dumps(summary, indent=2) if args.json else format_combined(summary))
    return 0


def run(args) -> int:
    from dataclasses import replace

    from shadowreplay.errors import ConfigError

    from .repeat import run_repeats
    from .replay import replay

    if args.repeat < 1:
        raise ConfigError("--repeat must be at least 1")
    if (args.b_target is None) != (args.b_out is None) or (args.b_route and not args.b_target):
        raise ConfigError("configuration B needs both --b-target and --b-out (and --b-route only with them)")
    if (args.shard or args.shards) and (args.repeat > 1 or args.b_target):
        raise ConfigError("--shard/--shards cannot be combined with --repeat or --b-target")
    if args.shards is not None:
        from .launch import run_local_shards

        if args.shard:
            raise ConfigError("give either --shards N (local processes) or --shard K/N (one shard), not both")
        return run_local_shards(args.argv, args.shards, args.out, args.start_at, dry_run=args.dry_run)

    opts = replay_options(
        args,
        out=args.out,
        speed=args.speed,
        max_in_flight=args.max_in_flight,
        dry_run=args.dry_run,
        drain_s=args.drain,
        flush_interval_s=args.flush_interval,
        lead_in_s=args.lead_in,
        shard=args.shard,
        start_at=args.start_at,
        progress_json=args.progress_json,
    )
    echo = lambda s: print(s, flush=True)  # noqa: E731
    if (args.repeat == 1 and not args.b_target) or args.dry_run:
        results = [replay(opts, echo=echo)]
    else:
        configs = [opts]
        if args.b_target:
            configs.append(replace(opts, target=args.b_target, out=args.b_out, routes=args.b_route or [], metrics_url=None))
        results = run_repeats(configs, args.repeat, echo=echo)
    last = results[-1]
    if last.interrupted:
        by = last.summary.get("interrupted_by") or "SIGINT"
        print(f"shadowreplay replay: interrupted ({by}); {last.summary['not_sent']} requests not sent; "
              f"results in {last.out}", file=sys.stderr)
        return 143 if by == "SIGTERM" else 130
    return 0


def replay_options(args, **fields):
    """ReplayOptions from the options add_replay_options() declared, plus `fields` (the
    command's own: out, speed, ...)."""
    from .replay import ReplayOptions

    return ReplayOptions(
        recording=args.recording,
        target=args.target,
        start=args.start,
        end=args.end,
        where=args.where,
        limit=args.limit,
        model_map=args.model_map or [],
        headers=args.header or [],
        timeout_s=args.timeout,
        routes=args.route or [],
        allow_recorded_host=args.allow_recorded_host,
        include_damaged=args.include_damaged,
        skip_bad_files=args.skip_bad_files,  # added by the dispatcher (shadowreplay/cli.py READING_COMMANDS)
        ignore_eos=args.ignore_eos,
        tokenizer=args.tokenizer,
        metrics_url=args.metrics_url,
        no_metrics=args.no_metrics,
        metrics_interval_s=args.metrics_interval,
        pacing=args.pacing,
        spin_lead_ms=args.spin_lead * 1000.0,
        progress=False if args.no_progress else None,
        warm_connections=args.warm_connections,
        gc_off=args.gc_off,
        keepalive_expiry_s=args.keepalive_expiry,
        **fields,
    )
