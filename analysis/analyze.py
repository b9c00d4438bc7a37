"""`shadowreplay analyze`: latency percentiles, error rates, goodput and windowed SLO compliance
per kind/model/client, plus prefix sharing. The SQL is in analysis/sql/{summary,itl,windows,prefix}.sql."""

from __future__ import annotations

from typing import Any

import duckdb

from shadowreplay.durations import format_duration

from . import fmt, sketch
from .engine import Engine, as_engine, has_column_data
from . import recorders, sampling
from .session import Sources

KEY = ("kind", "model", "client_id")
# The lat columns the analyze queries read (kept in memory once, see session.materialize).
KEEP = ["t", "kind", "model", "client_id", "group_key", "failed", "timed_out", "ttft_ms", "e2e_ms", "tpot_ms", "prompt_len", "completion_tokens", "prefix_key"]


def _key(r: dict[str, Any]) -> tuple:
    return (bool(r["is_total"]),) + tuple(r.get(k) for k in KEY)


def _q(v, i):
    return None if v is None else v[i]


def compute(con: Engine | duckdb.DuckDBPyConnection, src: Sources, table: str, slo: dict[str, float], window_s: float, keep: list[str] | None = None, exact: bool = False) -> dict[str, Any]:
    eng = as_engine(con)  # DuckDB's connection or the Spark engine: the same rows either way
    notes: list[str] = []
    # Before materialize(): the only query that reads the itl_ms lists, and only when there are some.
    any_itl = eng.scalar("SELECT count(*) FROM (SELECT 1 FROM lat WHERE itl_ms IS NOT NULL LIMIT 1)")
    itl_rows = eng.query("itl", sketch.params(exact)) if any_itl else []
    keep = list(keep or KEEP)
    if not any_itl:
        # Same values (list_avg of no list is NULL), without reading the all-NULL itl_ms column.
        keep = ["tpot_mean_ms AS tpot_ms" if c == "tpot_ms" else c for c in keep]
    n = eng.materialize(keep)
    result: dict[str, Any] = {"table": table, "sources": src.describe(), "requests": n, "slo_ms": slo, "window_s": window_s}
    if n == 0:
        notes.append(f"{table} holds no rows")
        result.update(groups=[], prefix=None, notes=notes)
        return result
    has_ttft = has_column_data(eng, "ttft_ms")
    if not has_column_data(eng, "e2e_ms"):
        notes.append("no latencies recorded (an imported trace holds arrival times and token counts only): replay it to measure latency")
    has_itl = any(r["is_total"] and r["gaps"] for r in itl_rows)
    if not has_ttft:
        notes.append("no TTFT recorded (requests were not streamed): TTFT columns are empty, a TTFT SLO is judged on e2e")
    if not has_itl:
        notes.append("no per-token timings (itl_ms): ITL percentiles are per-request means (e2e-ttft)/(tokens-1) where known")
    params = {f"slo_{k}_ms": slo.get(k) for k in ("ttft", "e2e", "itl")}
    params["window_s"] = window_s
    params.update(sketch.params(exact))  # latency percentiles: sketched per group unless exact
    result["percentiles"] = sketch.describe(exact)
    rows = eng.query("summary", params)
    windows = {_key(r): r for r in eng.query("windows")} if slo else {}
    itl = {_key(r): r for r in itl_rows} if has_itl else {}
    groups = []
    for r in rows:
        k = _key(r)
        w = windows.get(k)
        i = itl.get(k)
        itl_q = i["itl_q"] if i else r["tpot_q"]
        groups.append(
            {
                "total": bool(r["is_total"]),
                "kind": r["kind"],
                "model": r["model"],
                "client_id": r["client_id"],
                "requests": r["requests"],
                "error_rate": r["error_rate"],
                "timeout_rate": r["timeout_rate"],
                "ttft_ms": _pcts(r["ttft_q"], r["ttft_max"]),
                "itl_ms": _pcts(itl_q, i["itl_max"] if i else r["tpot_max"]),
                "itl_source": "token gaps" if i else "per-request mean",
                "sketched": bool(r["sketched"] or (i and i["sketched"])),
                "e2e_ms": _pcts(r["e2e_q"], r["e2e_max"]),
                "tokens_per_s": r["tokens_per_s"],
                "prompt_tokens": {"p50": _q(r["prompt_q"], 0), "p99": _q(r["prompt_q"], 1)},
                "completion_tokens": {"p50": _q(r["completion_q"], 0), "p99": _q(r["completion_q"], 1)},
                "rps": r["rps"],
                "good": r["good"],
                "goodput_rps": r["goodput_rps"],
                "goodput_share": r["goodput_share"],
                "windows": w["windows"] if w else None,
                "window_compliance": w["compliance"] if w else None,
            }
        )
    result["groups"] = groups
    result["span_s"] = rows[0]["span_s"] if rows else None
    if not slo:
        notes.append("no --slo given: goodput counts every successful request; windowed compliance needs an SLO")
    if has_column_data(eng, "prefix_key"):
        result["prefix"] = [
            {k: r[k] for k in ("client_id", "requests", "shared", "shared_share", "distinct_prefixes")} | {"total": bool(r["is_total"])}
            for r in eng.query("prefix")
        ]
    else:
        result["prefix"] = None
        notes.append("no prefix_hash/hash_ids in this dataset: prefix sharing unknown")
    samp = sampling.collect(src) if table == "requests" else None
    if samp:
        result["sampling"] = samp  # a sampled recording: estimates of the whole traffic
        for g in groups:
            g["estimated"] = sampling.estimate(g, samp["scale"])
        notes.append(f"this recording is a sample ({sampling.describe(samp)}): counts and rates above are the "
                     "sample's; estimated totals are scaled by 1/rate")  # fmt: skip
    fleet_rows = recorders.collect(src)
    if fleet_rows:
        result["recorders"] = fleet_rows  # per-instance counters of the recorders that wrote it
    result["notes"] = notes
    return result


