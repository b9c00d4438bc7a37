"""Sharded replay: N processes (or hosts) that keep one schedule.

Every shard selects the same requests and computes the same send offsets from the same
recording and filters; shard K (0-based) keeps the requests whose index in that schedule is
K mod N, so the split is deterministic, needs no coordination and is balanced to within one
request (and, for any stretch of the schedule, to within one request per shard). All shards
count their offsets from one shared wall-clock instant (`--start-at`), converted once to
CLOCK_MONOTONIC by each shard, as k6's execution segments do.

Each shard writes its manifest to OUT/manifests/shard-K-of-N.json, with its clock state
(`clock_state`, the kernel's NTP discipline as `adjtimex(2)` reports it) and its start figures;
`combine` turns the manifests of all shards into one summary.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as dt
import json
import re
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from shadowreplay.durations import parse_time_point
from shadowreplay.errors import ConfigError
from shadowreplay.storage import location

from . import damaged
from .results import percentile

MANIFESTS = "manifests"  # OUT/manifests/shard-K-of-N.json


@dataclass(frozen=True)
class Shard:
    index: int  # K, 0-based (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX)
    count: int  # N

    @property
    def tag(self) -> str:
        return f"shard-{self.index}-of-{self.count}"

    @property
    def manifest_name(self) -> str:
        return f"{MANIFESTS}/{self.tag}.json"

    def indices(self, n: int) -> range:
        """The positions, in the one schedule of n requests, that this shard sends."""
        return range(self.index, n, self.count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


_SHARD = re.compile(r"^\s*(-?\d+)\s*/\s*(-?\d+)\s*$")


def parse_shard(text: str) -> Shard:
    """`K/N` with 0 <= K < N."""
    m = _SHARD.match(str(text))
    if not m:
        raise ConfigError(f"--shard {text!r} is not K/N (e.g. 0/4: the first of four shards, 0-based)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1:
        raise ConfigError(f"--shard {text}: the number of shards must be at least 1")
    if not 0 <= k < n:
        raise ConfigError(f"--shard {text}: the shard index must be 0 to {n - 1} (0-based, like JOB_COMPLETION_INDEX)")
    return Shard(k, n)


_EPOCH = re.compile(r"^\s*\d+(\.\d*)?\s*$")


def parse_start_at(text: str) -> int:
    """A wall-clock instant, ns since the epoch: an ISO-8601 time (UTC when it names no zone) or
    epoch seconds (`1764590400`, `1764590400.25`)."""
    v = str(text).strip()
    if _EPOCH.match(v):
        return int(Decimal(v) * 10**9)  # exact: a float has no ns resolution at today's epoch
    try:
        tp = parse_time_point(v, flag="--start-at", bare=None)
    except ConfigError:
        tp = None
    if tp is None or tp.absolute is None:
        raise ConfigError(f"--start-at {text!r} is not a time: give an ISO-8601 UTC time "
                          f"(2026-12-01T10:00:00Z) or epoch seconds (1764583200)")
    a = tp.absolute
    return (int(a.timestamp()) * 10**9) + a.microsecond * 1000


def iso_ns(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc).isoformat(timespec="microseconds")


def check_start_at(start_at_ns: int, now_ns: int | None = None) -> None:
    """A start that has already passed is an error (nothing is sent late on purpose)."""
    now = time.time_ns() if now_ns is None else now_ns
    if start_at_ns <= now:
        raise ConfigError(f"--start-at {iso_ns(start_at_ns)} is {(now - start_at_ns) / 1e9:.3f} s in the past "
                          f"(now {iso_ns(now)}); give a time far enough ahead for every shard to load and warm up")


# ---- the kernel's clock discipline (adjtimex(2)) --------------------------------------------------
class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Timex(ctypes.Structure):  # struct timex, <sys/timex.h>
    _fields_ = [
        ("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
        ("constant", ctypes.c_long), ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
        ("time", _Timeval), ("tick", ctypes.c_long), ("ppsfreq", ctypes.c_long), ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int), ("stabil", ctypes.c_long), ("jitcnt", ctypes.c_long), ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long), ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int), ("_reserved", ctypes.c_int * 11),
    ]


TIME_ERROR = 5  # adjtimex's return: the clock is not synchronized
STA_UNSYNC = 0x0040
_STATES = {0: "TIME_OK", 1: "TIME_INS", 2: "TIME_DEL", 3: "TIME_OOP", 4: "TIME_WAIT", 5: "TIME_ERROR"}


def clock_state() -> dict:
    """The kernel's view of this host's clock (read only, `modes = 0`): whether an NTP/PTP daemon
    keeps it synchronized, and its estimated and maximum error in µs. `available: false` where
    adjtimex cannot be called (not Linux, no libc)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        tx = _Timex()
        state = libc.adjtimex(ctypes.byref(tx))
    except (OSError, AttributeError):
        return {"available": False}
    if state < 0:
        return {"available": False, "errno": ctypes.get_errno()}
    return {
        "available": True,
        "synchronized": state != TIME_ERROR and not tx.status & STA_UNSYNC,
        "state": _STATES.get(state, str(state)),
        "status": tx.status,
        "esterror_us": tx.esterror,
        "maxerror_us": tx.maxerror,
    }


