"""`shadowreplay capacity`: scaled loads (replayer/load.py), the search and the knee
(replayer/capacity.py), and sweeps against an engine of known capacity (tests/sse_server.py
--slots N --service-ms S, in its own process) and against real vLLM."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from shadowreplay.dataset import rows_to_table
from shadowreplay.errors import ConfigError
from shadowreplay.replayer.capacity import CapacityOptions, Step, knee, next_load, step_requests
from shadowreplay.replayer.load import Load, recorded_rates, sample_mask, scale
from shadowreplay.replayer.replay import ReplayOptions
from shadowreplay.schema import REQUESTS
from tests.capacity_helpers import Floor, StandIn, capacity_cli, steady_rows, write_steady

REPO = Path(__file__).resolve().parent.parent


def _table(rate=20.0, seconds=10.0, **kw) -> pa.Table:
    t = rows_to_table(steady_rows(rate, seconds, **kw), REQUESTS)
    return t.sort_by([("ts_start", "ascending"), ("request_id", "ascending")])


def _rate(sc) -> float:
    return (len(sc.offsets_ns) - 1) / (sc.offsets_ns[-1] / 1e9)


# ---- scaled loads (pure) ---------------------------------------------------------------------------
def test_speed_divides_every_gap_and_keeps_the_order():
    t = _table()
    base = scale(t, Load(1.0))
    fast = scale(t, Load(4.0))
    assert fast.table.column("request_id").to_pylist() == base.table.column("request_id").to_pylist()
    assert all(abs(f * 4 - b) <= 4 for f, b in zip(fast.offsets_ns, base.offsets_ns))
    assert _rate(fast) == pytest.approx(4 * _rate(base), rel=1e-6)
    assert not any(fast.lead_in)  # no step size: the whole selection once, nothing discarded


def test_a_step_takes_its_requests_plus_warmup_looping_a_short_selection():
    t = _table(20, 10)  # 200 rows
    sc = scale(t, Load(2.0, requests=450, warmup=0.1))
    assert len(sc.offsets_ns) == 500 and sum(sc.lead_in) == 50 and sc.lead_in[:50] == [True] * 50
    rids = sc.table.column("request_id").to_pylist()
    assert len(set(rids)) == len(rids)  # passes of the loop are told apart
    assert sc.copies == 3
    assert _rate(sc) == pytest.approx(40, rel=0.05)


def test_overlay_merges_salted_copies_at_k_times_the_rate():
    t = _table(20, 10)
    sc = scale(t, Load(3.0, mode="overlay", salt="s1"))
    assert sc.table.num_rows == 3 * t.num_rows
    assert _rate(sc) == pytest.approx(60, rel=0.05)
    assert sc.span_s == pytest.approx(10, rel=0.05)  # copies shifted within the span, not appended
    salts = defaultdict(set)
    for rid, body in zip(sc.table.column("request_id").to_pylist(), sc.table.column("request_body").to_pylist()):
        salts[json.loads(body)["cache_salt"]].add(rid.split("~")[0])
    assert sorted(salts) == ["s1-c0", "s1-c1", "s1-c2"]
    assert all(len(v) == t.num_rows for v in salts.values())  # each copy is the whole recording
    assert list(sc.offsets_ns) == sorted(sc.offsets_ns)
    with pytest.raises(ConfigError, match="cache_salt"):
        Load(2.0, mode="overlay")


def test_fractional_load_is_a_sample_of_whole_conversations():
    t = _table(50, 40, per_conversation=5)  # 400 conversations
    sc = scale(t, Load(0.5))
    kept = sc.table.column("prefix_hash").to_pylist()
    per_conv = defaultdict(int)
    for k in kept:
        per_conv[k] += 1
    assert set(per_conv.values()) == {5}  # a conversation is sent whole or not at all
    assert 0.4 < len(per_conv) / 400 < 0.6
    assert scale(t, Load(0.5)).table.column("request_id").to_pylist() == sc.table.column("request_id").to_pylist()
    keys = [f"k{i}" for i in range(2000)]
    assert sample_mask(keys, 0.25).mean() == pytest.approx(0.25, abs=0.04)
    assert np.all(sample_mask(keys, 0.25) <= sample_mask(keys, 0.5))  # a larger sample holds the smaller


def test_recorded_rates_mean_and_one_minute_peak():
    rows = steady_rows(2, 120) + [dict(r, request_id=f"b{i}") for i, r in enumerate(steady_rows(10, 60, seed=3))]
    t = rows_to_table(rows, REQUESTS)
    mean, peak = recorded_rates(t)
    assert mean == pytest.approx(840 / 120, rel=0.02)
    assert peak == pytest.approx(12, rel=0.05)


# ---- the search and the knee (pure) --------------------------------------------------------------
def _step(load, passed, certain=True) -> Step:
    s = Step(0, load, Path("x"))
    s.passed, s.certain, s.rate_rps = passed, certain, 10 * load
    return s


def _opts(**kw) -> CapacityOptions:
    return CapacityOptions(replay=ReplayOptions("r", "http://x", "o"), slos=["ttft_p99<=1s"], out="o", **kw)


def test_search_ramps_then_bisects_until_the_bracket_is_narrow():
    o = _opts(precision=0.1)
    steps = []
    truth = 5.3  # every load up to it passes
    while (x := next_load(steps, o)) is not None:
        steps.append(_step(x, x <= truth))
        assert len(steps) < 20
    loads = [s.load for s in steps]
    assert loads[:4] == [1, 2, 4, 8]
    best, (lo, hi) = knee(steps)
    assert best.load <= truth < min(s.load for s in steps if not s.passed)
    assert min(s.load for s in steps if not s.passed) / best.load <= 1.1
    assert lo == best.load and hi > truth


def test_search_ramps_down_when_the_first_load_fails():
    o = _opts(start=1.0, min_load=0.2)
    steps = [_step(1.0, False)]
    assert next_load(steps, o) == 0.5
    steps += [_step(0.5, False), _step(0.25, False)]
    assert next_load(steps, o) is None  # 0.125 is below --min-load
    assert knee(steps)[0] is None


def test_knee_interval_widens_where_steps_are_uncertain():
    steps = [_step(1, True), _step(2, True, certain=False), _step(4, False, certain=False), _step(8, False)]
    best, (lo, hi) = knee(steps)
    assert best.load == 2 and lo == 1 and hi == 8


def test_step_size_follows_the_percentile():
    from shadowreplay.analysis.expr import parse_all

    assert step_requests(parse_all(["ttft_p99<=1s"])) == 600
    assert step_requests(parse_all(["e2e_p95<=1s", "error_rate<=1%"])) == 120


class _Run:
    """What BrokenRule reads of a Replayer: per-request clocks and errors, the done order, the
    exchanges in flight."""

    def __init__(self, n: int):
        self.sent_ns, self.first_byte_ns, self.end_ns = [0] * n, [0] * n, [0] * n
        self.token_ns: list = [None] * n
        self.error: list = [None] * n
        self.done_order: list[int] = []
        self.live: dict = {}

    def done(self, i: int, ttft_ms: float, error: str | None = None, streamed: bool = False) -> None:
        """A request done `ttft_ms` after its send: a plain response, or a stream whose headers
        came at once and whose first token came `ttft_ms` after the send."""
        now = time.monotonic_ns()
        self.sent_ns[i] = now - int(ttft_ms * 1e6) - 1
        self.first_byte_ns[i] = self.sent_ns[i] + 1_000_000 if streamed else now
        self.end_ns[i] = now
        self.token_ns[i] = [now] if streamed else None
        self.error[i] = error
        self.done_order.append(i)


def test_a_step_stops_once_its_slo_is_broken_beyond_doubt():
    from types import SimpleNamespace

    from shadowreplay.analysis.expr import parse_all
    from shadowreplay.replayer.capacity import BrokenRule

    lead = [True] * 10 + [False] * 1000  # 1000 measured: a P99 allows 10 over the bound
    rule = BrokenRule(parse_all(["ttft_p99<=100ms", "error_rate<=5%"]), lead, {"ttft": 100.0})
    run = _Run(len(lead))
    for i in range(10):
        run.done(i, 500)  # warm-up requests never count
    for i in range(10, 20):
        run.done(i, 150)
    assert rule(run) is None  # 10 over: the P99 can still pass
    now = time.monotonic_ns()
    run.live[20] = SimpleNamespace(idx=20, sent_ns=now - 50_000_000, first_byte_ns=0, token_ns=[])  # not over yet
    assert rule(run) is None
    run.live[21] = SimpleNamespace(idx=21, sent_ns=now - 200_000_000, first_byte_ns=0, token_ns=[])  # waiting past it
    assert "ttft_p99<=100ms" in rule(run)
    rule = BrokenRule(parse_all(["error_rate<=5%"]), lead, {})
    for i in range(30, 80):
        run.done(i, 10, "HTTP 503")
    assert rule(run) is None  # 50 of 1000 failed: exactly 5 %
    run.done(80, 10, "HTTP 503")
    assert "error_rate<=5%" in rule(run)



def test_early_stop_times_ttft_from_the_first_token_not_the_first_byte():
    """vLLM answers a stream's headers at once, and a queued request then waits for its first
    token: the rule must count it over a TTFT bound (done or in flight), as the results do."""
    from types import SimpleNamespace

    from shadowreplay.analysis.expr import parse_all
    from shadowreplay.replayer.capacity import BrokenRule

    lead = [False] * 100  # a P95 allows 5 over the bound
    rule = BrokenRule(parse_all(["ttft_p95<=500ms"]), lead, {"ttft": 500.0})
    run = _Run(len(lead))
    for i in range(5):
        run.done(i, 2000, streamed=True)  # first byte after 1 ms, first token after 2 s
    assert rule(run) is None  # 5 over: the P95 can still pass
    now = time.monotonic_ns()
    run.live[5] = SimpleNamespace(idx=5, sent_ns=now - 900_000_000, first_byte_ns=now - 899_000_000, token_ns=[])
    assert "ttft_p95<=500ms" in rule(run)  # headers came, no token yet after 900 ms: over
    rule = BrokenRule(parse_all(["ttft_p95<=500ms"]), lead, {"ttft": 500.0})
    run.live[5].token_ns = [now - 800_000_000]  # its first token came after 100 ms: not over
    assert rule(run) is None
    run.done(6, 3000, streamed=True)
    assert "ttft_p95<=500ms" in rule(run)


# ---- against an engine of known capacity ---------------------------------------------------------
def lag_floor_ms(floor: Floor) -> float:
    """The send lag a step may show: 1 ms (an idle machine's floor, up to 1,000 req/s), or on a
    loaded, shared one a multiple of what a sender with nothing to send measured meanwhile (the
    replayer also reads responses, so the scheduler takes its CPU away more often: on the shared
    2-core machine at a load average of 6-9, the floor's p99 was 4-12 ms and plain `replay`'s
    3-50 ms, in the same minutes)."""
    return max(1.0, 8 * (floor.p99 or 0.0))


def _check_sweep(res: dict, engine: StandIn, out: Path, floor: Floor) -> None:
    steps = res["steps"]
    knee_rate = res["max_rate_rps"]
    assert knee_rate is not None, steps
    assert 0.6 * engine.capacity_rps <= knee_rate <= 1.05 * engine.capacity_rps, (knee_rate, steps)
    above = [s for s in steps if s["load"] > res["max_speed"]]
    assert above and all(not s["pass"] for s in above)  # the failing steps above the knee are reported
    assert res["limiting_slo"] == "ttft_p99<=150ms"
    lo, hi = res["interval"]["speed"]
    assert lo <= res["max_speed"] < hi
    assert res["headroom"] == pytest.approx(knee_rate / res["recorded_peak_rps"], rel=1e-3)
    for s in steps:  # the load reported is the load sent: the sender keeps its floor at every step
        assert s["send_lag_p99_ms"] is not None and s["send_lag_p99_ms"] < lag_floor_ms(floor), (s, floor.p99)
        if not s["stopped_early"]:
            assert s["sent_rate_rps"] == pytest.approx(s["rate_rps"], rel=0.02)
            assert s["sent_scheduled_rate_rps"] == pytest.approx(s["rate_rps"], rel=0.01) and not s["client_limited"]
        else:  # the part sent before the stop, against that same part's schedule (a denser start can beat rate_rps)
            assert s["sent_rate_rps"] == pytest.approx(s["sent_scheduled_rate_rps"], rel=0.05), s
        assert s["engine"].get("running_peak", 0) <= engine.slots
        assert Path(out / s["dataset"] / "replay_results").is_dir()
    over = [s for s in steps if s["load"] * res["recorded_rate_rps"] > 1.3 * engine.capacity_rps]
    assert all(s["stopped_early"] for s in over)  # far beyond capacity: stopped once broken beyond doubt
    assert any(s["engine"].get("waiting_peak", 0) > 0 for s in above)


@pytest.mark.slow
@pytest.mark.nightly  # a minute of search; the sweeps below (overlay, shards, Ctrl-C) stay in `make test`
def test_sweep_of_a_60s_recording_finds_the_known_capacity_within_10_minutes(tmp_path):
    rec = write_steady(tmp_path / "rec", 30, 60)  # a 60 s recording, 1,800 requests
    out = tmp_path / "cap"
    junit = tmp_path / "junit.xml"
    with StandIn(slots=4, service_ms=40) as engine, Floor() as floor:  # 100 requests/s
        t0 = time.monotonic()
        p = capacity_cli(rec, "--target", engine.url, "--slo", "ttft_p99<=150ms", "--out", out,
                      "--precision", "15%", "--fail-below", "10", "--junit", junit)
        took = time.monotonic() - t0
    assert p.returncode == 3, p.stderr  # the headroom (about 3x) is under 10x
    assert "headroom" in p.stderr.splitlines()[-1] and "Traceback" not in p.stderr
    res = json.loads((out / "capacity.json").read_text())
    _check_sweep(res, engine, out, floor)
    assert took < 600
    assert "knee:" in p.stdout and "step" in p.stdout.splitlines()[1]
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert [c.get("name") for c in cases] == ["ttft_p99<=150ms", "headroom>=10"]
    assert cases[0].find("failure") is None and cases[1].find("failure") is not None
    # a step is a replay dataset: analyze judges it alone, with the step's verdict
    best = next(s for s in res["steps"] if s["load"] == res["max_speed"])
    a = subprocess.run([sys.executable, "-m", "shadowreplay", "analyze", str(out / best["dataset"]),
                        "--assert", "ttft_p99<=150ms"], capture_output=True, text=True, cwd=REPO)
    assert a.returncode == 0, a.stdout + a.stderr
    # the report of the sweep's folder draws the curve: figures against load, the knee, the peak lines
    from shadowreplay.analysis.report import build
    from shadowreplay.analysis.svg import fmt_num

    page = build([str(out)], tmp_path / "report.html").read_text()
    cap = page[page.index("<h2>Capacity</h2>"):page.index("</section>", page.index("<h2>Capacity</h2>"))]
    for label in ("recorded peak", "1.5x peak", "2x peak", f"knee {fmt_num(best['rate_rps'])} req/s", "ttft_p99&lt;=150ms"):
        assert label in cap, label
    assert cap.count("<circle") >= 2 * len(res["steps"]) - 2  # the SLO figure and P50 per step


@pytest.mark.slow
def test_repeats_pool_their_runs_and_overlay_multiplies_the_rate(tmp_path):
    rec = write_steady(tmp_path / "rec", 30, 15)
    out = tmp_path / "cap"
    with StandIn(slots=4, service_ms=40) as engine:
        p = capacity_cli(rec, "--target", engine.url, "--slo", "e2e_p95<=1s", "--out", out, "--mode", "overlay",
                      "--loads", "0.5,2", "--repeats", "2", "--step-requests", "120", "--json")
    assert p.returncode == 0, p.stderr
    res = json.loads((out / "capacity.json").read_text())
    assert res["mode"] == "overlay" and [s["load"] for s in res["steps"]] == [0.5, 2.0]
    for s in res["steps"]:
        assert (out / s["dataset"] / "run-01" / "replay_results").is_dir() and (out / s["dataset"] / "run-02").is_dir()
        assert s["figures"][0]["n"] >= 2 * 120  # both runs' measured requests judged together
        assert s["pass"] and s["cooldown_s"] is not None
    half, double = res["steps"]
    assert double["rate_rps"] / half["rate_rps"] == pytest.approx(4, rel=0.2)
    assert res["max_speed"] == 2.0 and res["interval"]["speed"][1] is None  # nothing failed: open above
    assert json.loads(p.stdout[p.stdout.index("{"):])["max_speed"] == 2.0


@pytest.mark.slow
def test_shards_send_one_scaled_step_together(tmp_path):
    import duckdb

    rec = write_steady(tmp_path / "rec", 30, 15)
    out = tmp_path / "cap"
    with StandIn(slots=4, service_ms=40) as engine:
        p = capacity_cli(rec, "--target", engine.url, "--slo", "e2e_p95<=1s", "--out", out, "--loads", "2",
                      "--step-requests", "150", "--shards", "2")
    assert p.returncode == 0, p.stderr
    res = json.loads((out / "capacity.json").read_text())
    (s,) = res["steps"]
    step = out / s["dataset"]
    assert sorted(x.name for x in (step / "manifests").iterdir()) == ["shard-0-of-2.json", "shard-1-of-2.json"]
    rows = duckdb.sql(f"SELECT count(*) AS n, count(DISTINCT request_id) AS ids, sum(lead_in::int) AS warm "
                      f"FROM read_parquet('{step}/replay_results/**/*.parquet')").fetchall()[0]
    assert rows[0] == rows[1] == 167 and rows[2] == 17  # the one step's schedule, split between the shards
    assert s["requests"] == 150 and s["rate_rps"] == pytest.approx(60, rel=0.05) and s["pass"]


@pytest.mark.slow
def test_ctrl_c_ends_the_sweep_with_the_steps_done(tmp_path):
    import signal

    from tests.replayer_helpers import wait_for

    rec = write_steady(tmp_path / "rec", 30, 15)
    out = tmp_path / "cap"
    with StandIn(slots=4, service_ms=40) as engine:
        p = subprocess.Popen([sys.executable, "-m", "shadowreplay", "capacity", str(rec), "--target", engine.url,
                              "--slo", "ttft_p99<=150ms", "--out", str(out), "--loads", "2,1", "--no-progress"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        try:
            wait_for(lambda: (out / "capacity.json").exists() or p.poll() is not None, timeout=120, what="step 1")
            wait_for(lambda: (out / "step-02" / "manifest.json").exists() or p.poll() is not None, timeout=60,
                     what="step 2 started")
            p.send_signal(signal.SIGINT)
            stdout, stderr = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
    assert p.returncode == 130, stderr
    res = json.loads((out / "capacity.json").read_text())
    assert res["interrupted"] and [s["load"] for s in res["steps"]] == [2.0]
    assert "interrupted during step 2" in " ".join(res["notes"])


def test_capacity_user_errors_are_one_line(tmp_path):
    rec = write_steady(tmp_path / "rec", 10, 2)
    for slo, needle in (("ttft_p99<=", "expected"), ("ttft=500ms", "at least one --slo figure")):
        p = capacity_cli(rec, "--target", "http://127.0.0.1:9", "--slo", slo, "--out", tmp_path / "o", timeout=60)
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr, p.stderr
    p = capacity_cli(rec, "--target", "http://127.0.0.1:9", "--slo", "ttft_p99<=1s", "--out", tmp_path / "o",
                  "--mode", "overlay", "--no-cache-salt", timeout=60)
    assert p.returncode == 2 and "cache_salt" in p.stderr
    (tmp_path / "old" / "step-01").mkdir(parents=True)
    p = capacity_cli(rec, "--target", "http://127.0.0.1:9", "--slo", "ttft_p99<=1s", "--out", tmp_path / "old", timeout=60)
    assert p.returncode == 2 and "already holds a capacity sweep" in p.stderr


# ---- against real vLLM -----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.nightly  # 80 s; `make test` sweeps real vLLM in the quick demo's capacity step (test_demo.py)
def test_two_sweeps_against_vllm_agree(tiny_vllm, tmp_path):
    """Two sweeps in a row (run_capacity, as the demo calls it) into the one tiny vLLM: three
    loads of salted overlay copies; their knees' intervals overlap. The send lag of every step
    is checked against the stand-in engine above (here vLLM shares the client's two cores); here
    the load reported must be the load sent."""
    from shadowreplay.replayer.capacity_cli import run_capacity
    from shadowreplay.shadow.tiny_model import MODEL_NAME

    srv, _ = tiny_vllm
    rec = write_steady(tmp_path / "rec", 4, 30, tokens=8, prompt_words=40)
    sweeps = [run_capacity(rec, srv.url, ["e2e_p95<=400ms"], tmp_path / f"cap{k}", loads=[1, 4, 16], mode="overlay",
                           step_requests=100, max_seconds=None, model_map=[f"prod-model={MODEL_NAME}"],
                           echo=lambda s: None) for k in range(2)]
    intervals = []
    for res in sweeps:
        print(json.dumps([{k: s[k] for k in ("load", "rate_rps", "sent_rate_rps", "pass", "certain", "figures",
                                             "send_lag_p99_ms", "engine", "stopped_early")} for s in res["steps"]],
                         default=str))
        assert [s["load"] for s in res["steps"]] == [1, 4, 16]
        assert all(s["errors"] == 0 or s["stopped_early"] for s in res["steps"]), res["steps"]
        for s in res["steps"]:
            assert s["engine"] and s["requests"] > 0
            # a passing step carried its load; a failing one may have outrun the client on these
            # two cores (vLLM beside the sender), which the step then says
            if s["pass"]:
                assert s["sent_rate_rps"] == pytest.approx(s["rate_rps"], rel=0.05), s
            assert s["client_limited"] == (s["sent_rate_rps"] < 0.95 * s["sent_scheduled_rate_rps"]), s
        assert res["max_speed"] is not None
        lo, hi = res["interval"]["speed"]
        intervals.append((lo, hi if hi is not None else float("inf")))
    (a_lo, a_hi), (b_lo, b_hi) = intervals
    assert max(a_lo, b_lo) <= min(a_hi, b_hi), intervals  # the two knees' intervals overlap
