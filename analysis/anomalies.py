"""`shadowreplay analyze anomalies`: periodic tail-latency anomalies and who causes them.

Time is folded onto a period (a week of hours by default). Each (period, slot) cell gets the TP99
of each latency (TTFT, E2E, ITL: all judged by default) and its mean prompt length. A cell is
raised on a metric when its TP99 is at least `tp99_ratio` times the median cell's and the robust
z-score of its log TP99 over all the fold's cells is at least RAISED_Z (and, if asked, its mean
prompt `prompt_ratio` times the median). A slot is reported when it is raised in at least
`min_periods` periods and `min_share` of the periods it was seen in, and either strongly (median z
of its raised cells >= `min_z`) or too consistently for chance (`chance` <= `alpha`: the binomial
probability of that many raised periods at the rate the other slots' cells are raised, times the
number of slots and metrics judged). Each comes with how strong (z, ratio) and how consistent
(periods, chance) it is, the metric that moved most and the clients whose traffic explains it.
The SQL is in analysis/sql/{fold,anomalies,anomaly_clients,engine_windows,engine_slots}.sql."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import asdict, dataclass
from typing import Any

import duckdb

from shadowreplay.schema import REPLAY_RESULTS, REQUESTS

from . import fmt, sketch
from .engine import Engine, as_engine, has_column_data
from .session import Sources
from .units import format_duration

DAY = 86400
WEEK = 7 * DAY
MONDAY_S = 4 * DAY  # 1970-01-05, the first Monday after the epoch
METRICS = ("ttft", "e2e", "itl")
RAISED_Z = 1.0  # a cell must be this many robust sds above the median cell to count as raised
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass
class AnomalyParams:
    period_s: float = WEEK
    bucket_s: float = 3600.0
    metric: str = "all"  # or one of METRICS
    tp99_ratio: float = 1.5
    min_z: float = 3.5
    alpha: float = 0.01
    prompt_ratio: float | None = None  # also require mean prompt >= this x typical
    min_periods: int = 2
    min_share: float = 0.5  # and in at least this share of the periods that slot was seen in
    min_requests: int = 10
    long_factor: float = 2.0  # a "long prompt" is >= this x the typical mean prompt
    corr_window_s: float = 10.0

    @property
    def origin_s(self) -> float:
        return MONDAY_S if self.period_s % WEEK == 0 else 0.0


def _hhmm(sec: float) -> str:
    sec = int(round(sec))
    return f"{sec // 3600 % 24:02d}:{sec // 60 % 60:02d}" + (f":{sec % 60:02d}" if sec % 60 else "")


def slot_label(slot: int, period_s: float, bucket_s: float) -> str:
    """'Wednesday 14:00-15:00 UTC' for week folds, '14:00-15:00 UTC daily' for day folds,
    '+20s-30s of each 1m period' otherwise."""
    a = slot * bucket_s
    b = min(a + bucket_s, period_s)
    if period_s == WEEK:
        da, db = int(a // DAY), int((b - 1e-9) // DAY)
        if da == db:
            end = "24:00" if b % DAY == 0 else _hhmm(b)
            return f"{WEEKDAYS[da]} {_hhmm(a)}-{end} UTC"
        return f"{WEEKDAYS[da]} {_hhmm(a)}-{WEEKDAYS[db % 7]} {_hhmm(b)} UTC"
    if period_s == DAY:
        end = "24:00" if b == DAY else _hhmm(b)
        return f"{_hhmm(a)}-{end} UTC daily"
    return f"+{_off(a)}-{_off(b)} of each {format_duration(period_s)} period"


def _off(s: float) -> str:
    return "0s" if s == 0 else format_duration(s)


def compute(con: Engine | duckdb.DuckDBPyConnection, src: Sources, table: str, p: AnomalyParams, exact: bool = False) -> dict[str, Any]:
    eng = as_engine(con)  # DuckDB's connection or the Spark engine: the same rows either way
    notes: list[str] = []
    res: dict[str, Any] = {"table": table, "sources": src.describe(), "params": asdict(p) | {"origin_s": p.origin_s}, "anomalies": []}
    # who = client, else route: folded once here so only one string column is kept in memory.
    # ITL as the per-request mean (e2e - ttft) / (tokens - 1): a recording's gap lists and a
    # replay without them give the same figure, and no list is read.
    n = eng.materialize(["t", "fold_t", "ttft_ms", "e2e_ms", "tpot_mean_ms", "prompt_len", "failed",
                          "coalesce(client_id, route) AS client_id", "NULL::VARCHAR AS route"])
    res["requests"] = n
    if n == 0:
        res["notes"] = [f"{table} holds no rows"]
        return res
    # A replay whose recording is known folds on the recorded start times (lat.fold_t), so its
    # slots are the recording's whatever the replay's start or speed.
    res["fold_clock"] = "recording" if table == REPLAY_RESULTS and src.has(REQUESTS) else ("replay" if table == REPLAY_RESULTS else "recording")
    if table == REPLAY_RESULTS:
        notes.append("folded on the recording's clock (each request at its recorded ts_start)" if res["fold_clock"] == "recording"
                     else "no recording found for this replay (no manifest.json recording, none given): folded on the replay's own clock (scheduled_at)")
    if not has_column_data(eng, "e2e_ms"):
        res["notes"] = notes + ["no latency recorded (e2e_ms empty): nothing to fold"]
        return res
    have_ttft = has_column_data(eng, "ttft_ms")
    metrics = list(METRICS) if p.metric == "all" else [p.metric]
    if "ttft" in metrics and not have_ttft:
        notes.append("no TTFT recorded (not streamed): " + ("judged on E2E and ITL" if p.metric == "all" else "using e2e latency instead"))
        metrics = [m for m in metrics if m != "ttft"] or ["e2e"]
    if "itl" in metrics and not has_column_data(eng, "tpot_mean_ms"):
        if p.metric != "all":
            notes.append("no inter-token latency (no TTFT or completion tokens): using e2e latency instead")
        metrics = [m for m in metrics if m != "itl"] or ["e2e"]
    metric = metrics[0] if len(metrics) == 1 else ("ttft" if have_ttft else "e2e")  # the heatmap's
    if not has_column_data(eng, "prompt_len"):
        notes.append("no prompt lengths (prompt_tokens/prompt_chars empty): prompt ratios unknown")
    params = {
        "period_s": p.period_s, "bucket_s": p.bucket_s, "origin_s": p.origin_s, "lat_metric": metric,
        "metrics": metrics, "raised_z_min": RAISED_Z, "tp99_ratio_min": p.tp99_ratio, "prompt_ratio_min": p.prompt_ratio, "min_requests": p.min_requests,
        "min_periods": p.min_periods, "min_share": p.min_share, "long_factor": p.long_factor, "corr_window_s": p.corr_window_s,
    } | sketch.params(exact)  # each cell's TP99: sketched in a cell of over EXACT_MAX values unless exact
    shape = eng.query("fold", params)[0]
    res["periods"] = shape["periods"]
    res["percentiles"] = sketch.describe(exact) | {"sketched": bool(shape["sketched"])}
    res["slots"] = shape["slots"]
    res["slots_per_period"] = int(round(p.period_s / p.bucket_s))
    if shape["periods"] < p.min_periods:
        notes.append(
            f"the data spans {shape['periods']} period(s) of {format_duration(p.period_s)}, fewer than --min-periods "
            f"{p.min_periods}: no slot can repeat; try a shorter --period"
        )
    accepted = [(c["slot"], c["metric"], chance) for c in eng.query("anomalies")
                if (chance := _chance(c)) <= p.alpha or (c["z"] is not None and c["z"] >= p.min_z)]
    eng.rows_table("fold_accepted", [("slot", "INTEGER"), ("metric", "VARCHAR"), ("chance", "DOUBLE")], accepted)
    found = eng.query("anomaly_slots")
    by_slot: dict[int, list[dict[str, Any]]] = {}
    if found:
        for r in eng.query("anomaly_clients"):
            by_slot.setdefault(r["slot"], []).append(r)
    engine = None
    eng_slots: dict[int, dict[str, Any]] = {}
    if src.has("engine_metrics"):
        e = eng.query("engine_windows")[0]
        if e["windows"]:
            engine = e
            eng_slots = {r["slot"]: r for r in eng.query("engine_slots")} if found else {}
        else:
            notes.append("engine_metrics do not overlap the requests in time (or hold no vLLM gauges): no batch-size correlation")
    else:
        notes.append("no engine_metrics: latency cannot be correlated with batch size / queue depth")
    res["engine"] = engine
    for r in found:
        clients = by_slot.get(r["slot"], [])
        top = r["metrics"][0]  # the metric that moved most
        res["anomalies"].append(
            {
                "slot": r["slot"],
                "label": slot_label(r["slot"], p.period_s, p.bucket_s),
                "metric": top["metric"],
                "z": top["z"],
                "chance": top["chance"],
                "periods_seen": top["periods_seen"],
                "periods_anomalous": top["periods_anomalous"],
                "consistency": top["periods_anomalous"] / top["periods_seen"] if top["periods_seen"] else None,
                "anomalous_periods": r["anomalous_periods"],
                "anomalous_period_starts": [
                    dt.datetime.fromtimestamp(k * p.period_s + p.origin_s, tz=dt.timezone.utc).isoformat() for k in r["anomalous_periods"]
                ],
                "tp99_ratio": top["tp99_ratio"],
                "prompt_ratio": r["prompt_ratio"],
                "tp99_ms": top["tp99_ms"],
                "typical_tp99_ms": top["typical_tp99_ms"],
                "metrics": r["metrics"],
                "mean_prompt": r["mean_prompt"],
                "typical_prompt": r["typical_prompt"],
                "requests": r["requests"],
                "explained_by": _explain(clients),
                "clients": clients,
                "engine": eng_slots.get(r["slot"]),
            }
        )
    res["metric"] = metric
    res["metrics"] = metrics
    res["notes"] = notes
    return res


def _chance(c: dict[str, Any]) -> float:
    """How likely chance alone makes some slot this consistently raised: the binomial tail of
    `periods_anomalous` of `periods_seen` at the rate the other slots' cells are raised (shrunk
    towards 1/2 by half a cell), times the number of slot-metric pairs judged (Bonferroni)."""
    k, m = int(c["periods_seen"]), int(c["periods_anomalous"])
    others = c["metric_cells"] - k
    p0 = (c["metric_raised"] - m + 0.5) / (others + 1)
    tail = sum(math.comb(k, j) * p0**j * (1 - p0) ** (k - j) for j in range(m, k + 1))
    return min(1.0, tail * c["tests"])


def _chance_text(c: float) -> str:
    return "<1e-6" if c < 1e-6 else f"{c:.2g}"


def _explain(clients: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The clients that explain a slot: those holding >= 20% of its long prompts; if the slot has
    no long prompts, those whose share of requests rose by >= 10 points over elsewhere."""
    total_long = sum(c["long_prompts"] for c in clients)
    if total_long:
        picked = [c for c in clients if c["long_share"] >= 0.2]
    else:
        picked = [c for c in clients if c["request_share"] - c["share_elsewhere"] >= 0.1]
    return [
        {k: c[k] for k in ("who", "long_share", "request_share", "share_elsewhere", "mean_prompt", "requests", "long_prompts")}
        for c in sorted(picked, key=lambda c: (-c["long_share"], -c["request_share"]))[:3]
    ]


