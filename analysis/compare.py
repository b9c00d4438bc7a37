"""`shadowreplay compare A B`: each figure of B against A (overall, per time slot, per client, and
for a --where subset) with a 95 % bootstrap interval of the ratio and a verdict (better, worse,
no detectable difference, too few requests); with `--aa X Y`, the same figures for an A/A pair
(two runs of one setup) as the noise floor beside each verdict; and fidelity (request-by-request
agreement) when both sides ran the same requests. A side that is a repeated replay (run-NN/
folders) is pooled, and its runs are resampled as wholes (analysis/stats.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from shadowreplay.dataset import run_dirs
from shadowreplay.errors import ConfigError, DatasetError
from shadowreplay.schema import REPLAY_RESULTS, REQUESTS
from shadowreplay.sqlfiles import identifier

from . import fmt, stats
from . import gates as gate_rules
from .expr import Expr
from .session import (
    choose_table, connect, find_sources, first_line, has_column_data, query, query_arrays, register_lat, register_views, scalar,
    sql_text,
)
from .units import format_duration

NICE_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)
# (label, metric, quantile): every latency figure compared overall; GROUP_FIGURES per slot,
# client and subset.
LATENCY = (("TTFT P50", "ttft", 0.5), ("TTFT P95", "ttft", 0.95), ("TTFT P99", "ttft", 0.99),
           ("E2E P50", "e2e", 0.5), ("E2E P95", "e2e", 0.95), ("E2E P99", "e2e", 0.99), ("ITL P99", "itl", 0.99))
SHARES = (("error rate", "failed", True), ("goodput share", "good", False))  # (label, count, lower is better)
# The lat columns compare's queries read; a side keeps these in memory, and those its --where names,
# and `rid`, a 64-bit hash of request_id, which fidelity joins on (a string join of every request
# of both sides costs about twice as much; two ids in ten million share a hash with odds ~1e-6).
NEEDED = ("run", "t", "client_id", "model", "failed", "ttft_ms", "e2e_ms", "tpot_mean_ms", "completion_tokens",
          "send_lag_ms")
GROUP_FIGURES = ("TTFT P50", "TTFT P95", "TTFT P99", "E2E P50", "E2E P95", "E2E P99", "goodput share")


def _nice_bucket(span_s: float, slots: int = 12) -> float:
    want = max(span_s / slots, 1)
    return next((n for n in NICE_S if n >= want), NICE_S[-1])


@dataclass
class Side:
    path: str
    schema: str
    table: str = ""
    sources: str = ""
    runs: int = 1
    requests: int = 0
    hists: dict[tuple[str, str, str], stats.Hist] = field(default_factory=dict)  # (grp, key, metric)
    counts: dict[tuple[str, str], dict[str, np.ndarray]] = field(default_factory=dict)  # (grp, key) -> per run
    send_lag: dict[str, Any] | None = None
    has_ttft: bool = True

    def describe(self) -> dict[str, Any]:
        return {"path": self.path, "table": self.table, "sources": self.sources, "requests": self.requests, "runs": self.runs}


def _kept(columns: list[str], where: str | None) -> list[str]:
    """The columns to keep in memory: what the queries read and every one the predicate names
    (a word of it that is a column's name: a superset, never a miss)."""
    named = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_$]*", where or "")}
    return ["run"] + [c for c in columns if c != "run" and (c in NEEDED or c.lower() in named)]