def _pcts(q, mx) -> dict[str, float | None]:
    return {"p50": _q(q, 0), "p95": _q(q, 1), "p99": _q(q, 2), "max": mx}


def _name(g: dict[str, Any]) -> tuple[str, str, str]:
    if g["total"]:
        return ("ALL", "", "")
    return (g["kind"] or "-", g["model"] or "-", g["client_id"] or "-")


def render(res: dict[str, Any]) -> str:
    out = [f"{res['table']}: {res['requests']:,} requests from {res['sources']}"]
    if res.get("span_s"):
        out[0] += f", spanning {_span(res['span_s'])}"
    slo = res["slo_ms"]
    if slo:
        out.append("SLO: " + ", ".join(f"{k} <= {v:g} ms" for k, v in slo.items()) + f"; windows of {format_duration(res['window_s'])}")
    groups = res["groups"]
    if groups:
        head = ["kind", "model", "client", "requests", "err", "timeout", "rps", "tok/s", "goodput/s", "good", "windows ok"]
        rows = []
        for g in groups:
            rows.append(
                list(_name(g))
                + [g["requests"], fmt.pct(g["error_rate"]), fmt.pct(g["timeout_rate"]), fmt.cell(g["rps"], 2), fmt.cell(g["tokens_per_s"], 1),
                   fmt.cell(g["goodput_rps"], 2), fmt.pct(g["goodput_share"]), fmt.pct(g["window_compliance"]) if g["windows"] else "-"]
            )
        out += ["", fmt.table(head, rows, "Traffic and goodput")]
        rows = [list(_name(g)) + [fmt.cell(g["prompt_tokens"]["p50"], 0), fmt.cell(g["prompt_tokens"]["p99"], 0),
                                  fmt.cell(g["completion_tokens"]["p50"], 0), fmt.cell(g["completion_tokens"]["p99"], 0)] for g in groups]
        out += ["", fmt.table(["kind", "model", "client", "prompt P50", "prompt P99", "output P50", "output P99"], rows, "Tokens per request")]
        for metric, title in (("ttft_ms", "TTFT (ms)"), ("itl_ms", "ITL (ms)"), ("e2e_ms", "E2E latency (ms)")):
            rows = [list(_name(g)) + [fmt.cell(g[metric][p]) for p in ("p50", "p95", "p99", "max")] for g in groups]
            if metric == "itl_ms" and groups:
                title += f", {groups[0]['itl_source']}"
            out += ["", fmt.table(["kind", "model", "client", "P50", "P95", "P99", "max"], rows, title)]
    if res.get("sampling") and groups:
        out += ["", sampling.render(res["sampling"], groups, _name)]
    if res.get("prefix"):
        rows = [["ALL" if p["total"] else (p["client_id"] or "-"), p["requests"], p["shared"], fmt.pct(p["shared_share"]), p["distinct_prefixes"]] for p in res["prefix"]]
        out += ["", fmt.table(["client", "requests", "shared prefix", "share", "distinct prefixes"], rows, "Prefix sharing (requests whose prefix another request also has)")]
    exact = res.get("percentiles", {}).get("method") == "exact"
    if exact or any(g["sketched"] for g in groups):
        out.append(sketch.note(exact))
    if res.get("recorders"):
        out += ["", recorders.render(res["recorders"])]
    for note in res.get("notes", []):
        out.append(f"note: {note}")
    return "\n".join(out)


def _span(s: float) -> str:
    if s >= 2 * 86400:
        return f"{s / 86400:.1f} days"
    if s >= 7200:
        return f"{s / 3600:.1f} hours"
    if s >= 120:
        return f"{s / 60:.1f} minutes"
    return f"{s:.1f} s"
