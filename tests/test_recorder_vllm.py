"""The recorder in front of the real vLLM CPU server (tiny random-weight model)."""

from __future__ import annotations

import signal

import duckdb
import httpx
import pytest

from tests.conftest import free_port
from tests.recorder_helpers import Proxy, engine_apart, read_requests, rows_by_header
from tests.test_recorder_proxy import stream_request

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def test_records_real_vllm_streams_usage_and_metrics(tmp_path, tiny_vllm, key_file):
    from shadowreplay.shadow.tiny_model import MODEL_NAME

    engine, _ = tiny_vllm
    out = tmp_path / "data"
    with engine_apart(engine.pid), Proxy(engine.url, out, key_file, free_port(),
                                         shadowreplay_metrics_url=engine.metrics_url,
                                         shadowreplay_metrics_interval="0.2") as proxy:
        seen = {}
        with httpx.Client(base_url=proxy.url, timeout=120) as c:
            assert c.get("/v1/models", headers={"x-test-id": "warm"}).status_code == 200  # warm connection
            for i in range(3):
                body = {
                    "model": MODEL_NAME,
                    "messages": [{"role": "user", "content": f"Write about the city number {i}, reach me at a.b{i}@example.com"}],
                    "max_tokens": 8, "min_tokens": 8, "ignore_eos": True, "stream": True,
                    "stream_options": {"include_usage": True},
                }
                seen[f"c{i}"] = stream_request(c, "/v1/chat/completions", body, {"x-test-id": f"c{i}"})
            r = c.post("/v1/completions", json={"model": MODEL_NAME, "prompt": "hello there", "max_tokens": 5,
                                                 "min_tokens": 5, "ignore_eos": True}, headers={"x-test-id": "p"})
            assert r.status_code == 200
        assert proxy.stop(signal.SIGTERM) == 0
    by = rows_by_header(read_requests(out))
    assert set(by) == {"c0", "c1", "c2", "p"}  # GET /v1/models (the warm-up) is left out by default
    diffs = []
    for i in range(3):
        row, cl = by[f"c{i}"], seen[f"c{i}"]
        assert row["error"] is None and row["status"] == 200 and row["kind"] == "chat" and row["model"] == MODEL_NAME
        assert row["completion_tokens"] == 8 and row["prompt_tokens"] > 5 and row["finish_reason"] == "length"
        assert row["response_text"] == cl["text"] or "@" in cl["text"]  # gibberish may look like PII
        assert len(row["itl_ms"]) == len(cl["token_times"]) - 1
        client_ttft = (cl["token_times"][0] - cl["t0"]) * 1000
        diffs.append(client_ttft - row["ttft_ms"])
        assert f"a.b{i}@example.com" not in (row["request_body"] or "")
    # the proxy sees the request after and the first token before the client does
    assert min(diffs) > -1 and sorted(diffs)[1] < 20, diffs
    assert by["p"]["kind"] == "completion" and by["p"]["completion_tokens"] == 5 and by["p"]["stream"] is False
    n = duckdb.connect().execute(
        f"select count(*) from read_parquet('{out}/engine_metrics/**/*.parquet') where metric = 'vllm:num_requests_running'"
    ).fetchone()[0]
    assert n >= 1
