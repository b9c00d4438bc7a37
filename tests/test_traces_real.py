"""Imports of the real public traces in ../shared/data/traces, checked against an independent
reader of the source files (csv/json modules), then exported back (round trip)."""

from __future__ import annotations

import json
from collections import Counter

import duckdb
import pyarrow.parquet as pq
import pytest

from shadowreplay.dataset import glob_for
from tests.traces_helpers import cli, quantile_cont, quantiles, read_azure, read_mooncake
from shadowreplay.traces.textsynth import shared_block_share

AZURE = ["AzureLLMInferenceTrace_code_2023.csv", "AzureLLMInferenceTrace_conv_2023.csv"]
MOONCAKE = "mooncake_conversation_trace.jsonl"
START_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z, the default --origin


def requests(out) -> list[dict]:
    t = pq.read_table(out / "requests", columns=["request_id", "ts_start", "prompt_tokens", "completion_tokens",
                                                 "max_tokens", "hash_ids", "source", "kind", "client_id"])
    rows = t.to_pylist()
    for r in rows:
        r["ts_us"] = int(r["ts_start"].timestamp() * 1_000_000) if r["ts_start"] else None
    return rows


@pytest.fixture(scope="module")
def imported(tmp_path_factory, traces_dir):
    """Each real trace imported once, timestamps and lengths only (--no-text)."""
    out = {}
    for name in AZURE:
        d = tmp_path_factory.mktemp(name.split("_")[1])
        cli("import", "azure-llm", str(traces_dir / name), "--out", str(d), "--no-text")
        out[name] = d
    d = tmp_path_factory.mktemp("mooncake")
    p = cli("import", "mooncake", str(traces_dir / MOONCAKE), "--out", str(d), "--no-text")
    out[MOONCAKE] = d
    out["mooncake_stderr"] = p.stderr
    return out


@pytest.mark.parametrize("name", AZURE)
def test_azure_counts_span_and_distributions_match_source(imported, traces_dir, name):
    src = read_azure(traces_dir / name)
    rows = requests(imported[name])
    assert len(rows) == len(src) and len(src) in (8819, 19366)
    assert min(r["ts_us"] for r in rows) == min(s[0] for s in src)
    assert max(r["ts_us"] for r in rows) == max(s[0] for s in src)
    # the same multiset of (time, prompt, output) triples, hence the same distributions
    assert sorted((r["ts_us"], r["prompt_tokens"], r["completion_tokens"]) for r in rows) == sorted(src)
    assert quantiles([r["prompt_tokens"] for r in rows]) == quantiles([s[1] for s in src])
    assert quantiles([r["completion_tokens"] for r in rows]) == quantiles([s[2] for s in src])
    assert all(r["max_tokens"] == r["completion_tokens"] for r in rows)
    assert {r["source"] for r in rows} == {"azure-llm"} and {r["kind"] for r in rows} == {"completion"}
    assert len({r["request_id"] for r in rows}) == len(rows)


@pytest.mark.parametrize("name", AZURE)
def test_azure_duckdb_sanity_on_imported_dataset(imported, traces_dir, name):
    src = read_azure(traces_dir / name)
    con = duckdb.connect()
    n, span_s, sum_p, sum_c, hours = con.execute(
        "SELECT count(*), epoch(max(ts_start)) - epoch(min(ts_start)), sum(prompt_tokens), sum(completion_tokens), "
        "count(DISTINCT hour) FROM read_parquet(?, hive_partitioning = true)", [glob_for(imported[name], "requests")]
    ).fetchone()
    assert n == len(src)
    assert span_s == pytest.approx((max(s[0] for s in src) - min(s[0] for s in src)) / 1e6, abs=1e-6)
    assert 3000 < span_s < 3600  # the README: about one hour
    assert sum_p == sum(s[1] for s in src) and sum_c == sum(s[2] for s in src)
    assert hours == 2  # 18:15-19:14 UTC spans two hour partitions


