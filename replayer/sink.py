"""Results written during the replay: the sending process's side of the result writer process.

When requests are done (finished, failed, timed out, given up at the end) the runner hands their
rows to `ResultSink.add` as compact tuples (rows.py), a few dozen at a time in the gaps of the
schedule (runner._rows_tick, every 0.2 s); `add` marshals them in one call (tens of µs) into a
non-blocking pipe. The writer process (`python -m replayer.results_proc`, SCHED_IDLE) builds
Arrow tables and writes zstd Parquet files every `flush_interval_s`: no Arrow, compression or
disk I/O runs in the sending process while it sends, so pacing is not disturbed
(docs/bench/replayer.md measures it). While it writes a file, `flushing` is true: the sender then
sleeps between sends instead of polling (runner._sender_callbacks), so the write gets the gaps.

What a crash loses: SIGKILL/OOM of the replay alone loses the rows not handed over yet (those of
the last 0.2 s, more while the sender is behind schedule and handing over waits for a gap)
(the writer process gets end-of-input and writes the rest); losing both processes (or the
machine) loses what was not yet written, at most the last `flush_interval_s` of rows.

If the writer process cannot start or dies, the rows it did not confirm are written by this
process at the end (the old behaviour), with a warning.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

from shadowreplay.storage import location

from .results_proc import encode, encode_rows
from .rows import Row

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 120.0


class _Reader(asyncio.Protocol):
    """The writer process's stdout: one line per event."""

    def __init__(self, sink: ResultSink):
        self.sink = sink
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            self.sink._line(line.decode("utf-8", "replace").strip())

    def connection_lost(self, exc) -> None:
        self.sink._eof()


class _Writer(asyncio.BaseProtocol):
    def __init__(self, sink: ResultSink):
        self.sink = sink

    def connection_lost(self, exc) -> None:
        self.sink._gone()


