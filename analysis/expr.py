"""The one expression grammar for SLOs, gates and capacity (docs/analysis.md, "Expressions").

    EXPR   := FIGURE OP VALUE [@SCOPE ...]  |  worse [@SCOPE]  |  METRIC=DURATION (legacy bound)
    FIGURE := ttft_pNN | e2e_pNN | itl_pNN | error_rate | goodput      (NN: 50, 95, 99, 99.9, ...)
    OP     := <= | < | >= | >
    VALUE  := a duration with its unit for a latency (250ms, 5s); a percentage for a rate (1%, 95%);
              in a compare gate, a signed relative change of B against A (+10%, -5%)
    SCOPE  := @client=ID | @model=NAME

`ttft`, `e2e`, `itl` (also `tpot`) without a percentile are per-request bounds, not figures:
`ttft=500ms` (the `--slo ttft=500ms,e2e=5s` form) or `ttft<=500ms`. They feed goodput only.

Goodput is the share of requests that did not fail and meet every per-request latency bound:
the bounds given as such, else the bound of each latency SLO of the same expression list
(`ttft_p99<=500ms` makes 500 ms the TTFT bound; with several on one latency, the largest),
counting only unscoped SLOs and those of the goodput expression's own scope. A request without a
TTFT (not streamed) is judged on its E2E for the TTFT bound; ITL is the request's mean gap.
Without any bound, goodput is the share of requests that did not fail.

`evaluate` judges absolute expressions on one dataset; the compare gates (relative changes and
`worse`) are in analysis/gates.py."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shadowreplay.durations import UNITS
from shadowreplay.errors import ConfigError

from . import stats

LATENCY = ("ttft", "e2e", "itl")
RATES = ("error_rate", "goodput")
METRICS = LATENCY + RATES
WORSE = "worse"
OPS = ("<=", "<", ">=", ">")
SCOPES = {"client": "client_id", "model": "model"}  # scope key -> lat column
LOWER_IS_BETTER = {"ttft": True, "e2e": True, "itl": True, "error_rate": True, "goodput": False}

PASS, FAIL, INSUFFICIENT = "pass", "fail", "insufficient data"

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_LAT = re.compile(r"(ttft|e2e|itl|tpot)(?:_p(.*))?$", re.I)
_OP = re.compile(r"<=|>=|==|=<|=>|!=|<|>|=")
_NUMBER = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)")
_UNIT = re.compile(r"[A-Za-z%]*")
_SCOPE_VALUE = re.compile(r"[^\s@,]+")


class ExprError(ConfigError):
    """A malformed expression: the message shows it with a caret under the wrong character."""

    def __init__(self, text: str, pos: int, reason: str, flag: str | None = None):
        self.text, self.pos, self.reason, self.flag = text, pos, reason, flag
        pos = max(0, min(pos, len(text)))
        head = f"{flag}: " if flag else ""
        super().__init__(f"{head}{reason}\n    {text}\n    {' ' * pos}^")


@dataclass(frozen=True)
class Expr:
    """One parsed expression. `value` is in milliseconds for a latency, a fraction for a rate,
    and the signed relative change (0.10 for +10%) when `relative`."""

    metric: str  # ttft, e2e, itl, error_rate, goodput, or "worse"
    quantile: float | None  # 0.99 for _p99; None for a rate, a bound or `worse`
    op: str  # <=, <, >=, > ("" for `worse`)
    value: float
    relative: bool = False
    scope: tuple[tuple[str, str], ...] = ()  # (("client", "web-app"),)
    text: str = ""

    @property
    def is_bound(self) -> bool:
        """A per-request latency bound (`ttft=500ms`): feeds goodput, is not a gate itself."""
        return self.metric in LATENCY and self.quantile is None

    @property
    def is_worse(self) -> bool:
        return self.metric == WORSE

    @property
    def figure(self) -> str:
        """The figure's name as the tables print it: `TTFT P99`, `error rate`."""
        if self.metric == WORSE:
            return "any figure"
        if self.metric in RATES:
            return self.metric.replace("_", " ")
        if self.quantile is None:
            return f"{self.metric.upper()} bound"
        return f"{self.metric.upper()} P{_pct_text(self.quantile)}"

    @property
    def scope_text(self) -> str:
        return "".join(f" @{k}={v}" for k, v in self.scope)

    def threshold_text(self) -> str:
        if self.relative:
            return f"{self.value * 100:+g}%"
        return format_value(self.metric, self.value)

    def holds(self, x: float) -> bool:
        """Whether `x` (a figure's value, or a ratio minus 1 when relative) satisfies OP VALUE."""
        v = self.value
        return {"<=": x <= v, "<": x < v, ">=": x >= v, ">": x > v}[self.op]

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "metric": self.metric, "quantile": self.quantile, "op": self.op, "value": self.value,
                "relative": self.relative, "scope": dict(self.scope)}


