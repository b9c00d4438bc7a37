"""Synthetic recordings with planted periodic anomalies, for the tests and the analysis benchmark.

Everything is vectorized with numpy, so ten million rows take seconds. The planted incident is
the one this project exists for: a scheduled batch client sends prompts several times longer than
usual in one slot of every period (by default Wednesday 14:00-15:00 UTC each week), and latency
rises for everyone in that slot."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shadowreplay.dataset import write_table
from shadowreplay.schema import ENGINE_METRICS, REPLAY_RESULTS, REQUESTS, TIME_COLUMN, TS

WEEK_S = 7 * 86400
# A Monday 00:00 UTC: week folds start on Mondays.
DEFAULT_START = dt.datetime(2026, 10, 5, tzinfo=dt.timezone.utc)


@dataclass
class PlantedAnomaly:
    """A batch client in one slot of every period (or of `periods` only)."""

    offset_s: float = 2 * 86400 + 14 * 3600  # Wednesday 14:00 from Monday 00:00
    duration_s: float = 3600.0
    client_id: str = "batch-etl"
    batch_rate_per_s: float = 0.015  # extra requests/s the batch client sends in the slot
    prompt_factor: float = 4.0  # batch prompts vs the normal mean prompt
    latency_factor: float = 3.0  # everyone's latency in the slot is multiplied by this
    periods: tuple[int, ...] | None = None  # which periods (0-based); None = all
    # One latency alone instead (each None = latency_factor): TTFT, the gaps between tokens, and
    # the output length of everyone in the slot (which moves E2E alone).
    ttft_factor: float | None = None
    itl_factor: float | None = None
    completion_factor: float = 1.0


@dataclass
class SynthSpec:
    periods: int = 3
    period_s: float = WEEK_S
    start: dt.datetime = DEFAULT_START
    rate_per_s: float = 0.02  # normal traffic, requests/s (uniform arrivals)
    n_rows: int | None = None  # overrides rate_per_s: exactly this many normal requests
    clients: tuple[str, ...] = ("web-app", "mobile", "internal-tools", "eval")
    client_weights: tuple[float, ...] = (0.45, 0.3, 0.15, 0.1)
    models: tuple[str, ...] = ("llama-3-8b",)
    prompt_mean: float = 500.0
    prompt_sigma: float = 0.5
    completion_mean: float = 120.0
    ttft_base_ms: float = 40.0
    ttft_per_token_ms: float = 0.25
    itl_ms: float = 25.0
    noise_sigma: float = 0.25
    error_rate: float = 0.0
    itl_lists: bool = True  # per-token gap lists (itl_ms); False keeps ten-million-row sets small
    prefix_groups: int = 0  # >0: prefix_hash drawn from this many shared prefixes (per client)
    anomaly: PlantedAnomaly | None = field(default_factory=PlantedAnomaly)
    seed: int = 1


def _lognormal(rng: np.random.Generator, mean: float, sigma: float, n: int) -> np.ndarray:
    return rng.lognormal(np.log(mean) - sigma**2 / 2, sigma, n)


def make_requests(spec: SynthSpec) -> pa.Table:
    """A requests table (sorted by ts_start) following `spec`."""
    rng = np.random.default_rng(spec.seed)
    span_s = spec.periods * spec.period_s
    n = spec.n_rows if spec.n_rows is not None else int(round(spec.rate_per_s * span_s))
    off = rng.uniform(0, span_s, n)
    w = np.asarray(spec.client_weights, dtype=float)
    client_idx = rng.choice(len(spec.clients), n, p=w / w.sum())
    clients = list(spec.clients)
    prompt = _lognormal(rng, spec.prompt_mean, spec.prompt_sigma, n)
    a = spec.anomaly
    if a is not None:
        which = range(spec.periods) if a.periods is None else a.periods
        nb_per = int(round(a.batch_rate_per_s * a.duration_s))
        boff = np.concatenate(
            [p * spec.period_s + a.offset_s + rng.uniform(0, a.duration_s, nb_per) for p in which]
        ) if nb_per else np.zeros(0)
        nb = len(boff)
        off = np.concatenate([off, boff])
        clients.append(a.client_id)
        client_idx = np.concatenate([client_idx, np.full(nb, len(clients) - 1)])
        prompt = np.concatenate([prompt, _lognormal(rng, spec.prompt_mean * a.prompt_factor, 0.1, nb)])
    return _finish(spec, rng, off, client_idx, prompt, clients, 0)


def request_chunks(spec: SynthSpec, chunk_s: float = 3600.0) -> Iterator[pa.Table]:
    """The requests of `spec` one `chunk_s` slice of time at a time (each sorted by ts_start), so
    a hundred million rows never sit in memory together. Same distribution as make_requests:
    normal arrivals uniform over the span (each slice gets its share of the n rows), the batch
    client's arrivals uniform over each planted slot; each slice draws from its own seed."""
    span_s = spec.periods * spec.period_s
    n_total = spec.n_rows if spec.n_rows is not None else int(round(spec.rate_per_s * span_s))
    w = np.asarray(spec.client_weights, dtype=float)
    a = spec.anomaly
    clients = list(spec.clients) + ([a.client_id] if a is not None else [])
    which = (range(spec.periods) if a.periods is None else a.periods) if a is not None else ()
    k, id0, c0 = 0, 0, 0.0
    while c0 < span_s:
        c1 = min(c0 + chunk_s, span_s)
        rng = np.random.default_rng([spec.seed, k])
        n = int(round(n_total * c1 / span_s)) - int(round(n_total * c0 / span_s))
        off = rng.uniform(c0, c1, n)
        client_idx = rng.choice(len(spec.clients), n, p=w / w.sum())
        prompt = _lognormal(rng, spec.prompt_mean, spec.prompt_sigma, n)
        for p in which:
            lo = max(c0, p * spec.period_s + a.offset_s)
            hi = min(c1, p * spec.period_s + a.offset_s + a.duration_s)
            nb = int(round(a.batch_rate_per_s * (hi - lo))) if hi > lo else 0
            if nb:
                off = np.concatenate([off, rng.uniform(lo, hi, nb)])
                client_idx = np.concatenate([client_idx, np.full(nb, len(clients) - 1)])
                prompt = np.concatenate([prompt, _lognormal(rng, spec.prompt_mean * a.prompt_factor, 0.1, nb)])
        if len(off):
            yield _finish(spec, rng, off, client_idx, prompt, clients, id0)
        id0 += len(off)
        k += 1
        c0 = c1