def test_mooncake_counts_span_distributions_and_block_share(imported, traces_dir):
    src = read_mooncake(traces_dir / MOONCAKE)
    rows = requests(imported[MOONCAKE])
    assert len(rows) == len(src) == 12031
    assert [r["ts_us"] - START_US for r in rows] == [s["timestamp"] * 1000 for s in src]  # time-ordered file
    assert [r["prompt_tokens"] for r in rows] == [s["input_length"] for s in src]
    assert [r["completion_tokens"] for r in rows] == [s["output_length"] for s in src]
    assert [r["hash_ids"] for r in rows] == [s["hash_ids"] for s in src]
    before = shared_block_share([s["hash_ids"] for s in src])
    after = shared_block_share([r["hash_ids"] for r in rows])
    assert after == before and 0.3 < before < 0.5
    assert "timestamps are bunched" in imported["mooncake_stderr"] and "3000 ms" in imported["mooncake_stderr"]
    assert f"{before:.1%} repeat an earlier block" in imported["mooncake_stderr"]


def test_mooncake_round_trip_reproduces_the_file(imported, traces_dir, tmp_path):
    out = tmp_path / "trace.jsonl"
    cli("export", "mooncake", str(imported[MOONCAKE]), "--out", str(out))
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert got == read_mooncake(traces_dir / MOONCAKE)


@pytest.mark.parametrize("name", AZURE)
def test_azure_round_trip_timestamps_and_lengths(imported, traces_dir, tmp_path, name):
    src = sorted(read_azure(traces_dir / name))
    out = tmp_path / "trace.jsonl"
    cli("export", "mooncake", str(imported[name]), "--out", str(out), "--no-hash-ids")
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(got) == len(src)
    t0 = src[0][0]
    assert [g["timestamp"] for g in got] == [round((s[0] - t0) / 1000, 3) if (s[0] - t0) % 1000 else (s[0] - t0) // 1000 for s in src]
    assert Counter((g["input_length"], g["output_length"]) for g in got) == Counter((s[1], s[2]) for s in src)
    gl = tmp_path / "guidellm.jsonl"
    cli("export", "guidellm", str(imported[name]), "--out", str(gl), "--no-hash-ids")
    g2 = [json.loads(line) for line in gl.read_text().splitlines()]
    assert [g["timestamp"] for g in g2] == [round((s[0] - t0) / 1e6, 6) for s in src]


def test_jitter_spreads_mooncake_steps_deterministically(traces_dir, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        cli("import", "mooncake", str(traces_dir / MOONCAKE), "--out", str(d), "--no-text", "--jitter-within-step")
    src = read_mooncake(traces_dir / MOONCAKE)
    ra, rb = requests(a), requests(b)
    assert [r["ts_us"] for r in ra] == [r["ts_us"] for r in rb]
    offs = [r["ts_us"] - START_US - s["timestamp"] * 1000 for r, s in zip(ra, src)]
    assert all(0 <= o < 3_000_000 for o in offs)
    assert len({r["ts_us"] for r in ra}) > 0.99 * len(ra)  # no more bunches
    # roughly uniform over the step: each third of the step holds about a third of the rows
    thirds = Counter(o * 3 // 3_000_000 for o in offs)
    assert all(abs(thirds[k] / len(offs) - 1 / 3) < 0.03 for k in range(3))


@pytest.mark.parametrize("name", AZURE + [MOONCAKE])
def test_shadowreplay_analyze_on_imported_traces_matches_source(imported, traces_dir, name):
    """`shadowreplay analyze --json` (the analysis package, real DuckDB) on each imported trace."""
    if name == MOONCAKE:
        src = [(s["timestamp"] * 1000, s["input_length"], s["output_length"]) for s in read_mooncake(traces_dir / name)]
    else:
        src = read_azure(traces_dir / name)
    p = cli("analyze", str(imported[name]), "--json")
    d = json.loads(p.stdout)
    g = next(x for x in d["groups"] if x["total"])
    assert d["requests"] == g["requests"] == len(src)
    span = (max(s[0] for s in src) - min(s[0] for s in src)) / 1e6
    assert d["span_s"] == pytest.approx(span, abs=1e-3)
    for col, i in (("prompt_tokens", 1), ("completion_tokens", 2)):
        for q in ("p50", "p99"):
            assert g[col][q] == pytest.approx(quantile_cont([s[i] for s in src], int(q[1:]) / 100))
