"""How tests/data/schema1 was made: a small synthetic dataset written by the writer of
2026-12-01 (schema version 1). Kept as it was written, so every later version proves it still
reads those files; do not rewrite it with a newer writer. Run from the repository root."""
import datetime as dt, shutil
from pathlib import Path
from shadowreplay.dataset import write_rows
from shadowreplay.schema import REQUESTS, REPLAY_RESULTS
root = Path("tests/data/schema1")
shutil.rmtree(root, ignore_errors=True)
t0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.timezone.utc)
rows = []
for i in range(12):
    rows.append(dict(request_id=f"fx-{i:02d}", ts_start=t0 + dt.timedelta(seconds=5 * i), method="POST", scheme="http",
        host="prod.fixture.invalid", port=8000, path="/v1/chat/completions", status=200, protocol="http/1.1", kind="chat",
        client_id="c_00000000000000aa" if i % 3 else "c_00000000000000bb", model="m", stream=True, max_tokens=16,
        prompt_chars=40 + i, prompt_tokens=10 + i, completion_tokens=16, ttft_ms=20.0 + i, e2e_ms=200.0 + 3 * i,
        itl_ms=[10.0, 11.0], prefix_hash="0123456789abcdef",
        request_body='{"model": "m", "messages": [{"role": "user", "content": "synthetic fixture text %d"}], "max_tokens": 16, "stream": true}' % i,
        response_text="gibberish", request_headers="{}", pii_counts={}, source="recorder"))
write_rows(root, REQUESTS, rows)
res = [dict(request_id=r["request_id"], target="http://127.0.0.1:8100", scheduled_at=r["ts_start"], sent_at=r["ts_start"],
            send_lag_ms=0.1, status=200, kind="chat", model="m", client_id=r["client_id"], ttft_ms=r["ttft_ms"] * 1.1,
            e2e_ms=r["e2e_ms"] * 1.1, itl_ms=[10.0], prompt_tokens=r["prompt_tokens"], completion_tokens=16,
            expected_completion_tokens=16, prompt_chars=r["prompt_chars"]) for r in rows]
write_rows(root, REPLAY_RESULTS, res)
print(sorted(str(p) for p in root.rglob("*.parquet")))