def _register(con, path: str, schema: str, where: str | None) -> Side:
    """Views of every run of `path` in schemas SCHEMA_0, SCHEMA_1, ...; SCHEMA.lat is their union
    with a `run` column, read once into memory."""
    side = Side(path=path, schema=schema)
    runs = run_dirs(path)
    side.runs = len(runs)
    parts, tables, descs = [], set(), []
    for i, d in enumerate(runs):
        src = find_sources([d])
        # A replay compared with its recording: the replay's table is replay_results, the other
        # side's is requests. Same-kind sides compare like with like.
        table = choose_table(src, None)
        tables.add(table)
        descs.append(src.describe())
        register_views(con, src, f"{schema}_{i}")
        register_lat(con, src, table, f"{schema}_{i}")
        parts.append(f"SELECT *, {i} AS run FROM {schema}_{i}.lat")
    if len(tables) > 1:
        raise ConfigError(f"{path}: its runs mix tables ({', '.join(sorted(tables))})")
    side.table = tables.pop()
    side.sources = descs[0] if len(descs) == 1 else f"{len(descs)} runs, e.g. {descs[0]}"
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    # Every run's Parquet read once, into memory, with the columns the queries and a --where use.
    try:
        con.execute("SET preserve_insertion_order = false")
        cols = _kept(con.table(f"{schema}_0.lat").columns, where)
        con.execute(f"CREATE OR REPLACE TABLE {schema}.lat_mat AS SELECT {', '.join(map(identifier, cols))}, hash(request_id) AS rid FROM ("
                    + " UNION ALL ".join(parts) + ")")
    except duckdb.Error as e:
        raise DatasetError(f"cannot read {path}: {first_line(e)}") from None
    con.execute(f"CREATE OR REPLACE VIEW {schema}.lat AS SELECT * FROM {schema}.lat_mat")
    side.requests = scalar(con, f"SELECT count(*) FROM {schema}.lat")
    return side


def _load(con, side: Side, params: dict[str, Any], where: str | None) -> None:
    """The side's histograms and counts for every group."""
    con.execute(f"SET schema = '{side.schema}'")
    try:
        # the --where predicate parsed as one expression (no SQL pasted): in_subset per request
        pred = duckdb.SQLExpression(where) if where else duckdb.ConstantExpression(True)
        in_subset = duckdb.CoalesceOperator(pred, duckdb.ConstantExpression(False)).alias("in_subset")
        con.table("lat").select(duckdb.StarExpression(), in_subset).create_view("lat_subset", replace=True)
        con.execute(sql_text("compare_starts"))
        con.execute(sql_text("compare_lat"))
        side.has_ttft = has_column_data(con, "ttft_ms")
    except duckdb.Error as e:
        if where:
            raise ConfigError(f"--where: {first_line(e)} (a DuckDB predicate over the lat view's columns, "
                              "e.g. \"prompt_tokens < 500 AND client_id <> 'c_x'\")") from None
        raise DatasetError(f"{side.path}: {first_line(e)}") from None
    finally:
        con.execute("SET schema = 'main'")
    run_ids = list(range(side.runs))
    b = query_arrays(con, "compare_bins", params | {"log_step": stats.LOG_STEP}, schema=side.schema)
    for grp, key, m in _group_masks(b, bool(where)):
        for metric in ("ttft", "e2e", "itl"):
            mm = m & (b["metric"] == metric)
            if mm.any():
                side.hists[(grp, key, metric)] = stats.Hist.from_arrays(b["run"][mm], b["bin"][mm], b["n"][mm], runs=run_ids)
    c = query_arrays(con, "compare_counts", params, schema=side.schema)
    for grp, key, m in _group_masks(c, bool(where)):
        per_run = {k: np.zeros(side.runs) for k in ("requests", "failed", "good", "tokens", "span_s")}
        runs = c["run"][m].astype(int)
        for k in ("requests", "failed", "good", "tokens"):
            np.add.at(per_run[k], runs, c[k][m].astype(float))
        for r in np.unique(runs):  # a group's span: its first start to its last end, per run
            rm = m & (c["run"] == r)
            per_run["span_s"][r] = max(float(np.max(c["t_last"][rm]) - np.min(c["t_first"][rm])), 1e-3)
        side.counts[(grp, key)] = per_run
    side.send_lag = query(con, "send_lag", schema=side.schema)[0]