class ResultSink:
    def __init__(self, out: Path, run_id: str, flush_interval_s: float, manifest_json: str, static: dict,
                 manifest_name: str = "manifest.json", shard_tag: str | None = None):
        self.out = out
        self.manifest_name = manifest_name
        self.shard_tag = shard_tag
        self.run_id = run_id
        self.flush_interval_s = flush_interval_s
        self.manifest_json = manifest_json
        self.static = static
        self.rows: list[Row] = []  # every row handed over, in order (for the fallback)
        self.confirmed = 0  # rows[:confirmed] are on disk (the writer process said so)
        self.files: list[Path] = []
        self.errors: list[str] = []
        self.start: tuple[int, int] | None = None
        self.proc: subprocess.Popen | None = None
        self._wt: asyncio.WriteTransport | None = None
        self._rt: asyncio.ReadTransport | None = None
        self._ready: asyncio.Future | None = None
        self._alive = False
        self._closing = False
        self._done = False  # the writer process said it wrote everything it was handed
        self._ended: asyncio.Event | None = None
        self.flushing = False  # the writer process is writing a file (the sender then sleeps, not polls)

    # ---- set-up ---------------------------------------------------------------------------------
    async def open(self) -> None:
        """Starts the writer process and waits (bounded) until it is ready, before the replay
        starts; on failure the replay goes on and writes its results at the end."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._ended = asyncio.Event()
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "shadowreplay.replayer.results_proc"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, close_fds=True)
            self._wt, _ = await loop.connect_write_pipe(lambda: _Writer(self), self.proc.stdin)
            self._rt, _ = await loop.connect_read_pipe(lambda: _Reader(self), self.proc.stdout)
        except OSError as e:
            log.warning("replay: cannot start the result writer process (%s); results are written at the end", e)
            self._kill()
            return
        self._alive = True
        self._wt.write(encode(("config", {"out": str(self.out), "run_id": self.run_id,
                                          "flush_interval_s": self.flush_interval_s,
                                          "manifest": self.manifest_json, "manifest_name": self.manifest_name,
                                          "name_tag": self.shard_tag,
                                          "metadata": {"run_id": self.run_id} | ({"shard": self.shard_tag} if self.shard_tag else {})})))
        self._wt.write(encode(("plan", self.static)))
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), READY_TIMEOUT_S)
        except asyncio.TimeoutError:
            pass
        if not (self._ready.done() and self._ready.result()):
            log.warning("replay: the result writer process did not start; results are written at the end")
            self._alive = False
            self._kill()

    def started(self, start_mono_ns: int, wall_minus_mono_ns: int) -> None:
        """The start instant is fixed (called by the runner before the first send)."""
        self.start = (start_mono_ns, wall_minus_mono_ns)
        if self._alive:
            self._wt.write(encode(("start", start_mono_ns, wall_minus_mono_ns)))

    # ---- during the run (on the sender's loop: keep it cheap) -----------------------------------
    def add(self, rows: list[Row]) -> None:
        """Rows of done requests, each handed over once; down the pipe at once."""
        self.rows.extend(rows)
        if not self._alive:
            return
        try:
            data = encode_rows(rows)
        except ValueError:  # a value marshal cannot carry (not JSON-like): all written at the end instead
            log.warning("replay: a result row could not be handed to the writer process; results are written at the end")
            self._alive = False
            return
        self._wt.write(data)

    def _line(self, line: str) -> None:
        if line == "R":
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(True)
            return
        if line == "F":
            self.flushing = True
            return
        self.flushing = False
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if "rows" in msg:
            self.confirmed = int(msg["rows"])
            self.files.extend(location(p) for p in msg.get("files", ()))
        elif "error" in msg:
            self.errors.append(msg["error"])
            log.warning("replay: the result writer could not write (%s); it retries at the next flush", msg["error"])
        elif "done" in msg:
            self.confirmed = int(msg["done"])
            self._done = True

    def _gone(self) -> None:
        """A pipe to the writer process closed: it exited (or is about to)."""
        if self._alive and not self._closing and self._ready is not None and self._ready.done():
            log.warning("replay: the result writer process exited during the run; "
                        "the rows it had not written are written at the end")
        self._alive = False
        self.flushing = False
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(False)

    def _eof(self) -> None:
        self._gone()
        if self._ended is not None:
            self._ended.set()

    # ---- the end --------------------------------------------------------------------------------
    async def close(self) -> tuple[list[Path], int]:
        """Hands over the last rows, lets the writer process write them and exit, then writes
        whatever it did not confirm in this process. Returns (files written, rows written)."""
        self._closing = True
        proc = self.proc
        if proc is not None:
            if self._wt is not None and not self._wt.is_closing():
                self._wt.close()  # end of input: the writer process writes the rest and exits
            try:
                await asyncio.to_thread(proc.wait, CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.error("replay: the result writer process did not finish within %.0f s; stopped", CLOSE_TIMEOUT_S)
                self._kill()
            if self._rt is not None:  # read its last lines
                try:
                    await asyncio.wait_for(self._ended.wait(), 5.0)
                except asyncio.TimeoutError:
                    pass
                self._rt.close()
        if self.confirmed < len(self.rows) and self.start is not None:
            self._write_rest()
        return self.files, self.confirmed

    def _write_rest(self) -> None:
        """Writes, in this process, the rows that are not on disk. Which ones are is read from the
        files of this run (not from the writer's messages): a writer killed between renaming a
        file and saying so must not cause a row to be written twice."""
        from . import results
        from .rows import columns

        rest = self.rows[self.confirmed:]
        if not self._done and self.proc is not None:
            on_disk, self.files = self._on_disk()
            ids, offs = self.static["request_id"], self.static["offsets_ns"]
            base = self.start[0] + self.start[1]  # start instant on the wall clock, ns
            rest = [r for r in self.rows if (ids[r[0]], (base + offs[r[0]]) // 1000) not in on_disk]
        if rest:
            self.files.extend(results.write_results(self.out, columns(self.static, rest, *self.start), self.run_id, self.shard_tag))
        self.confirmed = len(self.rows)

    def _on_disk(self) -> tuple[set[tuple[str, int]], list[Path]]:
        """(request_id, scheduled_at in µs) of every row in this run's files, and those files."""
        import pyarrow as pa

        from shadowreplay.dataset import parquet_files
        from shadowreplay.schema import REPLAY_RESULTS
        from shadowreplay.storage import read_parquet, read_parquet_metadata

        keys: set[tuple[str, int]] = set()
        files = []
        for f in parquet_files(self.out, REPLAY_RESULTS):
            try:
                if (read_parquet_metadata(f).metadata or {}).get(b"shadowreplay.run_id") != self.run_id.encode():
                    continue
                t = read_parquet(f, columns=["request_id", "scheduled_at"])
            except Exception:  # unreadable: not this run's complete file
                continue
            files.append(f)
            keys.update(zip(t.column("request_id").to_pylist(), t.column("scheduled_at").cast(pa.int64()).to_pylist()))
        return keys, files

    def _kill(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for t in (self._wt, self._rt):
            if t is not None:
                t.close()
