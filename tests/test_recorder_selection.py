"""The recorder's filters and sampling (recorder/selection.py), and `analyze`'s estimated totals of
a sampled recording (analysis/sampling.py). The end-to-end runs through a real mitmdump are in
tests/test_recorder_production.py."""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest

from shadowreplay.anonymize.keyedhash import KeyedIds
from shadowreplay.dataset import write_rows
from shadowreplay.errors import ConfigError
from shadowreplay.recorder.selection import SAMPLED_OUT, Request, Selection, conversation_key, parse_rate
from tests.analysis_helpers import run_json

KEY = b"test-key-0123456789abcdef-not-a-secret"


def req(path="/v1/chat/completions", host="gw.example:8080", headers=(), addr="10.0.0.7", rid="r1", body=None):
    return Request(path=path, host=host, headers=list(headers), client_addr=addr, request_id=rid, body=body)


def chat_turns(conv: int, turns: int, system: str = "You are a helpful assistant.") -> list[bytes]:
    """The request bodies of one chat conversation: each turn repeats every earlier message."""
    msgs = [{"role": "system", "content": system}]
    bodies = []
    for t in range(turns):
        msgs.append({"role": "user", "content": f"conversation {conv} question {t}"})
        bodies.append(json.dumps({"model": "m", "stream": True, "messages": msgs}).encode())
        msgs.append({"role": "assistant", "content": f"answer {t} of {conv}"})
    return bodies


# --- filters ---
def test_health_checks_metrics_and_model_listings_are_left_out_by_default():
    s = Selection()
    for path in ("/health", "/healthz", "/health/live", "/metrics", "/ping", "/v1/models", "/version"):
        assert s.decide(req(path=path)) == "default", path
    for path in ("/v1/chat/completions", "/v1/completions?x=1", "/v1/embeddings", "/healthcare/v1/chat"):
        assert s.decide(req(path=path)) is None, path
    # an include pattern that names them records them
    assert Selection(include_path=["/health", "/v1/*"]).decide(req(path="/health")) is None


def test_path_host_header_and_client_filters():
    s = Selection(include_path=["/v1/*"], exclude_path=["/v1/embeddings"])
    assert s.decide(req(path="/v1/chat/completions?stream=1")) is None
    assert s.decide(req(path="/v1/embeddings")) == "path"
    assert s.decide(req(path="/v2/chat")) == "path"

    s = Selection(include_host=["*.example"], exclude_host=["canary.example"])
    assert s.decide(req(host="GW.example:8080")) is None
    assert s.decide(req(host="canary.example")) == "host"
    assert s.decide(req(host="other.org")) == "host"

    s = Selection(include_header=["x-tenant=^team-(a|b)$"], exclude_header=["user-agent=probe"])
    assert s.decide(req(headers=[("X-Tenant", "team-b")])) is None
    assert s.decide(req(headers=[("x-tenant", "team-c")])) == "header"
    assert s.decide(req(headers=[("x-tenant", "team-a"), ("User-Agent", "k8s-probe/1")])) == "header"

    ids = KeyedIds(KEY)
    batch = ids.client_id("sk-batch-0000")  # what the rows' client_id says
    s = Selection(exclude_client=["10.1.0.0/16", batch], ids=ids)
    assert s.needs_key
    assert s.decide(req(addr="10.1.2.3")) == "client"
    assert s.decide(req(headers=[("authorization", "Bearer sk-batch-0000")])) == "client"
    assert s.decide(req(headers=[("authorization", "Bearer sk-other")])) is None
    assert Selection(include_client=["10.0.0.0/8"]).decide(req(addr="192.168.1.1")) == "client"


@pytest.mark.parametrize("bad", [
    dict(include_header=["no-equals-sign"]), dict(exclude_header=["x=("]), dict(include_client=["nobody"]),
    dict(by="tenant"),
])  # fmt: skip
def test_malformed_filters_are_one_clear_error(bad):
    with pytest.raises(ConfigError):
        Selection(**bad)


def test_rates():
    assert parse_rate("10%") == pytest.approx(0.1)
    assert parse_rate("0.25") == 0.25
    assert parse_rate("100%") == 1.0
    for bad in ("0", "0%", "150%", "ten", "-5%"):
        with pytest.raises(ConfigError):
            parse_rate(bad)


# --- sampling ---
def test_conversation_key_is_shared_by_every_turn_and_differs_between_conversations():
    keys = [conversation_key(req(body=b), "x-session-id", 1000) for b in chat_turns(1, 5)]
    assert keys[0] is not None and len(set(keys)) == 1
    assert conversation_key(req(body=chat_turns(2, 1)[0]), "x-session-id", 1000) != keys[0]
    # a session header wins over the body
    a = conversation_key(req(body=chat_turns(1, 1)[0], headers=[("X-Session-Id", "s-42")]), "x-session-id", 1000)
    b = conversation_key(req(body=chat_turns(9, 3)[2], headers=[("x-session-id", "s-42")]), "x-session-id", 1000)
    assert a == b and a != keys[0]
    # completions: the prompt's first prefix_chars characters
    p1 = json.dumps({"prompt": "p" * 40 + " turn one"}).encode()
    p2 = json.dumps({"prompt": "p" * 40 + " turn one, turn two"}).encode()
    assert conversation_key(req(body=p1), "", 40) == conversation_key(req(body=p2), "", 40)
    assert conversation_key(req(body=b"not json"), "", 40) is None


