"""tests.recorder_helpers.engine_apart: the engine's session and this process on CPUs of their own
during the block, every thread back on its CPUs afterwards."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.recorder_helpers import engine_apart, wait_for


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_engine_apart_pins_and_restores():
    cpus = sorted(os.sched_getaffinity(0))
    half = len(cpus) // 2
    # an "engine" of two processes in a session of its own, its leader narrowed to one CPU the way
    # vLLM binds its worker
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    engine = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        os.sched_setaffinity(engine.pid, {cpus[-1]})
        own_before = os.sched_getaffinity(0)

        def session_pids() -> list[int]:
            return [int(p) for p in os.listdir("/proc") if p.isdigit() and _sid(int(p)) == engine.pid]

        wait_for(lambda: len(session_pids()) == 2, what="the engine's second process")
        with engine_apart(engine.pid):
            assert os.sched_getaffinity(0) == set(cpus[half:])
            child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                                   capture_output=True, text=True, check=True)  # fmt: skip
            assert child.stdout.strip() == str(cpus[half:])  # a proxy started in the block
            pids = session_pids()
            assert engine.pid in pids and len(pids) == 2
            for pid in pids:
                assert os.sched_getaffinity(pid) == set(cpus[:half])
        assert os.sched_getaffinity(0) == own_before
        assert os.sched_getaffinity(engine.pid) == {cpus[-1]}
    finally:
        os.killpg(engine.pid, 9)
        engine.wait()


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None
