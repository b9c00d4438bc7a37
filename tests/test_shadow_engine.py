"""Fast tests of the shadow engine plumbing: the vLLM command line, the 'vLLM not installed'
message, and stopping whole process trees (real processes, no vLLM needed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from shadowreplay.shadow.engine import EngineConfig, parse_engine_args, server_command, server_env, stop_group
from shadowreplay.shadow.procs import ProcessSet, descendant_groups
from shadowreplay.shadow.venv import find_vllm_python
from shadowreplay.errors import ConfigError, EngineNotInstalled

REPO = Path(__file__).resolve().parent.parent


def cfg(**kw) -> EngineConfig:
    return EngineConfig(model=Path("/m"), served_model_name="tiny", port=8123, **kw)


def test_command_has_the_basics_and_only_the_flags_asked_for():
    cmd = server_command("/v/bin/python", cfg())
    assert cmd[:3] == ["/v/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    pairs = dict(zip(cmd[3::2], cmd[4::2]))
    assert pairs["--model"] == "/m" and pairs["--served-model-name"] == "tiny" and pairs["--port"] == "8123"
    assert pairs["--max-model-len"] == "8192" and pairs["--dtype"] == "bfloat16"
    for flag in ("--max-num-batched-tokens", "--max-num-seqs", "--scheduling-policy", "--gpu-memory-utilization"):
        assert flag not in cmd  # vLLM's own defaults unless asked
    assert not any("chunked" in c or "prefix-caching" in c for c in cmd)


def test_command_maps_every_engine_flag():
    c = cfg(
        max_num_batched_tokens=512, max_num_seqs=64, enable_chunked_prefill=True, enable_prefix_caching=False,
        scheduling_policy="priority", long_prefill_token_threshold=256, gpu_memory_utilization=0.9,
        extra_args=parse_engine_args("--enforce-eager --seed 3"),
    )
    cmd = server_command("py", c)
    joined = " ".join(cmd)
    assert "--max-num-batched-tokens 512" in joined and "--max-num-seqs 64" in joined
    assert "--enable-chunked-prefill" in cmd and "--no-enable-prefix-caching" in cmd
    assert "--scheduling-policy priority" in joined and "--long-prefill-token-threshold 256" in joined
    assert "--gpu-memory-utilization 0.9" in joined
    assert cmd[-3:] == ["--enforce-eager", "--seed", "3"]
    c2 = cfg(enable_chunked_prefill=False, enable_prefix_caching=True)
    cmd2 = server_command("py", c2)
    assert "--no-enable-chunked-prefill" in cmd2 and "--enable-prefix-caching" in cmd2


def test_the_pin_processor_is_loaded_unless_it_cannot_be():
    from shadowreplay.shadow.engine import PIN_PROCESSOR, PLUGIN_DIR

    cmd = server_command("py", cfg())
    assert cmd[cmd.index("--logits-processors") + 1] == PIN_PROCESSOR
    assert (PLUGIN_DIR / (PIN_PROCESSOR.split(":")[0] + ".py")).is_file()
    env = server_env(cfg(), base={"PYTHONPATH": "/x"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(PLUGIN_DIR), "/x"]
    # a pooling model takes no processors; a user's own --logits-processors are theirs
    for extra in (["--runner", "pooling"], ["--logits-processors", "mine:Proc"]):
        c = cfg(extra_args=extra)
        assert server_command("py", c).count("--logits-processors") == extra.count("--logits-processors")
        assert "PYTHONPATH" not in server_env(c, base={})
    assert "--logits-processors" not in server_command("py", cfg(pin_length=False))


def test_env_sets_kv_cache_and_offline():
    env = server_env(cfg(kv_cache_space_gib=1.5), base={})
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1.5"
    assert env["HF_HUB_OFFLINE"] == "1"
    assert server_env(cfg(), base={"VLLM_CPU_KVCACHE_SPACE": "7"})["VLLM_CPU_KVCACHE_SPACE"] == "7"


@pytest.mark.parametrize(
    "kw",
    [{"scheduling_policy": "lifo"}, {"max_num_seqs": 0}, {"max_num_batched_tokens": -1}, {"gpu_memory_utilization": 1.5}],
)
def test_bad_engine_flags_are_config_errors(kw):
    with pytest.raises(ConfigError):
        cfg(**kw)


def test_engine_args_unbalanced_quote():
    with pytest.raises(ConfigError, match="--engine-args"):
        parse_engine_args("--x 'open")


def test_python_without_vllm_names_the_install_command(monkeypatch):
    monkeypatch.setenv("SHADOWREPLAY_VLLM_PYTHON", sys.executable)  # the project venv: no vllm there
    with pytest.raises(EngineNotInstalled) as e:
        find_vllm_python()
    msg = str(e.value)
    assert "make setup" in msg and "scripts/install-vllm .venv-vllm" in msg and sys.executable in msg


def test_missing_python_is_not_installed_either(monkeypatch, tmp_path):
    monkeypatch.setenv("SHADOWREPLAY_VLLM_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(EngineNotInstalled, match="make setup"):
        find_vllm_python()


@pytest.mark.parametrize("argv", [["shadow", "up", "--tiny"], ["demo", "--out", "{tmp}/demo"]])
def test_cli_says_how_to_install_vllm(argv, tmp_path):
    env = dict(os.environ, SHADOWREPLAY_VLLM_PYTHON=sys.executable, SHADOWREPLAY_RUN_DIR=str(tmp_path / "run"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    r = subprocess.run([sys.executable, "-m", "shadowreplay", *argv], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "vllm is not installed" in lines[0] and "make setup" in lines[0]
    assert not (tmp_path / "demo").exists()  # nothing created before the check


# ---------------------------------------------------------------------- process trees
TREE = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    # a child in the same group, and (optionally) one in its own session, like mitmdump under `record`
    same = subprocess.Popen([sys.executable, "-c", "import time, signal; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)"])
    own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True) if sys.argv[1] == "1" else None
    if sys.argv[2] == "stubborn":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(same.pid, own.pid if own else 0, flush=True)
    time.sleep(600)
    """
)


