"""`shadowreplay capacity`: the largest load a shadow holds under its SLOs (docs/capacity.md).

Each step replays a load scaled from the recording (replayer/load.py) into DIR/step-NN/ (a replay
dataset), judges it with the SLO expressions (analysis/expr.py), and the search picks the next
load: a ramp by factors of 2 until a step passes and one fails, then geometric bisection between
them. Between steps the target's /metrics is polled until its engine is idle. A step whose SLO is
already broken beyond doubt (more requests over a bound than its percentile allows, counting every
request it will send) stops early. DIR/capacity.json is rewritten after every step."""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shadowreplay.errors import ConfigError, ShadowReplayError

from .load import Load, recorded_rates, scale
from .replay import ReplayOptions, replay

RAMP = 2.0  # the ramp's factor between loads
STEP_MARGIN = 1.2  # measured requests per step: this times the most any SLO's percentile needs
MIN_STEP_REQUESTS = 100
IDLE_POLL_S = 0.25
NAMED_FIGURES = {"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting"}


# a step whose sent rate is under this share of its schedule's was limited by the sender, not the engine
CLIENT_LIMITED = 0.95

@dataclass
class CapacityOptions:
    replay: ReplayOptions  # recording, target, selection, sending (the options shared with `replay`)
    slos: list[str]
    out: str
    mode: str = "speed"
    loads: list[float] | None = None  # fixed loads, no search
    start: float = 1.0
    min_load: float = 1 / 16
    max_load: float = 64.0
    precision: float = 0.1  # bisect until the bracket's ratio is at most 1 + precision
    max_steps: int = 12
    repeats: int = 1
    step_requests: int | None = None  # measured requests per step (None: from the SLOs)
    warmup: float = 0.1
    cooldown_s: float = 120.0  # longest wait for the engine to go idle between steps
    max_seconds: float | None = None  # the sweep's time budget: no step is started that would pass it
    early_stop: bool = True
    cache_salt: bool = True
    fail_below: float | None = None
    shards: int | None = None  # every step sent by N local shard processes (no early stop)


@dataclass
class Step:
    index: int
    load: float
    out: Path
    requests: int = 0
    rate_rps: float | None = None
    sent_rate_rps: float | None = None
    sent_scheduled_rate_rps: float | None = None  # the schedule's rate over the requests sent (= rate_rps unless stopped)

    @property
    def client_limited(self) -> bool:
        """The sender fell behind its schedule (a loaded client machine): the step did not carry
        the load it names, and its figures judge less."""
        sent, sched = self.sent_rate_rps, self.sent_scheduled_rate_rps
        return sent is not None and sched is not None and sent < CLIENT_LIMITED * sched
    passed: bool = False
    certain: bool = False
    figures: list[dict[str, Any]] = field(default_factory=list)
    gates: list[Any] = field(default_factory=list)  # analysis.expr.GateResult
    curve: dict[str, Any] = field(default_factory=dict)  # curve_exprs() figures, for the report
    stopped_early: str | None = None
    lag_p99_ms: float | None = None
    lag_max_ms: float | None = None
    engine: dict[str, Any] = field(default_factory=dict)
    cooldown_s: float | None = None
    wall_s: float = 0.0
    errors: int = 0
    interrupted: bool = False  # Ctrl-C/SIGTERM during the step: not judged, the sweep ends

    def as_dict(self, mode: str) -> dict[str, Any]:
        return {
            "step": self.index, "load": self.load, "speed": self.load,  # the load factor, in either mode
            "rate_rps": self.rate_rps, "sent_rate_rps": self.sent_rate_rps,
            "sent_scheduled_rate_rps": self.sent_scheduled_rate_rps,
            "client_limited": self.client_limited, "requests": self.requests,
            "errors": self.errors, "pass": self.passed, "certain": self.certain, "figures": self.figures,
            "curve": self.curve, "stopped_early": self.stopped_early, "send_lag_p99_ms": self.lag_p99_ms,
            "send_lag_max_ms": self.lag_max_ms, "engine": self.engine, "cooldown_s": self.cooldown_s,
            "wall_s": round(self.wall_s, 2), "dataset": self.out.name,
        }


