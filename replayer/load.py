"""Load scaled from a recording, for `shadowreplay capacity` (docs/capacity.md). Pure: a selection
(Arrow table in send order) in, the step's table, send offsets and warm-up mask out.

A load factor x is sent one of two ways:
- `speed`: time-compressed, every recorded gap divided by x (order and bursts kept);
- `overlay`: ceil(x) copies of the recording, copy j shifted by j/ceil(x) of the span (wrapped
  around), merged; each copy gets its own `cache_salt`, so copies share no cached prefix with each
  other while each keeps its own sharing. The last copy of a fractional factor is a sample.
A factor below 1 is, in both modes, a deterministic sample of whole conversations (rows with one
`prefix_hash`; a row without one is its own conversation) at the recorded speed.

A step takes the densest stretch of the selection that gives it `requests` measured requests plus
its warm-up share; a selection too short for that is looped (each pass salted like a copy)."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shadowreplay.errors import ConfigError

MODES = ("speed", "overlay")
SALTED_KINDS = frozenset({"chat", "completions", "responses", "messages"})


@dataclass(frozen=True)
class Load:
    factor: float  # 1 = the recorded rate
    mode: str = "speed"
    requests: int | None = None  # measured requests of the step (None: the whole selection once)
    warmup: float = 0.1  # share of the step sent first and marked lead_in (left out of the analysis)
    salt: str | None = None  # cache_salt prefix of this step; None: no cache_salt (speed mode only)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"--mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not self.factor > 0:
            raise ConfigError("a load factor must be greater than 0")
        if not 0 <= self.warmup < 1:
            raise ConfigError("--warmup must be at least 0% and under 100%")
        if self.mode == "overlay" and self.salt is None:
            raise ConfigError("--mode overlay needs a cache_salt per copy")


@dataclass
class Scaled:
    table: pa.Table
    offsets_ns: list[int]
    lead_in: list[bool]
    copies: int  # copies of the stretch merged (overlay) or passes of a looped selection
    span_s: float  # scheduled span of the step


def conversation_unit(key: str) -> float:
    """A conversation's point in [0, 1): the sample keeps the conversations below the fraction."""
    h = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


def conversation_keys(table: pa.Table) -> list[str]:
    prefix = table.column("prefix_hash").to_pylist() if "prefix_hash" in table.column_names else [None] * table.num_rows
    rid = table.column("request_id").to_pylist()
    return [p if p else f"rid:{r}" for p, r in zip(prefix, rid)]


def sample_mask(keys: list[str], fraction: float, seed: str = "") -> np.ndarray:
    """Whole conversations kept with probability `fraction`, deterministically."""
    if fraction >= 1:
        return np.ones(len(keys), bool)
    return np.array([conversation_unit(seed + k) < fraction for k in keys], bool)


def densest(ts_us: np.ndarray, n: int) -> int:
    """Index of the first of the n consecutive rows with the shortest span."""
    if n >= len(ts_us):
        return 0
    spans = ts_us[n - 1:] - ts_us[: len(ts_us) - n + 1]
    return int(np.argmin(spans))


def _times_us(table: pa.Table) -> np.ndarray:
    return pc.cast(table.column("ts_start"), pa.int64()).to_numpy().astype(np.int64)


