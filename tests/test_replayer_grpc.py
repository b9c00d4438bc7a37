"""gRPC replay with generic stubs against the real grpcio LLM test server (tests/grpc_llm_server.py)."""

from __future__ import annotations

import datetime as dt

import duckdb

from shadowreplay.replayer.replay import ReplayOptions, replay
from tests.grpc_llm_server import LlmServer
from tests.replayer_helpers import write_recording

T0 = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.timezone.utc)


def grpc_row(i: int, t_s: float, method: str, payload: bytes) -> dict:
    return dict(
        request_id=f"g{i:03d}", ts_start=T0 + dt.timedelta(seconds=t_s), method="POST", scheme="http",
        host="llm.prod.example", port=50051, path=f"/llm.Llm/{method}", protocol="grpc", kind="grpc",
        grpc_service="llm.Llm", grpc_method=method, request_body=None, status=200,
        grpc_messages=[{"direction": "request", "t_ms": 0.0, "compressed": False, "size": len(payload), "data": payload},
                       {"direction": "response", "t_ms": 5.0, "compressed": False, "size": 3, "data": b"\x0a\x01x"}],
    )


def test_grpc_unary_and_streaming_replay(tmp_path):
    with LlmServer() as srv:
        pb2 = srv.pb2
        gen = pb2.GenerateRequest(prompt="hello there", max_tokens=4, gap_ms=30).SerializeToString()
        cnt = pb2.CountRequest(text="one two three").SerializeToString()
        bad = pb2.GenerateRequest(prompt="NOTFOUND", max_tokens=2, user="u").SerializeToString()
        write_recording(tmp_path / "rec", [grpc_row(0, 0.0, "Generate", gen), grpc_row(1, 0.05, "CountTokens", cnt),
                                           grpc_row(2, 0.1, "Generate", bad)])
        res = replay(ReplayOptions(recording=str(tmp_path / "rec"), target=f"http://127.0.0.1:{srv.port}",
                                   out=str(tmp_path / "out"), no_metrics=True, progress=False, timeout_s=10),
                     echo=lambda s: None)
        assert len(srv.servicer.sent_at) == 1  # the Generate that streamed (NOTFOUND aborts before)
    rows = duckdb.connect().execute(
        f"SELECT request_id, status, error, ttft_ms, itl_ms, e2e_ms, kind, send_lag_ms FROM "
        f"read_parquet('{tmp_path}/out/replay_results/**/*.parquet') ORDER BY request_id").fetchall()
    g, c, b = rows
    assert g[1] == 0 and g[2] is None and g[6] == "grpc"
    # the server pauses 30 ms between messages; one late arrival shortens the next gap, never the sum
    assert len(g[4]) == 3 and all(0 < x <= 200 for x in g[4]) and sum(g[4]) >= 60, g[4]
    assert 0 < g[3] < g[5]
    assert c[1] == 0 and c[2] is None and c[4] == [] and c[3] is not None
    assert b[1] == 5 and b[2].startswith("grpc NOT_FOUND") and "no model for user u" in b[2]
    assert res.summary["sent"] == 3 and res.summary["errors"] == 1