def step_requests(exprs) -> int:
    """Measured requests a step needs: STEP_MARGIN times the most any SLO's percentile needs
    (stats.needed: 100 for a P95, 500 for a P99), at least MIN_STEP_REQUESTS."""
    from shadowreplay.analysis import stats

    need = max([stats.needed(e.quantile) for e in exprs if e.quantile is not None] or [MIN_STEP_REQUESTS])
    return max(MIN_STEP_REQUESTS, math.ceil(STEP_MARGIN * need))


def curve_exprs(exprs) -> list:
    """Figures the report draws against load beside the SLOs: P50 and P99 of each latency an SLO
    names, and goodput (the share meeting every SLO's bound). Written `>= 0`, so they pass and
    add no goodput bound."""
    from shadowreplay.analysis.expr import Expr

    have = {(e.metric, e.quantile) for e in exprs if not e.scope}
    out = []
    for m in dict.fromkeys(e.metric for e in exprs if e.metric in ("ttft", "e2e", "itl")):
        for q in (0.5, 0.99):
            if (m, q) not in have:
                out.append(Expr(m, q, ">=", 0.0, text=f"{m}_p{q * 100:g}"))
    if ("goodput", None) not in have:
        out.append(Expr("goodput", None, ">=", 0.0, text="goodput"))
    return out


# ---- early stop ----------------------------------------------------------------------------------
class BrokenRule:
    """Whether a step's SLOs are already broken beyond doubt, from the requests done and in flight.

    A percentile q of a latency with bound T fails whatever the rest does once more than (1 - q) of
    all the step's measured requests are known to be over T (done over T, or in flight for longer
    than T without the answer the figure times: for TTFT the first output token, not the first
    byte, which a streamed response sends at once). error_rate <= p fails once more than p of them
    failed; goodput >= g once more than 1 - g are failed or over a goodput bound. Scoped SLOs and
    ITL are judged at the end only."""

    def __init__(self, exprs, lead_in: list[bool], bounds: dict[str, float]):
        self.measured = sum(1 for x in lead_in if not x)
        self.lead_in = lead_in
        self.rules: list[tuple[Any, str, float, float]] = []  # (expr, what, bound ns, allowed count)
        for e in exprs:
            if e.scope:
                continue
            if e.metric in ("ttft", "e2e") and e.quantile is not None and e.op in ("<=", "<"):
                self.rules.append((e, e.metric, e.value * 1e6, (1 - e.quantile) * self.measured))
            elif e.metric == "error_rate" and e.op in ("<=", "<"):
                self.rules.append((e, "error", 0.0, e.value * self.measured))
            elif e.metric == "goodput" and e.op in (">=", ">"):
                self.rules.append((e, "bad", 0.0, (1 - e.value) * self.measured))
        self.bounds_ns = {k: v * 1e6 for k, v in bounds.items() if k in ("ttft", "e2e")}
        self._pos = 0
        self._done = [0] * len(self.rules)  # per rule: done requests known to break it

    def __call__(self, rep) -> str | None:
        if not self.rules:
            return None
        order = rep.done_order
        lead = self.lead_in
        for i in order[self._pos:]:
            if lead[i]:
                continue
            sent, fb, end, err = rep.sent_ns[i], rep.first_byte_ns[i], rep.end_ns[i], rep.error[i]
            toks = rep.token_ns[i]
            failed = err is not None or not sent
            # TTFT as the results time it (rows.py): the first output token; a stream's first byte
            # (its headers, a role chunk) comes long before it on a queued engine
            lat = {} if failed else {"ttft": (toks[0] if toks else (fb or end)) - sent, "e2e": end - sent}
            for k, (e, what, bound, _) in enumerate(self.rules):
                if what == "error":
                    self._done[k] += failed
                elif what == "bad":
                    self._done[k] += failed or any(lat[m] > b for m, b in self.bounds_ns.items())
                elif not failed:
                    self._done[k] += lat[what] > bound
        self._pos = len(order)
        now = time.monotonic_ns()
        live = None
        for k, (e, what, bound, allowed) in enumerate(self.rules):
            have = self._done[k]
            if what in ("ttft", "e2e") and have <= allowed:
                live = list(rep.live.values()) if live is None else live
                have += sum(1 for x in live if not self.lead_in[x.idx] and x.sent_ns and now - x.sent_ns > bound
                            and (what == "e2e" or not x.token_ns))
            if have > allowed:
                return f"{e.text}: {have} of its {self.measured} requests already over it"
        return None


