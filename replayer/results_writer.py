"""Results written during the replay: the sending process's side of the results child.

When requests are done (finished, failed, timed out, given up at the end) the runner hands their
rows to `ResultsWriter.add` as compact tuples (rows.py), a few dozen at a time in the gaps of the
schedule (runner._rows_tick, every 0.2 s); `add` marshals them in one call (tens of µs) into a
non-blocking pipe (shadowreplay.writer_pipe). The child (`python -m
shadowreplay.replayer.results_writer_child`, SCHED_IDLE) builds Arrow tables and writes zstd Parquet
files every `flush_interval_s`: no Arrow, compression or disk I/O runs in the sending process
while it sends, so pacing is not disturbed (docs/bench/replayer.md measures it). While it writes a
file, `flushing` is true: the sender then sleeps between sends instead of polling
(runner._sender_callbacks), so the write gets the gaps.

What a crash loses: SIGKILL/OOM of the replay alone loses the rows not handed over yet (those of
the last 0.2 s, more while the sender is behind schedule and handing over waits for a gap)
(the child gets end-of-input and writes the rest); losing both processes (or the machine) loses
what was not yet written, at most the last `flush_interval_s` of rows.

If the child cannot start or dies, the rows it did not confirm are written by this process at
the end, with a one-line warning.
"""

from __future__ import annotations

import asyncio
import logging
import marshal
from pathlib import Path

from shadowreplay.writer_pipe import ChildError, ChildProcess, describe_exit
from shadowreplay.storage import location

from .results_writer_child import CODEC, NAME
from .rows import Row

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 120.0
CHILD_ARGV = ("-m", "shadowreplay.replayer.results_writer_child")


class ResultsWriter:
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
        self.confirmed = 0  # rows[:confirmed] are on disk (the child said so)
        self.files: list[Path] = []
        self.errors: list[str] = []
        self.start: tuple[int, int] | None = None
        self.child: ChildProcess | None = None
        self._alive = False
        self._opened = False  # the child came up
        self._closing = False
        self._done = False  # the child said it wrote everything it was handed
        self._ended: asyncio.Event | None = None
        self._death: asyncio.Task | None = None  # reports a child that died during the run
        self.flushing = False  # the child is writing a file (the sender then sleeps, not polls)

    # ---- set-up ---------------------------------------------------------------------------------
    async def open(self) -> None:
        """Starts the child and waits (bounded) until it is ready, before the replay starts; on
        failure the replay goes on and writes its results at the end."""
        self._ended = asyncio.Event()
        self.child = child = ChildProcess(f"the {NAME}", CHILD_ARGV, CODEC)
        config = {"out": str(self.out), "run_id": self.run_id, "flush_interval_s": self.flush_interval_s,
                  "manifest": self.manifest_json, "manifest_name": self.manifest_name, "name_tag": self.shard_tag,
                  "metadata": {"run_id": self.run_id} | ({"shard": self.shard_tag} if self.shard_tag else {}),
                  "plan": self.static}
        try:
            await asyncio.to_thread(child.start, config)
            await child.attach(self._reply, self._eof)
        except (ChildError, OSError) as e:
            log.warning("replay: %s; results are written at the end", e)
            child.kill()
            self._ended.set()
            return
        self._alive = self._opened = True

    def started(self, start_mono_ns: int, wall_minus_mono_ns: int) -> None:
        """The start instant is fixed (called by the runner before the first send)."""
        self.start = (start_mono_ns, wall_minus_mono_ns)
        if self._alive:
            self.child.post(CODEC.dumps(("start", start_mono_ns, wall_minus_mono_ns)))

    # ---- during the run (on the sender's loop: keep it cheap) -----------------------------------
    def add(self, rows: list[Row]) -> None:
        """Rows of done requests, each handed over once; down the pipe at once."""
        self.rows.extend(rows)
        if not self._alive:
            return
        try:
            data = marshal.dumps(("rows", marshal.dumps(rows)))  # decoded by the child only when it writes
        except ValueError:  # a value marshal cannot carry (not JSON-like): all written at the end instead
            log.warning("replay: a result row could not be handed to the result writer process; results are written at the end")
            self._alive = False
            return
        self.child.post(data)

    def _reply(self, msg: tuple) -> None:
        kind = msg[0]
        if kind == "flushing":
            self.flushing = True
            return
        self.flushing = False
        if kind == "written":
            self.confirmed = int(msg[1])
            self.files.extend(location(p) for p in msg[2])
        elif kind == "error":
            self.errors.append(msg[1])
            log.warning("replay: the result writer could not write (%s); it retries at the next flush", msg[1])
        elif kind == "done":
            self.confirmed = int(msg[1])
            self._done = True

    def _eof(self) -> None:
        """The child's output ended: it exited (or is about to)."""
        if self._alive and not self._closing:
            self._death = asyncio.get_running_loop().create_task(self._report_death())
        self._alive = False
        self.flushing = False
        self._ended.set()

    async def _report_death(self) -> None:
        code = await asyncio.to_thread(self.child.wait, 10.0)  # reaped off the sender's loop
        log.warning("replay: the result writer process %s during the run; "
                    "the rows it had not written are written at the end", describe_exit(code))

    # ---- the end --------------------------------------------------------------------------------
    async def close(self) -> tuple[list[Path], int]:
        """Hands over the last rows, lets the child write them and exit, then writes whatever it
        did not confirm in this process. Returns (files written, rows written)."""
        self._closing = True
        child = self.child
        if child is not None:
            child.close_input()  # end of input: the child writes the rest and exits
            code = await asyncio.to_thread(child.wait, CLOSE_TIMEOUT_S)
            if code is None:
                log.error("replay: the result writer process did not finish within %.0f s; stopped", CLOSE_TIMEOUT_S)
                child.kill()
            if self._death is not None:
                await self._death
            elif code and self._opened:
                log.warning("replay: the result writer process %s; the rows it had not written are written at the end",
                            describe_exit(code))
            try:  # its last replies
                await asyncio.wait_for(self._ended.wait(), 5.0)
            except asyncio.TimeoutError:
                pass
            child.close()
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
        if not self._done and self.child is not None and self.child.proc is not None:
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
