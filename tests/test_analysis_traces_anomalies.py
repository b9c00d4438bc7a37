"""`analyze anomalies` on the real public traces (../shared/data/traces): their arrivals and token
counts are real; their latencies come from a simple engine model driven by them (a serial prefill
queue, decode slowed by the requests in flight), so the finder sees real bursts and real prompt
mixes without a planted slot. On its defaults it must report nothing."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from shadowreplay.dataset import write_table
from shadowreplay.schema import REQUESTS
from tests.analysis_helpers import read_table, run_cli, run_json

# (format, file, import flags, whether a planted slot must be found: the code trace's minutes hold
# too few requests, some none, for a x5 rise in one of them to be told from its bursts)
TRACES = (
    ("azure-llm", "AzureLLMInferenceTrace_code_2023.csv", (), False),
    ("azure-llm", "AzureLLMInferenceTrace_conv_2023.csv", (), True),
    ("mooncake", "mooncake_conversation_trace.jsonl", ("--jitter-within-step",), True),
)


def engine_latencies(t_s: np.ndarray, prompt: np.ndarray, output: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """TTFT and E2E (ms) of an engine that prefills one request at a time (20 us a token) and
    decodes every request in flight together (15 ms a token, 1 % slower per request in flight)."""
    rng = np.random.default_rng(seed)
    order = np.argsort(t_s, kind="stable")
    prefill_ms = 5.0 + 0.02 * prompt
    ttft = np.empty(len(t_s))
    free_at = -np.inf
    for i in order:  # the serial prefill queue (Lindley's recursion)
        start = max(t_s[i] * 1000.0, free_at)
        free_at = start + prefill_ms[i]
        ttft[i] = free_at - t_s[i] * 1000.0
    arrivals = np.sort(t_s)
    in_flight = np.searchsorted(arrivals, t_s, side="right") - np.searchsorted(arrivals, t_s - 20.0, side="left")
    itl = 15.0 * (1 + 0.01 * in_flight) * rng.lognormal(0, 0.1, len(t_s))
    return ttft, ttft + np.maximum(output - 1, 0) * itl


@pytest.mark.parametrize("fmt,name,extra,dense", TRACES)
def test_no_findings_on_the_real_traces(traces_dir, tmp_path, capsys, fmt, name, extra, dense):
    rc, out, err = run_cli(capsys, "import", fmt, traces_dir / name, "--out", tmp_path / "imp", "--no-text", "--quiet", *extra)
    assert rc == 0, err
    # as imported: no latency, and the finder says so
    res = run_json(capsys, "analyze", "anomalies", tmp_path / "imp", "--period", "10m", "--bucket", "1m")
    assert res["anomalies"] == [] and any("no latency" in n for n in res["notes"])

    t = read_table(tmp_path / "imp", REQUESTS)
    ts = pc.cast(t.column("ts_start"), pa.int64()).to_numpy() / 1e6
    prompt = t.column("prompt_tokens").to_numpy(zero_copy_only=False).astype(float)
    output = t.column("completion_tokens").to_numpy(zero_copy_only=False).astype(float)
    ttft, e2e = engine_latencies(ts, prompt, output)
    t = t.set_column(t.schema.get_field_index("ttft_ms"), "ttft_ms", pa.array(ttft))
    t = t.set_column(t.schema.get_field_index("e2e_ms"), "e2e_ms", pa.array(e2e))
    write_table(tmp_path / "lat", REQUESTS, t)
    span_min = (ts.max() - ts.min()) / 60
    assert span_min > 50  # about an hour each: six 10-minute periods
    res = run_json(capsys, "analyze", "anomalies", tmp_path / "lat", "--period", "10m", "--bucket", "1m")
    assert res["periods"] >= 6 and res["metrics"] == ["ttft", "e2e", "itl"]
    assert res["anomalies"] == [], [(a["label"], a["metric"], a["z"], a["tp99_ratio"]) for a in res["anomalies"]]
    if not dense:
        return
    # The same real traffic with a slot planted (TTFT x5 in minute 3 of every 10): found, and only it.
    slot = (np.floor(ts / 60) % 10) == 3
    t = t.set_column(t.schema.get_field_index("ttft_ms"), "ttft_ms", pa.array(np.where(slot, 5 * ttft, ttft)))
    write_table(tmp_path / "planted", REQUESTS, t)
    res = run_json(capsys, "analyze", "anomalies", tmp_path / "planted", "--period", "10m", "--bucket", "1m")
    assert [(a["label"], a["metric"]) for a in res["anomalies"]] == [("+3m-4m of each 10m period", "ttft")]