def _group_masks(a: dict[str, np.ndarray], subset: bool):
    """(group, key, row mask) of every group reported: the whole run, each slot, client and model,
    and the --where subset, from rows at the finest grain (run, slot, client, model, in_subset)."""
    n = len(a["run"])
    yield "all", "", np.ones(n, dtype=bool)
    slot = a["slot"]
    for k in np.unique(slot):
        yield "slot", str(int(k)), slot == k
    client = np.asarray(a["client"], dtype=object)
    for k in sorted(set(client.tolist())):
        yield "client", k, client == k
    model = np.asarray(a["model"], dtype=object)
    for k in sorted(set(model.tolist()) - {None}):  # NULL unless a gate is scoped to a model
        yield "model", k, model == k
    if subset:
        yield "subset", "", np.asarray(a["in_subset"], dtype=bool)


def _figure(sa: Side, sb: Side, grp: str, key: str, label: str, reps: int, level: float, floor: dict | None) -> stats.Estimate:
    fl = floor.get((grp, key, label)) if floor else None
    lat = next((x for x in LATENCY if x[0] == label), None)
    if lat:
        _, metric, q = lat
        empty = stats.Hist(np.zeros(0, np.int64), np.zeros((1, 0)))
        ha = sa.hists.get((grp, key, metric), empty)
        hb = sb.hists.get((grp, key, metric), empty)
        ra = stats.quantile_replicates(ha, q, reps, stats.rng_for("a", grp, key, label))
        rb = stats.quantile_replicates(hb, q, reps, stats.rng_for("b", grp, key, label))
        return stats.estimate(ra, rb, level=level, needs=stats.needed(q), floor=fl)
    _, col, lower = next(x for x in SHARES if x[0] == label)
    reps_ = []
    for name, s in (("a", sa), ("b", sb)):
        c = s.counts.get((grp, key))
        if c is None:
            reps_.append(stats.Replicates(None, np.full(reps, np.nan), 0))
        else:
            reps_.append(stats.share_replicates(c[col], c["requests"], reps, stats.rng_for(name, grp, key, label)))
    return stats.estimate(reps_[0], reps_[1], lower_is_better=lower, level=level, needs=stats.MIN_TAIL, floor=fl)


def _row(label: str, e: stats.Estimate) -> dict[str, Any]:
    return {"metric": label} | e.as_dict()


def _groups(side: Side, grp: str) -> list[str]:
    return sorted({k[1] for k in side.counts if k[0] == grp}, key=lambda k: (len(k), k))


def _tokens_per_s(s: Side) -> float | None:
    c = s.counts.get(("all", ""))
    if c is None:
        return None
    ok = c["span_s"] > 0
    return float(np.mean(c["tokens"][ok] / c["span_s"][ok])) if ok.any() else None


def _figures(sa: Side, sb: Side, reps: int, level: float, floor: dict | None, bucket: float) -> dict[str, Any]:
    overall = [_row(lab + " ms", _figure(sa, sb, "all", "", lab, reps, level, floor)) for lab, _, _ in LATENCY]
    overall += [_row(lab, _figure(sa, sb, "all", "", lab, reps, level, floor)) for lab, _, _ in SHARES]
    ca, cb = sa.counts.get(("all", "")), sb.counts.get(("all", ""))
    na = int(ca["requests"].sum()) if ca is not None else 0
    nb = int(cb["requests"].sum()) if cb is not None else 0
    overall.append({"metric": "requests", "a": na, "b": nb, "delta": nb - na, "ratio": nb / na if na else None, "verdict": None})
    ta, tb = _tokens_per_s(sa), _tokens_per_s(sb)
    overall.append({"metric": "output tok/s", "a": ta, "b": tb, "delta": None if ta is None or tb is None else tb - ta,
                    "ratio": tb / ta if ta and tb is not None else None, "verdict": None})

    def group(grp: str) -> list[dict[str, Any]]:
        out = []
        for key in sorted(set(_groups(sa, grp)) | set(_groups(sb, grp)), key=lambda k: (grp == "slot" and int(k), k)):
            n = [int(s.counts[(grp, key)]["requests"].sum()) if (grp, key) in s.counts else 0 for s in (sa, sb)]
            figs = {lab: _row(lab, _figure(sa, sb, grp, key, lab, reps, level, floor)) for lab in GROUP_FIGURES}
            row = {"key": key, "requests": n, "figures": figs}
            if grp == "slot":
                row["slot"], row["from_s"] = int(key), int(key) * bucket
            out.append(row)
        return out

    return {"overall": overall, "slots": group("slot"), "clients": group("client"), "models": group("model"),
            "subset": group("subset")}


