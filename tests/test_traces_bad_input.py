"""Bad and unusual input: wrong columns, unparseable values, mixed timestamp precisions, gzip,
empty files, every BurstGPT layout, both openai-jsonl shapes, and the artifact warnings."""

from __future__ import annotations

import gzip
import json

import pyarrow.parquet as pq
import pytest

from shadowreplay.errors import ConfigError, DatasetError
from tests.traces_helpers import cli
from shadowreplay.traces.base import Report
from shadowreplay.traces.importer import ImportOptions, run_import

START_US = 1_704_067_200_000_000


def run(fmt, path, out, **kw) -> Report:
    r = Report(quiet=True)
    run_import(ImportOptions(fmt=fmt, path=path, out=out, text=kw.pop("text", "none"), start_us=START_US, **kw), r)
    return r


def rows(out) -> list[dict]:
    t = pq.read_table(out / "requests")
    out = t.to_pylist()
    for r in out:
        r["ts_us"] = int(r["ts_start"].timestamp() * 1_000_000)
    return sorted(out, key=lambda r: (r["ts_us"], len(r["request_id"]), r["request_id"]))


AZURE_2024_MIXED = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2024-05-10 00:00:00.0093990,100,10\n"
    "2024-05-10 00:00:01,200,20\n"
    "2024-05-10 00:00:01.5,300,30\n"
    "2024-05-10 00:00:02.1234567,400,40\n"
    "2024-05-10 00:00:03.000000+00:00,500,50\n"
)


