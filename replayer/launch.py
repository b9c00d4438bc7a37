"""`replay --shards N`: N shard processes of the same replay on this machine.

The same command line runs again N times as `--shard K/N --start-at T` (T a few seconds ahead,
or the user's `--start-at`), each in its own process group so that a Ctrl-C on the terminal
reaches them once, through this process. Their output is streamed with a `[shard-K-of-N]`
prefix, their progress (JSON lines) combined into one line; when all have exited, the shards'
manifests give one combined summary (shard.combine), also written to OUT/shards.json.
SIGINT/SIGTERM are passed on to every shard: each stops sending, lets its requests in flight
finish (--drain) and writes everything it recorded, as a single replay does.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

from shadowreplay.console import StatusLine
from shadowreplay.errors import ConfigError
from shadowreplay.storage import location, write_atomic

from .shard import Shard, check_start_at, combine, format_combined, iso_ns, parse_start_at, read_manifests

DEFAULT_LEAD_S = 10.0  # the common start is this far ahead when no --start-at is given (start-up, load, warm-up)
PROGRESS_EVERY_S = 5.0  # a combined progress line this often when stderr is not a terminal
# flags of the parent's command line that the shards get from it instead
_DROP_WITH_VALUE = ("--shards", "--start-at", "--shard")
_DROP = ("--progress-json", "--no-progress")


def shard_argv(argv: list[str], shard: Shard, start_at_ns: int) -> list[str]:
    """The parent's command line (after the program name) as shard `shard`'s."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        name = a.split("=", 1)[0]
        if name in _DROP_WITH_VALUE:
            skip = "=" not in a
            continue
        if a in _DROP:
            continue
        out.append(a)
    return out + ["--shard", str(shard), "--start-at", iso_ns(start_at_ns), "--no-progress", "--progress-json"]


class _Shards:
    def __init__(self, procs: list[subprocess.Popen], shards: list[Shard]):
        self.procs = procs
        self.shards = shards
        self.progress: dict[int, dict] = {}
        self.lock = threading.Lock()
        self.signals: list[str] = []
        self.status = StatusLine()

    def pump(self, k: int, stream, dest, parse: bool) -> None:
        tag = self.shards[k].tag
        for line in stream:
            line = line.rstrip("\n")
            if parse and line.startswith('{"progress"'):
                try:
                    self.progress[k] = json.loads(line)["progress"]
                    continue
                except (ValueError, KeyError):
                    pass
            with self.lock:
                if dest is sys.stderr:
                    self.status.print(f"[{tag}] {line}")
                else:
                    print(f"[{tag}] {line}", file=dest, flush=True)

    def line(self) -> str:
        snaps = list(self.progress.values())
        sent = sum(s.get("sent", 0) for s in snaps)
        total = sum(s.get("total", 0) for s in snaps)
        lags = [s["lag_ms"] for s in snaps if s.get("lag_ms") is not None]
        lag = f"{max(lags):.2f} ms" if lags else "-"
        return (f"shards {len(snaps)}/{len(self.procs)} running: sent {sent}/{total}  "
                f"in flight {sum(s.get('in_flight', 0) for s in snaps)}  errors {sum(s.get('errors', 0) for s in snaps)}  "
                f"worst last lag {lag}")

    def forward(self, signum: int, frame=None) -> None:
        self.signals.append(signal.Signals(signum).name)
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.send_signal(signum)
                except ProcessLookupError:
                    pass


def run_local_shards(argv: list[str], n: int, out: str, start_at: str | None, dry_run: bool = False) -> int:
    if n < 1:
        raise ConfigError(f"--shards {n}: give at least 1")
    if start_at is not None:
        t0 = parse_start_at(start_at)
        if not dry_run:
            check_start_at(t0)
    else:
        t0 = time.time_ns() + int(DEFAULT_LEAD_S * 1e9)
    shards = [Shard(k, n) for k in range(n)]
    print(f"replay: {n} shards, common start {iso_ns(t0)}", flush=True)
    procs: list[subprocess.Popen] = []
    group = _Shards(procs, shards)
    old = {s: signal.signal(s, group.forward) for s in (signal.SIGINT, signal.SIGTERM)}
    threads = []
    tty = group.status.enabled
    try:
        for sh in shards:
            p = subprocess.Popen([sys.executable, "-m", "shadowreplay", *shard_argv(argv, sh, t0)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                 start_new_session=True)  # Ctrl-C reaches it once, from forward()
            procs.append(p)
            for stream, dest, parse in ((p.stdout, sys.stdout, True), (p.stderr, sys.stderr, False)):
                t = threading.Thread(target=group.pump, args=(sh.index, stream, dest, parse), daemon=True)
                t.start()
                threads.append(t)
        last = time.monotonic()
        while any(p.poll() is None for p in procs):
            time.sleep(0.2)
            now = time.monotonic()
            if group.progress and (tty or now - last >= PROGRESS_EVERY_S):
                last = now
                with group.lock:
                    if tty:
                        group.status.update(group.line())
                    else:
                        print(group.line(), file=sys.stderr, flush=True)
    finally:
        for p in procs:  # this process is going away (an error here): its shards stop too
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()
        for t in threads:
            t.join(5)
        for s, h in old.items():
            signal.signal(s, h)
    group.status.close()
    failed = [(sh, p.returncode) for sh, p in zip(shards, procs) if p.returncode not in (0, 130, 143)]
    if dry_run:
        return max((rc for _, rc in failed), default=0)
    manifests = read_manifests(out)
    if manifests:
        summary = combine(manifests)
        write_atomic(location(out) / "shards.json", (json.dumps(summary, indent=2) + "\n").encode())
        print(format_combined(summary), flush=True)
    for sh, rc in failed:
        print(f"shadowreplay replay: {sh.tag} exited with status {rc}", file=sys.stderr)
    if group.signals:
        print(f"shadowreplay replay: interrupted ({group.signals[0]}); results of every shard in {out}", file=sys.stderr)
        return 143 if group.signals[0] == "SIGTERM" else 130
    return max((rc for _, rc in failed), default=0)