def _floor_of(res: dict[str, Any]) -> dict[tuple[str, str, str], float]:
    """Figure -> the A/A pair's ratio, the noise floor beside each verdict."""
    out = {}
    for r in res["overall"]:
        if r.get("ratio") is not None and r.get("verdict") is not None:
            out[("all", "", r["metric"].removesuffix(" ms"))] = r["ratio"]
    for grp, name in (("slot", "slots"), ("client", "clients"), ("model", "models"), ("subset", "subset")):
        for g in res[name]:
            for lab, f in g["figures"].items():
                if f.get("ratio") is not None:
                    out[(grp, g["key"], lab)] = f["ratio"]
    return out


def compute(a: str, b: str, slo: dict[str, float], bucket_s: float | None, *, aa: tuple[str, str] | None = None,
            where: str | None = None, warmup_s: float = 0.0, level: float = stats.LEVEL, reps: int = stats.REPLICATES,
            gates: Sequence[Expr] = ()) -> dict[str, Any]:
    """Every figure of B against A. `gates` (compare gates: analysis/gates.py) are judged on the
    same data; their GateResults are under "gates" (empty without)."""
    if not 0.5 <= level < 1:
        raise ConfigError("--level must be between 0.5 and 1 (e.g. 0.95)")
    con = connect(warmup_s=warmup_s)
    paths = [a, b] + (list(aa) if aa else [])
    sides: dict[str, Side] = {}
    for i, p in enumerate(paths):
        if p not in sides:
            sides[p] = _register(con, p, f"s{i}", where)
    sa, sb = sides[a], sides[b]
    notes: list[str] = []
    for s in sides.values():
        if s.requests == 0:
            notes.append(f"{s.path}: {s.table} holds no rows" + (" after the warm-up" if warmup_s else ""))
    params = {f"slo_{k}_ms": slo.get(k) for k in ("ttft", "e2e", "itl")}
    span = scalar(con, f"SELECT max(epoch(t)) - min(epoch(t)) FROM {sa.schema}.lat WHERE run = 0") or 0.0
    bucket = bucket_s or _nice_bucket(span)
    params["cmp_bucket_s"] = bucket
    params["cmp_by_model"] = any(k == "model" for g in gates for k, _ in g.scope)  # a finer grain only when asked
    for s in sides.values():
        _load(con, s, params, where)
    for s in (sa, sb):
        if s.requests and not s.has_ttft:
            notes.append(f"{s.path}: no TTFT (not streamed)")
    floor = None
    aa_res = None
    if aa:
        aa_res = _figures(sides[aa[0]], sides[aa[1]], reps, level, None, bucket)
        floor = _floor_of(aa_res)
    figs = _figures(sa, sb, reps, level, floor, bucket)
    gate_results = gate_rules.judge_all(gates, sa, sb, aa=(sides[aa[0]], sides[aa[1]]) if aa else None, reps=reps,
                                        level=level, slo=bool(slo))
    lag = {n: _lag(s) for n, s in (("a", sa), ("b", sb)) if s.send_lag and s.send_lag["requests"]}
    con.execute(f"CREATE OR REPLACE VIEW fid_a AS SELECT * FROM {sa.schema}.lat WHERE run = 0")
    con.execute(f"CREATE OR REPLACE VIEW fid_b AS SELECT * FROM {sb.schema}.lat WHERE run = 0")
    fid = query(con, "fidelity")[0]
    fidelity = None
    if fid["matched"]:
        fidelity = dict(fid)
        fidelity["relation"] = _relation(sa, sb)
        # judged on the highest E2E percentile the data can carry
        rows = {r["metric"]: r for r in figs["overall"]}
        top = next((rows[m] for m in ("E2E P99 ms", "E2E P95 ms", "E2E P50 ms") if rows[m]["verdict"] != stats.TOO_FEW), rows["E2E P99 ms"])
        fidelity["verdict"] = _fidelity_verdict(top, fid, aa is not None)
        fidelity["send_lag_ms"] = lag
    else:
        notes.append("A and B share no request_id: no request-by-request fidelity (different traffic)")
    if not aa:
        notes.append("no A/A pair given (--aa X Y: two runs of one setup): verdicts account for request-to-request "
                     "noise only" + (", and run-to-run noise through the repeats" if max(sa.runs, sb.runs) > 1 else ""))
    return {
        "a": sa.describe(), "b": sb.describe(), "aa": [sides[p].describe() for p in aa] if aa else None,
        "slo_ms": slo, "bucket_s": bucket, "warmup_s": warmup_s, "where": where, "level": level, "replicates": reps,
        **figs, "aa_figures": aa_res, "send_lag_ms": lag, "fidelity": fidelity, "notes": notes, "gates": gate_results,
    }  # fmt: skip