def _pct_text(q: float) -> str:
    return f"{q * 100:.6g}"


def format_value(metric: str, v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if metric in RATES:
        return f"{100 * v:.4g}%"
    return f"{v:,.1f} ms"


def parse(text: str, *, allow_relative: bool = False, flag: str | None = None) -> Expr:
    """One expression. A relative change (+10%) or `worse` needs `allow_relative` (a compare gate).
    Raises ExprError, its caret under the first wrong character."""
    return _Parser(text, allow_relative, flag).expr(0, len(text))


def parse_all(texts: Iterable[str] | str | None, *, allow_relative: bool = False, flag: str | None = None) -> list[Expr]:
    """Every expression of `texts` (each text may hold several, comma-separated: the legacy
    `ttft=500ms,e2e=5s` form, or `ttft_p99<=500ms, error_rate<=1%`)."""
    if texts is None:
        return []
    if isinstance(texts, str):
        texts = [texts]
    out: list[Expr] = []
    for text in texts:
        p = _Parser(text, allow_relative, flag)
        if not text.strip():
            raise p.err(0, "an empty expression")
        start = 0
        for m in re.finditer(r",|$", text):
            if text[start:m.start()].strip():
                out.append(p.expr(start, m.start()))
            elif m.start() < len(text):
                raise p.err(m.start(), "an empty expression before this comma")
            start = m.end()
            if m.start() == len(text):
                break
    return out


class _Parser:
    def __init__(self, text: str, allow_relative: bool, flag: str | None):
        self.s, self.rel, self.flag = text, allow_relative, flag

    def err(self, pos: int, reason: str) -> ExprError:
        return ExprError(self.s, pos, reason, self.flag)

    def ws(self, i: int, end: int) -> int:
        while i < end and self.s[i].isspace():
            i += 1
        return i

    def expr(self, start: int, end: int) -> Expr:
        s = self.s
        i = self.ws(start, end)
        text = s[start:end].strip()
        m = _WORD.match(s, i, end)
        if not m:
            raise self.err(i, "expected a figure (ttft_p99, e2e_p95, itl_p99, error_rate, goodput)"
                           + (" or `worse`" if self.rel else ""))
        word = m.group(0).lower()
        metric, quantile = self.figure(word, i)
        i = self.ws(m.end(), end)
        if metric == WORSE:
            if not self.rel:
                raise self.err(m.start(), "`worse` compares B with A: it is a compare --fail-on gate")
            scope, i = self.scope(i, end)
            self.done(i, end)
            return Expr(WORSE, None, "", 0.0, True, scope, text)
        om = _OP.match(s, i, end)
        if not om or om.group(0) in ("==", "=<", "=>", "!="):
            raise self.err(i, "expected an operator: <=, <, >=, >")
        op = om.group(0)
        bound = metric in LATENCY and quantile is None
        if op == "=":
            if not bound:
                raise self.err(i, "expected an operator: <=, <, >=, > (`=` only in a bound such as ttft=500ms)")
            op = "<="
        if bound and op not in ("<=", "<"):
            raise self.err(i, f"a per-request bound is an upper limit ({metric}<=...); "
                              f"for a figure give a percentile, e.g. {metric}_p99{op}...")
        i = self.ws(om.end(), end)
        value, relative, i = self.value(metric, bound, i, end)
        scope, i = self.scope(self.ws(i, end), end)
        self.done(i, end)
        return Expr(metric, quantile, op, value, relative, scope, text)

    def figure(self, word: str, i: int) -> tuple[str, float | None]:
        if word in RATES or word == WORSE:
            return word, None
        m = _LAT.match(word)
        if not m:
            raise self.err(i, f"unknown figure {word!r} (ttft_pNN, e2e_pNN, itl_pNN, error_rate, goodput)")
        metric = "itl" if m.group(1) == "tpot" else m.group(1)
        if m.group(2) is None:
            return metric, None
        nn, at = m.group(2), i + m.start(2)
        try:
            q = round(float(nn) / 100, 12) if re.fullmatch(r"\d+(\.\d+)?", nn) else None
        except ValueError:
            q = None
        if q is None or not 0 < q < 1:
            raise self.err(at, f"a percentile is a number between 0 and 100, e.g. {metric}_p99 or {metric}_p99.9")
        return metric, q

    def value(self, metric: str, bound: bool, i: int, end: int) -> tuple[float, bool, int]:
        s = self.s
        m = _NUMBER.match(s, i, end)
        if not m:
            want = "a duration with its unit (250ms, 5s)" if metric in LATENCY else "a percentage (1%, 95%)"
            raise self.err(i, f"expected {want}" + (" or a relative change (+10%)" if self.rel and not bound else ""))
        sign, number = m.group(1), float(m.group(2))
        u = _UNIT.match(s, m.end(), end)
        unit, at = u.group(0).lower(), u.start()
        if sign:
            if bound or not self.rel:
                raise self.err(i, "a relative change (+10%) compares B with A: it belongs in a compare --fail-on gate"
                               if not bound else "a bound is a duration, e.g. ttft=500ms")
            if unit != "%":
                raise self.err(at, "a relative change is a percentage, e.g. +10% or -5%")
            v = number / 100 * (-1 if sign == "-" else 1)
            if v <= -1:
                raise self.err(i, "a relative change is above -100%")
            return v, True, u.end()
        if self.rel and not bound and metric in METRICS:
            raise self.err(i, f"a compare gate gives a signed relative change of B against A, e.g. "
                              f"{'+10%' if LOWER_IS_BETTER[metric] else '-5%'} (an absolute threshold is analyze --assert)")
        if metric in LATENCY:
            if not unit:
                raise self.err(at, f"give a unit, e.g. {m.group(2)}ms or {m.group(2)}s")
            if unit not in UNITS:
                raise self.err(at, f"unknown unit {unit!r}: a latency takes a duration ({', '.join(UNITS)})")
            return number * UNITS[unit] * 1000.0, False, u.end()
        if unit != "%":
            raise self.err(at, f"a rate is a percentage, e.g. {m.group(2)}%")
        if number > 100:
            raise self.err(i, "a rate is at most 100%")
        return number / 100, False, u.end()

    def scope(self, i: int, end: int) -> tuple[tuple[tuple[str, str], ...], int]:
        s, out = self.s, []
        while i < end and s[i] == "@":
            k = _WORD.match(s, i + 1, end)
            if not k or k.group(0).lower() not in SCOPES:
                raise self.err(i + 1, "a scope is @client=ID or @model=NAME")
            key = k.group(0).lower()
            if k.end() >= end or s[k.end()] != "=":
                raise self.err(k.end(), f"expected = after @{key}")
            v = _SCOPE_VALUE.match(s, k.end() + 1, end)
            if not v:
                raise self.err(k.end() + 1, f"expected the {key} after @{key}=")
            if any(key == k0 for k0, _ in out):
                raise self.err(i, f"@{key} given twice")
            out.append((key, v.group(0)))
            i = self.ws(v.end(), end)
        return tuple(out), i

    def done(self, i: int, end: int) -> None:
        i = self.ws(i, end)
        if i < end:
            raise self.err(i, "unexpected text (a scope is @client=ID or @model=NAME)")


# ----------------------------------------------------------------------------------- goodput
def goodput_bounds(exprs: Sequence[Expr], scope: tuple[tuple[str, str], ...] = (),
                   slo: dict[str, float] | None = None) -> dict[str, float]:
    """The per-request latency bounds (ms) that make a request good, for a goodput figure of
    `scope` (see the module's docstring): bounds given as such (and the legacy `slo` dict) win;
    else, per latency, the largest bound of the upper-limit SLOs unscoped or of `scope`."""
    seen = [e for e in exprs if e.metric in LATENCY and not e.relative and e.op in ("<=", "<") and e.scope in ((), scope)]
    out: dict[str, float] = {}
    for e in seen:
        if e.quantile is not None:
            out[e.metric] = max(out.get(e.metric, 0.0), e.value)
    given: dict[str, float] = {}
    for e in seen:
        if e.is_bound:
            given[e.metric] = min(given.get(e.metric, math.inf), e.value)
    return out | given | dict(slo or {})


# ----------------------------------------------------------------------------------- results
@dataclass
class GateResult:
    """One expression judged. `passed` is False for `insufficient data` too (fail-safe)."""

    expr: Expr
    passed: bool
    observed: float | None = None  # the figure (ms or a fraction); for a compare gate, B's value
    interval: tuple[float, float] | None = None  # 95 % interval of `observed`
    ratio: float | None = None  # B / A (compare gates)
    ratio_interval: tuple[float, float] | None = None
    n: int = 0  # requests the figure is computed from (B's, for a compare gate)
    message: str = ""
    outcome: str = PASS  # pass, fail, insufficient data
    certain: bool = False  # the interval lies wholly on the outcome's side of the threshold
    baseline: float | None = None  # A's value (compare gates)
    details: list[dict[str, Any]] = field(default_factory=list)  # `worse`: the figures found worse

    def short(self) -> str:
        """The gate and its figure in a few words, for the one error line: `ttft_p99>+10% (TTFT
        P99 1.99x [1.83, 2.14])`."""
        e = self.expr
        if self.outcome == INSUFFICIENT:
            return f"{e.text} (insufficient data)"
        if e.is_worse:
            w = self.details
            more = f" and {len(w) - 1} more" if len(w) > 1 else ""
            return f"{e.text} ({w[0]['figure']} {_ratio(w[0]['ratio'], w[0]['ratio_ci'])}{more})" if w else e.text
        if self.ratio is not None:
            return f"{e.text} ({e.figure}{e.scope_text} {_ratio(self.ratio, self.ratio_interval)})"
        iv = f" [{format_value(e.metric, self.interval[0])}, {format_value(e.metric, self.interval[1])}]" if self.interval else ""
        return f"{e.text} ({e.figure}{e.scope_text} {format_value(e.metric, self.observed)}{iv})"

    def as_dict(self) -> dict[str, Any]:
        return {"gate": self.expr.text, "expr": self.expr.as_dict(), "passed": self.passed, "outcome": self.outcome,
                "figure": self.expr.figure + self.expr.scope_text, "observed": self.observed, "interval": self.interval,
                "baseline": self.baseline, "ratio": self.ratio, "ratio_interval": self.ratio_interval, "n": self.n,
                "certain": self.certain, "message": self.message, "details": self.details}


def _ratio(r: float | None, ci: tuple[float, float] | None) -> str:
    return ("-" if r is None else f"{r:.2f}x") + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def summary_line(results: Sequence[GateResult]) -> str:
    bad = [r for r in results if not r.passed]
    return f"gates: {len(results) - len(bad)} of {len(results)} passed" + (
        "; failed: " + ", ".join(r.expr.text for r in bad) if bad else "")


def render(results: Sequence[GateResult]) -> str:
    """The gates as text: one line each, failing ones marked, then the summary line."""
    lines = ["", "Gates"]
    for r in results:
        mark = "ok  " if r.passed else ("FAIL" if r.outcome == FAIL else "N/A ")
        lines.append(f"  {mark} {r.message}")
    lines.append(summary_line(results))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------- evaluate
def evaluate(path_or_dataset: str | os.PathLike | Sequence[str | os.PathLike] | Any, exprs: Iterable[Expr | str], *,
             where: str | None = None, warmup_s: float = 0.0, table: str | None = None, level: float = stats.LEVEL,
             slo: dict[str, float] | None = None) -> list[GateResult]:
    """Judges absolute expressions on one dataset (a replay's replay_results or a recording's
    requests: the table `analyze` would read, or `table`). `path_or_dataset` is a dataset folder,
    a list of them, or a DuckDB connection holding the `lat` view (session.open_dataset).
    Percentiles have a distribution-free order-statistic interval, rates a Wilson interval, both
    at `level`. A percentile over fewer requests than stats.needed(q), or a rate over fewer than
    stats.MIN_TAIL, is `insufficient data`, which does not pass. `slo`: legacy per-request bounds
    (ms) for goodput. Bounds themselves (`ttft=500ms`) give no result."""
    parsed = [parse(e) if isinstance(e, str) else e for e in exprs]
    for e in parsed:
        if e.relative:
            raise ExprError(e.text, 0, "a compare gate (a relative change, `worse`) needs a baseline: use compare --fail-on")
    scopes = {e.scope for e in parsed if not e.is_bound}
    rows = _scoped_rows(path_or_dataset, scopes, where, warmup_s, table)
    return [judge(e, rows[e.scope], parsed, level=level, slo=slo) for e in parsed if not e.is_bound]


def _scoped_rows(src: Any, scopes: set[tuple[tuple[str, str], ...]], where: str | None, warmup_s: float,
                 table: str | None) -> dict[tuple[tuple[str, str], ...], dict[str, np.ndarray]]:
    """The per-request values (gate_rows.sql) of each scope: `lat`, narrowed by --where and the
    scope through DuckDB's relational API (the user's text is never pasted into SQL)."""
    import duckdb

    from .session import first_line, open_dataset, query_arrays

    if isinstance(src, duckdb.DuckDBPyConnection):
        con = src
        con.complete()  # a result an earlier query left unread (a fetchone) would block the relational API
    else:
        paths = [src] if isinstance(src, (str, os.PathLike)) else list(src)
        con, _, _ = open_dataset([str(p) for p in paths], table, warmup_s=warmup_s)
    base = con.table("lat")
    if where:
        try:
            base = base.filter(duckdb.SQLExpression(where))
        except duckdb.Error as e:
            raise ConfigError(f"--where: {first_line(e)} (a DuckDB predicate over the lat view's columns)") from None
    out = {}
    for scope in scopes:
        rel = base
        for key, value in scope:
            rel = rel.filter(duckdb.ColumnExpression(SCOPES[key]) == duckdb.ConstantExpression(value))
        rel.create_view("gate_lat", replace=True)
        try:
            out[scope] = query_arrays(con, "gate_rows")
        except ConfigError:
            raise
        except Exception as e:  # a --where naming no column fails when the rows are read
            if where:
                raise ConfigError(f"--where: {first_line(e)}") from None
            raise
    return out


def _floats(a: Any) -> np.ndarray:
    """A DuckDB numpy column (a masked array where it holds NULLs) as floats with NaN for NULL."""
    if isinstance(a, np.ma.MaskedArray):
        return a.astype(np.float64).filled(np.nan)
    return np.asarray(a, dtype=np.float64)


def good_mask(rows: dict[str, np.ndarray], bounds: dict[str, float]) -> np.ndarray:
    """Requests that did not fail and meet every bound (ms); NaN meets no bound."""
    failed = np.asarray(rows["failed"], dtype=bool)
    good = ~failed
    with np.errstate(invalid="ignore"):
        if "ttft" in bounds:
            t = _floats(rows["ttft_ms"])
            t = np.where(np.isnan(t), _floats(rows["e2e_ms"]), t)  # not streamed: its first byte was the answer
            good &= t <= bounds["ttft"]
        if "e2e" in bounds:
            good &= _floats(rows["e2e_ms"]) <= bounds["e2e"]
        if "itl" in bounds:
            good &= _floats(rows["tpot_ms"]) <= bounds["itl"]
    return good


COLUMN = {"ttft": "ttft_ms", "e2e": "e2e_ms", "itl": "tpot_ms"}


def judge(e: Expr, rows: dict[str, np.ndarray], exprs: Sequence[Expr] = (), *, level: float = stats.LEVEL,
          slo: dict[str, float] | None = None) -> GateResult:
    """One absolute expression on the per-request rows of its scope (columns of gate_rows.sql)."""
    if e.metric in LATENCY:
        v = _floats(rows[COLUMN[e.metric]])
        v = np.sort(v[~np.isnan(v)])
        n, need = len(v), stats.needed(e.quantile)
        if n < need:
            return _insufficient(e, n, f"{n:,} requests with {e.metric.upper()}; P{_pct_text(e.quantile)} needs {need:,}")
        observed = float(np.quantile(v, e.quantile))
        interval = stats.quantile_interval(v, e.quantile, level)
    else:
        n = len(rows["failed"])
        if n < stats.MIN_TAIL:
            return _insufficient(e, n, f"{n:,} requests; a rate needs {stats.MIN_TAIL}")
        if e.metric == "error_rate":
            k = int(np.asarray(rows["failed"], dtype=bool).sum())
        else:
            k = int(good_mask(rows, goodput_bounds(exprs, e.scope, slo)).sum())
        observed = k / n
        interval = stats.wilson_interval(k, n, level)
    passed = e.holds(observed)
    certain = all(e.holds(x) == passed for x in interval)
    r = GateResult(e, passed, observed, interval, n=n, outcome=PASS if passed else FAIL, certain=certain)
    lo, hi = interval
    bounds = ""
    if e.metric == "goodput":
        b = goodput_bounds(exprs, e.scope, slo)
        bounds = " (good: not failed" + "".join(f", {k} <= {format_value(k, x)}" for k, x in b.items()) + ")"
    r.message = (f"{e.text}: {e.figure}{e.scope_text} {format_value(e.metric, observed)} "
                 f"[{format_value(e.metric, lo)}, {format_value(e.metric, hi)}] over {n:,} requests{bounds}: "
                 + ("passes" if passed else f"fails ({e.op} {e.threshold_text()} does not hold)"))
    return r


def _insufficient(e: Expr, n: int, why: str) -> GateResult:
    return GateResult(e, False, None, None, n=n, outcome=INSUFFICIENT,
                      message=f"{e.text}: {e.figure}{e.scope_text}: insufficient data ({why}): does not pass")