def spawn_tree(own_session: bool, mode: str) -> tuple[subprocess.Popen, list[int]]:
    p = subprocess.Popen(
        [sys.executable, "-c", TREE, "1" if own_session else "0", mode], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    pids = [int(x) for x in p.stdout.readline().split() if x != "0"]
    return p, [p.pid, *pids]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_stop_group_escalates_to_sigkill_for_a_stubborn_tree():
    p, pids = spawn_tree(False, "stubborn")
    t = time.monotonic()
    stop_group(p.pid, p, grace_s=(0.5, 0.5))
    assert time.monotonic() - t < 15
    assert p.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while any(alive(x) for x in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(x) for x in pids)


def test_process_set_stops_children_that_made_their_own_session():
    p, pids = spawn_tree(True, "polite")
    assert len(pids) == 3
    assert pids[2] in descendant_groups(p.pid)
    ps = ProcessSet(grace_s=(0.5, 0.5))  # a child ignores SIGINT: the default 20 s grace would only wait
    ps.add("tree", p)
    ps.stop_all()
    deadline = time.monotonic() + 5
    while any(alive(x) for x in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(x) for x in pids), [x for x in pids if alive(x)]


# ---------------------------------------------------------------------- down / status without vLLM
def run_cli(*argv, run_dir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SHADOWREPLAY_RUN_DIR=str(run_dir))
    return subprocess.run([sys.executable, "-m", "shadowreplay", *argv], capture_output=True, text=True, env=env, timeout=60)


def test_down_and_status_with_nothing_running(tmp_path):
    r = run_cli("shadow", "status", run_dir=tmp_path)
    assert r.returncode == 0 and "none running" in r.stdout
    r = run_cli("shadow", "down", run_dir=tmp_path)
    assert r.returncode == 0 and "none running" in r.stdout
    r = run_cli("shadow", "down", "--port", "9", run_dir=tmp_path)
    assert r.returncode == 2 and "no shadow" in r.stderr and "Traceback" not in r.stderr


def test_down_stops_the_process_named_in_the_state_file_and_ignores_reused_pids(tmp_path):
    from shadowreplay.shadow import state

    p, pids = spawn_tree(False, "polite")
    st = state.ShadowState(
        pid=p.pid, port=18999, host="127.0.0.1", url="http://127.0.0.1:18999", model="/m", served_model_name="m",
        log=str(tmp_path / "x.log"), started_at="now", start_ticks=state.proc_start_ticks(p.pid),
    )
    state.save(st, tmp_path)
    # a stale record naming a live but different process (pid reused): must not be signalled
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    stale = state.ShadowState(**{**st.__dict__, "pid": other.pid, "port": 18998, "start_ticks": 1})
    state.save(stale, tmp_path)
    try:
        r = run_cli("shadow", "status", run_dir=tmp_path)
        assert "18999" in r.stdout and "not running (stale)" in r.stdout
        r = run_cli("shadow", "down", "--all", "--grace", "1s", run_dir=tmp_path)  # a child ignores SIGINT
        assert r.returncode == 0, r.stderr
        assert "port 18999 stopped" in r.stdout and "18998 was not running" in r.stdout
        p.wait(timeout=10)
        deadline = time.monotonic() + 5
        while any(alive(x) for x in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(x) for x in pids)
        assert alive(other.pid)
        assert not list(tmp_path.glob("shadow-*.json"))
    finally:
        other.kill()
        other.wait()


def test_state_files_are_json(tmp_path):
    from shadowreplay.shadow import state

    st = state.ShadowState(1, 2, "h", "u", "m", "n", "l", "s", None)
    path = state.save(st, tmp_path)
    assert json.loads(path.read_text())["port"] == 2
    (tmp_path / "shadow-3.json").write_text("{broken")
    assert [s.port for _, s in state.load_all(tmp_path)] == [2]


def test_demo_refuses_a_non_empty_folder_that_is_not_a_demo(tmp_path, monkeypatch):
    from shadowreplay.shadow.demo import Demo, DemoConfig

    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    monkeypatch.setattr("shadowreplay.shadow.demo.find_vllm_python", lambda _=None: Path(sys.executable))
    with pytest.raises(ConfigError, match="not an earlier demo"):
        Demo(DemoConfig(out=out)).run()
    assert (out / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("kw", [{"minutes": 0.9}, {"minutes": 0}, {"week_s": 25.0}, {"week_s": 20.0}])
def test_demo_config_rejects_weeks_that_cannot_repeat(kw, tmp_path):
    from shadowreplay.shadow.demo import DemoConfig

    with pytest.raises(ConfigError):
        DemoConfig(out=tmp_path, **kw)


@pytest.mark.parametrize("kw", [{"slot_at_s": 15.0}, {"slot_at_s": 40.0}, {"slot_at_s": -10.0}])
def test_demo_config_rejects_a_slot_off_the_buckets(kw, tmp_path):
    from shadowreplay.shadow.demo import DemoConfig

    with pytest.raises(ConfigError, match="buckets"):
        DemoConfig(out=tmp_path, **kw)


def test_demo_sizing_counts_the_slots_after_the_warm_up():
    from shadowreplay.shadow.demo import slot_sizing

    # 150 s of 40 s weeks, the slot one bucket after the start: at 10, 50, 90 and 130 s
    s = slot_sizing(3.3, 2.5, 40.0, 10.0)
    assert s["slots"] == 4 and s["expected"] == pytest.approx(132) and s["p95_carried"]
    assert (s["p50_needs"], s["p95_needs"], s["p99_needs"]) == (10, 100, 500)
    # a slower engine: 44 requests; 11 slots carry 120, i.e. 20 + 10 * 40 s = 7 minutes
    s = slot_sizing(1.1, 2.5, 40.0, 10.0)
    assert s["slots"] == 4 and not s["p95_carried"] and s["minutes_for_p95"] == 7.0
    assert slot_sizing(1.1, s["minutes_for_p95"], 40.0, 10.0)["p95_carried"]
    assert slot_sizing(2.0, 140 / 60, 40.0, 10.0)["slots"] == 4  # the last slot ends at 140 s: in
    assert slot_sizing(2.0, 139 / 60, 40.0, 10.0)["slots"] == 3


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="no scheduler autogroups on this kernel")
def test_a_niced_engine_gets_its_sessions_nice_too(tmp_path):
    """A niced engine in a session of its own competes with the replayer's session as an equal
    unless the session's (autogroup's) nice is lowered too."""
    from shadowreplay.ports import free_ports
    from shadowreplay.shadow.engine import VllmServer, set_session_nice

    fake = tmp_path / "python"  # stands in for the vLLM venv's python: imports anything, stays up as a server
    fake.write_text('#!/bin/sh\n[ "$1" = -c ] && exit 0\nexec sleep 30\n')
    fake.chmod(0o755)
    cfg = EngineConfig(model=tmp_path, served_model_name="m", port=free_ports(1)[0], nice=10)
    srv = VllmServer(cfg, tmp_path / "vllm.log", python=fake).start()
    try:
        deadline = time.monotonic() + 10  # `nice` sets the process's own nice, then execs the server
        while os.getpriority(os.PRIO_PROCESS, srv.pid) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert os.getpriority(os.PRIO_PROCESS, srv.pid) == 10
        assert Path(f"/proc/{srv.pid}/autogroup").read_text().split()[-1] == "10"
    finally:
        os.killpg(srv.pid, signal.SIGKILL)  # a stand-in: no graceful stop to wait for
        srv.proc.wait()
    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert Path(f"/proc/{p.pid}/autogroup").read_text().split()[-1] == "0"
        assert set_session_nice(p.pid, 7)
        assert Path(f"/proc/{p.pid}/autogroup").read_text().split()[-1] == "7"
    finally:
        p.kill()
        p.wait()
    assert not set_session_nice(p.pid, 10)  # gone: reported, not raised


def test_demo_rates_aim_the_slot_at_a_p95_within_the_engines_capacity():
    from shadowreplay.shadow.calibrate import SHORT_UTILIZATION, SLOT_REQUESTS, rates

    # a fast engine: the lower utilization already puts enough requests into 40 s of slot
    c = rates(0.15, 3.6, 10.0, batched_s=0.1, slot_total_s=40.0)
    assert c.short_rate == pytest.approx(SHORT_UTILIZATION[0] / 0.1, abs=0.01) and c.short_rate * 40 >= SLOT_REQUESTS
    # a slower one: the rate rises to what the slot needs ...
    c = rates(0.2, 4.5, 10.0, batched_s=0.14, slot_total_s=40.0)
    assert c.short_rate == pytest.approx(SLOT_REQUESTS / 40, abs=0.01)
    # ... but not past the upper utilization
    c = rates(0.3, 4.5, 10.0, batched_s=0.25, slot_total_s=40.0)
    assert c.short_rate == pytest.approx(SHORT_UTILIZATION[1] / 0.25, abs=0.01)
    # whole long prompts, evenly spaced: 8 s of a 10 s slot at 3.6 s each is 2, every 5 s
    assert rates(0.2, 3.6, 10.0).batch_interval_s == 5.0
    assert rates(0.2, 4.5, 10.0).batch_interval_s == 5.0
    assert rates(0.2, 9.0, 10.0).batch_interval_s == 10.0  # at least one
    assert rates(0.2, 0.01, 10.0).batch_interval_s == 0.5  # a fast engine: at most one every 0.5 s


def test_demo_plan_sends_whole_long_prompts_inside_each_slot():
    from shadowreplay.shadow.traffic import TrafficConfig, in_slot, plan

    cfg = TrafficConfig(model="m", duration_s=150, period_s=40, slot_start_s=10, slot_len_s=10, short_rate=3.0, batch_interval_s=5.0)
    longs = [p.at for p in plan(cfg) if p.long]
    assert longs == pytest.approx([10.2, 15.2, 50.2, 55.2, 90.2, 95.2, 130.2, 135.2])
    assert all(in_slot(t, cfg) for t in longs)
