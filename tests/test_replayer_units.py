"""Pure parts of the replayer: body building, headers, routes, times, safety, offsets."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from shadowreplay.durations import parse_time
from shadowreplay.replayer.body import BodyOptions, build_body, build_headers, parse_headers, parse_model_map, request_bytes
from shadowreplay.replayer.routes import parse_route, parse_target
from shadowreplay.replayer.safety import check_targets, recorded_endpoints
from shadowreplay.replayer.schedule import offsets_ns
from shadowreplay.errors import ConfigError

OPTS = BodyOptions({"prod-model": "tiny"})


def test_llm_body_gets_length_fields_and_model_map():
    rec = json.dumps({"model": "prod-model", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                      "max_tokens": 900, "stream_options": {"foo": 1}})
    body, model = build_body(rec, kind="chat", stream=True, completion_tokens=17, opts=OPTS)
    obj = json.loads(body)
    assert model == "tiny" and obj["model"] == "tiny"
    assert obj["max_tokens"] == 17 and obj["min_tokens"] == 17 and obj["ignore_eos"] is True
    assert obj["stream_options"] == {"foo": 1, "include_usage": True}
    assert obj["messages"] == [{"role": "user", "content": "hi"}]


def test_non_streaming_and_no_ignore_eos():
    rec = json.dumps({"model": "other", "prompt": "x", "max_completion_tokens": 5})
    body, model = build_body(rec, kind="completion", stream=False, completion_tokens=3,
                             opts=BodyOptions({}, ignore_eos=False))
    obj = json.loads(body)
    assert model == "other"
    assert "ignore_eos" not in obj and "stream_options" not in obj and "stream" not in obj
    assert obj["max_tokens"] == obj["min_tokens"] == obj["max_completion_tokens"] == 3


def test_unknown_completion_tokens_keeps_recorded_max_tokens():
    body, _ = build_body(json.dumps({"model": "m", "prompt": "x", "max_tokens": 9}), kind="completion",
                         stream=False, completion_tokens=None, opts=OPTS)
    assert json.loads(body)["max_tokens"] == 9 and "min_tokens" not in json.loads(body)


def test_non_json_body_sent_as_recorded():
    assert build_body("a=1&b=2", kind="http", stream=None, completion_tokens=None, opts=OPTS) == (b"a=1&b=2", None)


def test_headers_drop_credentials_and_inject():
    rec = json.dumps({"Authorization": "Bearer [X]", "api-key": "k", "Cookie": "c", "Host": "prod",
                      "X-Tag": "t", "Content-Length": "5", "X-Multi": ["a", "b"]})
    out = build_headers(rec, parse_headers(["Authorization: Bearer shadow"]))
    names = [k.lower() for k, _ in out]
    assert ("Authorization", "Bearer shadow") in out and names.count("authorization") == 1
    assert "api-key" not in names and "cookie" not in names and "host" not in names and "content-length" not in names
    assert ("X-Tag", "t") in out and ("X-Multi", "a") in out and ("X-Multi", "b") in out


def test_request_bytes_is_valid_http():
    raw = request_bytes("POST", "/v1/completions", "h:1", [("X-A", "1")], b'{"a":1}')
    head, body = raw.split(b"\r\n\r\n", 1)
    assert head.startswith(b"POST /v1/completions HTTP/1.1\r\nHost: h:1\r\n")
    assert b"Content-Length: 7" in head and b"Content-Type: application/json" in head and body == b'{"a":1}'


@pytest.mark.parametrize("bad", ["nocolon", "a b: c"])
def test_bad_header(bad):
    with pytest.raises(ConfigError):
        parse_headers([bad])


def test_model_map_parse():
    assert parse_model_map(["a=b", " c = d "]) == {"a": "b", "c": "d"}
    with pytest.raises(ConfigError):
        parse_model_map(["nope"])


def test_route_parse_allows_equals_in_predicate():
    r = parse_route("kind = 'chat' AND client_id = 'x'=http://127.0.0.1:8002")
    assert r.predicate == "kind = 'chat' AND client_id = 'x'"
    assert r.target.port == 8002 and r.target.host == "127.0.0.1"
    assert parse_route("prompt_chars > 4000=http://h:9").predicate == "prompt_chars > 4000"
    with pytest.raises(ConfigError):
        parse_route("prompt_chars > 4000")


def test_target_parse():
    t = parse_target("https://shadow.internal/")
    assert (t.scheme, t.port, t.base_path) == ("https", 443, "")
    with pytest.raises(ConfigError):
        parse_target("shadow:8000")


def test_parse_time_offsets_and_absolute():
    first = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    assert parse_time("90", first) == first + dt.timedelta(seconds=90)
    assert parse_time("1500ms", first) == first + dt.timedelta(seconds=1.5)
    assert parse_time("+2m", first) == first + dt.timedelta(minutes=2)
    assert parse_time("2026-01-01T00:00:05Z", first) == first + dt.timedelta(seconds=5)
    assert parse_time("2026-01-01T00:00:05", first) == first + dt.timedelta(seconds=5)
    with pytest.raises(ConfigError):
        parse_time("yesterday", first)


def test_safety_refuses_recorded_host():
    rec = recorded_endpoints(["api.prod.example", None], [None, None], ["https", "http"])
    with pytest.raises(ConfigError, match="recorded from"):
        check_targets([parse_target("https://API.prod.example")], rec, allow=False)
    check_targets([parse_target("https://api.prod.example")], rec, allow=True)
    check_targets([parse_target("http://api.prod.example:8000")], rec, allow=False)  # other port
    check_targets([parse_target("http://127.0.0.1:8000")], rec, allow=False)


def test_offsets_scale_with_speed():
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    tbl = pa.table({"ts_start": pa.array([t0, t0 + dt.timedelta(milliseconds=100), t0 + dt.timedelta(seconds=1)],
                                         pa.timestamp("us", tz="UTC"))})
    assert offsets_ns(tbl, 1.0) == [0, 100_000_000, 1_000_000_000]
    assert offsets_ns(tbl, 2.0) == [0, 50_000_000, 500_000_000]
    with pytest.raises(ConfigError):
        offsets_ns(tbl, 0)


def test_progress_line_on_tty_only():
    import asyncio
    import io

    from shadowreplay.replayer.progress import Progress

    snap = {"sent": 3, "total": 10, "in_flight": 2, "done": 1, "errors": 0, "lag_ms": 0.25}
    quiet = Progress(lambda: snap, stream=io.StringIO())
    assert not quiet.enabled  # StringIO is not a TTY

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    p = Progress(lambda: snap, interval_s=0.01, stream=out)
    assert p.enabled

    async def go():
        p.start()
        while "sent" not in out.getvalue():
            await asyncio.sleep(0.01)
        p.stop()

    asyncio.run(asyncio.wait_for(go(), 5))
    assert "sent 3/10  in flight 2  done 1  errors 0  lag 0.25 ms" in out.getvalue()
    assert out.getvalue().rstrip("\x1b[?25h").endswith("lag 0.25 ms\n")  # the last line stays, ended