def test_a_conversation_sample_keeps_whole_conversations_at_the_rate_deterministically():
    rng = random.Random(7)
    convs = {c: chat_turns(c, rng.randint(1, 6)) for c in range(3000)}

    def sampled(key: bytes, rate: float) -> set[int]:
        s = Selection(rate=rate, ids=KeyedIds(key))
        kept = set()
        for c, bodies in convs.items():
            verdicts = {s.decide(req(body=b, rid=f"{c}-{i}")) for i, b in enumerate(bodies)}
            assert len(verdicts) == 1, f"conversation {c} was split: {verdicts}"  # whole or not at all
            if verdicts == {None}:
                kept.add(c)
            else:
                assert verdicts == {SAMPLED_OUT}
        return kept

    ten = sampled(KEY, 0.10)
    assert 0.08 < len(ten) / len(convs) < 0.12
    assert sampled(KEY, 0.10) == ten  # the same key: the same sample
    assert ten <= sampled(KEY, 0.20)  # a 10 % sample is part of the 20 % one
    other = sampled(b"another-key-0123456789", 0.10)
    assert len(ten & other) < len(ten) / 3  # another key: another sample


def test_client_and_request_sampling():
    ids = KeyedIds(KEY)
    s = Selection(rate=0.5, by="client", ids=ids)
    for n in range(20):  # every request of one client gets the same verdict
        h = [("authorization", f"Bearer sk-{n}")]
        assert len({s.decide(req(headers=h, rid=str(i), body=chat_turns(i, 1)[0])) for i in range(10)}) == 1
    s = Selection(rate=0.5, by="request", ids=ids)
    kept = sum(s.decide(req(rid=f"r{i}", body=chat_turns(1, 1)[0])) is None for i in range(2000))
    assert 900 < kept < 1100  # the same body, each request on its own


# --- analyze: estimated totals ---
def _rows(bodies: list[tuple[int, int, bytes]], t0: dt.datetime) -> list[dict]:
    rows = []
    for n, (conv, turn, _body) in enumerate(bodies):
        start = t0 + dt.timedelta(seconds=n * 0.05)
        rows.append({
            "request_id": f"{conv}-{turn}", "ts_start": start, "ts_end": start + dt.timedelta(milliseconds=200),
            "e2e_ms": 200.0, "ttft_ms": 20.0, "status": 200, "kind": "chat", "model": "m", "client_id": "c_x",
            "prompt_tokens": 10, "completion_tokens": 5, "source": "recorder",
        })  # fmt: skip
    return rows


def test_analyze_estimates_the_whole_traffic_from_a_10_percent_conversation_sample(tmp_path, capsys):
    """The done-when check: the estimated request rate of a 10 % sample within 10 % of the full
    recording's, and the counts labelled as estimates."""
    rng = random.Random(11)
    requests = []  # (conversation, turn, body), interleaved in time as real traffic is
    live = {c: chat_turns(c, rng.randint(1, 8)) for c in range(6000)}
    cursor = {c: 0 for c in live}
    while live:
        c = rng.choice(list(live))
        requests.append((c, cursor[c], live[c][cursor[c]]))
        cursor[c] += 1
        if cursor[c] == len(live[c]):
            del live[c]
    t0 = dt.datetime(2026, 12, 1, 10, tzinfo=dt.timezone.utc)
    sel = Selection(rate=0.10, ids=KeyedIds(KEY))
    kept = [r for r in requests if sel.decide(req(body=r[2], rid=f"{r[0]}-{r[1]}")) is None]
    kept_convs = {c for c, _, _ in kept}
    turns_of = {}
    for c, t, _ in requests:
        turns_of[c] = turns_of.get(c, 0) + 1
    assert sum(turns_of[c] for c in kept_convs) == len(kept)  # whole conversations only

    full, sample = tmp_path / "full", tmp_path / "sample"
    write_rows(full, "requests", _rows(requests, t0))
    rows = _rows(requests, t0)
    kept_ids = {f"{c}-{t}" for c, t, _ in kept}
    write_rows(sample, "requests", [r for r in rows if r["request_id"] in kept_ids], extra_metadata=sel.file_metadata())

    a = run_json(capsys, "analyze", str(full))
    b = run_json(capsys, "analyze", str(sample))
    assert "sampling" not in a
    total_a = next(g for g in a["groups"] if g["total"])
    total_b = next(g for g in b["groups"] if g["total"])
    assert b["sampling"]["rates"] == [0.1] and b["sampling"]["by"] == ["conversation"]
    assert total_b["requests"] == len(kept)
    est = total_b["estimated"]
    assert est["requests"] == pytest.approx(len(kept) * 10)
    assert abs(est["rps"] / total_a["rps"] - 1) < 0.10, (est["rps"], total_a["rps"])
    assert abs(est["requests"] / total_a["requests"] - 1) < 0.10
    capsys.readouterr()
    from tests.analysis_helpers import run_cli

    rc, out, _ = run_cli(capsys, "analyze", str(sample))
    assert rc == 0
    assert "Estimated totals (a sample: sampled at 10% by conversation" in out
    assert "requests (est.)" in out


@pytest.mark.parametrize("argv,needle", [
    (["--include-header", "x-tenant"], "--include-header 'x-tenant': NAME=REGEX"),
    (["--exclude-client", "bob"], "--exclude-client 'bob': a client_id (c_...) or an IP address"),
    (["--sample", "0%"], "--sample '0%': must be more than 0 and at most 100%"),
    (["--sample-by", "tenant"], "invalid choice: 'tenant'"),
])  # fmt: skip
def test_record_refuses_a_bad_sample_or_filter_with_one_line(tmp_path, key_file, capsys, argv, needle):
    from shadowreplay.cli import main

    base = ["record", "--upstream", "http://127.0.0.1:1", "--out", str(tmp_path / "out"), "--key-file", str(key_file)]
    try:
        rc = main([*base, *argv])
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2
    assert needle in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()  # refused before anything started
