"""--tokenizer URL: a server speaking vLLM's /tokenize API (here a small local one backed by the
same tokenizer.json) gives the same prompts as the local tokenizer; an unreachable one is a clear
one-line error."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow.parquet as pq
import pytest

from tests.traces_helpers import cli, train_tokenizer
from shadowreplay.traces.tokenizer import LocalTokenizer

CODE = "AzureLLMInferenceTrace_code_2023.csv"


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    return train_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture
def tokenize_server(tok_dir):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    calls = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, code, obj):
            b = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": "tiny-llama", "object": "model"}]})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if self.path != "/tokenize" or body.get("model") != "tiny-llama":
                self._send(404, {"error": "bad request"})
                return
            calls.append(body)
            ids = tok.encode(body["prompt"], add_special_tokens=body.get("add_special_tokens", True)).ids
            self._send(200, {"count": len(ids), "max_model_len": 8192, "tokens": ids})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", calls
    srv.shutdown()
    srv.server_close()


def test_url_tokenizer_gives_the_same_prompts_as_the_local_one(traces_dir, tok_dir, tokenize_server, tmp_path):
    url, calls = tokenize_server
    a, b = tmp_path / "local", tmp_path / "url"
    cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(a), "--tokenizer", str(tok_dir), "--limit", "40")
    cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(b), "--tokenizer", url, "--limit", "40")
    ra = pq.read_table(a / "requests", columns=["request_id", "request_body", "prompt_tokens"]).to_pylist()
    rb = pq.read_table(b / "requests", columns=["request_id", "request_body", "prompt_tokens"]).to_pylist()
    assert sorted(ra, key=lambda r: r["request_id"]) == sorted(rb, key=lambda r: r["request_id"])
    assert len(calls) > 256  # the word list was measured through the server
    local = LocalTokenizer(tok_dir)
    assert local.count([json.loads(r["request_body"])["prompt"] for r in rb]) == [r["prompt_tokens"] for r in rb]


def test_unreachable_tokenizer_url_is_one_clear_line(traces_dir, tmp_path):
    from tests.conftest import free_port

    p = cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(tmp_path / "o"),
            "--tokenizer", f"http://127.0.0.1:{free_port()}", "--model", "m", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "/tokenize unreachable" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.vllm
def test_real_vllm_tokenize_gives_the_same_prompts_as_its_tokenizer_folder(traces_dir, tiny_vllm, tmp_path):
    """--tokenizer URL against a real vLLM server: its /tokenize and the served model's own
    tokenizer.json agree on every synthesized prompt, and vLLM counts each prompt at exactly the
    recorded length."""
    import httpx

    srv, model_dir = tiny_vllm
    a, b = tmp_path / "local", tmp_path / "url"
    cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(a), "--tokenizer", str(model_dir), "--limit", "40")
    cli("import", "azure-llm", str(traces_dir / CODE), "--out", str(b), "--tokenizer", srv.url, "--limit", "40")
    cols = ["request_id", "request_body", "prompt_tokens", "model"]
    ra = sorted(pq.read_table(a / "requests", columns=cols).to_pylist(), key=lambda r: r["request_id"])
    rb = sorted(pq.read_table(b / "requests", columns=cols).to_pylist(), key=lambda r: r["request_id"])
    assert len(rb) == 40
    assert [(r["request_id"], r["request_body"], r["prompt_tokens"]) for r in ra] == \
           [(r["request_id"], r["request_body"], r["prompt_tokens"]) for r in rb]
    with httpx.Client(timeout=30) as c:
        for r in rb:
            prompt = json.loads(r["request_body"])["prompt"]
            got = c.post(srv.url + "/tokenize", json={"model": "tiny-llama", "prompt": prompt}).json()
            assert got["count"] == r["prompt_tokens"], r["request_id"]
