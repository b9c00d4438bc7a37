"""docs/ci.md runs: its "Try it on one machine" block, verbatim but for the port and the
recording's folder, against real vLLM (CPU, the tiny model) must exit 0 (an A/A pair) and write
JUnit XML a JUnit parser reads; the GitHub Actions job's shadowreplay steps, with the runner's
paths, model and ports swapped for this machine's and the recording read from a real
S3-compatible server, run to the end with every step exiting 0 or 3 (a gate's verdict), never 1
(a crash) or 2 (a broken command).

The job's install step (pip and git on the runner) and its `uses:` actions are not run; the
shadow and replay steps are the page's, so a renamed flag, a changed exit status or a step that
cannot work on real engines fails here. tests/test_ci_doc.py checks the rest of the page (every
command parses)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from junitparser import Failure, JUnitXml

from tests.capacity_helpers import steady_rows
from tests.replayer_helpers import write_recording
from tests.s3_helpers import aws_env, moto_server  # noqa: F401  (the session's S3 server fixture)

from shadowreplay.ports import free_ports

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "ci.md"
BIN = Path(sys.executable).parent  # the venv whose `shadowreplay` the page's commands call


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _recording(root: Path, model: str, rate: float, seconds: float) -> Path:
    rows = steady_rows(rate, seconds, tokens=8, prompt_words=30)
    for r in rows:
        body = json.loads(r["request_body"])
        body["model"] = r["model"] = model
        r["request_body"] = json.dumps(body)
    write_recording(root, rows)
    return root


def _env(tmp_path: Path, vllm_python: Path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", SHADOWREPLAY_RUN_DIR=str(tmp_path / "run"),
               SHADOWREPLAY_VLLM_PYTHON=str(vllm_python), **extra)
    return env


def _bash(script: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    # GitHub runs a `run:` step as `bash -e {0}`; the "Try it" block is typed line by line (no -e)
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _junit_cases(path: Path) -> list:
    return [case for suite in JUnitXml.fromfile(str(path)) for case in suite]


def _shadows_down(cwd: Path, env: dict[str, str]) -> None:
    subprocess.run([str(BIN / "shadowreplay"), "shadow", "down", "--all"], cwd=cwd, env=env,
                   capture_output=True, timeout=120)


def test_try_it_on_one_machine_block_passes(tmp_path, vllm_python):
    block = re.search(r"```\n(.*?)```", _section("Try it on one machine"), re.S).group(1)
    port = free_ports(1)[0]
    assert block.count("8100") == 4 and block.count("rec/") == 1, block  # what is swapped below
    script = block.replace("8100", str(port))
    # 5 min of steady traffic would take 20 minutes over 4 runs; the block's `--end 5m` keeps all of these
    _recording(tmp_path / "rec", "prod-model", rate=8, seconds=15)
    env = _env(tmp_path, vllm_python)
    try:
        p = _bash(script, tmp_path, env, timeout=900)
    finally:
        _shadows_down(tmp_path, env)
    out = p.stdout + p.stderr
    assert "exit 0" in p.stdout, out[-6000:]
    cases = _junit_cases(tmp_path / "gates.xml")
    assert {c.name for c in cases} >= {"worse", "ttft_p95>+20%"}, [c.name for c in cases]
    assert all(not c.result for c in cases), out[-4000:]  # an A/A pair: no gate failed


def _github_steps() -> list[dict]:
    body = re.search(r"```yaml\n(.*?)```", _section("GitHub Actions"), re.S).group(1)
    return yaml.safe_load(body)["jobs"]["shadow-replay"]["steps"]


def test_github_job_runs_its_steps_on_real_engines(tmp_path, vllm_python, moto_server):  # noqa: F811
    import boto3

    steps = _github_steps()
    job_env = yaml.safe_load(re.search(r"```yaml\n(.*?)```", _section("GitHub Actions"), re.S).group(1))[
        "jobs"]["shadow-replay"]["env"]
    ports = free_ports(2)
    # the runner's model folder: the tiny model under the folder name the job serves and maps to
    model_dir = tmp_path / "models" / Path(job_env["MODEL_DIR"]).name
    model_dir.parent.mkdir()
    from shadowreplay.shadow.tiny_model import build_tiny_model

    model_dir.symlink_to(build_tiny_model(python=vllm_python), target_is_directory=True)
    # the serving setup of the target branch (/tmp/base, a worktree) and of the merge request (.)
    for root, args in ((tmp_path / "base", "--max-num-seqs 4"), (tmp_path, "--max-num-seqs 16")):
        (root / "serving").mkdir(parents=True)
        (root / "serving" / "vllm-args").write_text(args + "\n")
    # the recording, in a bucket of a real S3-compatible server
    # 600 requests a side over the 3 runs: enough for the TTFT P99 gate once the warm-up is left out
    rec = _recording(tmp_path / "recording", "prod-llama", rate=10, seconds=20)
    bucket, prefix = job_env["RECORDING"][len("s3://"):].rstrip("/").split("/", 1)
    s3env = aws_env(moto_server.endpoint)
    cli = boto3.client("s3", endpoint_url=moto_server.endpoint, region_name=s3env["AWS_REGION"],
                       aws_access_key_id=s3env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=s3env["AWS_SECRET_ACCESS_KEY"])
    if bucket not in [b["Name"] for b in cli.list_buckets().get("Buckets", [])]:
        cli.create_bucket(Bucket=bucket)
    for f in sorted(rec.rglob("*")):
        if f.is_file():
            cli.upload_file(str(f), bucket, f"{prefix}/{f.relative_to(rec).as_posix()}")
    env = _env(tmp_path, vllm_python, **{k: str(v) for k, v in job_env.items() if not k.startswith("AWS_")}, **s3env)
    env["MODEL_DIR"] = str(model_dir)

    def local(script: str) -> str:
        s = script.replace("/tmp/venv-base/bin/python", str(vllm_python))
        s = s.replace("/tmp/venv-cand/bin/python", str(vllm_python)).replace("/tmp/base/", f"{tmp_path}/base/")
        s = s.replace("8001", str(ports[0])).replace("8002", str(ports[1]))
        # a 20 s recording: a 1-minute warm-up would leave nothing to judge
        return s.replace("--warmup 1m", "--warmup 2s")

    ran, statuses = [], {}
    try:
        for step in steps:
            if "run" not in step or step["run"].lstrip().startswith("pip install"):
                continue  # actions, and the install step (pip and git on the runner)
            p = _bash("set -e\n" + local(step["run"]), tmp_path, env, timeout=900)
            ran.append(step["name"])
            statuses[step["name"]] = p.returncode
            assert p.returncode in (0, 3), f"{step['name']}: exit {p.returncode}\n{(p.stdout + p.stderr)[-6000:]}"
            if p.returncode == 3:  # the output names every failing gate
                assert re.search(r"gates: \d+ of \d+ passed; failed: ", p.stdout), p.stdout[-3000:]
    finally:
        _shadows_down(tmp_path, env)
    assert len(ran) == 5, ran  # the shadows started, the replay, both gates, the shadows stopped
    for side in ("base", "cand"):
        runs = sorted((tmp_path / "runs" / side).glob("run-*"))
        assert len(runs) == 3, runs
        summaries = [json.loads((r / "manifest.json").read_text())["summary"] for r in runs]
        assert all(s["errors"] == 0 and s["sent"] == 200 for s in summaries), summaries
    for name in ("gates.xml", "slo.xml"):
        cases = _junit_cases(tmp_path / name)
        assert cases, name
        failed = [c for c in cases if any(isinstance(r, Failure) for r in c.result)]
        gate_step = "Gate on the comparison" if name == "gates.xml" else "Absolute SLOs of the candidate"
        assert bool(failed) == (statuses[gate_step] == 3), (name, statuses, [c.name for c in failed])
