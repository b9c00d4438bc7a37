"""`record --keep shape` end to end: real traffic with shared prefixes and planted PII through real
mitmdump into real vLLM, recorded twice (text and shape); no planted or original text in any file
of the shape recording; its replay has the recorded prompt and completion token counts and the
recorded prefix sharing (vLLM's prefix-cache hits within 10 % of the text recording's replay)."""

from __future__ import annotations

import json
import signal

import duckdb
import httpx
import pyarrow.parquet as pq
import pytest

from tests.analysis_helpers import run_json
from tests.conftest import free_port
from tests.recorder_helpers import Proxy, read_requests
from tests.test_recorder_proxy import stream_request

from shadowreplay.replayer.replay import ReplayOptions, replay

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

# Three long shared prefixes (system prompts), four questions each, with planted PII.
PREFIXES = [
    "You are the booking assistant of Harbourline Ferries. Answer in two sentences, quote fares in "
    "euros, mention the check-in time for vehicles, and never promise a refund without a ticket number. " * 5,
    "You review Python pull requests for the Quillwork data team. Point out missing tests, unclear "
    "names and unhandled errors, and suggest one concrete improvement per file you read carefully. " * 5,
    "Du bist der Kundendienst der Bergbahn Tannenalm. Antworte freundlich und kurz, nenne die "
    "Betriebszeiten der Gondel und verweise bei Sturm auf die Wetterseite der Bahn im Tal. " * 5,
]
QUESTIONS = [
    "My name is Eleanor Whitfield-Barnes and my mail is eleanor.wb@example.org, can I change my booking?",
    "Patient: Henrik Nakamura, phone +44 20 7946 0958. What does the 7:40 crossing cost for a van?",
    "Customer Marie-Claire Dupont (IBAN DE89370400440532013000) asks whether dogs may travel along.",
    "Ruth R Montez wants to know if the card 4111 1111 1111 1111 on file can pay for the upgrade.",
]
PLANTED = ["Eleanor", "Whitfield", "eleanor.wb@example.org", "Henrik", "Nakamura", "7946 0958", "Marie-Claire",
           "Dupont", "DE89370400440532013000", "Montez", "4111 1111 1111 1111"]
ORIGINAL = ["Harbourline", "Quillwork", "Tannenalm", "booking assistant", "pull requests", "Kundendienst",
            "change my booking", "crossing cost", "dogs may travel", "pay for the upgrade"]


def prefix_hits(url: str) -> float:
    from shadowreplay.prometheus import parse

    text = httpx.get(url + "/metrics", timeout=10, trust_env=False).text
    return sum(s.value for s in parse(text) if s.metric.startswith("vllm:prefix_cache_hits"))


def file_texts(root) -> dict[str, bytes]:
    """Every file under root as bytes; Parquet files also as the JSON text of all their values
    (compressed pages would hide a plain-text search)."""
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            out[str(p)] = p.read_bytes()
            if p.suffix == ".parquet":
                out[str(p) + "#values"] = json.dumps(pq.read_table(p).to_pylist(), default=str, ensure_ascii=False).encode()
    return out


