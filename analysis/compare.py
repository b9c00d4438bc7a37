"""`shadowreplay compare A B`: percentiles and goodput side by side with deltas (B - A), overall
and per relative time slot, and fidelity (request-by-request agreement) when both sides ran the
same requests (a recording and its replay, or two replays of one recording)."""

from __future__ import annotations

from typing import Any

from shadowreplay.schema import REPLAY_RESULTS, REQUESTS

from . import fmt
from .session import choose_table, connect, find_sources, has_column_data, query, register_lat, register_views, scalar
from .units import format_duration

NICE_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)
METRICS = (("ttft_ms", "ttft_q"), ("e2e_ms", "e2e_q"))


def _nice_bucket(span_s: float, slots: int = 12) -> float:
    want = max(span_s / slots, 1)
    return next((n for n in NICE_S if n >= want), NICE_S[-1])


def _side(con, path: str, schema: str) -> dict[str, Any]:
    src = find_sources([path])
    # A replay compared with its recording: the replay's table is replay_results, the other
    # side's is requests. Same-kind sides compare like with like.
    table = choose_table(src, None)
    register_views(con, src, schema)
    register_lat(con, src, table, schema)
    n = scalar(con, f"SELECT count(*) FROM {schema}.lat")
    return {"path": path, "table": table, "sources": src.describe(), "requests": n}


def compute(a: str, b: str, slo: dict[str, float], bucket_s: float | None) -> dict[str, Any]:
    con = connect()
    sa = _side(con, a, "a")
    sb = _side(con, b, "b")
    notes: list[str] = []
    for s in (sa, sb):
        if s["requests"] == 0:
            notes.append(f"{s['path']}: {s['table']} holds no rows")
    params = {f"slo_{k}_ms": slo.get(k) for k in ("ttft", "e2e", "itl")}
    span = scalar(con, "SELECT max(epoch(t)) - min(epoch(t)) FROM a.lat") or 0.0
    bucket = bucket_s or _nice_bucket(span)
    params["cmp_bucket_s"] = bucket
    sides = {}
    for name in ("a", "b"):
        summ = [r for r in query(con, "summary", params, schema=name) if r["is_total"]]
        slots = query(con, "slots", params, schema=name)
        lag = query(con, "send_lag", schema=name)[0]
        sides[name] = {"summary": summ[0] if summ else None, "slots": {r["slot"]: r for r in slots}, "send_lag": lag}
        con.execute(f"SET schema = '{name}'")
        if sides[name]["summary"] and not has_column_data(con, "ttft_ms"):
            notes.append(f"{(sa if name == 'a' else sb)['path']}: no TTFT (not streamed)")
        con.execute("SET schema = 'main'")
    overall = []
    for label, key, idx in (("TTFT P50", "ttft_q", 0), ("TTFT P95", "ttft_q", 1), ("TTFT P99", "ttft_q", 2),
                            ("E2E P50", "e2e_q", 0), ("E2E P95", "e2e_q", 1), ("E2E P99", "e2e_q", 2)):
        va = _get(sides["a"]["summary"], key, idx)
        vb = _get(sides["b"]["summary"], key, idx)
        overall.append(_row(label + " ms", va, vb))
    for label, key in (("error rate", "error_rate"), ("goodput share", "goodput_share"), ("goodput req/s", "goodput_rps"), ("requests", "requests"), ("output tok/s", "tokens_per_s")):
        overall.append(_row(label, _get(sides["a"]["summary"], key), _get(sides["b"]["summary"], key)))
    slots = []
    for k in sorted(set(sides["a"]["slots"]) | set(sides["b"]["slots"])):
        ra, rb = sides["a"]["slots"].get(k), sides["b"]["slots"].get(k)
        slots.append(
            {
                "slot": k,
                "from_s": k * bucket,
                "requests": [_get(ra, "requests"), _get(rb, "requests")],
                "e2e_p50_ms": _row("", _get(ra, "e2e_q", 0), _get(rb, "e2e_q", 0)),
                "e2e_p99_ms": _row("", _get(ra, "e2e_q", 1), _get(rb, "e2e_q", 1)),
                "ttft_p99_ms": _row("", _get(ra, "ttft_q", 1), _get(rb, "ttft_q", 1)),
                "goodput_share": _row("", _get(ra, "goodput_share"), _get(rb, "goodput_share")),
            }
        )
    fid = query(con, "fidelity")[0]
    fidelity = None
    if fid["matched"]:
        fidelity = dict(fid)
        fidelity["relation"] = _relation(sa, sb)
        fidelity["verdict"] = _verdict(fid)
        fidelity["send_lag_ms"] = {
            n: {"p50": _get(sides[n]["send_lag"], "lag_q", 0), "p99": _get(sides[n]["send_lag"], "lag_q", 1), "max": sides[n]["send_lag"]["lag_max"]}
            for n in ("a", "b") if sides[n]["send_lag"]["requests"]
        }
    else:
        notes.append("A and B share no request_id: no request-by-request fidelity (different traffic)")
    return {"a": sa, "b": sb, "slo_ms": slo, "bucket_s": bucket, "overall": overall, "slots": slots, "fidelity": fidelity, "notes": notes}


