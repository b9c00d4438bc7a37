"""`shadowreplay demo` end to end on the real vLLM (tiny model), real mitmdump and real DuckDB,
and its cleanup on failure and on Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from shadowreplay.dataset import glob_for

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def demo_env(vllm_python: Path, tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, SHADOWREPLAY_VLLM_PYTHON=str(vllm_python), SHADOWREPLAY_RUN_DIR=str(tmp_path / "run"), PYTHONUNBUFFERED="1")


def live(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (the demo's output folder or a port)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmd and live(int(d.name)):
            out.append(f"{d.name}: {cmd[:200]}")
    return out


def engine_pids(output: str) -> list[int]:
    return [int(p) for p in re.findall(r"vLLM [\w-]+\s+http://\S+\s+pid (\d+)", output)]


def wait_gone(pids: list[int], also: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (any(live(p) for p in pids) or processes_mentioning(also)):
        time.sleep(0.2)
    assert not [p for p in pids if live(p)], "engine processes left running"
    assert processes_mentioning(also) == []


@pytest.mark.timeout(900)  # about 3 minutes
def test_demo_quick_runs_the_whole_pipeline(vllm_python, tmp_path):
    """`demo --quick`: real engines, the real recorder, the PII check, the anomaly, a replay, the report."""
    out = tmp_path / "demo"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "shadowreplay", "demo", "--quick", "--out", str(out)],
                       capture_output=True, text=True, env=demo_env(vllm_python, tmp_path), timeout=840)  # fmt: skip
    wall = time.monotonic() - t0
    assert r.returncode == 0, (r.stderr[-3000:], r.stdout[-3000:])
    summary = json.loads((out / "summary.json").read_text())
    print(f"demo --quick: {wall:.0f} s")

    # two engines only, both stopped; the recording came through mitmdump and holds no planted PII
    pids = engine_pids(r.stdout)
    assert len(pids) == 2
    assert summary["pii"]["leaks"] == 0 and summary["traffic"]["planted_pii"] > 20
    con = duckdb.connect()
    rec = con.execute(f"SELECT count(*), count(DISTINCT client_id) FROM read_parquet('{glob_for(out / 'recording', 'requests')}')").fetchone()
    assert rec[0] >= summary["traffic"]["ok"] > 0 and rec[1] == 4

    # the anomaly is found where the demo put the batch slot, and pinned on the batch client
    an = summary["anomaly"]
    assert an["label"].startswith(f"+{summary['slot_s']:g}s-") and an["batch_client_named"] and "nightly-batch" in an["explained_by"]

    # one replay, complete, and its fidelity check; no remediation, no verdicts
    glob = glob_for(out / "replay-baseline", "replay_results")
    n, failed = con.execute(f"SELECT count(*), count(*) FILTER (WHERE error IS NOT NULL OR status >= 400) FROM read_parquet('{glob}')").fetchone()
    assert n == rec[0] and failed == 0
    assert not (out / "replay-flag").exists() and "verdicts" not in summary
    assert summary["fidelity"] and summary["fidelity"]["matched"] > 0

    # the capacity step: three loads into the baseline, within its budget; a knee (or a lower bound)
    # and its headroom over the recorded peak, consistent with capacity.json
    check_capacity(summary["capacity"], out, steps=3)
    assert summary["capacity"]["wall_s"] <= 60, summary["capacity"]  # a 40 s budget; a step may end a little after it

    html = (out / "report.html").read_text()
    assert "<svg" in html and "TP99 by slot" in html and (out / "report-baseline.html").exists()
    assert "Capacity" in (out / "report-capacity.html").read_text()
    assert not list(out.rglob("*.key")) and "done in" in r.stdout
    wait_gone(pids, str(out), timeout=10)


def check_capacity(cap: dict, out: Path, steps: int | None = None) -> None:
    """summary["capacity"] of a demo: its steps, the knee or a lower bound, and the headroom as
    capacity.json has them (headroom = max_rate_rps / recorded_peak_rps)."""
    res = json.loads((out / "capacity" / "capacity.json").read_text())
    assert cap["slo"].startswith("ttft_p95<=") and res["slos"] == [cap["slo"]]
    loads = [s["load"] for s in cap["steps"]]
    if steps is not None:
        assert len(loads) == steps, cap
    assert 3 <= len(loads) <= 5 and loads[0] == 1 and loads == [s["load"] for s in res["steps"]], cap
    assert cap["max_speed"] is not None and cap["max_speed"] >= 1, cap  # 1x holds twice the recording's own P95
    assert cap["max_speed"] == res["max_speed"] and cap["max_rate_rps"] == res["max_rate_rps"] > 0
    assert cap["recorded_peak_rps"] > 0 and cap["headroom"] > 0
    assert cap["headroom"] == pytest.approx(cap["max_rate_rps"] / cap["recorded_peak_rps"], abs=0.002), cap
    knee = next(s for s in cap["steps"] if s["load"] == cap["max_speed"])
    fails = [s["load"] for s in cap["steps"] if not s["pass"]]
    assert knee["pass"] and (not fails or min(fails) > cap["max_speed"]), cap  # the largest pass below every fail
    lo, hi = cap["interval"]["speed"]
    assert lo <= cap["max_speed"] and (hi is None) == cap["at_least"] and (hi is None or hi > cap["max_speed"]), cap
    for s in cap["steps"]:
        assert s["requests"] > 0 and s["rate_rps"] > 0 and (s["pass"] or s["stopped_early"] or s["ttft_p95_ms"] is not None), s
    log = (out / "demo.log").read_text()
    assert "[7/8] capacity" in log and ("capacity: the baseline shadow holds" in log or "capacity: at least" in log)
    assert (out / "capacity" / "step-01" / "replay_results").is_dir()


@pytest.mark.nightly
@pytest.mark.timeout(1800)  # about 10 minutes: four replays of 1.5-2 minutes after the recording
def test_demo_end_to_end(vllm_python, tmp_path):
    out = tmp_path / "demo"
    r = subprocess.run(
        [sys.executable, "-m", "shadowreplay", "demo", "--out", str(out)],  # the defaults: 1.5-2 min, weeks of 30 s
        capture_output=True, text=True, env=demo_env(vllm_python, tmp_path), timeout=1500,
    )  # fmt: skip
    assert r.returncode == 0, (r.stderr[-3000:], r.stdout[-3000:])
    summary = json.loads((out / "summary.json").read_text())

    # 3: the recording exists and holds no planted PII (the demo checked every column; check the count here)
    assert summary["pii"]["leaks"] == 0 and summary["traffic"]["planted_pii"] > 100
    assert sum(summary["pii"]["scrubbed"].values()) >= summary["traffic"]["planted_pii"] // 2
    con = duckdb.connect()
    rec = con.execute(f"SELECT count(*), count(DISTINCT client_id) FROM read_parquet('{glob_for(out / 'recording', 'requests')}')").fetchone()
    assert rec[0] >= summary["traffic"]["ok"] and rec[1] == 4  # three chat clients and the batch client
    text = con.execute(
        f"SELECT string_agg(request_body || request_headers, ' ') FROM read_parquet('{glob_for(out / 'recording', 'requests')}')"
    ).fetchone()[0]
    assert "my name is" in text.lower() and "sk-demo-" not in text  # the chats are there; the API keys are not

    # 4: the anomaly slot and the batch client, found on the finder's defaults
    an = summary["anomaly"]
    slot = f"+{summary['slot_s']:g}s-{summary['slot_s'] + 10:g}s"  # the bucket after the start: no wait for the week
    assert an["label"].startswith(slot) and an["batch_client_named"] and "nightly-batch" in an["explained_by"]
    assert an["metric"] in ("ttft", "e2e", "itl") and (an["z"] >= 1.5 or an["chance"] <= 0.01)
    assert slot in (out / "anomalies.txt").read_text()

    # 5: four replays complete, against engines other than production
    for name in ("replay-baseline", "replay-flag", "replay-route", "replay-baseline-2"):
        glob = glob_for(out / name, "replay_results")
        n, failed = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE error IS NOT NULL OR status >= 400) FROM read_parquet('{glob}')"
        ).fetchone()
        why = con.execute(f"SELECT request_id, scheduled_at, status, error FROM read_parquet('{glob}') WHERE error IS NOT NULL OR status >= 400").fetchall()
        assert n == rec[0] and failed == 0, (name, why, (out / f"{name}.txt").read_text()[-2000:])
    # the route fix sent the batch client's requests, and only those, to the lane
    lane = con.execute(f"SELECT count(*), count(DISTINCT client_id) FROM read_parquet('{glob_for(out / 'replay-route', 'replay_results')}') "
                       "WHERE route IS NOT NULL").fetchone()
    assert lane[0] == summary["traffic"]["long"] and lane[1] == 1

    # 6: fidelity and the verdicts, judged by their structure, not by a lucky number
    fid = summary["fidelity"]
    assert fid and fid["matched"] == fid["a_requests"] == fid["b_requests"] <= rec[0]  # after the 10 s warm-up
    assert fid["verdict"].startswith(("no detectable difference", "within the A/A noise floor", "differs beyond the A/A noise floor",
                                      "too few requests")), fid["verdict"]
    v = summary["verdicts"]
    assert set(v) == {"flag", "route", "aa"}
    allowed = {"better", "worse", "no detectable difference", "within A/A noise", "too few requests"}
    for key, res in v.items():
        n = res["requests"]
        assert n[0] == n[1] >= 20, (key, n)  # the same short requests of the slot on both sides
        assert set(res["figures"]) >= {"TTFT P50", "TTFT P95", "TTFT P99"}
        for lab, f in res["figures"].items():
            assert f["verdict"] in allowed, (key, lab, f)
            needs = {"P50": 10, "P95": 100, "P99": 500}[lab.split()[1]]
            assert (f["verdict"] == "too few requests") == (min(f["n"]) < needs), (key, lab, f)
            if f["verdict"] != "too few requests":
                lo, hi = f["ratio_ci"]
                assert lo <= f["ratio"] <= hi
                assert (f["verdict"] == "no detectable difference") == (lo <= 1 <= hi) or f["verdict"] == "within A/A noise"
                assert (f["aa_ratio"] is not None) == (key != "aa")
        # the send lag of both runs is reported next to the verdicts
        assert set(res["send_lag_ms"]) == {"a", "b"} and all(x["p99"] is not None for x in res["send_lag_ms"].values())
    # the sizing printed before recording, and what the A/A pair says the run can detect
    size = summary["sizing"]
    # 1.5 min (3 slots) where 3 slots hold the 130 short requests at the calibrated rate, else 2 min (4)
    assert size["slots"] in (3, 4) and size["p95_needs"] == 100 and size["p99_needs"] == 500
    assert size["expected"] == pytest.approx(summary["calibration"]["short_rate"] * 10 * size["slots"], rel=0.01)
    assert (size["slots"] == 3) == (summary["calibration"]["short_rate"] * 30 >= 130)
    for lab, d in summary["detectable"].items():
        f = v["aa"]["figures"][lab]
        assert (d is None) == (f["verdict"] == "too few requests"), (lab, d, f)
        if d is not None:
            assert 0 < d["down"] <= 1 <= d["up"] and d["detects_2x"] == (d["down"] >= 0.5 and d["up"] <= 2), (lab, d)
    assert "what this run can tell" in (out / "demo.log").read_text()
    # the slot hurts short requests in production and in the faithful replay
    slot = summary["slot_latency"]
    for run in ("recording", "baseline"):
        assert slot[run]["slot"]["requests"] >= 20 and slot[run]["elsewhere"]["requests"] >= 50
    assert slot["recording"]["slot"]["ttft_p99_ms"] > 2 * slot["recording"]["elsewhere"]["ttft_p50_ms"]
    assert slot["baseline"]["slot"]["ttft_p99_ms"] > 2 * slot["baseline"]["elsewhere"]["ttft_p50_ms"]
    demo_log = (out / "demo.log").read_text()
    assert "send lag p99" in demo_log and "A/A: baseline again" in demo_log

    # 7: capacity, a search of 3-5 loads from 1x within 3 minutes
    check_capacity(summary["capacity"], out)
    assert summary["capacity"]["wall_s"] <= 200, summary["capacity"]

    # 8: the reports
    html = (out / "report.html").read_text()
    assert "<svg" in html and "TP99 by slot" in html and "Per client" in html
    assert all((out / f"report-{n}.html").exists() for n in ("baseline", "flag", "route", "capacity"))

    # everything under one folder; the scrub key never in it; nothing left running
    assert not list(out.rglob("*.key"))
    assert "done in" in r.stdout
    wait_gone(engine_pids(r.stdout), str(out), timeout=10)


def _default_sigint() -> None:
    # A suite started as a background job of a non-interactive shell inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: the Ctrl-C tests would test nothing.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_demo(vllm_python, tmp_path, *extra):
    out = tmp_path / "demo"
    p = subprocess.Popen(
        [sys.executable, "-m", "shadowreplay", "demo", "--out", str(out), "--minutes", "1", "--week", "30", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=demo_env(vllm_python, tmp_path),
        preexec_fn=_default_sigint,
    )  # fmt: skip
    return p, out


def stop_left_over(p, pids: list[int]) -> None:
    """After a failed check: stop the demo the way a user would (SIGTERM runs its cleanup), then
    kill whatever is left, so that no engine outlives the test."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
    for pid in pids:  # each engine leads its own process group
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def test_demo_ctrl_c_while_engines_start_stops_everything(vllm_python, tmp_path):
    p, out = start_demo(vllm_python, tmp_path)
    lines = []
    pids: list[int] = []
    try:
        for line in p.stdout:
            lines.append(line)
            if "waiting for the engines" in line:
                break
        pids = engine_pids("".join(lines))
        assert len(pids) == 4, lines
        time.sleep(2)  # let vLLM get going (spawn its engine cores): a fixed wait is the point here
        p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            stop_left_over(p, pids)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert "stopping every process it started" in rest
    wait_gone(pids, str(out))


def test_demo_failure_of_one_engine_stops_the_others(vllm_python, tmp_path):
    # a remediation flag vLLM rejects: the remediated engine exits while the other three start
    p, out = start_demo(vllm_python, tmp_path, "--remediation=--scheduling-policy bogus")
    try:
        stdout, err = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            stop_left_over(p, [])
    assert p.returncode == 2, err
    assert "vLLM 'remediated' exited with code" in err and "Traceback" not in err.split("exited with code")[0]
    assert "demo failed" in stdout
    pids = engine_pids(stdout)
    assert len(pids) == 4
    wait_gone(pids, str(out))
    assert (out / "logs" / "vllm-remediated.log").exists()