def _finish(spec: SynthSpec, rng: np.random.Generator, off: np.ndarray, client_idx: np.ndarray, prompt: np.ndarray,
            clients: list[str], id0: int) -> pa.Table:
    """The requests at offsets `off` (seconds from spec.start; any order) with their clients and
    prompt lengths: latencies, tokens, errors; request ids from req-`id0`."""
    start_us = int(spec.start.timestamp() * 1_000_000)
    a = spec.anomaly
    n = len(off)
    order = np.argsort(off, kind="stable")
    off, client_idx, prompt = off[order], client_idx[order], prompt[order]
    prompt_tokens = np.maximum(prompt.round(), 1).astype(np.int32)
    completion = _lognormal(rng, spec.completion_mean, 0.5, n)
    slow = np.ones(n)
    slow_itl = np.ones(n)
    if a is not None:
        pos = np.mod(off, spec.period_s)
        per = np.floor(off / spec.period_s).astype(np.int64)
        in_slot = (pos >= a.offset_s) & (pos < a.offset_s + a.duration_s)
        if a.periods is not None:
            in_slot &= np.isin(per, np.asarray(a.periods))
        slow[in_slot] = a.latency_factor if a.ttft_factor is None else a.ttft_factor
        slow_itl[in_slot] = a.latency_factor if a.itl_factor is None else a.itl_factor
        completion[in_slot] *= a.completion_factor
    completion = np.maximum(completion.round(), 2).astype(np.int32)
    noise = _lognormal(rng, 1.0, spec.noise_sigma, n)
    ttft = (spec.ttft_base_ms + spec.ttft_per_token_ms * prompt_tokens) * noise * slow
    itl_mean = spec.itl_ms * slow_itl * _lognormal(rng, 1.0, 0.1, n)
    e2e = ttft + (completion - 1) * itl_mean
    failed = rng.random(n) < spec.error_rate
    ts_us = start_us + (off * 1e6).astype(np.int64)
    cols: dict[str, pa.Array] = {
        "request_id": pc.binary_join_element_wise("req-", pc.cast(pa.array(np.arange(id0, id0 + n)), pa.string()), ""),
        "ts_start": pa.array(ts_us, TS),
        "ts_first_byte": pa.array(ts_us + (ttft * 1000).astype(np.int64), TS),
        "ts_end": pa.array(ts_us + (e2e * 1000).astype(np.int64), TS),
        "method": pa.array(np.full(n, "POST")),
        "path": pa.array(np.full(n, "/v1/chat/completions")),
        "status": pa.array(np.where(failed, 500, 200).astype(np.int32)),
        "kind": pa.array(np.full(n, "chat")),
        "client_id": pa.DictionaryArray.from_arrays(pa.array(client_idx.astype(np.int32)), pa.array(clients)).cast(pa.string()),
        "model": pa.array(np.asarray(spec.models)[rng.integers(0, len(spec.models), n)]),
        "stream": pa.array(np.ones(n, dtype=bool)),
        "prompt_tokens": pa.array(prompt_tokens),
        "prompt_chars": pa.array(prompt_tokens.astype(np.int64) * 4),
        "completion_tokens": pa.array(completion),
        "ttft_ms": pa.array(np.where(failed, np.nan, ttft), mask=failed),
        "e2e_ms": pa.array(np.where(failed, np.nan, e2e), mask=failed),
        "error": pa.array(np.where(failed, "upstream error", None).tolist() if failed.any() else [None] * n, pa.string()),
        "source": pa.array(np.full(n, "synthetic")),
    }
    if spec.itl_lists:
        cols["itl_ms"] = _itl_lists(rng, itl_mean, completion - 1)
    if spec.prefix_groups > 0:
        g = rng.integers(0, spec.prefix_groups, n)
        cols["prefix_hash"] = pc.binary_join_element_wise(
            pa.array(np.asarray(clients)[client_idx]), pc.cast(pa.array(g), pa.string()), ":"
        )
    return pa.table(cols)