def test_shape_recording_replays_token_counts_and_prefix_sharing(tmp_path, tiny_vllm, key_file, capsys):
    from shadowreplay.shadow.tiny_model import MODEL_NAME

    rec = {"text": tmp_path / "rec-text", "shape": tmp_path / "rec-shape"}
    replies = []
    engine, _ = tiny_vllm  # prefix caching in blocks of 32, dev endpoints (tests/engines.py)
    engine.reset_prefix_cache()
    proxies = {k: Proxy(engine.url, d, key_file, free_port(), shadowreplay_keep=k) for k, d in rec.items()}
    for p in proxies.values():
        p.start()
    try:
        clients = {k: httpx.Client(base_url=p.url, timeout=120, trust_env=False) for k, p in proxies.items()}
        for q in range(len(QUESTIONS)):
            for g, prefix in enumerate(PREFIXES):
                question = QUESTIONS[(q + g) % len(QUESTIONS)]
                chat = q % 2 == 1  # half of them chat: system prompt + user message
                body = {"model": MODEL_NAME, "max_tokens": 6 + g, "min_tokens": 6 + g, "ignore_eos": True,
                        "stream": True, "stream_options": {"include_usage": True}}
                if chat:
                    body["messages"] = [{"role": "system", "content": prefix}, {"role": "user", "content": question}]
                else:
                    body["prompt"] = prefix + question
                route = "/v1/chat/completions" if chat else "/v1/completions"
                for k, c in clients.items():
                    r = stream_request(c, route, body, {"x-test-id": f"{g}-{q}", "x-user": "eleanor.wb@example.org"})
                    assert r["status"] == 200
                    replies.append(r["text"])
        for c in clients.values():
            c.close()
    finally:
        codes = [p.stop(signal.SIGTERM) for p in proxies.values()]
    assert codes == [0, 0], [p.log() for p in proxies.values()]

    # privacy: no planted or original text (nor any reply) in any file of the shape recording
    texts = file_texts(rec["shape"])
    assert any(k.endswith("#values") for k in texts)
    for name, data in texts.items():
        for s in PLANTED + ORIGINAL + [r for r in replies if len(r) >= 12]:
            assert s.encode() not in data, (name, s)
    for p in proxies.values():  # the proxies' own logs hold nothing either
        texts[str(p.log_path)] = p.log_path.read_bytes() if p.key_file and p.sets["shadowreplay_keep"] == "shape" else b""
    for name, data in texts.items():
        assert b"Eleanor" not in data and b"Harbourline" not in data, name
    rows = {k: sorted(read_requests(d), key=lambda r: r["ts_start"]) for k, d in rec.items()}  # the same order
    assert len(rows["shape"]) == len(rows["text"]) == 12
    for t, s in zip(rows["text"], rows["shape"]):
        assert s["request_body"] is None and s["response_text"] is None and t["request_body"]
        assert (s["prompt_tokens"], s["completion_tokens"], s["prompt_chars"]) == \
            (t["prompt_tokens"], t["completion_tokens"], t["prompt_chars"])
        assert s["hash_ids"] and s["hash_block_chars"] == 64 and s["content_type"] == "text"
    # the analysis works unchanged on the shape recording, and sees the same prefix sharing
    an = {k: run_json(capsys, "analyze", str(d)) for k, d in rec.items()}
    assert an["shape"]["requests"] == an["text"]["requests"] == 12
    assert an["shape"]["prefix"] == an["text"]["prefix"]

    hits = {}
    for k, d in rec.items():
        engine.reset_prefix_cache()
        before = prefix_hits(engine.url)
        out = tmp_path / f"replay-{k}"
        res = replay(ReplayOptions(recording=str(d), target=engine.url, out=str(out), no_metrics=True,
                                   timeout_s=120, progress=False, tokenizer=engine.url,  # its /tokenize
                                   allow_recorded_host=True),  # the recorded upstream is this shadow
                     echo=lambda s: None)
        assert res.summary["errors"] == 0 and res.summary["sent"] == 12
        hits[k] = prefix_hits(engine.url) - before
        got = duckdb.connect().execute(
            f"SELECT r.request_id, r.status, r.prompt_tokens, r.completion_tokens, q.prompt_tokens, q.completion_tokens "
            f"FROM read_parquet('{out}/replay_results/**/*.parquet') r "
            f"JOIN read_parquet('{d}/requests/**/*.parquet') q USING (request_id)").fetchall()
        assert len(got) == 12
        for rid, status, pt, ct, rec_pt, rec_ct in got:
            assert status == 200 and ct == rec_ct, (k, rid)
            if k == "shape":
                assert pt == rec_pt, (rid, pt, rec_pt)  # exactly the recorded prompt length
    print(f"prefix-cache hit tokens: text {hits['text']:.0f}, shape {hits['shape']:.0f}")
    assert hits["text"] > 0
    assert abs(hits["shape"] - hits["text"]) <= 0.10 * hits["text"], hits
