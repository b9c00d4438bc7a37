"""Registers `sql`, `analyze` (and `analyze anomalies`), `compare` and `report`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shadowreplay.durations import add_duration_flag, format_duration
from shadowreplay.errors import ConfigError

from . import sketch

DEFAULT_WINDOW = "5s"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sql",
        help="DuckDB session over datasets (views requests, replay_results, engine_metrics, replayed, lat)",
        description="Opens DuckDB with views over the datasets under PATH... Without -c/-f, reads "
        "statements from stdin (end each with ';'; .tables lists views; .quit leaves).",
    )
    _add_paths(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("-c", "--command", dest="query", help="run QUERY, print its result, exit")
    g.add_argument("-f", "--file", help="run the statements of FILE, print the last result, exit")
    p.add_argument("--csv", action="store_true", help="print results as CSV")
    p.add_argument("--max-rows", type=int, default=200, help="rows printed per result (default 200)")
    p.set_defaults(func=_cmd_sql)

    a = sub.add_parser(
        "analyze",
        help="latency percentiles, goodput, SLO windows (`analyze anomalies` for periodic anomalies)",
        description="Percentiles, errors, goodput, windowed SLO compliance and prefix sharing of the datasets. "
        "For periodic tail-latency anomalies: shadowreplay analyze anomalies PATH...",
    )
    _add_paths(a)
    a.add_argument("--slo", help="SLOs, e.g. ttft=500ms,e2e=5s,itl=50ms (each with its unit)")
    add_duration_flag(a, "--window", default=DEFAULT_WINDOW, bare="s", help=f"window of the SLO compliance (default {DEFAULT_WINDOW})")
    a.add_argument("--assert", dest="asserts", action="append", metavar="EXPR", default=[],
                   help="an absolute threshold the data must meet, e.g. ttft_p99<=500ms, error_rate<=1%%, goodput>=99%% "
                        "(repeatable; grammar in docs/analysis.md); exit status 3 when one fails")
    add_junit_option(a)
    _dataset_options(a)
    a.set_defaults(func=_cmd_analyze)

    an = sub.add_parser(
        "analyze anomalies",
        help="periodic tail-latency anomalies and the clients responsible",
        description="Folds time onto --period/--bucket and reports the slots whose TP99 (TTFT, E2E, ITL) stands out "
        "period after period, how strongly and how consistently, and who sent their traffic.",
    )
    _add_paths(an)
    add_anomaly_options(an, period="1w", bucket="1h", prefix="")
    _dataset_options(an)
    an.set_defaults(func=_cmd_anomalies)

    c = sub.add_parser(
        "compare",
        help="two replays (or a replay and its recording) side by side, with deltas and fidelity",
        description="Compares A and B: percentiles and goodput with deltas (B - A), overall and per time slot. "
        "When one side is the recording of the other (or both replay the same recording), reports fidelity.",
    )
    c.add_argument("a", metavar="A", help="baseline dataset (a replay or a recording)")
    c.add_argument("b", metavar="B", help="dataset compared with A")
    c.add_argument("--slo", help="SLOs for goodput, e.g. ttft=500ms,e2e=5s")
    add_duration_flag(c, "--bucket", default="auto", bare="s", auto=True, help="slot size for the per-slot comparison (default auto: about 12 slots)")
    c.add_argument("--aa", nargs=2, metavar=("X", "Y"),
                   help="an A/A pair (two runs of one setup, e.g. two replays into identical shadows): its ratios are "
                        "shown beside every verdict as the noise floor, and a change no larger is not called a change")
    c.add_argument("--where", help="also compare the requests matching this DuckDB predicate over the lat view, "
                                   "e.g. \"prompt_tokens < 500\"")
    c.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    c.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates (default 1000)")
    add_warmup_option(c)
    c.add_argument("--fail-on", dest="fail_on", action="append", metavar="EXPR", default=[],
                   help="a regression gate on B against A: `worse` (any figure confidently worse) or a relative change, "
                        "e.g. ttft_p99>+10%% (the lower bound of the ratio's interval above 1.10), per @client=ID or "
                        "@model=NAME (repeatable; grammar in docs/analysis.md); exit status 3 when one fails")
    add_junit_option(c)
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_cmd_compare)

    r = sub.add_parser("report", help="one self-contained HTML page of plots and the anomaly table")
    _add_paths(r)
    r.add_argument("--out", required=True, help="HTML file to write")
    r.add_argument("--table", choices=("requests", "replay_results"))
    r.add_argument("--slo", help="SLOs shown in the summary, e.g. ttft=500ms,e2e=5s")
    add_anomaly_options(r, period="auto", bucket="auto", prefix="",
                        period_help="fold period (default auto: 1w when the data spans 2+ weeks, 1d for 2+ days, 1h for 2+ hours, else 1m)",
                        bucket_help="slot size within the period (default auto: 1h for 1w/1d folds, else what auto picks with the period (5m for 1h, 10s for 1m) or period/12)")
    r.add_argument("--title", help="page title")
    r.set_defaults(func=_cmd_report)


def _add_paths(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="dataset folders (a replay and its recording may be separate)")


def _dataset_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--table", choices=("requests", "replay_results"), help="what to analyze (default: replay_results if present, else requests)")
    add_warmup_option(p)
    p.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                   help="where the SQL runs: DuckDB in this process (default) or Spark (the SparkSession of your environment)")
    p.add_argument("--spark-master", help="with --engine spark: the master URL (default: your Spark configuration, else local[*])")
    p.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    p.add_argument("--memory-limit", help="DuckDB memory limit, e.g. 3GB")
    p.add_argument("--exact", action="store_true",
                   help=f"exact latency percentiles in every group (default: a sketch within {100 * sketch.ALPHA:g}%% "
                        f"in groups over {sketch.EXACT_MAX:,} values; exact needs memory for every value)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_junit_option(p: argparse.ArgumentParser) -> None:
    """--junit FILE: the gates as JUnit XML (analyze, compare, capacity)."""
    p.add_argument("--junit", metavar="FILE", help="write the gates as JUnit XML (one testcase per gate) to FILE")


def finish_gates(command: str, results, junit: str | None) -> None:
    """After the output is printed: writes --junit FILE, and raises GateFailed (exit status 3)
    when a gate did not pass. The one ending of every command with gates."""
    from shadowreplay.errors import GateFailed

    from .junit import write_junit

    if junit:
        write_junit(junit, command, results)
    bad = [r for r in results if not r.passed]
    if bad:
        raise GateFailed(f"{len(bad)} of {len(results)} gate{'s' if len(results) > 1 else ''} failed: "
                         + "; ".join(r.short() for r in bad))


def add_warmup_option(p: argparse.ArgumentParser) -> None:
    add_duration_flag(p, "--warmup", default="0s", bare="s", zero=True,
                      help="leave the first DURATION of each run out of every figure (e.g. 2m; default 0s)")


def add_anomaly_options(p: argparse.ArgumentParser, *, period: str, bucket: str, prefix: str,
                        period_help: str | None = None, bucket_help: str | None = None) -> None:
    """The anomaly-search options, shared by `analyze anomalies` and `report` (same names, same
    defaults; `report` alone may leave the fold to `auto`)."""
    add_duration_flag(p, "--period", default=period, bare="s", auto=period == "auto",
                      help=period_help or f"{prefix}period to fold onto (default {period})")
    add_duration_flag(p, "--bucket", default=bucket, bare="s", auto=bucket == "auto",
                      help=bucket_help or f"{prefix}slot size within the period (default {bucket})")
    p.add_argument("--metric", choices=("all", "ttft", "e2e", "itl"), default="all",
                   help=f"{prefix}latency judged (default all: TTFT, E2E and ITL together)")
    p.add_argument("--tp99-ratio", type=float, default=1.5,
                   help=f"{prefix}a cell is raised when its TP99 / the median cell's is at least this (default 1.5)")
    p.add_argument("--min-z", type=float, default=3.5,
                   help=f"{prefix}a slot raised this strongly (median robust z of its raised cells) is reported (default 3.5)")
    p.add_argument("--alpha", type=float, default=0.01,
                   help=f"{prefix}...and so is one raised too consistently for chance: at most this chance of a false finding (default 0.01)")
    p.add_argument("--prompt-ratio", type=float, default=None, help=f"{prefix}also require mean prompt / typical >= this")
    p.add_argument("--min-periods", type=int, default=2, help=f"{prefix}periods a slot must be anomalous in (default 2)")
    p.add_argument("--min-share", type=float, default=0.5, help=f"{prefix}...and in at least this share of the periods seen (default 0.5)")
    p.add_argument("--min-requests", type=int, default=10, help=f"{prefix}cells with fewer requests are not judged (default 10)")
    p.add_argument("--long-factor", type=float, default=2.0, help=f"{prefix}a long prompt is >= this x the typical mean (default 2)")
    add_duration_flag(p, "--corr-window", default="10s", bare="s",
                      help=f"{prefix}window for the engine-metrics correlation (default 10s)")


def _cmd_sql(args) -> int:
    from .sqlshell import run

    return run(args.paths, query=args.query, file=args.file, csv=args.csv, max_rows=args.max_rows)


def _anomaly_params(args):
    """AnomalyParams from the shared options. period_s / bucket_s are None where the option is
    `auto` (only `report` allows it: it picks them from the data's span)."""
    from .anomalies import AnomalyParams

    period, bucket = args.period, args.bucket
    if period is not None and bucket is not None and bucket > period:
        raise ConfigError(f"--bucket {format_duration(bucket)} is longer than --period {format_duration(period)}")
    if args.min_periods < 1:
        raise ConfigError("--min-periods must be at least 1")
    return AnomalyParams(
        period_s=period, bucket_s=bucket, metric=args.metric, tp99_ratio=args.tp99_ratio, min_z=args.min_z, alpha=args.alpha, prompt_ratio=args.prompt_ratio,
        min_periods=args.min_periods, min_share=args.min_share, min_requests=args.min_requests, long_factor=args.long_factor,
        corr_window_s=args.corr_window,
    )


def _spark_master(args) -> str | None:
    if args.spark_master and args.engine != "spark":
        raise ConfigError("--spark-master needs --engine spark")
    return args.spark_master


def _cmd_anomalies(args) -> int:
    from . import anomalies as an
    from . import fmt
    from .engine import open_engine

    params = _anomaly_params(args)
    eng, src, table = open_engine(args.engine, list(args.paths), args.table, args.threads, args.memory_limit, args.warmup, _spark_master(args))
    res = an.compute(eng, src, table, params, exact=args.exact)
    print(fmt.to_json(res) if args.json else an.render(res))
    return 0


def _cmd_analyze(args) -> int:
    from . import analyze, fmt
    from .engine import open_engine
    from .units import parse_slo

    from . import expr
    from .engine import DuckDBEngine

    slo = parse_slo(args.slo)
    asserts = expr.parse_all(args.asserts, flag="--assert")  # a malformed one stops here, before any data is read
    if args.junit and not asserts:
        raise ConfigError("--junit needs a gate (--assert EXPR)")
    eng, src, table = open_engine(args.engine, list(args.paths), args.table, args.threads, args.memory_limit, args.warmup, _spark_master(args))
    res = analyze.compute(eng, src, table, slo, args.window, exact=args.exact)
    results = []
    if asserts:
        # on this DuckDB session's `lat`; under Spark, DuckDB reads the same files again
        data = eng.con if isinstance(eng, DuckDBEngine) else list(args.paths)
        results = expr.evaluate(data, asserts, warmup_s=args.warmup, table=table, slo=slo)
        res["gates"] = [r.as_dict() for r in results]
    print(fmt.to_json(res) if args.json else analyze.render(res) + (expr.render(results) if asserts else ""))
    finish_gates("analyze", results, args.junit)
    return 0


def _cmd_compare(args) -> int:
    from . import compare, fmt
    from .units import parse_slo

    from . import expr, gates

    if args.replicates < 100:
        raise ConfigError("--replicates must be at least 100")
    fail_on = expr.parse_all(args.fail_on, allow_relative=True, flag="--fail-on")  # before any data is read
    gates.check(fail_on)
    if args.junit and not fail_on:
        raise ConfigError("--junit needs a gate (--fail-on EXPR)")
    res = compare.compute(args.a, args.b, parse_slo(args.slo), args.bucket, aa=compare.sides_for_cli(args.a, args.b, args.aa),
                          where=args.where, warmup_s=args.warmup, level=args.level, reps=args.replicates, gates=fail_on)
    results = res.pop("gates")
    if fail_on:
        res["gates"] = [r.as_dict() for r in results]
    print(fmt.to_json(res) if args.json else compare.render(res) + (expr.render(results) if fail_on else ""))
    finish_gates("compare", results, args.junit)
    return 0


def _cmd_report(args) -> int:
    from . import report
    from .units import parse_slo

    params = _anomaly_params(args)
    out = report.build(args.paths, Path(args.out), table=args.table, slo=parse_slo(args.slo), params=params, title=args.title)
    print(f"report written to {out}", file=sys.stderr)
    return 0
