"""Replaying shape rows (record --keep shape): synthesized prompts have the recorded token counts
and share exactly the recorded prefix blocks, under a real (trained) tokenizer."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tests.traces_helpers import train_tokenizer

from shadowreplay.anonymize import Scrubber
from shadowreplay.errors import ConfigError
from shadowreplay.recorder.exchange import HttpExchange, RowOptions
from shadowreplay.replayer.shape import fill_bodies, shape_prompts
from shadowreplay.schema import REQUESTS_SCHEMA
from shadowreplay.traces.tokenizer import LocalTokenizer

KEY = b"shape-replay-key-0123456789abcdef"
SYSTEM = ("You are a careful assistant for a travel agency. Quote prices in euros, keep answers short, "
          "and never promise refunds. ") * 6
SUFFIXES = ["Which trains go from Lyon to Turin tomorrow morning?", "Can I bring a bicycle on the night bus?",
            "How early must I be at the airport for a flight to Oslo?", "Is breakfast included at the harbour hotel?"]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return tmp_path_factory.mktemp("tok")


@pytest.fixture(scope="module")
def tok_dir(tok):
    return train_tokenizer(tok)


def recorded_rows(tk: LocalTokenizer, prompts: list[str], kind_path: str = "/v1/completions") -> pa.Table:
    """Shape rows as the recorder writes them, prompt_tokens as the server reports them."""
    s = Scrubber(KEY)
    rows = []
    for i, p in enumerate(prompts):
        body = {"model": "m", "prompt": p, "max_tokens": 5, "stream": True} if "chat" not in kind_path else \
            {"model": "m", "messages": [{"role": "user", "content": p}], "max_tokens": 5}
        ex = HttpExchange(request_id=f"r{i}", ts_start=1000.0 + i, method="POST", scheme="http", host="gw", port=80,
                          path=kind_path, request_headers=[("content-type", "application/json")],
                          request_body=json.dumps(body).encode(), status=200)
        row = ex.to_row(s, RowOptions(keep="shape"))
        row["prompt_tokens"] = tk.count([p])[0]
        row["completion_tokens"] = 5
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=REQUESTS_SCHEMA)


def synthesized(table: pa.Table, tok_dir) -> tuple[list[str], int]:
    sp = shape_prompts(table, str(tok_dir))
    assert sp is not None
    bodies = fill_bodies(table, table.column("request_body").to_pylist(), sp)
    texts = []
    for b in bodies:
        obj = json.loads(b)
        texts.append(obj["prompt"] if "prompt" in obj else obj["messages"][0]["content"])
    return texts, sp.block_tokens


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def test_token_counts_and_shared_prefix_blocks(tok_dir):
    tk = LocalTokenizer(tok_dir)
    prompts = [SYSTEM + s for s in SUFFIXES] + ["Something else entirely: " + SUFFIXES[0]]
    table = recorded_rows(tk, prompts)
    texts, bt = synthesized(table, tok_dir)
    assert [tk.count([t])[0] for t in texts] == table.column("prompt_tokens").to_pylist()
    ids = table.column("hash_ids").to_pylist()
    enc = tk.encode(texts)
    for i in range(len(prompts)):
        for j in range(i + 1, len(prompts)):
            shared_blocks = common_prefix(ids[i], ids[j])
            # exactly the shared blocks' tokens are common (the next block's text differs at once,
            # or within a word or two by chance of the word draw)
            got = common_prefix(enc[i], enc[j])
            assert shared_blocks * bt <= got <= shared_blocks * bt + 3, (i, j, shared_blocks, bt, got)
    assert common_prefix(ids[0], ids[1]) == len(SYSTEM) // 64 > 0
    assert common_prefix(ids[0], ids[4]) == 0
    # the original text is nowhere in what is sent
    assert not any("travel agency" in t or "Lyon" in t for t in texts)


def test_deterministic_and_chat_rows(tok_dir):
    tk = LocalTokenizer(tok_dir)
    table = recorded_rows(tk, [SYSTEM + s for s in SUFFIXES[:2]], "/v1/chat/completions")
    a, _ = synthesized(table, tok_dir)
    b, _ = synthesized(table, tok_dir)
    assert a == b
    assert [tk.count([t])[0] for t in a] == table.column("prompt_tokens").to_pylist()


def test_shape_rows_need_a_tokenizer(tok_dir):
    table = recorded_rows(LocalTokenizer(tok_dir), [SUFFIXES[0]])
    with pytest.raises(ConfigError, match="--tokenizer"):
        shape_prompts(table, None)
    text_rows = table.set_column(table.schema.get_field_index("hash_block_chars"), "hash_block_chars",
                                 pa.nulls(table.num_rows, pa.int32()))
    assert shape_prompts(text_rows, None) is None  # a text recording needs none


def test_replay_cli_without_tokenizer_is_one_line(tmp_path, tok_dir, capsys):
    from shadowreplay.cli import main
    from shadowreplay.dataset import write_table
    from shadowreplay.schema import REQUESTS

    write_table(tmp_path / "rec", REQUESTS, recorded_rows(LocalTokenizer(tok_dir), [SYSTEM + SUFFIXES[0]]))
    rc = main(["replay", str(tmp_path / "rec"), "--target", "http://127.0.0.1:9", "--out", str(tmp_path / "out"),
               "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 2 and "--tokenizer" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_plan_sends_synthesized_bodies_and_skips_rows_without_counts(tok_dir):
    from shadowreplay.replayer.body import BodyOptions
    from shadowreplay.replayer.plan import build_plan
    from shadowreplay.replayer.routes import parse_target

    tk = LocalTokenizer(tok_dir)
    table = recorded_rows(tk, [SYSTEM + SUFFIXES[0], SYSTEM + SUFFIXES[1]])
    pts = table.column("prompt_tokens").to_pylist()
    table = table.set_column(table.schema.get_field_index("prompt_tokens"), "prompt_tokens",
                             pa.array([pts[0], None], pa.int32()))
    table = table.append_column("route_index", pa.nulls(2, pa.int32()))  # as schedule.select adds it
    opts = BodyOptions({}, shape=shape_prompts(table, str(tok_dir)))
    plan = build_plan(table, [0, 1], parse_target("http://127.0.0.1:9"), [], opts, [])
    assert plan.skip[0] is None and plan.skip[1].startswith("not replayable: shape row")
    body = json.loads(plan.http[0].split(b"\r\n\r\n", 1)[1])
    assert tk.count([body["prompt"]])[0] == pts[0]
    assert body["max_tokens"] == body["min_tokens"] == 5 and body["ignore_eos"] is True  # output pinned
