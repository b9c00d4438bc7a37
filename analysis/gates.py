"""The compare gates (`compare A B --fail-on EXPR`): B (the candidate) against A (the baseline).

- `FIGURE OP ±X%` fails when the ratio B / A is confidently beyond 1 ± X: for `>` (`>=`) the lower
  bound of the ratio's interval (at compare's --level, 95 % by default) is above (at least) 1 + X;
  for `<` (`<=`) its upper bound is below (at most) 1 + X. `ttft_p99>+10%`: TTFT P99 is more
  than 10 % worse beyond doubt. With an A/A pair (--aa), a ratio within the pair's own ratio is
  noise and does not fail.
- `worse` fails when any figure is worse: TTFT, E2E P50/P95/P99, ITL P99, the error rate and, with
  --slo, the goodput share, each judged as compare's verdicts are, but at the family level
  1 - (1 - level) / K for K figures (Bonferroni), so that an A/A pair fails the gate with chance at
  most 1 - level rather than about K times that.
- A scope (`@client=ID`, `@model=NAME`) judges that group's requests alone.
- Too few requests for the figure (stats.needed) is `insufficient data`, which fails.

The figures come from the sides' histograms and counts that compare.compute loads; this module
only reads them (`hists[(group, key, metric)]`, `counts[(group, key)]`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from . import stats
from .expr import FAIL, INSUFFICIENT, LOWER_IS_BETTER, PASS, Expr, ExprError, GateResult, format_value

UNKNOWN = "(unknown)"  # compare's key of requests without a client or model (compare_lat.sql)
# `worse`: (metric, quantile) of every figure it looks at
WORSE_FIGURES = (("ttft", 0.5), ("ttft", 0.95), ("ttft", 0.99), ("e2e", 0.5), ("e2e", 0.95), ("e2e", 0.99),
                 ("itl", 0.99), ("error_rate", None), ("goodput", None))


class Side(Protocol):
    hists: dict[tuple[str, str, str], stats.Hist]
    counts: dict[tuple[str, str], dict[str, np.ndarray]]


def check(exprs: Sequence[Expr]) -> None:
    """What a compare gate cannot judge, refused before any data is read."""
    for e in exprs:
        if not (e.relative or e.is_worse):
            raise ExprError(e.text, 0, "a compare gate is relative (ttft_p99>+10%) or `worse`", "--fail-on")
        if len(e.scope) > 1:
            raise ExprError(e.text, e.text.index("@", e.text.index("@") + 1), "a compare gate takes one scope", "--fail-on")


def _group(e: Expr) -> tuple[str, str]:
    if not e.scope:
        return "all", ""
    key, value = e.scope[0]
    return key, value


def _label(metric: str, q: float | None) -> str:
    return metric.replace("_", " ") if q is None else f"{metric.upper()} P{q * 100:.6g}"


def _estimate(sa: Side, sb: Side, grp: str, key: str, metric: str, q: float | None, *, reps: int, level: float,
              floor: float | None) -> tuple[stats.Estimate, stats.Replicates | None]:
    label = _label(metric, q)
    if q is not None:
        empty = stats.Hist(np.zeros(0, np.int64), np.zeros((1, 0)))
        ha, hb = sa.hists.get((grp, key, metric), empty), sb.hists.get((grp, key, metric), empty)
        ra = stats.quantile_replicates(ha, q, reps, stats.rng_for("gate-a", grp, key, label, reps))
        rb = stats.quantile_replicates(hb, q, reps, stats.rng_for("gate-b", grp, key, label, reps))
        return stats.estimate(ra, rb, level=level, needs=stats.needed(q), floor=floor), rb
    col = "failed" if metric == "error_rate" else "good"
    out = []
    for name, s in (("gate-a", sa), ("gate-b", sb)):
        c = s.counts.get((grp, key))
        if c is None:
            out.append(stats.Replicates(None, np.full(reps, np.nan), 0))
        else:
            out.append(stats.share_replicates(c[col], c["requests"], reps, stats.rng_for(name, grp, key, label, reps)))
    est = stats.estimate(out[0], out[1], lower_is_better=LOWER_IS_BETTER[metric], level=level, needs=stats.MIN_TAIL,
                         floor=floor)
    return est, out[1]


def _floor(aa: tuple[Side, Side] | None, grp: str, key: str, metric: str, q: float | None, reps: int, level: float) -> float | None:
    if aa is None:
        return None
    est, _ = _estimate(aa[0], aa[1], grp, key, metric, q, reps=reps, level=level, floor=None)
    return est.ratio


def _interval(r: stats.Replicates | None, level: float) -> tuple[float, float] | None:
    if r is None:
        return None
    v = r.values[~np.isnan(r.values)]
    if len(v) < 10:
        return None
    a = (1 - level) / 2
    return float(np.quantile(v, a)), float(np.quantile(v, 1 - a))


def _ratio_text(est: stats.Estimate, level: float) -> str:
    ci = est.ratio_ci
    return (f"{est.ratio:.2f}x" if est.ratio is not None else "-") + (
        f" [{ci[0]:.2f}, {ci[1]:.2f}] ({100 * level:.4g}% CI)" if ci else "")


def judge(e: Expr, sa: Side, sb: Side, *, aa: tuple[Side, Side] | None = None, reps: int = stats.REPLICATES,
          level: float = stats.LEVEL, slo: bool = False) -> GateResult:
    """One compare gate. `slo`: whether --slo gave goodput bounds (else `worse` leaves goodput
    out: without bounds it is one minus the error rate)."""
    grp, key = _group(e)
    if e.is_worse:
        return _worse(e, sa, sb, grp, key, aa=aa, reps=reps, level=level, slo=slo)
    fl = _floor(aa, grp, key, e.metric, e.quantile, reps, level)
    est, rb = _estimate(sa, sb, grp, key, e.metric, e.quantile, reps=reps, level=level, floor=fl)
    r = GateResult(e, False, est.b, _interval(rb, level), est.ratio, est.ratio_ci, n=est.n[1], baseline=est.a)
    fig = f"{e.figure}{e.scope_text}"
    if e.quantile is None and est.verdict != stats.TOO_FEW and est.a == 0 and est.delta_ci is not None:
        return _from_zero(e, est, r, fig, level)
    if est.verdict == stats.TOO_FEW or est.ratio_ci is None:
        need = f"; {'P' + format(e.quantile * 100, '.6g') if e.quantile else 'a rate'} needs {est.needs or stats.MIN_TAIL:,}"
        r.outcome = INSUFFICIENT
        r.message = f"{e.text}: {fig}: insufficient data ({est.n[0]:,} / {est.n[1]:,} requests in A / B{need}): does not pass"
        return r
    limit = 1 + e.value
    lo, hi = est.ratio_ci
    beyond = {">": lo > limit, ">=": lo >= limit, "<": hi < limit, "<=": hi <= limit}[e.op]
    noise = beyond and est.verdict == stats.NOISE
    r.passed = not beyond or noise
    r.outcome = PASS if r.passed else FAIL
    r.certain = True
    side = "lower" if e.op in (">", ">=") else "upper"
    bound = lo if side == "lower" else hi
    how = {">": "above", ">=": "at least", "<": "below", "<=": "at most"}[e.op]
    why = (f"{side} bound {bound:.2f}x is {how} {limit:.2f}x" if beyond else f"{side} bound {bound:.2f}x is not {how} {limit:.2f}x")
    if noise:
        why += f", but within the A/A noise floor ({est.floor:.2f}x)"
    r.message = (f"{e.text}: {fig} B {format_value(e.metric, est.b)} vs A {format_value(e.metric, est.a)}: ratio "
                 f"{_ratio_text(est, level)}: " + ("passes" if r.passed else "FAILS") + f" ({why})")
    return r


def _from_zero(e: Expr, est: stats.Estimate, r: GateResult, fig: str, level: float) -> GateResult:
    """A rate that is 0 in A (no errors in the baseline): no ratio exists. Any rise from zero is
    beyond every +X%, so `>`/`>=` fails when B's rate is above 0 beyond doubt (the interval of
    B - A above 0); a fall below zero cannot happen, so `<`/`<=` passes."""
    lo, hi = est.delta_ci
    up = e.op in (">", ">=")
    r.passed = not (up and lo > 0)
    r.outcome, r.certain = (PASS if r.passed else FAIL), True
    spread = f"B - A {100 * est.delta:+.3g} pts [{100 * lo:+.3g}, {100 * hi:+.3g}] ({100 * level:.4g}% CI)"
    why = ("B's rate is above A's 0 beyond doubt: a rise beyond any relative change" if not r.passed
           else "A's rate is 0 and B's is not above it beyond doubt" if up else "A's rate is 0: it cannot fall")
    r.message = (f"{e.text}: {fig} B {format_value(e.metric, est.b)} vs A {format_value(e.metric, est.a)} (no ratio: A is 0): "
                 f"{spread}: " + ("passes" if r.passed else "FAILS") + f" ({why})")
    return r


def _worse(e: Expr, sa: Side, sb: Side, grp: str, key: str, *, aa, reps: int, level: float, slo: bool) -> GateResult:
    figs = [(m, q) for m, q in WORSE_FIGURES if slo or m != "goodput"]
    k = len(figs)
    fam = 1 - (1 - level) / k
    # enough replicates for the family level's tails: about 20 replicates beyond each bound
    fam_reps = max(reps, math.ceil(20 / ((1 - fam) / 2)))
    worse, judged, at_level = [], 0, 0
    for m, q in figs:
        fl = _floor(aa, grp, key, m, q, reps, level)
        est, _ = _estimate(sa, sb, grp, key, m, q, reps=fam_reps, level=fam, floor=fl)
        if est.verdict == stats.TOO_FEW:
            continue
        judged += 1
        if est.verdict == stats.WORSE:
            worse.append({"figure": _label(m, q), "a": est.a, "b": est.b, "ratio": est.ratio, "ratio_ci": est.ratio_ci,
                          "metric": m, "level": fam})
        e95, _ = _estimate(sa, sb, grp, key, m, q, reps=reps, level=level, floor=fl)
        at_level += e95.verdict == stats.WORSE
    c = sb.counts.get((grp, key))
    r = GateResult(e, not worse, n=int(c["requests"].sum()) if c is not None else 0,
                   outcome=PASS if not worse else FAIL, certain=True, details=worse)
    scope = e.scope_text
    if judged == 0:
        r.passed, r.outcome = False, INSUFFICIENT
        r.message = f"{e.text}: no figure{scope} has enough requests to judge: does not pass"
        return r
    if worse:
        first = worse[0]
        r.observed, r.ratio, r.ratio_interval = first["b"], first["ratio"], first["ratio_ci"]
        parts = [f"{w['figure']} B {format_value(w['metric'], w['b'])} vs A {format_value(w['metric'], w['a'])}, ratio "
                 f"{w['ratio']:.2f}x" + (f" [{w['ratio_ci'][0]:.2f}, {w['ratio_ci'][1]:.2f}]" if w["ratio_ci"] else "")
                 for w in worse]
        r.message = (f"{e.text}: FAILS: worse{scope} at {100 * fam:.4g}% "
                     f"(Bonferroni over {k} figures): " + "; ".join(parts))
    else:
        extra = f" ({at_level} worse at {100 * level:.4g}% alone)" if at_level else ""
        r.message = (f"{e.text}: passes: no figure{scope} worse at {100 * fam:.4g}% (Bonferroni over {k} figures, "
                     f"{judged} with enough requests){extra}")
    return r


def judge_all(exprs: Sequence[Expr], sa: Side, sb: Side, **kw: Any) -> list[GateResult]:
    return [judge(e, sa, sb, **kw) for e in exprs]