def test_mixed_timestamp_precisions_parse_to_the_microsecond(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text(AZURE_2024_MIXED)
    r = run("azure-llm", f, tmp_path / "o")
    base = 1_715_299_200_000_000  # 2024-05-10T00:00:00Z
    got = [(x["ts_us"] - base, x["prompt_tokens"]) for x in rows(tmp_path / "o")]
    assert got == [(9399, 100), (1_000_000, 200), (1_500_000, 300), (2_123_456, 400), (3_000_000, 500)]
    assert r.rows_written == 5 and not r.counts


def test_gzip_input_gives_the_same_rows(tmp_path):
    plain, gz = tmp_path / "a.csv", tmp_path / "a.csv.gz"
    plain.write_text(AZURE_2024_MIXED)
    gz.write_bytes(gzip.compress(AZURE_2024_MIXED.encode()))
    run("azure-llm", plain, tmp_path / "p")
    run("azure-llm", gz, tmp_path / "g")
    strip = lambda rs: [(r["ts_us"], r["prompt_tokens"], r["completion_tokens"], r["request_id"]) for r in rs]  # noqa: E731
    assert strip(rows(tmp_path / "p")) == strip(rows(tmp_path / "g"))
    m = tmp_path / "m.jsonl.gz"
    m.write_bytes(gzip.compress(b'{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n'))
    assert run("mooncake", m, tmp_path / "mo").rows_written == 1


def test_wrong_columns_name_the_expected_ones(tmp_path):
    f = tmp_path / "b.csv"
    f.write_text("time,prompt,output\n2024-05-10 00:00:00,1,2\n")
    with pytest.raises(DatasetError, match="missing column.*TIMESTAMP.*expected TIMESTAMP, ContextTokens, GeneratedTokens"):
        run("azure-llm", f, tmp_path / "o")
    p = cli("import", "burstgpt", str(f), "--out", str(tmp_path / "o2"), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "expected Timestamp, Request tokens, Response tokens" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    j = tmp_path / "c.jsonl"
    j.write_text('{"ts": 1, "in": 2}\n')
    with pytest.raises(DatasetError, match="expected keys timestamp, input_length, output_length, hash_ids"):
        run("mooncake", j, tmp_path / "o3")


def test_empty_files_are_clear_errors(tmp_path):
    for name, fmt in (("e.csv", "azure-llm"), ("e.csv", "burstgpt"), ("e.jsonl", "mooncake"), ("e.jsonl", "openai-jsonl")):
        f = tmp_path / name
        f.write_text("")
        with pytest.raises(DatasetError, match="empty file"):
            run(fmt, f, tmp_path / "o")
    p = cli("import", "azure-llm", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o"), check=False)
    assert p.returncode == 2 and "no such file" in p.stderr


def test_header_only_file_writes_nothing(tmp_path):
    f = tmp_path / "h.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    assert run("azure-llm", f, tmp_path / "o").rows_written == 0


def test_unparseable_rows_are_skipped_and_named(tmp_path, capsys):
    f = tmp_path / "u.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2024-05-10 00:00:00,1,2\n"
                 "yesterday,3,4\n"
                 "2024-05-10 00:00:02,x,6\n"
                 "2024-05-10 00:00:03,7,8\n")
    r = Report()
    run_import(ImportOptions(fmt="azure-llm", path=f, out=tmp_path / "o", text="none"), r)
    err = capsys.readouterr().err
    assert r.counts["unparseable"] == 2 and r.rows_written == 2
    assert "u.csv:3: skipped" in err and "yesterday" in err and "u.csv:4: skipped" in err
    assert [x["prompt_tokens"] for x in rows(tmp_path / "o")] == [1, 7]
    bad = tmp_path / "s.csv"
    bad.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00,1,2,3,4\n")
    with pytest.raises(DatasetError, match="s.csv: unreadable CSV"):
        run("azure-llm", bad, tmp_path / "o2")
    j = tmp_path / "m.jsonl"
    j.write_text('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n{not json\n'
                 '{"timestamp": "x", "input_length": 10, "output_length": 1, "hash_ids": [1]}\n')
    r = run("mooncake", j, tmp_path / "o3")
    assert r.counts["unparseable"] == 2 and r.rows_written == 1


def test_artifact_warnings_out_of_order_zero_output_steps(tmp_path, capsys):
    f = tmp_path / "w.jsonl"
    lines = [{"timestamp": 3000 * (i // 5), "input_length": 600, "output_length": 0 if i == 7 else 9, "hash_ids": [i, i + 100]}
             for i in range(40)]
    lines[20], lines[21] = lines[21], lines[20]
    lines[30]["timestamp"] = 1000  # out of order
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = Report()
    run_import(ImportOptions(fmt="mooncake", path=f, out=tmp_path / "o", text="none", start_us=START_US), r)
    err = capsys.readouterr().err
    assert r.counts["out_of_order"] == 1 and "w.jsonl:31: timestamp earlier" in err
    assert r.counts["zero_output"] == 1 and "w.jsonl:8: zero-length output" in err
    assert r.counts["timestamp_steps"] == 1 and "about 3000 ms apart" in err
    assert "40 rows written of 40 read" in r.summary()


def test_refuses_to_mix_into_an_existing_dataset(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text(AZURE_2024_MIXED)
    run("azure-llm", f, tmp_path / "o")
    with pytest.raises(ConfigError, match="already holds data"):
        run("azure-llm", f, tmp_path / "o")
    assert run("azure-llm", f, tmp_path / "o", append=True).rows_written == 5


BURST_V1 = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "5,ChatGPT,472,18,490,Conversation log\n"
            "45,GPT-4,1087,0,1087,API log\n"
            "118.5,ChatGPT,417,39,456,Conversation log\n")
BURST_V2 = ("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "19440110.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,43,GPT-4,906,446,1352,Conversation log\n"
            "19440161.0,d5983bf9-4b48-497b-892b-a58995247443,2,ChatGPT,36,29,65,Conversation log\n")


@pytest.mark.parametrize("text,expect", [
    (BURST_V1, [(5_000_000, 472, 18, "ChatGPT", "Conversation log"), (45_000_000, 1087, 0, "GPT-4", "API log"),
                (118_500_000, 417, 39, "ChatGPT", "Conversation log")]),
    (BURST_V1.replace("45,GPT-4,1087,0,1087,API log\n", ""),  # BurstGPT_without_fails: same header, no failures
     [(5_000_000, 472, 18, "ChatGPT", "Conversation log"), (118_500_000, 417, 39, "ChatGPT", "Conversation log")]),
    (BURST_V2, [(19_440_110_000_000, 906, 446, "GPT-4", "1722ac82-0a46-4bf0-aa08-89794e7a2b3f"),
                (19_440_161_000_000, 36, 29, "ChatGPT", "d5983bf9-4b48-497b-892b-a58995247443")]),
], ids=["v1", "without_fails", "v2-sessions"])
def test_burstgpt_layouts(tmp_path, text, expect):
    f = tmp_path / "b.csv"
    f.write_text(text)
    r = run("burstgpt", f, tmp_path / "o")
    got = [(x["ts_us"] - START_US, x["prompt_tokens"], x["completion_tokens"], x["model"], x["client_id"]) for x in rows(tmp_path / "o")]
    assert got == expect
    assert r.counts.get("zero_output", 0) == sum(1 for e in expect if e[2] == 0)


def test_openai_jsonl_both_shapes_duplicates_and_iso_times(tmp_path, tok_dir=None):
    f = tmp_path / "o.jsonl"
    recs = [
        {"timestamp": 1715299200.5, "id": "a", "body": {"model": "m", "prompt": "hello there", "max_tokens": 7, "stream": True},
         "prompt_tokens": 3},
        {"timestamp": "2024-05-10T00:00:01Z", "model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
        {"timestamp": "2024-05-10 00:00:02", "id": "a", "body": {"prompt": "x", "max_tokens": 1}, "completion_tokens": 2},
        {"timestamp": 5, "body": {"input": "neither"}},
    ]
    f.write_text("".join(json.dumps(x) + "\n" for x in recs))
    r = run("openai-jsonl", f, tmp_path / "o")
    got = rows(tmp_path / "o")
    base = 1_715_299_200_000_000
    assert [(x["ts_us"] - base, x["kind"], x["completion_tokens"], x["prompt_tokens"]) for x in got] == [
        (500_000, "completion", 7, 3), (1_000_000, "chat", 4, None), (2_000_000, "completion", 2, None)]
    assert json.loads(got[1]["request_body"]) == {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    assert got[0]["request_id"] == "a" and got[2]["request_id"] == "openai-jsonl:o:3"  # the duplicate gets a line id
    assert got[0]["stream"] is True and got[1]["stream"] is False
    assert r.counts["duplicate_id"] == 1 and r.counts["unparseable"] == 1 and r.counts["unknown_tokens"] == 2


def test_openai_jsonl_responses_and_messages_bodies_keep_their_kind(tmp_path):
    """The API comes from the record's path, else the body (shadowreplay.llmapi); a row gets its
    API's path and output limit, and the export reads its API's prompt."""
    from shadowreplay.traces.export import ExportOptions, run_export

    f = tmp_path / "a.jsonl"
    recs = [
        {"timestamp": 1, "path": "/v1/messages", "body": {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]},
         "prompt_tokens": 5},
        {"timestamp": 2, "body": {"model": "m", "instructions": "Be brief.", "input": "weather?", "max_output_tokens": 6},
         "prompt_tokens": 7},
        {"timestamp": 3, "body": {"model": "m", "system": "s", "max_tokens": 4, "messages": [{"role": "user", "content": "x"}]},
         "prompt_tokens": 3},
        {"timestamp": 4, "path": "/v1/chat/completions", "body": {"model": "m", "max_tokens": 2, "system": "s", "messages": []},
         "prompt_tokens": 1},
    ]
    f.write_text("".join(json.dumps(x) + "\n" for x in recs))
    run("openai-jsonl", f, tmp_path / "o")
    got = rows(tmp_path / "o")
    assert [(x["kind"], x["path"], x["completion_tokens"], x["prompt_chars"]) for x in got] == [
        ("messages", "/v1/messages", 9, 2), ("responses", "/v1/responses", 6, len("Be brief.\nweather?")),
        ("messages", "/v1/messages", 4, 3), ("chat", "/v1/chat/completions", 2, 0)]
    out = tmp_path / "e.jsonl"
    rep = run_export(ExportOptions(fmt="guidellm", recording=tmp_path / "o", out=out, hash_ids=False), Report(quiet=True))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert rep.rows_written == 4 and [(x["input_length"], x["output_length"]) for x in lines] == [(5, 9), (7, 6), (3, 4), (1, 2)]