def salt_body(body: str | None, salt: str) -> str | None:
    """The recorded JSON body with `cache_salt` set; other bodies unchanged."""
    if not body:
        return body
    try:
        obj = json.loads(body)
    except ValueError:
        return body
    if not isinstance(obj, dict):
        return body
    obj["cache_salt"] = salt
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _looped(table: pa.Table, ts: np.ndarray, rows: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The selection repeated back to back until it has `rows` rows; per row its pass index."""
    span = int(ts[-1] - ts[0])
    gap = span // max(1, len(ts) - 1) if len(ts) > 1 else 1_000_000
    passes = math.ceil(rows / len(ts))
    tables, times, which = [], [], []
    for p in range(passes):
        tables.append(table)
        times.append(ts + p * (span + gap))
        which.append(np.full(len(ts), p))
    return pa.concat_tables(tables), np.concatenate(times), np.concatenate(which)


def scale(table: pa.Table, load: Load) -> Scaled:
    """The step's requests in send order: its table (request_id suffixed per copy, bodies salted),
    offsets (ns from the first send) and the warm-up mask."""
    x, mode = load.factor, load.mode
    keys_all = conversation_keys(table)
    ts = _times_us(table)
    # how many recorded rows the stretch needs: a factor x turns r rows into about r*max(x,1)
    # sent (speed keeps the count; overlay multiplies it; a sample keeps a share x)
    per_row = x if (mode == "overlay" or x < 1) else 1.0
    want = None
    if load.requests is not None:
        want = math.ceil(load.requests / (1 - load.warmup))
        want = max(1, math.ceil(want / per_row))
    passes = np.zeros(len(ts), np.int64)
    if want is not None and want > len(ts):
        table, ts, passes = _looped(table, ts, want)
        keys_all = keys_all * math.ceil(len(ts) / len(keys_all))
    if want is not None:
        s = densest(ts, want)
        sl = slice(s, s + want)
        table, ts, passes, keys_all = table.slice(s, want), ts[sl], passes[sl], keys_all[sl]
    base = ts - ts[0]
    span_us = int(base[-1]) if len(base) else 0
    n = len(ts)
    if mode == "overlay" and x >= 1:
        k = math.ceil(x)
        period = span_us + (span_us // max(1, n - 1) if n > 1 else 1_000_000)
        idx, offs, copy = [], [], []
        for j in range(k):
            keep = np.ones(n, bool) if j < math.floor(x) else sample_mask(keys_all, x - math.floor(x), f"c{j}:")
            rows = np.nonzero(keep)[0]
            idx.append(rows)
            offs.append((base[rows] + (j * period) // k) % period)
            copy.append(np.full(len(rows), j))
        rows, off_us, cp = np.concatenate(idx), np.concatenate(offs), np.concatenate(copy)
        copies = k
    else:
        keep = sample_mask(keys_all, x) if x < 1 else np.ones(n, bool)
        rows = np.nonzero(keep)[0]
        off_us = base[rows] / (x if x >= 1 else 1.0)
        cp = passes[rows]
        copies = int(passes.max()) + 1 if n else 1
    if not len(rows):
        raise ConfigError(f"a load of {x:g}x keeps no request of the selection (too few conversations)")
    order = np.lexsort((rows, cp, off_us))
    rows, off_us, cp = rows[order], off_us[order], cp[order]
    out = table.take(pa.array(rows))
    if copies > 1 or load.salt is not None:
        rid = out.column("request_id").to_pylist()
        out = out.set_column(out.column_names.index("request_id"), "request_id",
                             pa.array([r if c == 0 else f"{r}~{c}" for r, c in zip(rid, cp.tolist())], pa.string()))
        if load.salt is not None:
            bodies = out.column("request_body").to_pylist()
            kinds = out.column("kind").to_pylist() if "kind" in out.column_names else [None] * len(bodies)
            salted = [salt_body(b, f"{load.salt}-c{c}") if (k in SALTED_KINDS or k is None) else b
                      for b, k, c in zip(bodies, kinds, cp.tolist())]
            out = out.set_column(out.column_names.index("request_body"), "request_body", pa.array(salted, pa.string()))
    offsets = [round(float(v) * 1000) for v in off_us]
    offsets = [o - offsets[0] for o in offsets]
    warm = int(round(len(offsets) * load.warmup)) if load.requests is not None else 0
    lead_in = [i < warm for i in range(len(offsets))]
    return Scaled(out, offsets, lead_in, copies, offsets[-1] / 1e9 if offsets else 0.0)


def recorded_rates(table: pa.Table, window_s: float = 60.0) -> tuple[float | None, float | None]:
    """(mean rate, peak rate over any `window_s` stretch, or over the whole span when shorter) in
    requests per second."""
    ts = np.sort(_times_us(table))
    if len(ts) < 2:
        return None, None
    span = (ts[-1] - ts[0]) / 1e6
    mean = (len(ts) - 1) / span if span > 0 else None
    w = min(window_s, span) * 1e6
    if w <= 0:
        return mean, None
    ends = np.searchsorted(ts, ts + w, side="left")  # rows in [t_i, t_i + w)
    peak = float((ends - np.arange(len(ts))).max()) / (w / 1e6)
    return mean, peak