def _lag(s: Side) -> dict[str, Any]:
    q = s.send_lag["lag_q"] or [None, None]
    return {"p50": q[0], "p99": q[1], "max": s.send_lag["lag_max"]}


def _relation(sa: Side, sb: Side) -> str:
    kinds = {sa.table, sb.table}
    if kinds == {REQUESTS, REPLAY_RESULTS}:
        return "replay vs its recording"
    if kinds == {REPLAY_RESULTS}:
        return "two replays of the same requests"
    return "two recordings sharing request ids"


def _fidelity_verdict(fig: dict[str, Any], f: dict[str, Any], have_floor: bool) -> str:
    """Judged by an E2E percentile figure: its interval against 1, and against the A/A floor when
    given."""
    c = f["corr_e2e"]
    r = f", per-request r={c:.2f}" if c is not None else ""
    v, ratio, ci = fig["verdict"], fig["ratio"], fig["ratio_ci"]
    name = fig["metric"].removesuffix(" ms")
    if v in (stats.TOO_FEW, None) or ratio is None:
        return f"too few requests to judge E2E{r}"
    spread = f"{name} {ratio:.2f}x [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{name} {ratio:.2f}x"
    if v == stats.SAME:
        return f"no detectable difference: {spread}{r}"
    if v == stats.NOISE:
        return f"within the A/A noise floor ({fig['aa_ratio']:.2f}x): {spread}{r}"
    return f"differs{' beyond the A/A noise floor (' + format(fig['aa_ratio'], '.2f') + 'x)' if have_floor else ''}: {spread}{r}"


