"""Small inline-SVG chart builders for the HTML report (no JavaScript, no external assets)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

PALETTE = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac")
FONT = 'font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif"'


def esc(s) -> str:
    return html.escape(str(s), quote=True)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not math.isfinite(lo) or not math.isfinite(hi):
        return []
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    out = []
    v = start
    while v <= hi + 1e-9 * step:
        out.append(round(v, 10))
        v += step
    return out


def fmt_num(v: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    if a >= 100 or v == int(v):
        return f"{v:,.0f}"
    return f"{v:.3g}"


def line_chart(
    xs: Sequence[float],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    bars: tuple[str, Sequence[float | None]] | None = None,
    x_labels=None,
    y_title: str = "",
    bar_title: str = "",
    width: int = 960,
    height: int = 320,
    log_y: bool = False,
) -> str:
    """Lines over x (with an optional right-axis bar series drawn behind them)."""
    ml, mr, mt, mb = 64, 64 if bars else 20, 16, 44
    pw, ph = width - ml - mr, height - mt - mb
    if not xs:
        return _empty(width, height, "no data")
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    vals = [v for _, s in series for v in s if v is not None and math.isfinite(v)]
    if not vals:
        return _empty(width, height, "no latency values")
    ylo, yhi = 0.0, max(vals) * 1.05
    ticks = nice_ticks(ylo, yhi)
    yhi = max(yhi, ticks[-1] if ticks else yhi)

    def X(x):
        return ml + (x - x0) / (x1 - x0) * pw

    def Y(y):
        return mt + ph - (y - ylo) / (yhi - ylo) * ph

    parts = [_svg_open(width, height)]
    if bars:
        bv = [v for v in bars[1] if v is not None and math.isfinite(v)]
        bhi = max(bv) * 1.1 if bv else 1
        bw = max(pw / max(len(xs), 1) * 0.8, 1)
        for x, v in zip(xs, bars[1]):
            if v is None or not math.isfinite(v):
                continue
            h = v / bhi * ph
            parts.append(f'<rect x="{X(x) - bw / 2:.1f}" y="{mt + ph - h:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="#c7d2e0" opacity="0.55"><title>{esc(bars[0])}: {fmt_num(v)}</title></rect>')
        for t in nice_ticks(0, bhi, 4):
            parts.append(f'<text x="{ml + pw + 6}" y="{Y(0) - t / bhi * ph + 4:.1f}" font-size="11" fill="#7a8699" {FONT}>{fmt_num(t)}</text>')
        parts.append(f'<text transform="translate({width - 8},{mt + ph / 2}) rotate(90)" text-anchor="middle" font-size="11" fill="#7a8699" {FONT}>{esc(bar_title)}</text>')
    for t in ticks:
        parts.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" stroke="#e6e9ef"/>')
        parts.append(f'<text x="{ml - 6}" y="{Y(t) + 4:.1f}" text-anchor="end" font-size="11" fill="#5b6576" {FONT}>{fmt_num(t)}</text>')
    for i, (name, s) in enumerate(series):
        pts, segs = [], []
        for x, v in zip(xs, s):
            if v is None or not math.isfinite(v):
                if pts:
                    segs.append(pts)
                pts = []
                continue
            pts.append(f"{X(x):.1f},{Y(v):.1f}")
        if pts:
            segs.append(pts)
        for seg in segs:
            if len(seg) == 1:
                cx, cy = seg[0].split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="2" fill="{PALETTE[i]}"/>')
            else:
                parts.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{PALETTE[i]}" stroke-width="1.6" stroke-linejoin="round"/>')
    for k in range(6):
        x = x0 + (x1 - x0) * k / 5
        label = x_labels(x) if x_labels else fmt_num(x)
        parts.append(f'<text x="{X(x):.1f}" y="{mt + ph + 18}" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{esc(label)}</text>')
    parts.append(f'<text transform="translate(14,{mt + ph / 2}) rotate(-90)" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{esc(y_title)}</text>')
    parts.append(_legend([n for n, _ in series] + ([bars[0]] if bars else []), ml + 8, mt + 4, bar_last=bool(bars)))
    parts.append("</svg>")
    return "".join(parts)


def heatmap(rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[float | None]], *, unit: str = "ms", width: int = 960, tips=None) -> str:
    ml, mt, mb = 96, 8, 40
    ncol = max(len(cols), 1)
    cw = (width - ml - 20) / ncol
    ch = max(min(28, 320 / max(len(rows), 1)), 6)
    height = int(mt + ch * len(rows) + mb)
    flat = [v for r in values for v in r if v is not None and math.isfinite(v)]
    if not flat:
        return _empty(width, 120, "no data")
    lo, hi = min(flat), max(flat)
    parts = [_svg_open(width, height)]
    for i, r in enumerate(rows):
        parts.append(f'<text x="{ml - 6}" y="{mt + ch * i + ch / 2 + 4:.1f}" text-anchor="end" font-size="11" fill="#5b6576" {FONT}>{esc(r)}</text>')
        for j, v in enumerate(values[i]):
            x, y = ml + j * cw, mt + i * ch
            if v is None or not math.isfinite(v):
                parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cw - 1:.1f}" height="{ch - 1:.1f}" fill="#f3f4f7"/>')
                continue
            tip = tips[i][j] if tips else f"{r} {cols[j]}: {fmt_num(v)} {unit}"
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cw - 1:.1f}" height="{ch - 1:.1f}" rx="2" fill="{_color((v - lo) / (hi - lo) if hi > lo else 0)}"><title>{esc(tip)}</title></rect>')
    step = max(1, math.ceil(len(cols) / 24))
    for j in range(0, len(cols), step):
        parts.append(f'<text x="{ml + j * cw + cw / 2:.1f}" y="{mt + ch * len(rows) + 14:.1f}" text-anchor="middle" font-size="10" fill="#5b6576" {FONT}>{esc(cols[j])}</text>')
    # colour scale
    sx, sy = ml, mt + ch * len(rows) + 22
    for k in range(50):
        parts.append(f'<rect x="{sx + k * 4}" y="{sy}" width="4" height="8" fill="{_color(k / 49)}"/>')
    parts.append(f'<text x="{sx - 4}" y="{sy + 8}" text-anchor="end" font-size="10" fill="#5b6576" {FONT}>{fmt_num(lo)} {unit}</text>')
    parts.append(f'<text x="{sx + 204}" y="{sy + 8}" font-size="10" fill="#5b6576" {FONT}>{fmt_num(hi)} {unit}</text>')
    parts.append("</svg>")
    return "".join(parts)


def scatter(points: Sequence[tuple[float, float, int]], groups: Sequence[str], *, x_title: str, y_title: str, width: int = 470, height: int = 320) -> str:
    ml, mr, mt, mb = 60, 12, 12, 44
    pw, ph = width - ml - mr, height - mt - mb
    if not points:
        return _empty(width, height, "no data")
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    xhi, yhi = max(xs) * 1.05 or 1, max(ys) * 1.05 or 1
    xt, yt = nice_ticks(0, xhi, 4), nice_ticks(0, yhi, 4)
    xhi, yhi = max(xhi, xt[-1]), max(yhi, yt[-1])
    parts = [_svg_open(width, height)]
    for t in yt:
        y = mt + ph - t / yhi * ph
        parts.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e6e9ef"/><text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#5b6576" {FONT}>{fmt_num(t)}</text>')
    for t in xt:
        x = ml + t / xhi * pw
        parts.append(f'<text x="{x:.1f}" y="{mt + ph + 16}" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{fmt_num(t)}</text>')
    for x, y, g in points:
        parts.append(f'<circle cx="{ml + x / xhi * pw:.1f}" cy="{mt + ph - y / yhi * ph:.1f}" r="2.2" fill="{PALETTE[g % len(PALETTE)]}" fill-opacity="0.5"/>')
    parts.append(f'<text x="{ml + pw / 2}" y="{height - 6}" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{esc(x_title)}</text>')
    parts.append(f'<text transform="translate(12,{mt + ph / 2}) rotate(-90)" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{esc(y_title)}</text>')
    if len(groups) > 1:
        parts.append(_legend(list(groups), ml + 8, mt + 4))
    parts.append("</svg>")
    return "".join(parts)


def _legend(names, x, y, bar_last=False) -> str:
    out = []
    for i, n in enumerate(names):
        color = "#c7d2e0" if bar_last and i == len(names) - 1 else PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y + i * 15}" width="10" height="10" rx="2" fill="{color}"/><text x="{x + 14}" y="{y + i * 15 + 9}" font-size="11" fill="#333" {FONT}>{esc(n)}</text>')
    return "".join(out)


def _color(f: float) -> str:
    """A light-to-dark sequential scale (pale yellow -> orange -> deep red)."""
    stops = [(255, 247, 236), (253, 212, 158), (252, 141, 89), (215, 48, 31), (127, 0, 0)]
    f = min(max(f, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(f), len(stops) - 2)
    t = f - i
    a, b = stops[i], stops[i + 1]
    return "#%02x%02x%02x" % tuple(round(a[k] + (b[k] - a[k]) * t) for k in range(3))


def _svg_open(w, h) -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="100%" role="img" preserveAspectRatio="xMidYMid meet">'


def _empty(w, h, msg) -> str:
    return f'{_svg_open(w, h)}<text x="{w / 2}" y="{h / 2}" text-anchor="middle" font-size="13" fill="#8a94a6" {FONT}>{esc(msg)}</text></svg>'


def load_chart(
    series: Sequence[tuple[str, Sequence[tuple[float, float | None, tuple[float, float] | None]]]],
    *,
    vlines: Sequence[tuple[str, float, str]] = (),
    band: tuple[float, float] | None = None,
    hlines: Sequence[tuple[str, float]] = (),
    x_title: str = "requests/s",
    y_title: str = "",
    y_fmt=None,
    width: int = 960,
    height: int = 320,
) -> str:
    """Figures against load: per series, points (x, value, 95 % interval or None) joined by a line
    with interval whiskers; labelled vertical lines (label, x, dash pattern or ""), a shaded x band
    and labelled horizontal lines (e.g. an SLO's threshold)."""
    ml, mr, mt, mb = 64, 20, 30, 44
    pw, ph = width - ml - mr, height - mt - mb
    xs = [x for _, pts in series for x, _, _ in pts] + [x for _, x, _ in vlines] + (list(band) if band else [])
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    ys = [v for _, pts in series for _, v, ci in pts for v in ([v] + (list(ci) if ci else [])) if v is not None and math.isfinite(v)]
    ys += [v for _, v in hlines if math.isfinite(v)]
    if not xs or not ys:
        return _empty(width, height, "no steps with figures")
    x1 = max(xs) * 1.05
    yhi = max(ys) * 1.08 or 1.0
    ticks = nice_ticks(0.0, yhi)
    yhi = max(yhi, ticks[-1] if ticks else yhi)
    fy = y_fmt or fmt_num

    def X(x):
        return ml + x / x1 * pw

    def Y(y):
        return mt + ph - y / yhi * ph

    parts = [_svg_open(width, height)]
    if band and band[0] is not None and band[1] is not None:
        parts.append(f'<rect x="{X(band[0]):.1f}" y="{mt}" width="{max(X(band[1]) - X(band[0]), 1):.1f}" height="{ph}" '
                     f'fill="#54a24b" opacity="0.13"><title>knee interval: {fmt_num(band[0])} to {fmt_num(band[1])} req/s</title></rect>')
    for t in ticks:
        parts.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" stroke="#e6e9ef"/>')
        parts.append(f'<text x="{ml - 6}" y="{Y(t) + 4:.1f}" text-anchor="end" font-size="11" fill="#5b6576" {FONT}>{esc(fy(t))}</text>')
    for t in nice_ticks(0.0, x1, 6):
        parts.append(f'<text x="{X(t):.1f}" y="{mt + ph + 18}" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{fmt_num(t)}</text>')
    for name, v in hlines:
        parts.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#c2410c" stroke-dasharray="6 3"/>'
                     f'<text x="{ml + pw - 4}" y="{Y(v) - 4:.1f}" text-anchor="end" font-size="11" fill="#c2410c" {FONT}>{esc(name)}</text>')
    for k, (name, x, dash) in enumerate(vlines):
        if x is None or not math.isfinite(x):
            continue
        d = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{mt}" y2="{mt + ph}" stroke="#374151"{d}/>'
                     f'<text x="{X(x) + 3:.1f}" y="{mt - 6 - 10 * (k % 2)}" font-size="10.5" fill="#374151" {FONT}>{esc(name)}</text>')
    for i, (name, pts) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = sorted((p for p in pts if p[0] is not None), key=lambda p: p[0])
        line = [f"{X(x):.1f},{Y(v):.1f}" for x, v, _ in pts if v is not None and math.isfinite(v)]
        if len(line) > 1:
            parts.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="{color}" stroke-width="1.6"/>')
        for x, v, ci in pts:
            if ci is not None:
                parts.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{Y(min(ci[1], yhi)):.1f}" y2="{Y(ci[0]):.1f}" stroke="{color}" stroke-width="1"/>')
            if v is not None and math.isfinite(v):
                tip = f"{name} at {fmt_num(x)} req/s: {fy(v)}" + (f" [{fy(ci[0])}, {fy(ci[1])}]" if ci else "")
                parts.append(f'<circle cx="{X(x):.1f}" cy="{Y(v):.1f}" r="3" fill="{color}"><title>{esc(tip)}</title></circle>')
    parts.append(f'<text x="{ml + pw / 2}" y="{height - 6}" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{esc(x_title)}</text>')
    parts.append(f'<text transform="translate(14,{mt + ph / 2}) rotate(-90)" text-anchor="middle" font-size="11" fill="#5b6576" {FONT}>{esc(y_title)}</text>')
    parts.append(_legend([n for n, _ in series], ml + 8, mt + 4))
    parts.append("</svg>")
    return "".join(parts)
