"""The demo's capacity step (shadow/demo.py, Demo.capacity) against the stand-in engine of known
capacity (tests/sse_server.py): its SLO, its summary and its lines for a bracketed knee and for
a sweep that found no failing load; the demo's signal handlers survive the in-process replays."""

from __future__ import annotations

import json
import signal
from types import SimpleNamespace

import pytest

from shadowreplay.shadow import demo as D
from shadowreplay.shadow.procs import interrupts_as_keyboard_interrupt
from tests.capacity_helpers import StandIn, steady_rows
from tests.replayer_helpers import write_recording

pytestmark = pytest.mark.slow  # a stand-in engine process; about 15 s each


def _recording(root, rate, seconds, ttft_ms=None):
    rows = steady_rows(rate, seconds)
    if ttft_ms is not None:
        for r in rows:
            r["ttft_ms"] = ttft_ms
    write_recording(root, rows)
    return root


def _demo(tmp_path):
    out = tmp_path / "demo"
    (out / "logs").mkdir(parents=True)
    return D.Demo(D.DemoConfig.for_mode(quick=True, out=out), echo=lambda s: None), out


def test_quick_capacity_step_brackets_the_knee_and_reports_the_headroom(tmp_path):
    rec = _recording(tmp_path / "rec", 20, 30, ttft_ms=100.0)  # 20 req/s; capacity 25 req/s
    demo, out = _demo(tmp_path)
    with StandIn(slots=1, service_ms=40) as engine, interrupts_as_keyboard_interrupt():
        ours = signal.getsignal(signal.SIGTERM)
        demo.capacity(rec, SimpleNamespace(url=engine.url), out / "capacity", D.QUICK_CAPACITY_BUDGET_S)
        assert signal.getsignal(signal.SIGTERM) is ours  # the replays' event loop left it at SIG_DFL
    cap = demo.summary["capacity"]
    assert cap["slo"] == "ttft_p95<=500ms" and cap["recorded_ttft_p95_ms"] == pytest.approx(100)  # at least 500 ms
    assert [s["load"] for s in cap["steps"]] == D.QUICK_CAPACITY_LOADS
    assert cap["max_speed"] == 1 and cap["interval"]["speed"][1] == 2 and not cap["at_least"], cap
    assert cap["headroom"] == pytest.approx(cap["max_rate_rps"] / cap["recorded_peak_rps"], abs=0.002)
    assert cap["steps"][2]["stopped_early"] and cap["wall_s"] <= D.QUICK_CAPACITY_BUDGET_S + 10, cap
    res = json.loads((out / "capacity" / "capacity.json").read_text())
    assert res["max_speed"] == cap["max_speed"] and res["headroom"] == cap["headroom"]
    log = (out / "demo.log").read_text()
    assert "the same from a shell: shadowreplay capacity" in log and "--loads 1,2,4" in log
    assert "capacity: the baseline shadow holds 1x the recorded traffic" in log and "95% interval 1x to 2x" in log


def test_capacity_step_without_a_failing_load_says_at_least(tmp_path):
    rec = _recording(tmp_path / "rec", 10, 20)  # no TTFT recorded: the SLO falls back to 500 ms
    demo, out = _demo(tmp_path)
    with StandIn(slots=8, service_ms=10) as engine:  # 800 req/s: every load passes
        demo.capacity(rec, SimpleNamespace(url=engine.url), out / "capacity", D.QUICK_CAPACITY_BUDGET_S)
    cap = demo.summary["capacity"]
    assert cap["slo"] == "ttft_p95<=500ms" and cap["recorded_ttft_p95_ms"] is None
    assert cap["max_speed"] == 4 and cap["at_least"] and cap["interval"]["speed"][1] is None, cap
    assert cap["headroom"] == pytest.approx(cap["max_rate_rps"] / cap["recorded_peak_rps"], abs=0.002)
    assert "capacity: at least 4x the recorded traffic" in (out / "demo.log").read_text()
