"""`shadowreplay import`: a public trace file -> a requests dataset in the recorder's schema.

Readers (one module per format) yield Chunks; this module checks them for trace artifacts,
optionally spreads bunched timestamps, synthesizes prompt text of the exact recorded length, and
writes Arrow tables partitioned by hour (a pending hour is held until the trace moves past it, so
a time-ordered file gives one Parquet file per hour)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shadowreplay import llmapi
from shadowreplay.console import StatusLine
from shadowreplay.dataset import parquet_files, write_table
from shadowreplay.durations import TimePoint
from shadowreplay.errors import ConfigError
from shadowreplay.schema import REQUESTS, TS

from . import azure, burstgpt, mooncake, openai_jsonl
from .base import Chunk, Report, source_stem
from .textsynth import ApproxTokenizer, Synthesizer, row_blocks

READERS: dict[str, Callable[..., Iterator[Chunk]]] = {
    azure.FORMAT: azure.read,
    burstgpt.FORMAT: burstgpt.read,
    mooncake.FORMAT: mooncake.read,
    openai_jsonl.FORMAT: openai_jsonl.read,
}
FORMATS = tuple(READERS)
DEFAULT_START = "2024-01-01T00:00:00+00:00"  # where traces with relative timestamps are placed
PREFIX_CHARS = 1000  # prefix_hash covers the first N characters of the prompt (as the recorder)
HOUR_US = 3_600_000_000
SYNTH_ROWS = 256  # rows tokenized together when synthesizing
TEXT_MODES = ("exact", "approx", "none")


@dataclass
class ImportOptions:
    fmt: str
    path: Path
    out: Path
    tokenizer: object | None = None  # a traces.tokenizer.Tokenizer; None: approx or none
    text: str = "approx"  # exact (needs tokenizer) | approx | none
    model: str | None = None
    chat: bool = False
    jitter_within_step: bool = False
    start_us: int = 0  # where relative timestamps (BurstGPT, Mooncake) are placed: --origin
    start: TimePoint | None = None  # import rows from this time (an offset counts from the first row)
    end: TimePoint | None = None  # ...up to this one, exclusive
    limit: int | None = None
    append: bool = False
    progress: bool | None = None  # None: when stderr is a TTY
    verify: str = "sample"  # sample | all (re-tokenized synthesized prompts)


def prefix_hash(text: str) -> str:
    """Unkeyed (imported text is synthetic or already public): sha256 of the first 1000 chars."""
    return hashlib.sha256(text[:PREFIX_CHARS].encode()).hexdigest()[:16]


def unit_floats(fmt: str, stem: str, rows: np.ndarray) -> np.ndarray:
    """A deterministic uniform [0, 1) per row, from sha256(format|file|row)."""
    out = np.empty(len(rows))
    for i, r in enumerate(rows.tolist()):
        d = hashlib.sha256(f"{fmt}|{stem}|{r}|jitter".encode()).digest()
        out[i] = int.from_bytes(d[:8], "big") / 2.0**64
    return out


class Checker:
    """Trace artifacts: out-of-order rows, zero-length outputs/prompts, duplicate ids, and
    timestamps bunched into steps (counted across chunks)."""

    def __init__(self, report: Report, name: str):
        self.r = report
        self.name = name
        self.last_ts: int | None = None
        self.stamps = 0  # distinct consecutive timestamps
        self.run = 0  # rows on the current stamp
        self.max_run = 0
        self.gaps: Counter = Counter()  # ms between consecutive distinct stamps
        self.ids: set = set()
        self.blocks_seen: set = set()
        self.block_total = 0
        self.block_repeats = 0

    def check(self, c: Chunk) -> None:
        ts = c.ts_us
        if len(ts) == 0:
            return
        prev = np.concatenate(([self.last_ts if self.last_ts is not None else ts[0]], ts[:-1]))
        back = np.flatnonzero(ts < prev)
        if len(back):
            i = int(back[0])
            self.r.warn("out_of_order", f"{self.name}:{int(c.row[i])}: timestamp earlier than the row before "
                        f"({len(back)} such rows in this batch; kept, the replayer orders by time)", len(back))
        for col, kind, what in ((c.completion_tokens, "zero_output", "output"), (c.prompt_tokens, "zero_prompt", "prompt")):
            z = np.flatnonzero(col == 0)
            if len(z):
                self.r.warn(kind, f"{self.name}:{int(c.row[z[0]])}: zero-length {what} "
                            f"({len(z)} such rows in this batch; kept, replayed with max_tokens 1)" if kind == "zero_output"
                            else f"{self.name}:{int(c.row[z[0]])}: zero-length {what} ({len(z)} such rows in this batch; kept)", len(z))
        unknown = np.flatnonzero((c.prompt_tokens < 0) | (c.completion_tokens < 0))
        if len(unknown):
            self.r.warn("unknown_tokens", f"{self.name}:{int(c.row[unknown[0]])}: token counts unknown "
                        f"({len(unknown)} rows in this batch; pass --tokenizer to count prompts)", len(unknown))
        if c.hash_ids is not None:  # the prefix-cache hit potential, reported at the end
            seen = self.blocks_seen
            for hs in c.hash_ids:
                for h in hs:
                    self.block_total += 1
                    if h in seen:
                        self.block_repeats += 1
                    else:
                        seen.add(h)
        if c.request_id is not None:
            for row, rid in zip(c.row.tolist(), c.request_id):
                if rid is None:
                    continue
                if rid in self.ids:
                    self.r.warn("duplicate_id", f"{self.name}:{row}: duplicate id {rid!r} (kept under a line-based id)")
                else:
                    self.ids.add(rid)
        # steps: runs of equal stamps and gaps between distinct ones
        change = np.flatnonzero(ts != prev)
        if self.last_ts is None:
            change = np.concatenate(([0], change[change > 0]))
        if len(change) == 0:
            self.run += len(ts)
        else:
            bounds = np.concatenate((change, [len(ts)]))
            self.max_run = max(self.max_run, self.run + int(change[0]))
            runs = np.diff(bounds)
            if len(runs) > 1:
                self.max_run = max(self.max_run, int(runs[:-1].max()))
            self.run = int(runs[-1])
            self.stamps += len(change)
            # Gap histogram only where stamps repeat (bunched chunks): cheap for plain traces.
            if len(change) * 2 <= len(ts):
                gaps = np.rint((ts[change] - prev[change]) / 1000.0).astype(np.int64)
                gaps = gaps[gaps > 0]
                u, k = np.unique(gaps, return_counts=True)
                self.gaps.update(dict(zip(u.tolist(), k.tolist())))
        self.last_ts = int(ts[-1])

    def step_ms(self) -> int | None:
        """The step timestamps are bunched into (ms), or None if they are not."""
        self.max_run = max(self.max_run, self.run)
        rows = self.r.rows_read
        if not self.gaps or self.stamps == 0 or rows / self.stamps < 2:
            return None
        gap, n = self.gaps.most_common(1)[0]
        total = sum(self.gaps.values())
        # Gaps cluster around the step (2999-3001 ms): count a +-1% band around the mode.
        near = sum(v for g, v in self.gaps.items() if abs(g - gap) <= max(1, gap // 100))
        if gap >= 100 and near >= 0.5 * total:
            return gap
        return None

    def finish(self, jittered: bool) -> None:
        if self.block_total:
            self.r.note(f"{self.name}: {self.block_total:,} prefix blocks, {len(self.blocks_seen):,} distinct: "
                        f"{self.block_repeats / self.block_total:.1%} repeat an earlier block (kept: equal ids get equal text)")
        step = self.step_ms()
        if step:
            msg = (f"{self.name}: timestamps are bunched: {self.r.rows_read:,} rows on {self.stamps:,} distinct stamps "
                   f"about {step} ms apart (up to {self.max_run} rows share one)")
            msg += ("; spread uniformly within each step (--jitter-within-step)" if jittered else
                    "; a replay sends them as bursts. --jitter-within-step spreads them")
            self.r.warn("timestamp_steps", msg)


class HourWriter:
    """Holds the newest hour until the trace moves past it, then writes whole hours. Writing runs
    in a background thread (Parquet encoding releases the GIL) so it overlaps reading."""

    def __init__(self, out: Path, meta: dict[str, str], flush_rows: int = 4_000_000, flush_bytes: int = 256 << 20):
        from concurrent.futures import ThreadPoolExecutor

        self.out = out
        self.meta = meta
        self.pending: list[pa.Table] = []
        self.pending_hours: list[np.ndarray] = []
        self.pending_rows = 0
        self.flush_rows = flush_rows
        self.flush_bytes = flush_bytes  # big bodies (synthesized text): write before the hour ends
        self.written = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-writer")
        self._inflight: list = []

    def add(self, t: pa.Table, ts_us: np.ndarray) -> None:
        if t.num_rows == 0:
            return
        self.pending.append(t)
        self.pending_hours.append(ts_us // HOUR_US)
        self.pending_rows += t.num_rows
        last = self.pending_hours[-1][-1]
        hours = np.concatenate(self.pending_hours) if len(self.pending_hours) > 1 else self.pending_hours[0]
        if self.pending_rows >= self.flush_rows or sum(t.nbytes for t in self.pending) >= self.flush_bytes:
            self._write(pa.concat_tables(self.pending), hours)
            self.pending, self.pending_hours, self.pending_rows = [], [], 0
            return
        done = hours < last
        if done.any():
            tab = pa.concat_tables(self.pending) if len(self.pending) > 1 else self.pending[0]
            k = int(done.sum())
            if not done[:k].all():  # out of order: keep it simple, filter
                self._write(tab.filter(pa.array(done)), hours[done])
                keep = ~done
                rest = tab.filter(pa.array(keep))
                self.pending, self.pending_hours = [rest], [hours[keep]]
            else:  # time-ordered: the done rows are a prefix
                self._write(tab.slice(0, k), hours[:k])
                self.pending, self.pending_hours = [tab.slice(k)], [hours[k:]]
            self.pending_rows = self.pending[0].num_rows

    def _write(self, t: pa.Table, hours: np.ndarray) -> None:
        # Time-ordered rows: zero-copy slices of one hour each, so write_table need not filter.
        if len(hours) and np.all(hours[1:] >= hours[:-1]):
            cuts = np.flatnonzero(np.diff(hours)) + 1
            starts = np.concatenate(([0], cuts))
            ends = np.concatenate((cuts, [len(hours)]))
            pieces = [t.slice(int(a), int(b - a)) for a, b in zip(starts, ends)]
        else:
            pieces = [t]
        for piece in pieces:
            while len(self._inflight) >= 2:
                self._inflight.pop(0).result()
            self._inflight.append(self._pool.submit(
                write_table, self.out, REQUESTS, piece, extra_metadata=self.meta, row_group_size=1 << 20))
            self.written += piece.num_rows

    def close(self) -> None:
        try:
            if self.pending:
                self._write(pa.concat_tables(self.pending), np.concatenate(self.pending_hours))
            self.pending, self.pending_hours, self.pending_rows = [], [], 0
            for f in self._inflight:
                f.result()
        finally:
            self._inflight = []
            self._pool.shutdown(wait=True)


def _const(value, n: int, typ=pa.string()) -> pa.Array:
    """n copies of one value, built from raw buffers (a take() costs ~10x more on big batches)."""
    if typ == pa.string():
        b = value.encode()
        offsets = np.arange(0, (n + 1) * len(b), len(b), dtype=np.int32)
        return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(b * n))
    if typ == pa.bool_():
        return pa.array(np.full(n, bool(value)), type=pa.bool_())
    return pa.array([value], type=typ).take(pa.array(np.zeros(n, dtype=np.int32)))


def _opt_int32(a: np.ndarray) -> pa.Array:
    neg = a < 0
    if not neg.any():
        return pa.array(a.astype(np.int32), type=pa.int32())
    return pa.array(a.astype(np.int32), mask=neg, type=pa.int32())


def build_table(c: Chunk, o: ImportOptions, stem: str, synth: Synthesizer | None, report: Report,
                seen_ids: set) -> pa.Table:
    n = len(c)
    rows_str = pc.cast(pa.array(c.row), pa.string())
    rid = pc.binary_join_element_wise(f"{o.fmt}:{stem}:", rows_str, "")
    if c.request_id is not None:  # the source's ids, when present and unique
        own = []
        for i, v in enumerate(c.request_id):
            if v is not None and v not in seen_ids:
                seen_ids.add(v)
                own.append(v)
            else:
                own.append(rid[i].as_py())
        rid = pa.array(own, type=pa.string())
    pt, ct = c.prompt_tokens, c.completion_tokens
    cols: dict[str, pa.Array] = {
        "request_id": rid,
        "ts_start": pa.array(c.ts_us, type=pa.int64()).cast(TS),
        "prompt_tokens": _opt_int32(pt),
        "completion_tokens": _opt_int32(ct),
        "max_tokens": _opt_int32(ct),
        "source": _const(o.fmt, n),
        "method": _const("POST", n),
    }
    if c.kind is not None:
        kinds = c.kind
        cols["kind"] = pa.array(kinds, type=pa.string())
    else:
        kinds = None
        cols["kind"] = _const("chat" if o.chat else "completion", n)
    chat_path, comp_path = llmapi.CHAT.default_path, llmapi.COMPLETION.default_path
    cols["path"] = (pa.array([llmapi.api_for_kind(k).default_path or comp_path for k in kinds]) if kinds is not None
                    else _const(chat_path if o.chat else comp_path, n))
    models = [o.model] * n if o.model else (c.model if c.model is not None else None)
    if models is not None:
        cols["model"] = pa.array(models, type=pa.string())
    if c.client_id is not None:
        cols["client_id"] = pa.array(c.client_id, type=pa.string())
    if c.hash_ids is not None:
        cols["hash_ids"] = pa.array(c.hash_ids, type=pa.list_(pa.int64()))

    if c.request_body is not None:  # real bodies (openai-jsonl): kept, model overridden if asked
        bodies, texts, streams = [], [], []
        for i, b in enumerate(c.request_body):
            obj = json.loads(b)
            if o.model:
                obj["model"] = o.model
                b = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            bodies.append(b)
            texts.append(openai_jsonl.prompt_text(obj, kinds[i] if kinds is not None else None))
            streams.append(bool(obj.get("stream", False)))
        cols["request_body"] = pa.array(bodies, type=pa.string())
        cols["stream"] = pa.array(streams, type=pa.bool_())
        cols["prompt_chars"] = pa.array([len(t) for t in texts], type=pa.int64())
        cols["prefix_hash"] = pa.array([prefix_hash(t) for t in texts], type=pa.string())
    elif synth is not None:
        texts = synthesize(c, o, stem, synth, report)
        bodies = []
        for i, t in enumerate(texts):
            body: dict = {}
            if models is not None and models[i]:
                body["model"] = models[i]
            if o.chat:
                body["messages"] = [{"role": "user", "content": t}]
            else:
                body["prompt"] = t
            body["max_tokens"] = max(1, int(ct[i]))
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            bodies.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        cols["request_body"] = pa.array(bodies, type=pa.string())
        cols["stream"] = _const(True, n, pa.bool_())
        cols["prompt_chars"] = pa.array([len(t) for t in texts], type=pa.int64())
        cols["prefix_hash"] = pa.array([prefix_hash(t) for t in texts], type=pa.string())
    else:
        cols["stream"] = _const(True, n, pa.bool_())
    return pa.table(cols)


def synthesize(c: Chunk, o: ImportOptions, stem: str, synth: Synthesizer, report: Report) -> list[str]:
    special = synth.tok.n_special
    out: list[str] = []
    for s in range(0, len(c), SYNTH_ROWS):
        blocks, targets = [], []
        for i in range(s, min(s + SYNTH_ROWS, len(c))):
            want = int(c.prompt_tokens[i])
            row = int(c.row[i])
            if 0 <= want < special:
                report.warn("prompt_below_specials", f"{o.path.name}:{row}: prompt_tokens {want} is below the "
                            f"{special} special tokens the tokenizer adds; prompt left empty")
            content = max(0, want - special)
            hids = c.hash_ids[i] if c.hash_ids is not None else None
            blocks.append(row_blocks((o.fmt, stem, row), content, mooncake.BLOCK, hids))
            targets.append(max(want, special))
        out.extend(synth.prompts(blocks, targets))
    return out


def detect_step_ms(o: ImportOptions, stem: str) -> int | None:
    """A first pass over the timestamps only, for --jitter-within-step."""
    r = Report(quiet=True)
    chk = Checker(r, o.path.name)
    for c in READERS[o.fmt](o.path, r, start_us=o.start_us):
        chk.check(c)
    return chk.step_ms()


def run_import(o: ImportOptions, report: Report | None = None) -> Report:
    if o.fmt not in READERS:
        raise ConfigError(f"unknown format {o.fmt!r} (one of {', '.join(FORMATS)})")
    if o.text == "exact" and o.tokenizer is None:
        raise ConfigError("exact prompt text needs --tokenizer DIR_OR_URL (or use --no-text)")
    report = report or Report()
    if parquet_files(o.out, REQUESTS) and not o.append:
        raise ConfigError(f"{o.out}/requests already holds data: choose an empty --out or pass --append")
    stem = source_stem(o.path)
    synth = None
    if o.text != "none" and o.fmt != openai_jsonl.FORMAT:
        synth = Synthesizer(o.tokenizer if o.text == "exact" else ApproxTokenizer(), verify=o.verify)
    step_us = None
    if o.jitter_within_step:
        step = detect_step_ms(o, stem)
        if step:
            step_us = step * 1000
        else:
            report.note(f"{o.path.name}: no timestamp steps found; --jitter-within-step changes nothing")
    meta = {"import_format": o.fmt, "import_file": o.path.name, "import_text": o.text,
            "import_tokenizer": getattr(o.tokenizer, "name", "") if o.text == "exact" else ""}
    writer = HourWriter(o.out, meta)
    try:
        _pump(o, stem, report, writer, synth, step_us)
    finally:
        writer.close()
    report.rows_written = writer.written
    return report


def _pump(o: ImportOptions, stem: str, report: Report, writer: HourWriter, synth, step_us) -> None:
    checker = Checker(report, o.path.name)
    seen_ids: set = set()
    status = StatusLine(force=bool(o.progress))
    progress = status.enabled and o.progress is not False
    t0 = last = time.monotonic()
    taken = 0
    window = None
    for c in READERS[o.fmt](o.path, report, start_us=o.start_us, tokenizer=o.tokenizer):
        ts = c.ts_us  # the rows' times as written (spread within their step with --jitter-within-step)
        if step_us:
            ts = ts + np.floor(unit_floats(o.fmt, stem, c.row) * step_us).astype(np.int64)
        if (o.start is not None or o.end is not None) and len(c):
            window = window or _window_us(o, int(c.ts_us[0]))
            keep = np.flatnonzero((ts >= window[0]) & (ts < window[1]))
            if len(keep) < len(c):
                c, ts = _take(c, keep), ts[keep]
            if not len(c):
                continue
        if o.limit is not None:
            if taken >= o.limit:
                break
            if taken + len(c) > o.limit:
                c, ts = _head(c, o.limit - taken), ts[: o.limit - taken]
        taken += len(c)
        checker.check(c)
        c.ts_us = ts
        writer.add(build_table(c, o, stem, synth, report, seen_ids), c.ts_us)
        now = time.monotonic()
        if progress and now - last >= 1.0:
            last = now
            status.update(f"{taken:,} rows  {taken / (now - t0):,.0f} rows/s")
    status.close()
    if o.limit is not None:
        report.rows_read = min(report.rows_read, taken + sum(v for k, v in report.counts.items() if k == "unparseable"))
    checker.finish(bool(step_us))
    if synth is not None and synth.adjusted_rows:
        report.warn("adjusted_tail", f"{synth.adjusted_rows} prompts needed their last block re-fitted "
                    "(the tokenizer merged across a block boundary)", 0)
        report.counts["adjusted_tail"] = synth.adjusted_rows


def _window_us(o: ImportOptions, first_us: int) -> tuple[int, int]:
    """--start/--end in microseconds; offsets count from `first_us`, the first row's time."""
    first = dt.datetime.fromtimestamp(first_us / 1e6, dt.timezone.utc)
    lo = round(o.start.at(first).timestamp() * 1e6) if o.start is not None else -(1 << 62)
    hi = round(o.end.at(first).timestamp() * 1e6) if o.end is not None else 1 << 62
    if hi <= lo:
        raise ConfigError(f"--end ({o.end}) is not after --start ({o.start})")
    return lo, hi


def _take(c: Chunk, idx: np.ndarray) -> Chunk:
    """The rows `idx` (ascending positions) of `c`."""
    def cut(v):
        return None if v is None else [v[i] for i in idx.tolist()]

    return Chunk(row=c.row[idx], ts_us=c.ts_us[idx], prompt_tokens=c.prompt_tokens[idx],
                 completion_tokens=c.completion_tokens[idx], model=cut(c.model), client_id=cut(c.client_id),
                 hash_ids=cut(c.hash_ids), request_body=cut(c.request_body), kind=cut(c.kind),
                 request_id=cut(c.request_id))


def _head(c: Chunk, k: int) -> Chunk:
    return _take(c, np.arange(k))
