"""The capacity curve in the HTML report (`shadowreplay report CAPACITY_DIR`): latency figures and
goodput against load from DIR/capacity.json (replayer/capacity.py), with the knee and its interval,
the recorded peak and lines at 1.5x and 2x that peak (docs/capacity.md)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from . import svg
from .expr import format_value, parse

CAPACITY_FILE = "capacity.json"


def read(path: str | Path) -> dict[str, Any] | None:
    """DIR/capacity.json of a capacity sweep, None when `path` is not one."""
    f = Path(path) / CAPACITY_FILE
    if not f.is_file():
        return None
    try:
        return json.loads(f.read_text())
    except ValueError:
        return None


def knee_dataset(path: str | Path, cap: dict[str, Any]) -> str | None:
    """The step dataset at the knee (the rest of the report describes it), else the first step's."""
    steps = cap.get("steps") or []
    best = next((s for s in steps if s["load"] == cap.get("max_speed")), steps[0] if steps else None)
    return str(Path(path) / best["dataset"]) if best else None


def _ms(v: float) -> str:
    return svg.fmt_num(v) + " ms"


def _pct(v: float) -> str:
    return f"{100 * v:.3g}%"


def _lines(cap: dict[str, Any]) -> tuple[list[tuple[str, float, str]], tuple[float, float] | None]:
    peak = cap.get("recorded_peak_rps")
    v = []
    if peak:
        v += [("recorded peak", peak, "2 3"), ("1.5x peak", 1.5 * peak, "6 4"), ("2x peak", 2 * peak, "6 4")]
    if cap.get("max_rate_rps"):
        v.append((f"knee {svg.fmt_num(cap['max_rate_rps'])} req/s", cap["max_rate_rps"], ""))
    lo, hi = (cap.get("interval") or {}).get("rate_rps") or (None, None)
    band = (lo or 0.0, hi) if hi is not None else None
    return v, band


def section(cap: dict[str, Any]) -> str:
    """The report's capacity section: two charts and the steps' table."""
    steps = cap.get("steps") or []
    vlines, band = _lines(cap)
    lat: dict[str, list] = {}
    rates: dict[str, list] = {}
    thresholds_ms, thresholds_share = [], []
    for s in steps:
        x = s.get("rate_rps")
        for f in s.get("figures") or []:
            metric = f["slo"].split("<")[0].split(">")[0].split("@")[0].strip()
            dest = rates if metric in ("error_rate", "goodput") else lat
            dest.setdefault(f["slo"], []).append((x, f["observed"], tuple(f["interval"]) if f["interval"] else None))
        for name, f in (s.get("curve") or {}).items():
            dest = rates if name == "goodput" else lat
            dest.setdefault(name, []).append((x, f["observed"], tuple(f["interval"]) if f["interval"] else None))
    for slo in cap.get("slos") or []:
        e = parse(slo)
        if e.metric in ("error_rate", "goodput"):
            thresholds_share.append((slo, e.value))
        elif e.quantile is not None:
            thresholds_ms.append((slo, e.value))
    unit = "x" if cap.get("mode") == "speed" else " copies"
    head = _summary(cap, unit)
    body = head
    body += svg.load_chart(list(lat.items()), vlines=vlines, band=band, hlines=thresholds_ms,
                           y_title="ms", y_fmt=_ms)
    if rates:
        body += svg.load_chart(list(rates.items()), vlines=vlines, band=band, hlines=thresholds_share,
                               y_title="share of requests", y_fmt=_pct, height=260)
    body += _table(steps, unit)
    return ("<section><h2>Capacity</h2><p class='sub'>Each point is one step of the sweep (its 95% interval as a "
            "whisker); the shaded band is the knee's interval, dashed lines the recorded peak and 1.5x, 2x it.</p>"
            + body + "</section>")


def _summary(cap: dict[str, Any], unit: str) -> str:
    if cap.get("max_speed") is None:
        return "<p><b>No load passed the SLOs.</b></p>"
    lo, hi = cap["interval"]["speed"]
    h = cap.get("headroom")
    txt = (f"Knee: <b>{cap['max_speed']:g}{unit}</b> = <b>{svg.fmt_num(cap['max_rate_rps'])} req/s</b> "
           f"(interval {lo if lo is not None else '-'}{unit} to {'open' if hi is None else f'{hi:g}{unit}'}); "
           f"headroom <b>{'-' if h is None else f'{h:.2f}x'}</b> the recorded peak of "
           f"{svg.fmt_num(cap['recorded_peak_rps'] or 0)} req/s")
    if cap.get("limiting_slo"):
        txt += f"; limited by <code>{html.escape(cap['limiting_slo'])}</code>"
    return f"<p>{txt}.</p>"


def _table(steps: list[dict[str, Any]], unit: str) -> str:
    if not steps:
        return ""
    slos = [f["slo"] for f in steps[0]["figures"]]
    head = "".join(f"<th>{html.escape(x)}</th>" for x in ["step", "load", "req/s", "requests", "send lag p99", "running/waiting"] + slos + ["result"])
    rows = []
    for s in sorted(steps, key=lambda s: s["load"]):
        cells = [str(s["step"]), f"{s['load']:g}{unit}", svg.fmt_num(s["rate_rps"] or 0), str(s["requests"]),
                 "-" if s["send_lag_p99_ms"] is None else f"{s['send_lag_p99_ms']:.2f} ms",
                 f"{svg.fmt_num(s['engine'].get('running_peak', 0))}/{svg.fmt_num(s['engine'].get('waiting_peak', 0))}"
                 if s.get("engine") else "-"]
        for f in s["figures"]:
            m = parse(f["slo"]).metric
            iv = f" [{format_value(m, f['interval'][0])}, {format_value(m, f['interval'][1])}]" if f["interval"] else ""
            cells.append(format_value(m, f["observed"]) + iv)
        res = ("pass" if s["pass"] else "FAIL") + ("" if s["certain"] else " (uncertain)") + (" (stopped early)" if s["stopped_early"] else "")
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
        rows.append(f"<tr>{tds}<td class='{'ok' if s['pass'] else 'bad'}'>{html.escape(res)}</td></tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"