def _relation(sa, sb) -> str:
    kinds = {sa["table"], sb["table"]}
    if kinds == {REQUESTS, REPLAY_RESULTS}:
        return "replay vs its recording"
    if kinds == {REPLAY_RESULTS}:
        return "two replays of the same requests"
    return "two recordings sharing request ids"


def _verdict(f: dict[str, Any]) -> str:
    ratios = [f[k] for k in ("p50_ratio_e2e", "p99_ratio_e2e") if f[k] is not None]
    if not ratios:
        return "no latencies to compare"
    worst = max(max(r, 1 / r) if r > 0 else float("inf") for r in ratios)
    c = f["corr_e2e"]
    if worst <= 1.1 and (c is None or c >= 0.9):
        return "close: P50/P99 within 10%" + (f", per-request r={c:.2f}" if c is not None else "")
    if worst <= 1.25:
        return "fair: P50/P99 within 25%" + (f", per-request r={c:.2f}" if c is not None else "")
    return f"far: P50/P99 differ by up to {worst:.2f}x" + (f", per-request r={c:.2f}" if c is not None else "")


def _get(r, key, idx=None):
    if r is None:
        return None
    v = r.get(key)
    if idx is not None:
        return None if v is None else v[idx]
    return v


def _row(label, va, vb) -> dict[str, Any]:
    d = None if va is None or vb is None else vb - va
    ratio = None if va in (None, 0) or vb is None else vb / va
    return {"metric": label, "a": va, "b": vb, "delta": d, "ratio": ratio}


def render(res: dict[str, Any]) -> str:
    out = [f"A: {res['a']['path']} ({res['a']['table']}, {res['a']['requests']:,} requests)",
           f"B: {res['b']['path']} ({res['b']['table']}, {res['b']['requests']:,} requests)"]
    if res["slo_ms"]:
        out.append("SLO: " + ", ".join(f"{k} <= {v:g} ms" for k, v in res["slo_ms"].items()))
    rows = [[r["metric"], _v(r["metric"], r["a"]), _v(r["metric"], r["b"]), _d(r["metric"], r["delta"]), "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"] for r in res["overall"]]
    out += ["", fmt.table(["overall", "A", "B", "B - A", "B / A"], rows)]
    if res["slots"]:
        rows = []
        for s in res["slots"]:
            rows.append([f"+{format_duration(s['from_s']) if s['from_s'] else '0s'}", fmt.cell(s["requests"][0]), fmt.cell(s["requests"][1]),
                         fmt.cell(s["e2e_p50_ms"]["a"], 0), fmt.cell(s["e2e_p50_ms"]["b"], 0),
                         fmt.cell(s["e2e_p99_ms"]["a"], 0), fmt.cell(s["e2e_p99_ms"]["b"], 0), _d("ms", s["e2e_p99_ms"]["delta"]),
                         fmt.pct(s["goodput_share"]["a"]), fmt.pct(s["goodput_share"]["b"])])
        out += ["", fmt.table(["slot", "req A", "req B", "E2E P50 A", "P50 B", "E2E P99 A", "P99 B", "P99 B-A", "good A", "good B"], rows,
                              f"Per slot of {format_duration(res['bucket_s'])} from each run's start")]
    f = res["fidelity"]
    if f:
        out += ["", f"Fidelity ({f['relation']}): {f['verdict']}"]
        rows = [["matched requests", f"{f['matched']:,} of {f['a_requests']:,} / {f['b_requests']:,}"],
                ["same outcome (ok/failed)", fmt.pct(f["outcome_agreement"])],
                ["E2E P50 ratio B/A", _x(f["p50_ratio_e2e"])], ["E2E P99 ratio B/A", _x(f["p99_ratio_e2e"])],
                ["TTFT P50 ratio B/A", _x(f["p50_ratio_ttft"])], ["TTFT P99 ratio B/A", _x(f["p99_ratio_ttft"])],
                ["median per-request E2E ratio", _x(f["median_ratio_e2e"])],
                ["per-request E2E correlation", fmt.cell(f["corr_e2e"], 3)], ["per-request TTFT correlation", fmt.cell(f["corr_ttft"], 3)]]
        for side, lag in f["send_lag_ms"].items():
            rows.append([f"send lag {side.upper()} P50 / P99 / max ms", f"{fmt.cell(lag['p50'], 2)} / {fmt.cell(lag['p99'], 2)} / {fmt.cell(lag['max'], 2)}"])
        out.append(fmt.table(["", "value"], rows))
    for n in res["notes"]:
        out.append(f"note: {n}")
    return "\n".join(out)


def _x(v):
    return "-" if v is None else f"{v:.3f}x"


def _v(metric, v):
    if v is None:
        return "-"
    if "share" in metric or "rate" in metric:
        return fmt.pct(v)
    return fmt.cell(v, 2 if "/s" in metric else 1)


def _d(metric, v):
    if v is None:
        return "-"
    if "share" in metric or "rate" in metric:
        return f"{100 * v:+.1f} pts"
    return f"{v:+,.1f}"