# ---- the manifests of all shards as one summary -----------------------------------------------------
def read_manifests(out: str | Path) -> list[dict]:
    """The shard manifests under OUT/manifests/ (a folder or an s3:// prefix), by shard index."""
    found = []
    folder = location(out) / MANIFESTS
    for p in sorted(folder.glob("shard-*.json")) if folder.is_dir() else ():
        try:
            m = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and isinstance(m.get("shard"), dict):
            found.append(m)
    return sorted(found, key=lambda m: m["shard"].get("index", 0))


def combine(manifests: list[dict]) -> dict:
    """One summary of a sharded run: per shard its requests, errors and send lag; the spread of
    the shards' actual starts (each shard's first send minus its scheduled instant, on its own
    clock) and the worst clock error any shard's kernel estimated."""
    shards = []
    for m in manifests:
        s = m.get("summary") or {}
        st = m.get("start") or {}
        clk = m.get("clock") or {}
        shards.append({
            "shard": m["shard"].get("tag"),
            "requests": (m.get("schedule") or {}).get("requests"),
            "sent": s.get("sent"), "errors": s.get("errors"),
            "lag_p50_ms": s.get("lag_p50_ms"), "lag_p99_ms": s.get("lag_p99_ms"), "lag_max_ms": s.get("lag_max_ms"),
            "first_send_lag_ms": st.get("first_send_lag_ms"), "ready_ahead_ms": st.get("ready_ahead_ms"),
            "finished": "summary" in m, "interrupted": bool(s.get("interrupted")),
            "clock_synchronized": clk.get("synchronized"), "esterror_us": clk.get("esterror_us"),
            "maxerror_us": clk.get("maxerror_us"),
        })
    count = manifests[0]["shard"].get("count") if manifests else 0
    starts = [x["first_send_lag_ms"] for x in shards if x["first_send_lag_ms"] is not None]
    est = [x["esterror_us"] for x in shards if x["esterror_us"] is not None]
    mx = [x["maxerror_us"] for x in shards if x["maxerror_us"] is not None]
    p99s = sorted(x["lag_p99_ms"] for x in shards if x["lag_p99_ms"] is not None)
    start_at = {(m.get("shard") or {}).get("start_at") for m in manifests}
    # damaged rows are counted over the whole selection, before it is split: every shard reports
    # the same counts, so the run's are any shard's (the largest, should one have read less)
    damaged_out = {"damaged_left_out": {}, "damaged_included": {}}
    for m in manifests:
        s = m.get("summary") or {}
        for key, counts in damaged_out.items():
            for kind, n in (s.get(key) or {}).items():
                counts[kind] = max(counts.get(kind, 0), int(n))
    return {
        "shards_expected": count,
        "shards_found": len(shards),
        "missing": sorted(set(range(count or 0)) - {m["shard"].get("index") for m in manifests}),
        "start_at": start_at.pop() if len(start_at) == 1 else sorted(str(x) for x in start_at),
        "requests": sum(x["requests"] or 0 for x in shards),
        "sent": sum(x["sent"] or 0 for x in shards),
        "errors": sum(x["errors"] or 0 for x in shards),
        "lag_p99_ms_worst_shard": p99s[-1] if p99s else None,
        "lag_p99_ms_median_shard": percentile(p99s, 50),
        "start_spread_ms": round(max(starts) - min(starts), 3) if starts else None,
        "clock_unsynchronized": [x["shard"] for x in shards if x["clock_synchronized"] is False],
        "worst_esterror_us": max(est) if est else None,
        "worst_maxerror_us": max(mx) if mx else None,
        **{k: v for k, v in damaged_out.items() if v},
        "shards": shards,
    }


def format_combined(c: dict) -> str:
    def f(v, unit=" ms"):
        return "-" if v is None else (f"{v:.3f}{unit}" if isinstance(v, float) else f"{v}{unit}")

    lines = [f"sharded replay: {c['shards_found']} of {c['shards_expected']} shards, {c['sent']} sent of "
             f"{c['requests']} requests, {c['errors']} errors, start at {c['start_at']}"]
    for x in c["shards"]:
        state = "" if x["finished"] and not x["interrupted"] else ("  (interrupted)" if x["interrupted"] else "  (did not finish)")
        lines.append(f"  {x['shard']}: {f(x['sent'], '')}/{f(x['requests'], '')} sent, {f(x['errors'], '')} errors, "
                     f"send lag p50 {f(x['lag_p50_ms'])}  p99 {f(x['lag_p99_ms'])}  max {f(x['lag_max_ms'])}, "
                     f"first send {f(x['first_send_lag_ms'])} late{state}")
    for key, included in (("damaged_left_out", False), ("damaged_included", True)):
        if c.get(key):
            lines.append("  " + damaged.line(c[key], included))
    if c["missing"]:
        lines.append("  missing shards: " + ", ".join(str(k) for k in c["missing"]))
    clock = (f"worst estimated clock error {f(c['worst_esterror_us'], ' µs')} "
             f"(max error {f(c['worst_maxerror_us'], ' µs')})")
    if c["clock_unsynchronized"]:
        clock += "; NOT synchronized: " + ", ".join(c["clock_unsynchronized"])
    lines.append(f"start spread across shards {f(c['start_spread_ms'])}; {clock}")
    return "\n".join(lines)
