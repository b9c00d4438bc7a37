"""The gRPC recorder in front of vLLM's own gRPC server (`vllm.entrypoints.grpc_server`, service
`vllm.grpc.engine.VllmEngine`, needs `smg-grpc-servicer` in .venv-vllm) serving the tiny model:
the real mitmdump records a streaming Generate over h2c."""

from __future__ import annotations

import time

import grpc
import pytest

from tests.recorder_helpers import engine_apart
from tests.test_recorder_grpc_e2e import read_rows, start_mitmdump, stop_mitmdump

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

PROMPT = "Hello, my name is Maria Gonzalez and my email is maria.gonzalez@example.org. Tell me a story."


def test_vllm_grpc_generate_recorded(vllm_grpc, tmp_path_factory):
    port, pid, pb2, pb2_grpc = vllm_grpc  # tests/engines.py
    keys = tmp_path_factory.mktemp("keys")
    key_file = keys / "scrub.key"
    key_file.write_bytes(b"grpc-vllm-test-key-0123456789abcdef")
    out = tmp_path_factory.mktemp("grpc_vllm_out")
    with engine_apart(pid):  # the timing check measures the proxy hop, not CPU sharing
        proc, pport = start_mitmdump(f"http://127.0.0.1:{port}", out, key_file)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{pport}") as ch:
                grpc.channel_ready_future(ch).result(timeout=30)
                stub = pb2_grpc.VllmEngineStub(ch)
                warm = pb2.GenerateRequest(
                    request_id="warm-up", text="hello", stream=True, sampling_params=pb2.SamplingParams(max_tokens=2)
                )
                list(stub.Generate(warm, timeout=120))
                # Three timed calls: one CPU stall of the shared machine must not decide the timing check.
                calls = []
                for i in range(3):
                    req = pb2.GenerateRequest(
                        request_id=f"rec-test-{i}", text=PROMPT, stream=True,
                        sampling_params=pb2.SamplingParams(max_tokens=12, min_tokens=12, ignore_eos=True, temperature=0.0),
                    )  # fmt: skip
                    t0 = time.time()
                    times, msgs = [], []
                    call = stub.Generate(req, timeout=120)
                    for m in call:
                        times.append(time.time())
                        msgs.append(m)
                    assert call.code() == grpc.StatusCode.OK
                    calls.append((t0, times, msgs))
        finally:
            err = stop_mitmdump(proc)
    rows = sorted(read_rows(out), key=lambda x: x["ts_start"])
    assert len(rows) == 4, err[-2000:]
    diffs = []
    for r, (t0, times, msgs) in zip(rows[1:], calls):
        assert (r["grpc_service"], r["grpc_method"], r["grpc_status"]) == ("vllm.grpc.engine.VllmEngine", "Generate", 0)
        assert r["chunks"] == len(msgs) >= 2 and len(r["itl_ms"]) == len(msgs) - 1
        client_ttft = (times[0] - t0) * 1000
        assert client_ttft >= r["ttft_ms"], (r["ttft_ms"], client_ttft)
        diffs.append(client_ttft - r["ttft_ms"])
    assert sorted(diffs)[1] < 50, diffs  # median: the proxy hop adds a few ms, not tens
    r, (t0, times, msgs) = rows[1], calls[0]
    sent = pb2.GenerateRequest.FromString(r["grpc_messages"][0]["data"])
    assert sent.request_id == "rec-test-0" and sent.sampling_params.max_tokens == 12
    assert len(sent.text) == len(PROMPT) and "maria.gonzalez@example.org" not in sent.text
    assert "Maria" not in sent.text
    got = [pb2.GenerateResponse.FromString(m["data"]) for m in r["grpc_messages"][1:]]
    assert got == msgs  # token ids are numbers: recorded exactly
    tokens = sum(len(g.chunk.token_ids) for g in got if g.HasField("chunk"))
    tokens += sum(len(g.complete.output_ids) for g in got if g.HasField("complete") and not tokens)
    assert tokens >= 12
    assert b"maria" not in repr(rows).encode().lower()