# ---- engine state ----------------------------------------------------------------------------------
def engine_queue(metrics_url: str) -> tuple[float, float] | None:
    """(running, waiting) requests of the engine behind metrics_url, None when it does not say."""
    import httpx

    from shadowreplay import prometheus

    try:
        r = httpx.get(metrics_url, timeout=2.0)
    except httpx.HTTPError:
        return None
    if r.status_code != 200:
        return None
    run = wait = None
    for s in prometheus.parse(r.text):
        if s.metric == NAMED_FIGURES["running"]:
            run = (run or 0.0) + s.value
        elif s.metric == NAMED_FIGURES["waiting"]:
            wait = (wait or 0.0) + s.value
    if run is None and wait is None:
        return None
    return run or 0.0, wait or 0.0


def wait_idle(metrics_url: str | None, limit_s: float) -> float | None:
    """Waits until the engine runs and queues nothing (at most limit_s); the seconds waited, None
    when its /metrics does not tell."""
    if metrics_url is None:
        return None
    t0 = time.monotonic()
    while True:
        q = engine_queue(metrics_url)
        if q is None:
            return None
        if q[0] + q[1] == 0 or time.monotonic() - t0 >= limit_s:
            return round(time.monotonic() - t0, 2)
        time.sleep(IDLE_POLL_S)


def step_engine(run_dirs: list[Path]) -> dict[str, Any]:
    """Peak and mean running/waiting over a step's runs (their engine_metrics)."""
    import duckdb

    from shadowreplay import sqlfiles
    from shadowreplay.dataset import parquet_files
    from shadowreplay.schema import ENGINE_METRICS

    files = [str(f) for d in run_dirs for f in parquet_files(d, ENGINE_METRICS)]
    if not files:
        return {}
    con = duckdb.connect()
    try:
        rows = sqlfiles.rows(con, sqlfiles.load(__package__, "step_engine.sql"), {"files": files},
                             context="cannot read the step's engine_metrics")
    finally:
        con.close()
    names = {v: k for k, v in NAMED_FIGURES.items()}
    out: dict[str, Any] = {}
    for r in rows:
        k = names[r["metric"]]
        out[f"{k}_peak"] = r["peak"]
        out[f"{k}_mean"] = round(r["mean"], 2) if r["mean"] is not None else None
    return out


# ---- the knee ------------------------------------------------------------------------------------
def knee(steps: list[Step]) -> tuple[Step | None, tuple[float | None, float | None]]:
    """The largest passing load below the smallest failing one, and its interval: from the
    largest load that passed with every SLO's interval on the passing side (and every load below
    it passing) to the smallest load that failed beyond doubt (stopped early, or an interval
    wholly on the failing side); the smallest failing load where none failed beyond doubt."""
    by = sorted(steps, key=lambda s: s.load)
    fails = [s for s in by if not s.passed]
    lowest_fail = fails[0].load if fails else math.inf
    passes = [s for s in by if s.passed and s.load < lowest_fail]
    best = passes[-1] if passes else None
    lo = None
    for s in by:
        if not s.passed:
            break
        if s.certain:
            lo = s.load
    sure_fails = [s.load for s in fails if s.certain and (best is None or s.load > best.load)]
    hi = sure_fails[0] if sure_fails else (fails[0].load if fails else None)
    return best, (lo if lo is not None else (0.0 if best is not None else None), hi)


def next_load(steps: list[Step], o: CapacityOptions) -> float | None:
    """The search: ramp by RAMP from o.start until a pass and a fail bracket the knee, then
    bisect the bracket (geometric mean) until its ratio is at most 1 + o.precision."""
    if not steps:
        return o.start
    passes = [s.load for s in steps if s.passed]
    fails = [s.load for s in steps if not s.passed]
    if not fails:
        x = max(passes) * RAMP
        return x if x <= o.max_load * (1 + 1e-9) else None
    if not passes:
        x = min(fails) / RAMP
        return x if x >= o.min_load * (1 - 1e-9) else None
    lo = max(p for p in passes if p < min(fails)) if any(p < min(fails) for p in passes) else None
    hi = min(fails)
    if lo is None:
        x = hi / RAMP
        return x if x >= o.min_load * (1 - 1e-9) else None
    if hi / lo <= 1 + o.precision:
        return None
    return _round(math.sqrt(lo * hi))


