"""`shadowreplay report`: one self-contained HTML page (inline SVG and CSS, no network) with
latency over time, the TP99 fold heatmap, TTFT vs prompt length, batch size vs latency and the
anomaly table."""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
from pathlib import Path
from typing import Any

from shadowreplay.durations import format_duration
from shadowreplay.errors import ConfigError

from . import analyze, anomalies, fmt, stats, svg
from .anomalies import DAY, WEEK, WEEKDAYS, AnomalyParams, slot_label
from .compare import group_percentile
from .session import open_dataset, query

KEEP = sorted(set(analyze.KEEP) | {"prompt_len", "route", "fold_t", "tpot_mean_ms"})
NICE_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def _auto_fold(span_s: float) -> tuple[float, float]:
    if span_s >= 14 * DAY:
        return WEEK, 3600
    if span_s >= 2 * DAY:
        return DAY, 3600
    if span_s >= 2 * 3600:
        return 3600, 300
    return 60, 10


def _ts_label(span_s: float):
    def f(x: float) -> str:
        t = dt.datetime.fromtimestamp(x, tz=dt.timezone.utc)
        if span_s >= 2 * DAY:
            return t.strftime("%a %d %b %H:%M")
        return t.strftime("%H:%M:%S" if span_s < 600 else "%H:%M")

    return f


def build(paths: list[str], out: Path, *, table: str | None = None, slo: dict[str, float] | None = None,
          params: AnomalyParams | None = None, period_s: float | None = None, bucket_s: float | None = None,
          title: str | None = None) -> Path:
    """Writes the report. `params` are the anomaly-search options of `analyze anomalies` (same
    defaults); a period_s / bucket_s of None (there or in the keywords) is picked from the span."""
    params = params or AnomalyParams(period_s=None, bucket_s=None)  # type: ignore[arg-type]
    period_s = period_s or params.period_s
    bucket_s = bucket_s or params.bucket_s
    title = title or f"shadowreplay report: {', '.join(paths)}"
    paths, capacity_sections = _capacity(paths)
    con, src, tbl = open_dataset(paths, table)
    summ = analyze.compute(con, src, tbl, slo or {}, 5.0, keep=KEEP)
    notes = list(summ["notes"])
    span = summ.get("span_s") or 0.0
    auto = _auto_fold(span)
    period = period_s or auto[0]
    bucket = bucket_s or (auto[1] if period in (WEEK, DAY) or period_s is None else max(period / 12, 1))
    if bucket > period:
        raise ConfigError("--bucket is longer than --period")
    an = anomalies.compute(con, src, tbl, dataclasses.replace(params, period_s=period, bucket_s=bucket))
    notes += [n for n in an.get("notes", []) if n not in notes]
    sections = []
    if summ["requests"]:
        ts_b = next((n for n in NICE_S if n >= max(span / 150, 1)), NICE_S[-1])
        ts = query(con, "timeseries", {"ts_bucket_s": ts_b})
        xs = [r["bucket_s"] for r in ts]
        lat_series = [(f"E2E P{p}", [r["e2e_q"][i] if r["e2e_q"] else None for r in ts]) for i, p in enumerate((50, 95, 99))]
        if any(v is not None for _, vs in lat_series for v in vs):
            sections.append(_section(
                "Latency over time",
                f"E2E latency percentiles per {format_duration(ts_b)}, with the mean prompt length behind them (right axis).",
                svg.line_chart(xs, lat_series, bars=("mean prompt (tokens)", [r["mean_prompt"] for r in ts]), x_labels=_ts_label(span), y_title="ms", bar_title="prompt tokens"),
            ))
        else:  # an imported trace: arrivals and prompt sizes only
            sections.append(_section(
                "Prompt length over time",
                f"No latencies in this dataset; mean prompt tokens per {format_duration(ts_b)}, with requests per bucket behind (right axis).",
                svg.line_chart(xs, [("mean prompt (tokens)", [r["mean_prompt"] for r in ts])], bars=("requests", [r["requests"] for r in ts]),
                               x_labels=_ts_label(span), y_title="tokens", bar_title="requests"),
            ))
        if any(r["ttft_q"] for r in ts):
            tt = [(f"TTFT P{p}", [r["ttft_q"][i] if r["ttft_q"] else None for r in ts]) for i, p in enumerate((50, 95, 99))]
            sections.append(_section("Time to first token over time", "", svg.line_chart(xs, tt, x_labels=_ts_label(span), y_title="ms", height=240)))
        if "periods" in an:  # the fold ran (there are latencies)
            sections.append(_section(f"TP99 by slot ({format_duration(period)} fold, {format_duration(bucket)} buckets)",
                                     "Each cell is the TP99 latency of the requests in that slot; darker is slower. Hover for values.",
                                     _heatmap(con, an, period, bucket)))
        pair = [_scatter_ttft(con)]
        if src.has("engine_metrics"):
            pair.append(_batch_plot(con))
        else:
            pair.append(_card("Batch size vs latency", "", '<p class="muted">No engine_metrics in this dataset: batch size unknown. Replays record them with the metrics sampler.</p>'))
        sections.append('<div class="pair">' + "".join(pair) + "</div>")
    sections.insert(0, _anomaly_section(an))
    sections[:0] = capacity_sections
    sections.append(_clients_section(summ))
    page = _page(title, summ, an, sections, notes, src.describe())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out