# ---------------------------------------------------------------------------------- text output
def render(res: dict[str, Any]) -> str:
    out = [f"A: {res['a']['path']} ({res['a']['table']}, {res['a']['requests']:,} requests{_runs(res['a'])})",
           f"B: {res['b']['path']} ({res['b']['table']}, {res['b']['requests']:,} requests{_runs(res['b'])})"]
    if res["aa"]:
        out.append(f"A/A noise floor: {res['aa'][0]['path']} vs {res['aa'][1]['path']}")
    if res["slo_ms"]:
        out.append("SLO: " + ", ".join(f"{k} <= {v:g} ms" for k, v in res["slo_ms"].items()))
    if res["warmup_s"]:
        out.append(f"warm-up: the first {format_duration(res['warmup_s'])} of each run left out")
    lvl = f"{100 * res['level']:g}% CI"
    aa = res["aa"] is not None
    head = ["overall", "A", "B", "B - A", "B / A", lvl] + (["A/A"] if aa else []) + ["verdict"]
    rows = [_fig_cells(r["metric"], r, aa) for r in res["overall"]]
    out += ["", fmt.table(head, rows)]
    if res["send_lag_ms"]:
        out.append("send lag (the replayer's own timing) " + "; ".join(
            f"{k.upper()} p50 {fmt.cell(v['p50'], 2)} / p99 {fmt.cell(v['p99'], 2)} / max {fmt.cell(v['max'], 1)} ms" for k, v in res["send_lag_ms"].items()))
    for name, title, first in (("subset", f"Subset --where {res['where']}", "subset"), ("slots", f"Per slot of {format_duration(res['bucket_s'])} from each run's start", "slot"),
                               ("clients", "Per client", "client")):
        groups = res[name]
        if not groups or (name == "subset" and not res["where"]):
            continue
        head = [first, "req A", "req B"] + [h for lab in ("TTFT P99", "E2E P99") for h in (f"{lab} A", "B", "B / A", lvl, "verdict")]
        rows = []
        for g in groups:
            label = f"+{format_duration(g['from_s']) if g['from_s'] else '0s'}" if name == "slots" else (g["key"] or "all")
            cells = [label, fmt.cell(g["requests"][0]), fmt.cell(g["requests"][1])]
            for lab in ("TTFT P99", "E2E P99"):
                f = g["figures"][lab]
                c = _fig_cells(lab + " ms", f, False)
                cells += [c[1], c[2], c[4], c[5], c[6]]
            rows.append(cells)
        out += ["", fmt.table(head, rows, title + " (every figure of every group is in --json)")]
    f = res["fidelity"]
    if f:
        out += ["", f"Fidelity ({f['relation']}): {f['verdict']}"]
        rows = [["matched requests", f"{f['matched']:,} of {f['a_requests']:,} / {f['b_requests']:,}"],
                ["same outcome (ok/failed)", fmt.pct(f["outcome_agreement"])],
                ["median per-request E2E ratio", _x(f["median_ratio_e2e"])],
                ["per-request E2E correlation", fmt.cell(f["corr_e2e"], 3)], ["per-request TTFT correlation", fmt.cell(f["corr_ttft"], 3)]]
        out.append(fmt.table(["", "value"], rows))
    for n in res["notes"]:
        out.append(f"note: {n}")
    return "\n".join(out)


def _runs(side: dict[str, Any]) -> str:
    return f" in {side['runs']} runs" if side.get("runs", 1) > 1 else ""


def _fig_cells(metric: str, r: dict[str, Any], aa: bool) -> list[str]:
    v = r.get("verdict")
    if v == stats.TOO_FEW and r.get("needs"):
        n = min(r["n"]) if r.get("n") else 0
        verdict = f"too few requests ({n:,}; {metric.split()[1] if ' P' in metric else metric} needs {r['needs']:,})"
        a = b = "-"
    else:
        verdict = v or ""
        a, b = _v(metric, r["a"]), _v(metric, r["b"])
    ci = r.get("ratio_ci")
    ratio = "-" if r.get("ratio") is None or v == stats.TOO_FEW else f"{r['ratio']:.2f}x"
    cells = [metric, a, b, "-" if v == stats.TOO_FEW else _d(metric, r["delta"]), ratio,
             f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci and v != stats.TOO_FEW else "-"]
    if aa:
        cells.append("-" if r.get("aa_ratio") is None else f"{r['aa_ratio']:.2f}x")
    return cells + [verdict]


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


def sides_for_cli(a: str, b: str, aa: list[str] | None) -> tuple[str, str] | None:
    """--aa X Y checked: two existing datasets."""
    if not aa:
        return None
    for p in aa:
        if not Path(p).exists():
            raise ConfigError(f"--aa: {p}: no such file or folder")
    return aa[0], aa[1]