def render(res: dict[str, Any]) -> str:
    p = res["params"]
    out = [
        f"{res['table']}: {res['requests']:,} requests from {res['sources']}",
        f"fold: period {format_duration(p['period_s'])}, bucket {format_duration(p['bucket_s'])}, "
        f"{res.get('periods', 0)} periods seen; latency {'/'.join(m.upper() for m in res.get('metrics', [p['metric']]))}; "
        f"a cell is raised when its TP99 is >= {p['tp99_ratio']:g}x the median cell (and z >= {RAISED_Z:g})"
        + (f" and mean prompt >= {p['prompt_ratio']:g}x" if p["prompt_ratio"] else "")
        + f" (cells of >= {p['min_requests']} requests); a slot is reported when raised in >= {p['min_periods']} periods"
        + f" and >= {100 * p['min_share']:g}% of the periods seen, strongly (z >= {p['min_z']:g}) or beyond chance (chance <= {p['alpha']:g})",
    ]
    an = res["anomalies"]
    if not an:
        out.append("")
        out.append("no periodic anomalies found")
    else:
        rows = []
        for a in an:
            who = ", ".join(f"{c['who']} ({fmt.pct(c['long_share'])} of long prompts)" if c["long_prompts"] else f"{c['who']} ({fmt.pct(c['request_share'])} of requests)" for c in a["explained_by"]) or "-"
            also = ", ".join(f"{m['metric'].upper()} {m['tp99_ratio']:.1f}x" for m in a["metrics"][1:]) or "-"
            rows.append([a["label"], a["metric"].upper(), f"{a['periods_anomalous']}/{a['periods_seen']}", _chance_text(a["chance"]), f"{a['tp99_ratio']:.1f}x", f"{a['z']:.1f}",
                         "-" if a["prompt_ratio"] is None else f"{a['prompt_ratio']:.1f}x", fmt.cell(a["tp99_ms"], 0), fmt.cell(a["typical_tp99_ms"], 0), also, who])
        out += ["", fmt.table(["slot", "moved most", "periods", "chance", "TP99 ratio", "z", "prompt ratio", "TP99 ms", "typical ms", "also", "explained by"], rows, "Periodic anomalies")]
        for a in an:
            if a["clients"]:
                crow = [[c["who"], c["requests"], c["long_prompts"], fmt.pct(c["long_share"]), fmt.pct(c["request_share"]), fmt.pct(c["share_elsewhere"]), fmt.cell(c["mean_prompt"], 0)] for c in a["clients"][:6]]
                out += ["", fmt.table(["client", "requests", "long prompts", "long share", "req share", "share elsewhere", "mean prompt"], crow, f"Traffic in {a['label']}")]
            if a.get("engine"):
                e = a["engine"]
                out.append(f"engine in this slot: running {fmt.cell(e['running'])} (overall {fmt.cell(e['running_overall'])}), waiting {fmt.cell(e['waiting'])} (overall {fmt.cell(e['waiting_overall'])})")
    pc = res.get("percentiles", {})
    if pc.get("sketched") or pc.get("method") == "exact":
        out.append(sketch.note(pc["method"] == "exact", "cell TP99s", "cells"))
    e = res.get("engine")
    if e:
        out += ["", f"engine correlation over {e['windows']:,} windows of {format_duration(p['corr_window_s'])}: "
                f"P99 vs running (batch size) r={fmt.cell(e['corr_p99_running'], 2)}, vs waiting (queue) r={fmt.cell(e['corr_p99_waiting'], 2)}, "
                f"vs KV usage r={fmt.cell(e['corr_p99_kv'], 2)}; mean latency vs running r={fmt.cell(e['corr_mean_running'], 2)}"]
    for note in res.get("notes", []):
        out.append(f"note: {note}")
    return "\n".join(out)
