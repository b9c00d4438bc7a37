"""Prompt synthesis: exact token counts under a real (trained) tokenizer, Mooncake blocks shared
exactly where hash_ids are, determinism across processes, and hash_ids recomputed from prompts."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.traces_helpers import cli, read_azure, read_mooncake, train_tokenizer
from shadowreplay.traces.openai_jsonl import prompt_text
from shadowreplay.traces.textsynth import chain_block_ids, shared_block_share
from shadowreplay.traces.tokenizer import LocalTokenizer

MOONCAKE = "mooncake_conversation_trace.jsonl"
CODE = "AzureLLMInferenceTrace_code_2023.csv"


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    return train_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def tok(tok_dir):
    return LocalTokenizer(tok_dir)


def bodies(out) -> list[dict]:
    t = pq.read_table(out / "requests", columns=["request_id", "ts_start", "request_body", "prompt_tokens",
                                                 "completion_tokens", "prompt_chars", "prefix_hash", "stream", "hash_ids"])
    rows = sorted(t.to_pylist(), key=lambda r: (r["ts_start"], len(r["request_id"]), r["request_id"]))
    for r in rows:
        r["body"] = json.loads(r["request_body"])
    return rows


@pytest.fixture(scope="module")
def azure_text(tmp_path_factory, traces_dir, tok_dir):
    out = tmp_path_factory.mktemp("azure_text")
    cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(out), "--tokenizer", str(tok_dir),
        "--limit", "200", "--model", "tiny")
    return out


def test_azure_prompts_have_exactly_the_recorded_token_counts(azure_text, traces_dir, tok):
    rows = bodies(azure_text)
    src = sorted(read_azure(traces_dir / CODE)[:200])
    assert len(rows) == 200
    texts = [r["body"]["prompt"] for r in rows]
    assert tok.count(texts) == [r["prompt_tokens"] for r in rows] == [s[1] for s in src]
    for r in rows:
        b = r["body"]
        assert b["model"] == "tiny" and b["stream"] is True and r["stream"] is True
        assert b["max_tokens"] == max(1, r["completion_tokens"])
        assert r["prompt_chars"] == len(b["prompt"]) and len(r["prefix_hash"]) == 16
    assert len(set(texts)) == len(texts)  # no accidental sharing between unrelated rows


def test_output_is_deterministic_across_processes(azure_text, traces_dir, tok_dir, tmp_path):
    again = tmp_path / "again"
    cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(again), "--tokenizer", str(tok_dir),
        "--limit", "200", "--model", "tiny", env={"PYTHONHASHSEED": "12345"})
    a = [(r["request_id"], r["request_body"]) for r in bodies(azure_text)]
    b = [(r["request_id"], r["request_body"]) for r in bodies(again)]
    assert a == b


@pytest.fixture(scope="module")
def mooncake_text(tmp_path_factory, traces_dir, tok_dir):
    out = tmp_path_factory.mktemp("mooncake_text")
    cli("import", "mooncake", str(traces_dir / MOONCAKE), "--out", str(out), "--tokenizer", str(tok_dir),
        "--limit", "200")
    return out


def test_mooncake_blocks_shared_exactly_where_hash_ids_are(mooncake_text, traces_dir, tok):
    src = read_mooncake(traces_dir / MOONCAKE)[:200]
    rows = bodies(mooncake_text)
    texts = [r["body"]["prompt"] for r in rows]
    assert tok.count(texts) == [s["input_length"] for s in src]
    ids = tok.encode(texts)
    # a block's tokens depend on its hash id only
    seen: dict[tuple[int, int], tuple] = {}
    for s, toks in zip(src, ids):
        for j, h in enumerate(s["hash_ids"]):
            chunk = tuple(toks[j * 512 : (j + 1) * 512])
            assert seen.setdefault((h, len(chunk)), chunk) == chunk
    # the share of shared blocks, recomputed from re-tokenized prompts, equals the source's
    sizes = [[min(512, s["input_length"] - 512 * j) for j in range(len(s["hash_ids"]))] for s in src]
    before = shared_block_share([s["hash_ids"] for s in src], sizes)
    after = shared_block_share(chain_block_ids(ids))
    assert after == before and before > 0.05


def test_mooncake_export_hash_ids_recomputed_from_prompts_match_up_to_renaming(mooncake_text, traces_dir, tok_dir, tmp_path):
    src = read_mooncake(traces_dir / MOONCAKE)[:200]
    out = tmp_path / "re.jsonl"
    cli("export", "mooncake", str(mooncake_text), "--out", str(out), "--tokenizer", str(tok_dir), "--recompute-hashes")
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["timestamp"], g["input_length"], g["output_length"]) for g in got] == \
        [(s["timestamp"], s["input_length"], s["output_length"]) for s in src]
    fwd: dict = {}
    back: dict = {}
    for g, s in zip(got, src):
        assert len(g["hash_ids"]) == len(s["hash_ids"])
        for a, b in zip(s["hash_ids"], g["hash_ids"]):
            assert fwd.setdefault(a, b) == b and back.setdefault(b, a) == a  # a bijection
    kept = tmp_path / "kept.jsonl"
    cli("export", "mooncake", str(mooncake_text), "--out", str(kept))
    assert [json.loads(line) for line in kept.read_text().splitlines()] == src


def test_chat_mode_and_approximate_text(traces_dir, tmp_path):
    out = tmp_path / "chat"
    cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(out), "--chat", "--limit", "50")
    rows = bodies(out)
    src = sorted(read_azure(traces_dir / CODE)[:50])
    for r, s in zip(rows, src):
        msgs = r["body"]["messages"]
        assert msgs[0]["role"] == "user" and "prompt" not in r["body"]
        assert len(msgs[0]["content"].split()) == s[1]  # approximation: one word per token
    t = pq.read_table(out / "requests", columns=["kind", "path"]).to_pylist()
    assert {(x["kind"], x["path"]) for x in t} == {("chat", "/v1/chat/completions")}


def test_prompt_text_of_bodies():
    assert prompt_text({"prompt": "abc"}) == "abc"
    assert prompt_text({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "b"}]}]}) == "a\nb"
