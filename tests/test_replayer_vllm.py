"""Replay into a real vLLM (CPU) serving the tiny random-weight model: output-length fidelity."""

from __future__ import annotations

import duckdb
import pytest

from shadowreplay.replayer.replay import ReplayOptions, replay
from tests.replayer_helpers import chat_row, write_recording


@pytest.mark.slow
@pytest.mark.vllm
def test_replay_into_vllm_generates_recorded_token_counts(tmp_path, tiny_vllm):
    from shadowreplay.shadow.tiny_model import MODEL_NAME

    srv, _ = tiny_vllm
    rows = [
        chat_row(0, 0.0, completion_tokens=5, prompt="Tell me about the sea"),
        chat_row(1, 0.2, completion_tokens=12, kind="completion", prompt="Once upon a time"),
        chat_row(2, 0.4, completion_tokens=3, stream=False, prompt="Short answer please"),
        chat_row(3, 0.6, completion_tokens=20, prompt="Write a longer story about a lighthouse keeper"),
    ]
    write_recording(tmp_path / "rec", rows)
    res = replay(ReplayOptions(recording=str(tmp_path / "rec"), target=srv.url, out=str(tmp_path / "out"),
                               model_map=[f"prod-model={MODEL_NAME}"], metrics_interval_s=0.2, timeout_s=120,
                               progress=False), echo=lambda s: None)
    assert res.summary["errors"] == 0 and res.summary["sent"] == 4
    got = duckdb.connect().execute(
        f"SELECT request_id, status, completion_tokens, expected_completion_tokens, ttft_ms, itl_ms, prompt_tokens, model "
        f"FROM read_parquet('{tmp_path}/out/replay_results/**/*.parquet') ORDER BY request_id").fetchall()
    for rid, status, ct, expected, ttft, itl, pt, m in got:
        assert status == 200 and m == MODEL_NAME
        assert ct == expected, rid  # ignore_eos + min_tokens = max_tokens = the recorded count
        assert pt and pt > 0
    streamed = [g for g in got if g[0] != "r00002"]
    for rid, _, ct, _, ttft, itl, _, _ in streamed:
        assert ttft is not None and ttft > 0 and len(itl) >= 1
    metrics = duckdb.connect().execute(
        f"SELECT DISTINCT metric FROM read_parquet('{tmp_path}/out/engine_metrics/**/*.parquet')").fetchall()
    assert ("vllm:num_requests_running",) in metrics


@pytest.mark.slow
@pytest.mark.vllm
def test_the_shadows_pin_processor_holds_back_stop_tokens(tiny_vllm):
    """vLLM's Messages API has no min_tokens; the shadow's logits processor reads
    vllm_xargs.min_tokens instead (shadow/vllm_plugins). Shown on a request whose end-of-sequence
    token is forced by a logit bias (possible only on chat), then on Messages as replayed."""
    import json

    import httpx

    from shadowreplay.llmapi import api_for_kind
    from shadowreplay.shadow.tiny_model import MODEL_NAME

    srv, model_dir = tiny_vllm
    eos = json.loads((model_dir / "config.json").read_text())["eos_token_id"]
    chat = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "Tell me about the sea"}], "max_tokens": 12,
            "logit_bias": {str(eos): 100}, "temperature": 0}
    with httpx.Client(base_url=srv.url, timeout=120) as c:
        early = c.post("/v1/chat/completions", json=chat).json()
        assert early["usage"]["completion_tokens"] < 12 and early["choices"][0]["finish_reason"] == "stop", early
        held = c.post("/v1/chat/completions", json=chat | {"vllm_xargs": {"min_tokens": 12}}).json()
        assert held["usage"]["completion_tokens"] == 12 and held["choices"][0]["finish_reason"] == "length", held
        # a Messages body pinned as the replayer pins it: vLLM takes vllm_xargs there too
        body = {"model": MODEL_NAME, "max_tokens": 100, "messages": [{"role": "user", "content": "Hello there"}]}
        api_for_kind("messages").pin_output(body, 40, ignore_eos=True, stream=False)
        assert body["vllm_xargs"] == {"min_tokens": 40}
        msg = c.post("/v1/messages", json=body).json()
        assert msg["usage"]["output_tokens"] == 40 and msg["stop_reason"] == "max_tokens", msg


@pytest.mark.slow
@pytest.mark.vllm
def test_a_model_the_target_does_not_serve_is_named_after_its_404s(tmp_path, tiny_vllm, capfd):
    """vLLM lists its models at /v1/models; requests whose model is not mapped to one of them get
    a 404 each, and the replay then names the model, how many, and the mapping to add."""
    from shadowreplay.shadow.tiny_model import MODEL_NAME

    srv, _ = tiny_vllm
    write_recording(tmp_path / "rec", [chat_row(i, 0.1 * i) for i in range(3)] + [chat_row(3, 0.3, model=MODEL_NAME)])
    res = replay(ReplayOptions(recording=str(tmp_path / "rec"), target=srv.url, out=str(tmp_path / "out"),
                               timeout_s=120, progress=False), echo=lambda s: None)
    assert res.summary["errors"] == 3 and res.summary["errors_by_kind"] == {"http_4xx": 3}, res.summary
    err = capfd.readouterr().err
    assert f"serves {MODEL_NAME}, not prod-model (3 requests)" in err, err
    assert f"--model-map prod-model={MODEL_NAME}" in err, err
    res = replay(ReplayOptions(recording=str(tmp_path / "rec"), target=srv.url, out=str(tmp_path / "out2"), timeout_s=120,
                               model_map=[f"prod-model={MODEL_NAME}"], progress=False), echo=lambda s: None)
    assert res.summary["errors"] == 0
    assert "serves" not in capfd.readouterr().err
