"""The replay command's steps, callable in-process: select, plan, check, send, write."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from shadowreplay import __version__
from shadowreplay.durations import TimePoint
from shadowreplay.errors import ConfigError, TargetError
from shadowreplay.readpolicy import skip_bad_files, skipping_bad_files
from shadowreplay.storage import location

from . import client, damaged, results, schedule
from .body import BodyOptions, parse_headers, parse_model_map
from .model_check import model_warnings
from .load import Load, scale
from .plan import build_plan
from .shape import shape_prompts
from .results import write_manifest
from .routes import parse_route, parse_target
from .rows import static_columns
from .runner import Replayer, RunConfig
from .grpc_replay import check_grpc_target
from .safety import check_targets
from .shard import Shard, check_start_at, clock_state, iso_ns, parse_shard, parse_start_at
from .results_writer import ResultsWriter

log = logging.getLogger(__name__)


@dataclass
class ReplayOptions:
    recording: str
    target: str
    out: str
    speed: float = 1.0
    start: str | TimePoint | None = None  # an ISO time or an offset (shadowreplay.durations)
    end: str | TimePoint | None = None
    where: str | None = None
    limit: int | None = None
    model_map: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    max_in_flight: int | None = None
    timeout_s: float = 600.0
    routes: list[str] = field(default_factory=list)
    dry_run: bool = False
    allow_recorded_host: bool = False
    ignore_eos: bool = True
    tokenizer: str | None = None  # shape rows' prompts: tokenizer.json folder or vLLM URL (replayer/shape.py)
    metrics_url: str | None = None
    no_metrics: bool = False
    metrics_interval_s: float = 1.0
    pacing: str = "timerfd"
    spin_lead_ms: float = 1.0  # wake this long before each send and poll until it (replayer/pacer.py)
    drain_s: float = 30.0
    progress: bool | None = None
    warm_connections: int | None = None  # None: sized from the schedule's peak (runner.warm_size)
    gc_off: bool = True
    flush_interval_s: float = 10.0  # results of done requests are written this often during the run
    keepalive_expiry_s: float | None = None  # idle keep-alive connections older than this are not reused
    lead_in_s: float = 0.0  # also send this much of the traffic before --start, left out of the results' analysis
    shard: str | None = None  # "K/N": send only this shard's share of the schedule (replayer/shard.py)
    start_at: str | None = None  # shared wall-clock start: ISO-8601 UTC or epoch seconds
    progress_json: bool = False  # progress as JSON lines on stdout (a shard run by `replay --shards N`)
    skip_bad_files: bool = False  # leave out the recording's unreadable files (shadowreplay/readpolicy.py)
    include_damaged: bool = False  # also send the rows the recorder marked damaged (replayer/damaged.py)
    load: Load | None = None  # a scaled load (replayer/load.py, `capacity`) instead of --speed
    stop_check: Callable | None = None  # RunConfig.stop_check: a reason ends the run early


@dataclass
class ReplayResult:
    summary: dict
    out: Path | None
    files: list[Path]
    interrupted: bool = False
    schedule: dict | None = None


def _validate(o: ReplayOptions) -> None:
    if o.speed <= 0:
        raise ConfigError("--speed must be greater than 0")
    if o.max_in_flight is not None and o.max_in_flight < 1:
        raise ConfigError("--max-in-flight must be at least 1")
    if o.timeout_s <= 0:
        raise ConfigError("--timeout must be greater than 0")
    if o.warm_connections is not None and o.warm_connections < 0:
        raise ConfigError("--warm-connections must be 0 or more")
    if not o.flush_interval_s >= 0:
        raise ConfigError("--flush-interval must be 0 (write at the end only) or more")
    if not 0 <= o.spin_lead_ms <= 1000:
        raise ConfigError("--spin-lead must be between 0 and 1s")
    if o.keepalive_expiry_s is not None and not o.keepalive_expiry_s > 0:
        raise ConfigError("--keepalive-expiry must be greater than 0")
    if o.lead_in_s < 0:
        raise ConfigError("--lead-in must be 0 or more")


def _shard_and_start(o: ReplayOptions) -> tuple[Shard | None, int | None]:
    """The parsed --shard and --start-at (ns since the epoch); a past start is an error."""
    sh = parse_shard(o.shard) if o.shard is not None else None
    start_at = parse_start_at(o.start_at) if o.start_at is not None else None
    if sh is not None and sh.count > 1 and start_at is None:
        raise ConfigError(f"--shard {sh} needs --start-at TIME: every shard must count its schedule from the same instant")
    if start_at is not None and not o.dry_run:
        check_start_at(start_at)
    return sh, start_at


def replay(o: ReplayOptions, echo: Callable[[str], None] = print) -> ReplayResult:
    _validate(o)
    sh, start_at = _shard_and_start(o)
    target = parse_target(o.target)
    routes = [parse_route(r) for r in o.routes]
    body_opts = BodyOptions(parse_model_map(o.model_map), o.ignore_eos)
    extra_headers = parse_headers(o.headers)
    with skipping_bad_files(o.skip_bad_files or skip_bad_files()):
        sel = schedule.select(o.recording, schedule.Filters(o.where, o.start, o.end, o.limit, o.lead_in_s, o.include_damaged),
                              [r.predicate for r in routes])
    body_opts = BodyOptions(body_opts.model_map, body_opts.ignore_eos, shape_prompts(sel.table, o.tokenizer))  # whole selection: shards agree
    if o.load is not None:  # capacity: the step's scaled load, its warm-up marked lead_in
        scaled = scale(sel.table, o.load)
        table, offs, lead = scaled.table, scaled.offsets_ns, scaled.lead_in
    else:
        table, offs = sel.table, schedule.offsets_ns(sel.table, o.speed)
        lead = [i < sel.lead_in_rows for i in range(table.num_rows)]
    positions = range(table.num_rows)
    all_rows = table.num_rows
    if sh is not None:  # the one schedule, then this shard's share of it (offsets unchanged)
        positions = sh.indices(table.num_rows)
        table, offs = table.take(list(positions)), [offs[i] for i in positions]
    plan = build_plan(table, offs, target, routes, body_opts, extra_headers)
    plan.lead_in = [lead[i] for i in positions]
    sched = schedule.summary(table, offs)
    sched["lead_in_requests"] = sum(plan.lead_in)
    sched["damaged_included" if o.include_damaged else "damaged_left_out"] = sel.damaged
    if sh is not None:
        sched["requests_all_shards"] = all_rows
        if not len(plan):
            echo(f"note: shard {sh} has no requests (the selection has {sel.table.num_rows})")
    if o.lead_in_s and not sel.lead_in_rows:
        echo(f"note: no recorded traffic in the {o.lead_in_s:g} s before the window's start: no lead-in sent")
    per_target: dict[str, int] = {}
    for ti in plan.target_idx:
        per_target[plan.targets[ti].url] = per_target.get(plan.targets[ti].url, 0) + 1
    sched["per_target"] = per_target
    for warning in check_targets(plan.targets, sel.endpoints, o.allow_recorded_host):
        print(f"shadowreplay replay: warning: {warning}", file=sys.stderr, flush=True)
    for ti in {plan.target_idx[i] for i, call in enumerate(plan.grpc) if call is not None}:
        check_grpc_target(plan.targets[ti])

    if o.dry_run:
        if sh is not None:
            echo(f"shard {sh}: the requests whose index mod {sh.count} is {sh.index}, of the selection's {sel.table.num_rows}")
        echo(f"dry run: {sched['requests']} requests over {sched['span_s']} s at speed {o.speed:g} "
             f"(mean {sched['mean_rate_per_s']}/s, peak {sched['peak_per_s']} in one second, "
             f"min gap {sched['min_gap_ms']} ms)")
        for url, n in per_target.items():
            echo(f"  {n} -> {url}")
        if sel.damaged:
            echo(damaged.line(sel.damaged, o.include_damaged))
        return ReplayResult({}, None, [], schedule=sched)

    out = location(o.out)  # a folder or an s3:// prefix (checked: bucket, credentials, endpoint)
    made = [p for p in (out, *out.parents) if not p.exists()] if isinstance(out, Path) else []
    out.mkdir(parents=True, exist_ok=True)
    try:
        return asyncio.run(_replay_async(o, sel, plan, sched, out, echo, sh, start_at))
    except TargetError:  # nothing was sent (an unreachable target): leave no empty folder behind
        for p in made:
            try:
                p.rmdir()  # only while empty
            except OSError:
                break
        raise


async def _replay_async(o, sel, plan, sched, out: Path, echo, sh: Shard | None = None,
                        start_at: int | None = None) -> ReplayResult:
    used = sorted({plan.target_idx[i] for i in range(len(plan))})
    for ti in used:
        why = await client.probe(plan.targets[ti])
        if why:
            raise TargetError(why)
    sampler = None
    metrics_url = None
    if not o.no_metrics and (sh is None or sh.index == 0):  # one sampler per sharded run: shard 0's
        metrics_url = o.metrics_url or plan.targets[0].url + "/metrics"
        sampler = await asyncio.to_thread(_start_sampler, metrics_url, out, o.metrics_interval_s, bool(o.metrics_url))
    run_id = uuid.uuid4().hex[:12]
    started = dt.datetime.now(dt.timezone.utc)
    manifest = {
        "tool": "shadowreplay replay",
        "version": __version__,
        "run_id": run_id,
        "recording": str(location(o.recording).resolve()),
        "recording_rows": sel.recording_rows,
        "skipped_files": sel.skipped_files,  # unreadable, left out by --skip-bad-files
        "filters": {"where": o.where, "start": o.start, "end": o.end, "limit": o.limit,
                    "start_resolved": sel.start.isoformat(), "end_resolved": sel.end.isoformat()},
        "speed": o.speed,
        "load": None if o.load is None else {"factor": o.load.factor, "mode": o.load.mode, "requests": o.load.requests,
                                             "warmup": o.load.warmup, "cache_salt": o.load.salt is not None},
        "lead_in_s": o.lead_in_s,
        "targets": [t.url for t in plan.targets],
        "routes": [{"predicate": plan.route_names[i], "target": plan.targets[i].url} for i in range(1, len(plan.targets))],
        "model_map": dict(parse_model_map(o.model_map)),
        "header_names": [h.split(":", 1)[0].strip() for h in o.headers],  # values may be secrets
        "ignore_eos": o.ignore_eos,
        "include_damaged": o.include_damaged,
        "tokenizer": o.tokenizer,  # shape rows' prompts were synthesized under it
        "max_in_flight": o.max_in_flight,
        "timeout_s": o.timeout_s,
        "pacing": o.pacing,
        "spin_lead_ms": o.spin_lead_ms,
        "warm_connections": o.warm_connections,
        "gc_off": o.gc_off,
        "metrics_url": metrics_url if sampler else None,
        "flush_interval_s": o.flush_interval_s,
        "keepalive_expiry_s": o.keepalive_expiry_s,
        "schedule": sched,
        "started_at": started.isoformat(),
        "rows_flushed": 0,
    }
    manifest_name = "manifest.json"
    if sh is not None:
        manifest_name = sh.manifest_name
        manifest["shard"] = {"index": sh.index, "count": sh.count, "tag": sh.tag,
                             "start_at": iso_ns(start_at) if start_at is not None else None,
                             "split": "request index mod count, in send order"}
    if start_at is not None:
        manifest["clock"] = clock_state()
    write_manifest(out, manifest, manifest_name)
    sink = ResultsWriter(out, run_id, o.flush_interval_s, json.dumps(manifest, default=str), static_columns(plan),
                         manifest_name=manifest_name, shard_tag=sh.tag if sh is not None else None)
    rep = Replayer(plan, RunConfig(max_in_flight=o.max_in_flight, timeout_s=o.timeout_s, pacing=o.pacing,
                                   spin_lead_ns=int(o.spin_lead_ms * 1e6),
                                   drain_s=o.drain_s, progress=o.progress,
                                   warm_connections=o.warm_connections, gc_off=o.gc_off,
                                   idle_expiry_s=o.keepalive_expiry_s, start_wall_ns=start_at,
                                   progress_json=o.progress_json, stop_check=o.stop_check), sink=sink)
    try:
        if o.flush_interval_s > 0:
            await sink.open()
        outcome = await rep.run()
    finally:
        files, rows_flushed = await sink.close()  # also after a crash of the run: keep what is done
        if sampler is not None:
            await asyncio.to_thread(sampler.stop)
    lags, caps = _lags_and_caps(plan, outcome)
    sent_ns = [s for s in outcome.sent_ns if s]
    summ = results.summarize(lags, caps, outcome.errors, outcome.sent, len(plan),
                             min(sent_ns) if sent_ns else None, max(sent_ns) if sent_ns else None,
                             plan.offsets_ns[-1] / 1e9 if len(plan) else 0.0)
    sent_offsets = [plan.offsets_ns[i] for i, s in enumerate(outcome.sent_ns) if s]
    if len(sent_offsets) > 1 and max(sent_offsets) > min(sent_offsets):  # what was sent, as scheduled
        summ["scheduled_rate_sent_per_s"] = round((len(sent_offsets) - 1) * 1e9 / (max(sent_offsets) - min(sent_offsets)), 2)
    summ["interrupted"] = outcome.interrupted
    summ["interrupted_by"] = outcome.interrupted_by
    summ["errors_by_kind"] = results.error_kinds(outcome.error)
    summ["resent"] = outcome.resent
    summ["damaged_included" if o.include_damaged else "damaged_left_out"] = sel.damaged
    if outcome.stopped:
        summ["stopped_early"] = outcome.stopped
    manifest["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat()
    manifest["rows_flushed"] = rows_flushed
    manifest["summary"] = summ
    if start_at is not None:
        manifest["start"] = _start_figures(plan, outcome, start_at)
    write_manifest(out, manifest, manifest_name)
    echo(results.format_summary(summ))
    if any(isinstance(e, str) and e.startswith("HTTP 404") for e in outcome.error):
        for warning in model_warnings(plan):
            print(f"shadowreplay replay: warning: {warning}", file=sys.stderr, flush=True)
    return ReplayResult(summ, out, files, interrupted=outcome.interrupted, schedule=sched)


def _start_sampler(url: str, out: Path, interval_s: float, explicit: bool):
    from shadowreplay import metrics

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per scrape otherwise
    if not metrics.probe(url):
        if explicit:
            raise TargetError(f"--metrics-url {url} does not answer with Prometheus metrics")
        log.info("no Prometheus metrics at %s; engine metrics not sampled", url)
        return None
    # In a child process: scraping, parsing and writing in this one would delay the sends.
    return metrics.SamplerProcess(url, out, interval_s).start()


def _start_figures(plan, oc, start_at: int) -> dict:
    """How this shard's start went, on its own clock: when it was ready (ahead of --start-at), its
    first send's wall time, and how late that send was against its scheduled instant."""
    first = next((i for i in range(len(plan)) if oc.sent_ns[i]), None)
    fig = {"start_at": iso_ns(start_at), "ready_at": iso_ns(oc.fixed_wall_ns),
           "ready_ahead_ms": round((start_at - oc.fixed_wall_ns) / 1e6, 3),
           "first_send_at": None, "first_send_after_start_at_ms": None, "first_send_lag_ms": None}
    if first is not None:
        wall = oc.sent_ns[first] + oc.wall_minus_mono_ns
        fig.update(first_send_at=iso_ns(wall), first_send_after_start_at_ms=round((wall - start_at) / 1e6, 3),
                   first_send_lag_ms=round((oc.sent_ns[first] - oc.start_mono_ns - plan.offsets_ns[first]) / 1e6, 3))
    fig["clock_after"] = clock_state()
    return fig


def _lags_and_caps(plan, oc) -> tuple[list[float], list[float]]:
    """Send lags and cap delays (ms) of the requests that have a result row."""
    lags, caps = [], []
    for i in range(len(plan)):
        sent = oc.sent_ns[i]
        if not sent and oc.error[i] is None:
            continue
        if sent:
            lags.append((sent - oc.start_mono_ns - plan.offsets_ns[i]) / 1e6)
        caps.append(oc.cap_delay_ns[i] / 1e6)
    return lags, caps