def _capacity(paths: list[str]) -> tuple[list[str], list[str]]:
    """A capacity sweep's folder (capacity.json) gives the report its curve, and the rest of the
    report describes its knee step; other paths are kept as they are."""
    from . import capacity_report

    data, sections = [], []
    for p in paths:
        cap = capacity_report.read(p)
        if cap is None:
            data.append(p)
            continue
        sections.append(capacity_report.section(cap))
        step = capacity_report.knee_dataset(p, cap)
        if step is None:
            raise ConfigError(f"{p}: the capacity sweep has no steps yet")
        data.append(step)
    return data, sections


def _heatmap(con, an, period, bucket) -> str:
    n_slots = int(round(period / bucket))
    if period == WEEK and DAY % bucket == 0:
        per_day = int(DAY // bucket)
        vals = [[None] * per_day for _ in range(7)]
        tips = [[""] * per_day for _ in range(7)]
        for r in query(con, "fold_slots"):
            d, k = divmod(r["slot"], per_day)
            if 0 <= d < 7:
                vals[d][k] = r["tp99"]
                tips[d][k] = f"{slot_label(r['slot'], period, bucket)}: TP99 {svg.fmt_num(r['tp99'] or 0)} ms, mean prompt {svg.fmt_num(r['mean_prompt'] or 0)}, {r['requests']} requests"
        cols = [f"{int(k * bucket // 3600):02d}h" if (k * bucket) % 3600 == 0 else "" for k in range(per_day)]
        return svg.heatmap(list(WEEKDAYS), cols, vals, tips=tips)
    cells = [(r["period_no"], r["slot"], r["tp99"], r["mean_prompt"], r["n"]) for r in query(con, "fold_cells_list")]
    periods = sorted({c[0] for c in cells})[-60:]
    idx = {p: i for i, p in enumerate(periods)}
    vals = [[None] * n_slots for _ in periods]
    tips = [[""] * n_slots for _ in periods]
    for p, s, v, mp, n in cells:
        if p in idx and 0 <= s < n_slots:
            vals[idx[p]][s] = v
            tips[idx[p]][s] = f"period {p}, {slot_label(s, period, bucket)}: TP99 {svg.fmt_num(v or 0)} ms, mean prompt {svg.fmt_num(mp or 0)}, {n} requests"
    start = lambda p: dt.datetime.fromtimestamp(p * period + (an["params"]["origin_s"]), tz=dt.timezone.utc)
    rows = [start(p).strftime("%d %b %H:%M:%S" if period < DAY else "%a %d %b") for p in periods]
    cols = [f"+{format_duration(k * bucket)}" if k else "+0s" for k in range(n_slots)]
    return svg.heatmap(rows, cols, vals, tips=tips)


def _scatter_ttft(con) -> str:
    rows = query(con, "scatter")
    if not rows:
        return _card("TTFT vs prompt length", "", '<p class="muted">No latencies recorded in this dataset: nothing to plot against prompt length.</p>')
    whos = sorted({r["who"] for r in rows}, key=lambda w: -sum(1 for r in rows if r["who"] == w))[:8]
    gi = {w: i for i, w in enumerate(whos)}
    pts = [(r["prompt_len"], r["latency_ms"], gi.get(r["who"], len(whos))) for r in rows]
    is_ttft = any(r["is_ttft"] for r in rows)
    what = "TTFT" if is_ttft else "E2E latency (no TTFT recorded)"
    return _card(f"{what} vs prompt length", f"A sample of {len(pts):,} successful requests, coloured by client.",
                 svg.scatter(pts, whos, x_title="prompt tokens", y_title=f"{'TTFT' if is_ttft else 'E2E'} ms"))


def _batch_plot(con) -> str:
    rows = [(r["running"], r["p99_ms"], r["waiting"]) for r in query(con, "engine_sample")]
    if not rows:
        return _card("Batch size vs latency", "", '<p class="muted">engine_metrics hold no vLLM running/waiting gauges overlapping the requests.</p>')
    pts = [(r[0], r[1], 1 if (r[2] or 0) > 0 else 0) for r in rows]
    return _card("Batch size vs latency", "Per 10 s window: mean requests running in the engine vs the P99 latency of requests started then; orange windows had a queue.",
                 svg.scatter(pts, ["no queue", "queue waiting"], x_title="running requests (batch size)", y_title="P99 ms"))


def _anomaly_section(an) -> str:
    rows = an["anomalies"]
    if not rows:
        p = an["params"]
        body = ('<p class="ok">No periodic anomalies: no slot had a ' + f"{_metrics_named(an)} TP99 with a robust z of {p['min_z']:g}+ and at least "
                f"{p['tp99_ratio']:g}x the typical cell in {p['min_periods']}+ periods (cells of {p['min_requests']}+ requests judged).</p>")
    else:
        trs = []
        for a in rows:
            who = "<br>".join(f"<b>{html.escape(str(c['who']))}</b> {fmt.pct(c['long_share'])} of long prompts, {fmt.pct(c['request_share'])} of requests (elsewhere {fmt.pct(c['share_elsewhere'])})" for c in a["explained_by"]) or "-"
            eng = ""
            if a.get("engine"):
                e = a["engine"]
                eng = f"running {fmt.cell(e['running'])} vs {fmt.cell(e['running_overall'])}, waiting {fmt.cell(e['waiting'])} vs {fmt.cell(e['waiting_overall'])}"
            pr = "-" if a["prompt_ratio"] is None else f"{a['prompt_ratio']:.1f}x"
            trs.append(f"<tr><td class='slot'>{html.escape(a['label'])}</td><td>{a['metric'].upper()}</td><td>{a['periods_anomalous']}/{a['periods_seen']}</td>"
                       f"<td class='bad'>{a['tp99_ratio']:.1f}x</td><td>{a['z']:.1f}</td><td>{pr}</td>"
                       f"<td>{fmt.cell(a['tp99_ms'], 0)} ms</td><td>{fmt.cell(a['typical_tp99_ms'], 0)} ms</td><td>{who}</td><td>{eng or '-'}</td></tr>")
        body = ("<table><thead><tr><th>slot</th><th>moved most</th><th>periods</th><th>TP99 ratio</th><th>z</th><th>prompt ratio</th><th>TP99</th><th>typical TP99</th><th>explained by</th><th>engine</th></tr></thead><tbody>"
                + "".join(trs) + "</tbody></table>")
    e = an.get("engine")
    if e:
        body += (f"<p class='muted'>Across {e['windows']:,} windows of {format_duration(an['params']['corr_window_s'])}, P99 latency correlates with batch size r={fmt.cell(e['corr_p99_running'], 2)}, "
                 f"with queue depth r={fmt.cell(e['corr_p99_waiting'], 2)}, with KV-cache usage r={fmt.cell(e['corr_p99_kv'], 2)}.</p>")
    p = an["params"]
    prompt = "" if p["prompt_ratio"] is None else f" with a mean prompt {p['prompt_ratio']:g}x the typical one or more"
    clock = " Folded on the recording's clock (each replayed request at its recorded start)." if an.get("fold_clock") == "recording" else ""
    sub = (f"Fold {format_duration(p['period_s'])} / {format_duration(p['bucket_s'])}, {_metrics_named(an)} latency, cells of {p['min_requests']}+ requests; "
           f"a slot is listed when its TP99 had a robust z of {p['min_z']:g}+ and was at least {p['tp99_ratio']:g}x the typical cell{prompt} in {p['min_periods']}+ periods "
           f"and {100 * p['min_share']:g}% of the periods seen (the options and result of `analyze anomalies`).{clock}")
    # The result as `analyze anomalies --json` prints it, for tools (inert data, nothing runs or loads).
    data = fmt.to_json(an).replace("</", "<\\/")
    return _section("Periodic anomalies", sub, body) + f'<script type="application/json" id="anomalies-json">{data}</script>'


def _metrics_named(an) -> str:
    return "/".join(m.upper() for m in an.get("metrics") or [an["params"]["metric"]])


def _p99(g, metric: str) -> str:
    """A group's P99 cell, under the request-count rule `compare` applies (stats.needed)."""
    need = stats.needed(0.99)
    if (g["requests"] or 0) < need:
        return f"<span class='muted' title='a P99 needs {need} requests'>too few (P99 needs {need})</span>"
    return fmt.cell(g[metric]["p99"], 0)


def _clients_section(summ) -> str:
    if not summ["groups"]:
        return ""
    trs = []
    for g in summ["groups"]:
        name = "all traffic" if g["total"] else " / ".join(str(x or "-") for x in (g["client_id"], g["model"], g["kind"]))
        trs.append(f"<tr class='{'total' if g['total'] else ''}'><td>{html.escape(name)}</td><td>{g['requests']:,}</td><td>{fmt.pct(g['error_rate'])}</td>"
                   f"<td>{fmt.cell(g['ttft_ms']['p50'], 0)}</td><td>{_p99(g, 'ttft_ms')}</td><td>{fmt.cell(g['e2e_ms']['p50'], 0)}</td><td>{_p99(g, 'e2e_ms')}</td>"
                   f"<td>{fmt.cell(g['itl_ms']['p99'], 1)}</td><td>{fmt.pct(g['goodput_share'])}</td></tr>")
    table = ("<table><thead><tr><th>client / model / kind</th><th>requests</th><th>errors</th><th>TTFT P50</th><th>TTFT P99</th><th>E2E P50</th><th>E2E P99</th><th>ITL P99</th><th>good</th></tr></thead><tbody>"
             + "".join(trs) + "</tbody></table>")
    if summ.get("prefix"):
        table += "<p class='muted'>Prefix sharing: " + ", ".join(f"{'all' if p['total'] else html.escape(str(p['client_id'] or '-'))} {fmt.pct(p['shared_share'])}" for p in summ["prefix"]) + " of requests share their prefix with another request.</p>"
    return _section("Per client", "Latencies in ms.", table)


def _section(title: str, sub: str, body: str) -> str:
    return f"<section><h2>{html.escape(title)}</h2>" + (f"<p class='sub'>{html.escape(sub)}</p>" if sub else "") + body + "</section>"


def _card(title: str, sub: str, body: str) -> str:
    return f"<section class='card'><h2>{html.escape(title)}</h2>" + (f"<p class='sub'>{html.escape(sub)}</p>" if sub else "") + body + "</section>"


def _page(title: str, summ: dict[str, Any], an: dict[str, Any], sections: list[str], notes: list[str], sources: str) -> str:
    tot = next((g for g in summ["groups"] if g["total"]), None)
    stats = [("requests", f"{summ['requests']:,}")]
    if tot:
        pct = group_percentile([tot["requests"] or 0])  # compare's rule: 100 requests get a P95
        stats += [("error rate", fmt.pct(tot["error_rate"])), (f"TTFT {pct}", f"{fmt.cell(tot['ttft_ms'][pct.lower()], 0)} ms"),
                  (f"E2E {pct}", f"{fmt.cell(tot['e2e_ms'][pct.lower()], 0)} ms"), ("goodput", fmt.pct(tot["goodput_share"]))]
    stats.append(("anomalous slots", str(len(an["anomalies"]))))
    tiles = "".join(f"<div class='tile{' alert' if k == 'anomalous slots' and an['anomalies'] else ''}'><div class='v'>{html.escape(v)}</div><div class='k'>{html.escape(k)}</div></div>" for k, v in stats)
    note_html = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
:root{{--ink:#1f2937;--muted:#6b7280;--line:#e5e7eb;--bg:#f6f7fb;--card:#fff;--accent:#4c78a8;--bad:#c2410c}}
*{{box-sizing:border-box}} body{{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}}
header{{background:linear-gradient(120deg,#1e3a5f,#4c78a8);color:#fff;padding:28px 40px 22px}}
header h1{{margin:0 0 4px;font-size:22px;font-weight:600}} header p{{margin:0;opacity:.85;font-size:13px}}
main{{max-width:1100px;margin:0 auto;padding:20px 24px 48px}}
.tiles{{display:flex;gap:12px;flex-wrap:wrap;margin:-36px 0 18px}}
.tile{{background:var(--card);border-radius:10px;padding:12px 18px;box-shadow:0 1px 3px rgba(0,0,0,.08);min-width:130px}}
.tile .v{{font-size:20px;font-weight:650}} .tile .k{{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}}
.tile.alert .v{{color:var(--bad)}}
section{{background:var(--card);border-radius:10px;padding:16px 20px;margin:0 0 16px;box-shadow:0 1px 3px rgba(0,0,0,.06)}}
section h2{{margin:0 0 2px;font-size:16px}} .sub{{margin:0 0 10px;color:var(--muted);font-size:12.5px}}
.pair{{display:grid;grid-template-columns:1fr 1fr;gap:16px}} .pair section{{margin:0 0 16px}}
table{{border-collapse:collapse;width:100%;font-size:13px}} th{{text-align:left;color:var(--muted);font-weight:600;border-bottom:2px solid var(--line);padding:6px 8px}}
td{{border-bottom:1px solid var(--line);padding:6px 8px;vertical-align:top}} tr.total td{{font-weight:600;background:#f9fafb}}
td.slot{{font-weight:600;white-space:nowrap}} td.bad{{color:var(--bad);font-weight:700}}
.muted{{color:var(--muted);font-size:12.5px}} .ok{{color:#15803d;font-weight:600}}
ul.notes{{color:var(--muted);font-size:12.5px}} footer{{color:var(--muted);font-size:12px;text-align:center}}
@media (max-width:800px){{.pair{{grid-template-columns:1fr}}}}
</style></head>
<body><header><h1>{html.escape(title)}</h1><p>{html.escape(summ['table'])} from {html.escape(sources)} &middot; generated {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC</p></header>
<main><div class="tiles">{tiles}</div>
{''.join(sections)}
{f'<section><h2>Notes</h2><ul class="notes">{note_html}</ul></section>' if notes else ''}
<footer>shadowreplay report &middot; self-contained: no scripts or fonts are fetched</footer>
<div id="render-status" hidden>pending</div>
</main>
<script>
(function(){{var s=document.getElementById('render-status');var n=document.querySelectorAll('svg').length;
s.textContent='rendered:'+n+':'+document.querySelectorAll('section').length;document.documentElement.dataset.rendered='1';}})();
</script>
</body></html>
"""