def _itl_lists(rng: np.random.Generator, mean: np.ndarray, counts: np.ndarray) -> pa.Array:
    counts = counts.astype(np.int64)
    total = int(counts.sum())
    per = np.repeat(mean, counts)
    gaps = per * _lognormal(rng, 1.0, 0.3, total)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(gaps))


def make_engine_metrics(requests: pa.Table, interval_s: float = 10.0, max_batch: int = 8) -> pa.Table:
    """vLLM-style gauges sampled every `interval_s`: running = in flight up to max_batch, the
    rest waiting, KV usage following the prompt tokens in flight."""
    start = requests.column("ts_start").cast(pa.int64()).to_numpy()
    end = requests.column("ts_end").cast(pa.int64()).fill_null(0).to_numpy()
    end = np.where(end > 0, end, start)
    t0, t1 = start.min(), end.max()
    ts = np.arange(t0, t1 + 1, int(interval_s * 1e6), dtype=np.int64)
    inflight = np.searchsorted(np.sort(start), ts, side="right") - np.searchsorted(np.sort(end), ts, side="right")
    running = np.minimum(inflight, max_batch).astype(float)
    waiting = np.maximum(inflight - max_batch, 0).astype(float)
    kv = np.minimum(running / max_batch, 1.0)
    k = len(ts)
    metric = np.repeat(np.array(["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"]), k)
    labels = pa.MapArray.from_arrays(
        pa.array(np.arange(3 * k + 1, dtype=np.int32)),
        pa.array(np.full(3 * k, "model_name")),
        pa.array(np.full(3 * k, "llama-3-8b")),
    )
    return pa.table(
        {
            "ts": pa.array(np.tile(ts, 3), TS),
            "source": pa.array(np.full(3 * k, "http://127.0.0.1:8000/metrics")),
            "metric": pa.array(metric),
            "labels": labels,
            "value": pa.array(np.concatenate([running, waiting, kv])),
        }
    )


