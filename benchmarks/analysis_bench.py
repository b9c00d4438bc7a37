"""Benchmark: `shadowreplay analyze`, `analyze anomalies` and `compare` on ten (or a hundred)
million generated requests.

    .venv/bin/python benchmarks/analysis_bench.py [--rows 10000000] [--runs 3] [--data DIR]
        [--commands analyze,anomalies,compare,exact]

Generates (once, cached in DIR/rows-N, default /work/bench-data, an hour of traffic at a time so
memory stays bounded at any N) three weeks of synthetic traffic with a planted Wednesday-14:00
anomaly, written with shadowreplay.dataset.write_table into the usual hourly partitions, sorted
by ts_start (one row group per hourly file, zstd). Then runs each command as a subprocess RUNS
times and reports the median wall time, the median CPU time (user + system, all threads) and
the peak resident memory of the command (ru_maxrss of that child, from wait4). Prints a Markdown table; docs/bench/analysis.md holds a run.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _synth():
    """tests/analysis_synth.py, the generator the analysis tests use (loaded by its path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("analysis_synth", REPO / "tests" / "analysis_synth.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def generate(root: Path, rows: int) -> None:
    synth = _synth()
    PlantedAnomaly, SynthSpec, write_recording = synth.PlantedAnomaly, synth.SynthSpec, synth.write_recording

    rate = rows / (3 * 7 * 86400)
    spec = SynthSpec(periods=3, n_rows=rows, itl_lists=False, prefix_groups=1000, seed=42,
                     anomaly=PlantedAnomaly(batch_rate_per_s=rate * 0.5))
    t = time.perf_counter()
    # Generated and written an hour at a time (bounded memory at any --rows); one hourly file
    # holds rows/504 rows: one row group each up to 1 M.
    write_recording(root, spec, row_group_size=1 << 20, chunk_s=3600.0)
    (root / ".complete").write_text(str(rows))
    print(f"generated {rows:,} rows in {time.perf_counter() - t:.0f} s into {root}", file=sys.stderr)


def measure(argv: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MiB, stdout) of one run of a command."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = "", ""
    # wait4 gives this child's own rusage (ru_maxrss in KiB on Linux).
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {err.strip()[-500:]}")
    return dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", type=Path, default=Path("/work/bench-data"), help="where generated datasets are cached (default /work/bench-data)")
    ap.add_argument("--commands", default="analyze,anomalies,compare", help="which of analyze, anomalies, compare, exact to run (default the first three; exact: both analyses with --exact)")
    ap.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    ap.add_argument("--memory-limit", help="DuckDB memory limit passed to the commands")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--save-json", type=Path, help="write each command's last --json output to DIR/<rows>-<command>.json")
    args = ap.parse_args()
    root = args.data / f"rows-{args.rows}"
    if not (root / ".complete").exists():
        generate(root, args.rows)
    if args.generate_only:
        return 0
    exe = str(REPO / ".venv" / "bin" / "shadowreplay")
    extra = (["--threads", str(args.threads)] if args.threads else []) + (["--memory-limit", args.memory_limit] if args.memory_limit else [])
    cases = {
        "analyze": [exe, "analyze", str(root), "--slo", "ttft=500ms,e2e=10s", "--json", *extra],
        "analyze anomalies": [exe, "analyze", "anomalies", str(root), "--json", *extra],
        # every figure with its bootstrap interval, overall, per slot and per client, both sides 10 M rows
        "compare (intervals)": [exe, "compare", str(root), str(root), "--json"],
        "analyze --exact": [exe, "analyze", str(root), "--slo", "ttft=500ms,e2e=10s", "--json", "--exact", *extra],
        "analyze anomalies --exact": [exe, "analyze", "anomalies", str(root), "--json", "--exact", *extra],
    }
    wanted = {"analyze": ["analyze"], "anomalies": ["analyze anomalies"], "compare": ["compare (intervals)"],
              "exact": ["analyze --exact", "analyze anomalies --exact"]}
    pick = [c for w in args.commands.split(",") for c in wanted[w.strip()]]
    cases = {k: v for k, v in cases.items() if k in pick}
    files = sum(1 for _ in (root / "requests").rglob("*.parquet"))
    size = sum(p.stat().st_size for p in (root / "requests").rglob("*.parquet")) / 2**20
    load0 = os.getloadavg()[0]
    print("| command | rows | runs | median wall s | min s | max s | median CPU s | peak RSS MiB (max) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, argv in cases.items():
        secs, cpus, mems = [], [], []
        for _ in range(args.runs):
            s, c, m, out = measure(argv)
            secs.append(s)
            cpus.append(c)
            mems.append(m)
        if args.save_json:
            args.save_json.mkdir(parents=True, exist_ok=True)
            (args.save_json / f"{args.rows}-{name.replace(' ', '_').replace('(', '').replace(')', '')}.json").write_text(out)
        if name.startswith("analyze anomalies"):
            import json

            found = [a["label"] for a in json.loads(out)["anomalies"]]
            print(f"<!-- anomalies found: {found} -->")
        print(f"| `{name}` | {args.rows:,} | {args.runs} | {statistics.median(secs):.2f} | {min(secs):.2f} | {max(secs):.2f} | {statistics.median(cpus):.2f} | {max(mems):.0f} |")
    print(f"\ndataset: {files} Parquet files, {size:.0f} MiB; machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; python {platform.python_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
