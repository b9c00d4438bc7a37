"""The real Azure LLM inference traces 2023: the documented DuckDB query on the CSVs, and
`shadowreplay import azure-llm` followed by `analyze`."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import numpy as np
import pytest

from shadowreplay.analysis.session import SQL_DIR, split_statements
from tests.analysis_helpers import run_cli, run_json

TRACES = ("code", "conv")


def _csv(traces_dir: Path, name: str) -> np.ndarray:
    with open(traces_dir / f"AzureLLMInferenceTrace_{name}_2023.csv", newline="") as f:
        return np.array([int(r["ContextTokens"]) for r in csv.DictReader(f)])


def test_documented_query_on_the_csvs(traces_dir, monkeypatch):
    monkeypatch.chdir(traces_dir)
    con = duckdb.connect()
    view, summary = split_statements((SQL_DIR / "azure_2023_csv.sql").read_text())
    con.execute(view)
    rows = {r[0]: r for r in con.execute(summary).fetchall()}
    assert set(rows) == set(TRACES)
    for name in TRACES:
        prompts = _csv(traces_dir, name)
        trace, n, first, last, rps, p50, p99, *_ = rows[name]
        assert n == len(prompts)
        assert p50 == pytest.approx(np.percentile(prompts, 50))
        assert p99 == pytest.approx(np.percentile(prompts, 99))
        assert first.year == 2023 and (last - first).total_seconds() > 3000  # about an hour
    minutes = con.execute((SQL_DIR / "azure_2023_minutes.sql").read_text()).fetchall()
    assert sum(r[2] for r in minutes) == sum(len(_csv(traces_dir, t)) for t in TRACES)
    # The analysis files run on top of the view.
    con.execute((SQL_DIR / "lat_requests.sql").read_text())
    con.execute((SQL_DIR / "lat.sql").read_text())
    assert con.execute("SELECT count(*) FROM lat WHERE prompt_len IS NOT NULL").fetchone()[0] == sum(len(_csv(traces_dir, t)) for t in TRACES)


@pytest.mark.slow
def test_import_then_analyze(traces_dir, tmp_path, capsys):
    src = traces_dir / "AzureLLMInferenceTrace_code_2023.csv"
    rc, out, err = run_cli(capsys, "import", "azure-llm", src, "--out", tmp_path / "code", "--no-text", "--quiet")
    assert rc == 0, err
    prompts = _csv(traces_dir, "code")
    res = run_json(capsys, "analyze", tmp_path / "code")
    tot = next(g for g in res["groups"] if g["total"])
    assert tot["requests"] == len(prompts)
    assert tot["prompt_tokens"]["p50"] == pytest.approx(np.percentile(prompts, 50))
    assert tot["prompt_tokens"]["p99"] == pytest.approx(np.percentile(prompts, 99))
    assert tot["rps"] == pytest.approx(2.57, rel=0.02)
    assert any("no latencies recorded" in n for n in res["notes"])
    res = run_json(capsys, "analyze", "anomalies", tmp_path / "code", "--period", "10m", "--bucket", "1m")
    assert res["anomalies"] == [] and any("no latency" in n for n in res["notes"])
    rc, out, err = run_cli(capsys, "sql", tmp_path / "code", "--csv", "-f", SQL_DIR / "azure_2023_minutes.sql")
    assert rc == 0, err
    assert sum(int(line.split(",")[2]) for line in out.splitlines()[1:]) == len(prompts)