def _round(x: float) -> float:
    return float(f"{x:.3g}")


# ---- the sweep -------------------------------------------------------------------------------------
class Table:
    """The live table: one line per finished step."""

    def __init__(self, exprs, echo: Callable[[str], None], mode: str):
        self.exprs, self.echo = exprs, echo
        self.cols = [e.text for e in exprs]
        self.mode = mode

    def header(self) -> None:
        figs = "  ".join(f"{c:>30}" for c in self.cols)
        self.echo(f"{'step':>4} {('speed' if self.mode == 'speed' else 'copies'):>7} {'req/s':>8} {'reqs':>6} "
                  f"{'lag p99':>8} {'run/wait':>9}  {figs}  result")

    def row(self, s: Step) -> None:
        from shadowreplay.analysis.expr import format_value

        cells = []
        for e, g in zip(self.exprs, s.gates):
            v = format_value(e.metric, g.observed)
            iv = "" if g.interval is None else f" [{format_value(e.metric, g.interval[0])}, {format_value(e.metric, g.interval[1])}]"
            cells.append(f"{(v + iv)[:30]:>30}")
        rw = "-" if not s.engine else f"{_n(s.engine.get('running_peak'))}/{_n(s.engine.get('waiting_peak'))}"
        lag = "-" if s.lag_p99_ms is None else f"{s.lag_p99_ms:.2f}ms"
        res = ("pass" if s.passed else "FAIL") + ("" if s.certain else " (uncertain)")
        if s.stopped_early:
            res += " stopped early"
        if s.client_limited:
            res += f" client-limited (sent {_n(s.sent_rate_rps)} req/s)"
        self.echo(f"{s.index:>4} {s.load:>7g} {_n(s.rate_rps):>8} {s.requests:>6} {lag:>8} {rw:>9}  "
                  + "  ".join(cells) + f"  {res}")


def _n(v) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if isinstance(v, float) and v != int(v) else f"{int(v)}"


