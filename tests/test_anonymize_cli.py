"""`shadowreplay scrub` as a real separate process: the JSON Lines contract, keys, determinism."""

from __future__ import annotations

import json

from tests.anonymize_helpers import PLANTED, run_cli

LINES = [
    {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": t}]} for _, _, t in PLANTED[:12]
] + [["plain list", "13812345678"], "a JSON string a@b.co", 42, None]


def jsonl(values, extra: list[bytes] | None = None) -> bytes:
    lines = [json.dumps(v, ensure_ascii=False).encode() for v in values]
    for pos, raw in extra or []:
        lines.insert(pos, raw)
    return b"\n".join(lines) + b"\n"


def test_scrub_jsonl_roundtrip_same_order_and_shape(key_file):
    p = run_cli(["scrub", "--key-file", str(key_file)], jsonl(LINES))
    assert p.returncode == 0, p.stderr
    out = [json.loads(line) for line in p.stdout.decode().splitlines()]
    assert len(out) == len(LINES)
    for src, dst in zip(LINES, out):
        assert type(src) is type(dst)
        if isinstance(src, dict):
            assert dst["model"] == src["model"] and dst["messages"][0]["role"] == "user"
            assert len(dst["messages"][0]["content"]) == len(src["messages"][0]["content"])
    text = p.stdout.decode()
    for _, value, _ in PLANTED[:12]:
        assert value not in text
    assert "13812345678" not in text and "a@b.co" not in text
    assert out[-2:] == [42, None]
    assert p.stderr == b""


def test_non_json_line_is_scrubbed_as_text_with_warning(key_file):
    secret_line = "not json: call 13812345678 or mail x.y@corp.example"
    data = jsonl(LINES[:2], extra=[(1, secret_line.encode())])
    p = run_cli(["scrub", "--key-file", str(key_file)], data)
    assert p.returncode == 0
    out = p.stdout.decode().splitlines()
    assert len(out) == 3
    scrubbed = json.loads(out[1])
    assert isinstance(scrubbed, str) and len(scrubbed) == len(secret_line)
    assert "13812345678" not in scrubbed and "x.y@corp.example" not in scrubbed
    err = p.stderr.decode()
    assert "line 2" in err and "not JSON" in err
    assert "13812345678" not in err and "corp.example" not in err  # warning never echoes content


def test_invalid_utf8_line_is_not_dropped(key_file):
    data = b'{"a": "ok"}\n\xff\xfe mail a@b.co\n'
    p = run_cli(["scrub", "--key-file", str(key_file)], data)
    assert p.returncode == 0
    out = p.stdout.decode().splitlines()
    assert len(out) == 2 and "a@b.co" not in out[1]
    assert "line 2" in p.stderr.decode()


def test_key_from_environment_and_input_file(tmp_path, scrub_key, key_file):
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl(LINES))
    by_env = run_cli(["scrub", "--input", str(src)], env={"SHADOWREPLAY_SCRUB_KEY": scrub_key.decode()})
    by_file = run_cli(["scrub", "--key-file", str(key_file)], jsonl(LINES))
    assert by_env.returncode == 0 and by_env.stdout == by_file.stdout


def test_missing_key_is_refused_cleanly():
    p = run_cli(["scrub"], jsonl(LINES))
    assert p.returncode == 2
    err = p.stderr.decode()
    assert "SHADOWREPLAY_SCRUB_KEY" in err and "--key-file" in err
    assert "Traceback" not in err
    assert p.stdout == b""


def test_missing_key_file_and_input_are_refused_cleanly(tmp_path, key_file):
    p = run_cli(["scrub", "--key-file", str(tmp_path / "nope.key")], b"{}\n")
    assert p.returncode == 2 and "does not exist" in p.stderr.decode() and "Traceback" not in p.stderr.decode()
    p = run_cli(["scrub", "--key-file", str(key_file), "--input", str(tmp_path / "nope.jsonl")])
    assert p.returncode == 2 and "Traceback" not in p.stderr.decode()


def test_identical_across_processes_and_hash_seeds_other_key_differs(key_file, tmp_path):
    data = jsonl(LINES)
    a = run_cli(["scrub", "--key-file", str(key_file)], data, env={"PYTHONHASHSEED": "1"})
    b = run_cli(["scrub", "--key-file", str(key_file)], data, env={"PYTHONHASHSEED": "2"})
    other = tmp_path / "other.key"
    other.write_bytes(b"a-completely-different-key")
    c = run_cli(["scrub", "--key-file", str(other)], data)
    assert a.returncode == b.returncode == c.returncode == 0
    assert a.stdout == b.stdout
    assert a.stdout != c.stdout
    # every line carrying PII differs under the other key
    for la, lc, src in zip(a.stdout.splitlines(), c.stdout.splitlines(), LINES):
        if isinstance(src, dict):
            assert la != lc


def test_streams_line_by_line(key_file):
    """Each scrubbed line comes out while stdin is still open (usable behind `tail -f`)."""
    import os
    import subprocess
    import sys
    import threading

    from tests.anonymize_helpers import REPO

    # without PYTHONUNBUFFERED, so only the command's own flushing can make the line appear
    env = {k: v for k, v in os.environ.items() if k not in ("SHADOWREPLAY_SCRUB_KEY", "PYTHONUNBUFFERED")}
    p = subprocess.Popen([sys.executable, "-m", "shadowreplay.cli", "scrub", "--key-file", str(key_file)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    try:
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(p.stdout.readline()), daemon=True)
        reader.start()
        p.stdin.write(b'{"content": "call 13812345678"}\n')
        p.stdin.flush()
        reader.join(timeout=30)
        assert got and got[0].endswith(b"\n"), "no output line while stdin is open"
        line = json.loads(got[0])
        assert "13812345678" not in line["content"] and len(line["content"]) == len("call 13812345678")
    finally:
        p.stdin.close()
        p.wait(timeout=60)
        p.stdout.close()
        p.stderr.close()
    assert p.returncode == 0