def make_replay(
    requests: pa.Table,
    *,
    latency_scale: float = 1.0,
    noise_sigma: float = 0.05,
    shift_s: float = 0.0,
    lag_ms: float = 2.0,
    target: str = "http://127.0.0.1:8001",
    seed: int = 7,
) -> pa.Table:
    """replay_results for `requests` as if replayed into a shadow whose latencies are the
    recorded ones times `latency_scale` (with per-request noise)."""
    rng = np.random.default_rng(seed)
    n = requests.num_rows
    ts = requests.column("ts_start").cast(pa.int64()).to_numpy() + int(shift_s * 1e6)
    lag = rng.exponential(lag_ms, n)
    f = latency_scale * _lognormal(rng, 1.0, noise_sigma, n) if noise_sigma > 0 else np.full(n, latency_scale)
    ttft = requests.column("ttft_ms").to_numpy(zero_copy_only=False) * f
    e2e = requests.column("e2e_ms").to_numpy(zero_copy_only=False) * f
    sent = ts + (lag * 1000).astype(np.int64)
    nan = np.isnan(e2e)
    return pa.table(
        {
            "request_id": requests.column("request_id"),
            "target": pa.array(np.full(n, target)),
            "scheduled_at": pa.array(ts, TS),
            "sent_at": pa.array(sent, TS),
            "send_lag_ms": pa.array(lag),
            "cap_delay_ms": pa.array(np.zeros(n)),
            "ts_first_byte": pa.array(sent + np.nan_to_num(ttft * 1000).astype(np.int64), TS),
            "ts_end": pa.array(sent + np.nan_to_num(e2e * 1000).astype(np.int64), TS),
            "status": requests.column("status"),
            "error": requests.column("error"),
            "kind": requests.column("kind"),
            "model": requests.column("model"),
            "client_id": requests.column("client_id"),
            "ttft_ms": pa.array(ttft, mask=np.isnan(ttft)),
            "e2e_ms": pa.array(e2e, mask=nan),
            "prompt_tokens": requests.column("prompt_tokens"),
            "completion_tokens": requests.column("completion_tokens"),
            "expected_completion_tokens": requests.column("completion_tokens"),
            "prompt_chars": requests.column("prompt_chars"),
        }
    )


def write_recording(
    root: str | os.PathLike,
    spec: SynthSpec | None = None,
    *,
    engine_metrics: bool = False,
    metrics_interval_s: float = 10.0,
    max_batch: int = 8,
    row_group_size: int = 128 * 1024,
    chunk_s: float | None = None,
) -> pa.Table | int:
    """Generates and writes a recording (and optionally engine metrics) under root. Returns the
    requests table; with `chunk_s`, generates and writes one slice of that many seconds at a time
    (request_chunks: memory bounded by a slice, the rows are not kept) and returns the row count."""
    spec = spec or SynthSpec()
    if chunk_s is not None:
        if engine_metrics:
            raise ValueError("engine_metrics need the whole table: not with chunk_s")
        rows = 0
        for req in request_chunks(spec, chunk_s):
            write_sorted(root, REQUESTS, req, row_group_size=row_group_size)
            rows += req.num_rows
        return rows
    req = make_requests(spec)
    write_sorted(root, REQUESTS, req, row_group_size=row_group_size)
    if engine_metrics:
        write_sorted(root, ENGINE_METRICS, make_engine_metrics(req, metrics_interval_s, max_batch))
    return req


def write_sorted(root: str | os.PathLike, table: str, data: pa.Table, **kw) -> None:
    """write_table, one contiguous hour slice at a time (data sorted by its time column first):
    linear in the rows, where write_table's per-hour filter is rows x hours."""
    tcol = TIME_COLUMN[table]
    data = data.sort_by(tcol)
    hours = data.column(tcol).cast(pa.int64()).to_numpy() // 3_600_000_000
    cuts = np.flatnonzero(np.diff(hours)) + 1
    bounds = [0, *cuts.tolist(), len(hours)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        write_table(root, table, data.slice(a, b - a), **kw)


def write_replay(root: str | os.PathLike, requests: pa.Table, recording: str | os.PathLike | None = None, **kw) -> pa.Table:
    """Writes replay_results (and a manifest.json naming the recording, when given)."""
    rep = make_replay(requests, **kw)
    write_sorted(root, REPLAY_RESULTS, rep)
    if recording is not None:
        import json
        from pathlib import Path

        (Path(root) / "manifest.json").write_text(json.dumps({"recording": str(Path(recording).resolve())}))
    return rep