def run_sweep(o: CapacityOptions, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs the sweep; returns capacity.json's content (also written to o.out)."""
    from shadowreplay.analysis import expr as ex

    from . import schedule
    from .results import write_manifest

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per /metrics poll otherwise
    exprs = [e for e in ex.parse_all(o.slos, flag="--slo") if not e.is_bound]
    if not exprs:
        raise ConfigError("capacity needs at least one --slo figure, e.g. --slo 'ttft_p99<=250ms'")
    if o.repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    if o.loads is not None and (not o.loads or any(not x > 0 for x in o.loads)):
        raise ConfigError("--loads must be positive factors, e.g. 0.5,1,2,4")
    if not o.start > 0 or not 0 < o.min_load <= o.max_load:
        raise ConfigError("--start-load, --min-load and --max-load must be positive, --min-load <= --max-load")
    if o.mode == "overlay" and not o.cache_salt:
        raise ConfigError("--mode overlay needs cache_salt (copies must not share cached prefixes): drop --no-cache-salt")
    r = o.replay
    sel = schedule.select(r.recording, schedule.Filters(r.where, r.start, r.end, r.limit), [])
    mean_rps, peak_rps = recorded_rates(sel.table)
    window = (sel.start.isoformat(), sel.end.isoformat())  # what every shard selects (--start/--end resolved)
    if o.shards is not None and o.shards < 1:
        raise ConfigError("--shards must be at least 1")
    n_step = o.step_requests or step_requests(exprs)
    need = step_requests(exprs)
    if n_step < need / STEP_MARGIN:
        raise ConfigError(f"--step-requests {n_step} is under the {math.ceil(need / STEP_MARGIN)} requests the SLOs' "
                          f"percentiles need (stats.needed): every step would be `insufficient data`")
    out = Path(o.out)
    if (out / "capacity.json").exists() or any(out.glob("step-*")):
        raise ConfigError(f"{out} already holds a capacity sweep (its steps would pool with the new ones): "
                          "give a new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    metrics_url = None if r.no_metrics else (r.metrics_url or r.target.rstrip("/") + "/metrics")
    if metrics_url is not None and engine_queue(metrics_url) is None:
        echo(f"note: {metrics_url} reports no vllm:num_requests_running/waiting: no cool-down between steps")
        metrics_url = None
    bounds = ex.goodput_bounds(exprs)
    table = Table(exprs, echo, o.mode)
    echo(f"capacity: {len(sel)} requests selected (mean {_n(mean_rps)} req/s, peak 1-minute {_n(peak_rps)} req/s); "
         f"{n_step} measured requests per step (+{o.warmup:.0%} warm-up), {o.repeats} run(s) each, mode {o.mode}")
    table.header()
    steps: list[Step] = []
    t_start = time.monotonic()
    notes: list[str] = []
    result: dict[str, Any] = {}
    pending = list(o.loads) if o.loads is not None else None
    interrupted = False
    while True:
        if pending is not None:
            if len(steps) >= len(pending):
                break
            x = pending[len(steps)]
        else:
            x = next_load(steps, o) if len(steps) < o.max_steps else None
            if x is None or any(abs(s.load - x) < 1e-9 for s in steps):
                break
        idx = len(steps) + 1
        load = Load(x, o.mode, n_step, o.warmup, salt=f"cap-{tag}-s{idx:02d}" if o.cache_salt else None)
        span = scale(sel.table, load).span_s
        if o.max_seconds is not None and time.monotonic() - t_start + span * o.repeats + 5 > o.max_seconds:
            notes.append(f"stopped before load {x:g}: its {span:.0f} s would pass the {o.max_seconds:g} s budget")
            break
        try:
            step = _run_step(o, idx, x, load, exprs, bounds, metrics_url, out, echo, window)
        except KeyboardInterrupt:  # Ctrl-C outside the replay's own handling (start-up, judging)
            step = Step(idx, x, out / f"step-{idx:02d}", interrupted=True)
        if step.interrupted:
            notes.append(f"interrupted during step {idx} (load {x:g}); that step is not judged")
            interrupted = True
            break
        steps.append(step)
        table.row(step)
        result = _result(o, exprs, steps, mean_rps, peak_rps, n_step, notes)
        write_manifest(out, result, "capacity.json")
    if len(steps) >= o.max_steps and pending is None and next_load(steps, o) is not None:
        notes.append(f"--max-steps {o.max_steps} reached before the bracket closed to {o.precision:.0%}")
    result = _result(o, exprs, steps, mean_rps, peak_rps, n_step, notes)
    result["interrupted"] = interrupted
    write_manifest(out, result, "capacity.json")
    echo(format_result(result))
    return result


def _run_step(o: CapacityOptions, idx: int, x: float, load: Load, exprs, bounds, metrics_url, out: Path,
              echo, window: tuple[str, str]) -> Step:
    from shadowreplay.analysis import expr as ex

    d = out / f"step-{idx:02d}"
    step = Step(idx, x, d)
    t0 = time.monotonic()
    runs = [d] if o.repeats == 1 else [d / f"run-{k:02d}" for k in range(1, o.repeats + 1)]
    lags, lag_max, rates, sent_rates, sent_sched = [], [], [], [], []
    waited = 0.0
    for k, rd in enumerate(runs):
        w = wait_idle(metrics_url, o.cooldown_s)
        waited += w or 0.0
        ld = load if k == 0 else replace(load, salt=None if load.salt is None else f"{load.salt}-r{k + 1}")
        holder: dict[str, Any] = {}

        def stop(rep, holder=holder):
            rule = holder.get("rule")
            if rule is None:
                rule = holder["rule"] = BrokenRule(exprs, rep.plan.lead_in, bounds)
            return rule(rep)

        opts = replace(o.replay, out=str(rd), load=ld, stop_check=stop if o.early_stop and not o.shards else None,
                       dry_run=False, flush_interval_s=0.0, lead_in_s=0.0, speed=1.0)
        if o.shards:
            summ, lead_in, interrupted = _sharded_run(opts, ld, o.shards, window)
        else:
            res = replay(opts, echo=lambda s: None)
            summ, lead_in, interrupted = res.summary, (res.schedule or {}).get("lead_in_requests", 0), res.interrupted
        if interrupted:
            step.interrupted = True
            step.wall_s = time.monotonic() - t0
            return step
        step.requests += summ.get("sent", 0) - lead_in
        step.errors += summ.get("errors", 0)
        step.stopped_early = step.stopped_early or summ.get("stopped_early")
        if summ.get("lag_p99_ms") is not None:
            lags.append(summ["lag_p99_ms"])
            lag_max.append(summ["lag_max_ms"])
        if summ.get("scheduled_rate_per_s"):
            rates.append(summ["scheduled_rate_per_s"])
        if summ.get("achieved_rate_per_s"):
            sent_rates.append(summ["achieved_rate_per_s"])
        if summ.get("scheduled_rate_sent_per_s"):
            sent_sched.append(summ["scheduled_rate_sent_per_s"])
    step.cooldown_s = round(waited, 2) if metrics_url else None
    step.lag_p99_ms = max(lags) if lags else None
    step.lag_max_ms = max(lag_max) if lag_max else None
    step.rate_rps = round(sum(rates) / len(rates), 2) if rates else None
    step.sent_rate_rps = round(sum(sent_rates) / len(sent_rates), 2) if sent_rates else None
    step.sent_scheduled_rate_rps = round(sum(sent_sched) / len(sent_sched), 2) if sent_sched else step.rate_rps
    curve = curve_exprs(exprs)
    try:
        judged = ex.evaluate([str(p) for p in runs], exprs + curve)
    except ShadowReplayError as e:  # e.g. a step stopped before any request finished: no rows
        judged = [ex.GateResult(x, False, outcome=ex.INSUFFICIENT, message=f"{x.text}: {e}") for x in exprs + curve]
    step.gates = judged[:len(exprs)]
    step.curve = {e.text: {"observed": g.observed, "interval": list(g.interval) if g.interval else None, "n": g.n}
                  for e, g in zip(curve, judged[len(exprs):])}
    step.engine = step_engine(runs)
    if step.stopped_early:  # broken beyond doubt, whatever the partial dataset's figures say
        step.passed, step.certain = False, True
    else:
        step.passed = all(g.passed for g in step.gates)
        step.certain = all(g.certain for g in step.gates) if step.passed else any(
            g.certain and not g.passed for g in step.gates)
    step.figures = [{"slo": e.text, "figure": e.figure + e.scope_text, "observed": g.observed,
                     "interval": list(g.interval) if g.interval else None, "n": g.n, "outcome": g.outcome,
                     "certain": g.certain, "pass": g.passed} for e, g in zip(exprs, step.gates)]
    step.wall_s = time.monotonic() - t0
    return step


SHARD_LEAD_S = 8.0  # the shards' common start is this far ahead (start-up, selection, warm-up)


def _sharded_run(opts: ReplayOptions, load: Load, n: int, window: tuple[str, str]) -> tuple[dict, int, bool]:
    """One run of a step as n shard processes (replayer/capacity_shard.py) with a common start;
    their manifests' summaries combined: (summary, lead-in requests, interrupted)."""
    import json
    import subprocess
    import sys

    from .capacity_shard import spec
    from .shard import iso_ns, read_manifests

    base = spec(opts, load) | {"start": window[0], "end": window[1]}
    start_at = iso_ns(time.time_ns() + int(SHARD_LEAD_S * 1e9))
    procs = [subprocess.Popen([sys.executable, "-m", "shadowreplay.replayer.capacity_shard",
                               json.dumps(base | {"shard": f"{k}/{n}", "start_at": start_at})])
             for k in range(n)]
    try:
        rcs = [p.wait() for p in procs]
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.send_signal(2)
        for p in procs:
            p.wait()
        return {}, 0, True
    if any(rc not in (0, 130) for rc in rcs):
        raise ShadowReplayError(f"a shard of {opts.out} failed (exit statuses {rcs}); see its output above")
    ms = read_manifests(opts.out)
    sums = [m.get("summary") or {} for m in ms]
    lead = sum((m.get("schedule") or {}).get("lead_in_requests", 0) for m in ms)

    def total(k: str):
        vals = [x.get(k) for x in sums if x.get(k) is not None]
        return sum(vals) if vals else None

    def worst(k: str):
        vals = [x.get(k) for x in sums if x.get(k) is not None]
        return max(vals) if vals else None

    summ = {"sent": total("sent") or 0, "errors": total("errors") or 0, "lag_p99_ms": worst("lag_p99_ms"),
            "lag_max_ms": worst("lag_max_ms"), "scheduled_rate_per_s": total("scheduled_rate_per_s"),
            "achieved_rate_per_s": total("achieved_rate_per_s"),
            "scheduled_rate_sent_per_s": total("scheduled_rate_sent_per_s")}
    return summ, lead, any(rc == 130 for rc in rcs)


def _result(o: CapacityOptions, exprs, steps: list[Step], mean_rps, peak_rps, n_step: int, notes: list[str]) -> dict[str, Any]:
    best, (lo, hi) = knee(steps)
    max_rate = best.rate_rps if best is not None else None
    headroom = (max_rate / peak_rps) if (max_rate is not None and peak_rps) else None
    limiting = None
    above = [s for s in sorted(steps, key=lambda s: s.load) if not s.passed and (best is None or s.load > best.load)]
    if above:
        first = above[0]
        bad = [f for f in first.figures if not f["pass"]]
        if first.stopped_early:
            limiting = first.stopped_early.split(":", 1)[0]
        elif bad:
            limiting = bad[0]["slo"]
    rate_of = {s.load: s.rate_rps for s in steps}
    return {
        "tool": "shadowreplay capacity",
        "recording": o.replay.recording,
        "target": o.replay.target,
        "mode": o.mode,
        "slos": [e.text for e in exprs],
        "step_requests": n_step,
        "warmup": o.warmup,
        "repeats": o.repeats,
        "shards": o.shards,
        "max_speed": best.load if best is not None else None,
        "max_rate_rps": max_rate,
        "recorded_rate_rps": round(mean_rps, 3) if mean_rps else None,
        "recorded_peak_rps": round(peak_rps, 3) if peak_rps else None,
        "headroom": round(headroom, 3) if headroom is not None else None,
        "limiting_slo": limiting,
        "interval": {"speed": [lo, hi], "rate_rps": [rate_of.get(lo, 0.0 if lo == 0.0 else None),
                                                     rate_of.get(hi) if hi is not None else None]},
        "fail_below": o.fail_below,
        "steps": [s.as_dict(o.mode) for s in steps],
        "notes": notes,
    }


def format_result(r: dict[str, Any]) -> str:
    unit = "x" if r["mode"] == "speed" else " copies"
    if r["max_speed"] is None:
        head = "knee: no load passed" + (f" (lowest tried {min(s['load'] for s in r['steps']):g}{unit})" if r["steps"] else "")
    else:
        lo, hi = r["interval"]["speed"]
        head = (f"knee: {r['max_speed']:g}{unit} = {_n(r['max_rate_rps'])} req/s "
                f"(95% interval {_n(lo)}{unit} to {'open' if hi is None else f'{hi:g}{unit}'})")
    lines = [head]
    if r["headroom"] is not None:
        lines.append(f"headroom: {r['headroom']:.2f}x the recorded peak ({_n(r['recorded_peak_rps'])} req/s)")
    if r["limiting_slo"]:
        lines.append(f"limiting SLO: {r['limiting_slo']}")
    lines += [f"note: {n}" for n in r["notes"]]
    return "\n".join(lines)


def gates(result: dict[str, Any], steps_gates: list[Any] | None = None):
    """The headroom gate (--fail-below) as a GateResult, for JUnit and the exit status."""
    from shadowreplay.analysis.expr import FAIL, PASS, Expr, GateResult

    f = result["fail_below"]
    h = result["headroom"]
    e = Expr("headroom", None, ">=", f, text=f"headroom>={f:g}")
    ok = h is not None and h >= f
    msg = (f"headroom {'-' if h is None else f'{h:.2f}'}x the recorded peak "
           f"({'>=' if ok else '<'} {f:g}x; knee {result['max_rate_rps']} req/s, peak {result['recorded_peak_rps']} req/s)")
    return GateResult(e, ok, observed=h, message=msg, outcome=PASS if ok else FAIL)
