"""One child-process writer: a parent hands messages down a pipe to a fresh interpreter that
writes them (the recorder's scrubbing Parquet writer, the replay's result writer).

Both ends speak `multiprocessing.connection` framing over two pipes (the child's stdin and
stdout); messages are serialized by a `Codec` the user picks (pickle for the recorder's exchange
objects, marshal for the replay's plain-value rows: twice as fast to dump, measured in
docs/bench/replayer.md). Raw messages live only in the pipes' memory, never on disk.

Parent side, `ChildProcess`:
- `start(config)` runs `python ARGV...` (a fresh interpreter, not a fork: nothing of mitmproxy's
  or the replay's state is inherited), sends `config` as the first message and waits (bounded)
  for the child's ready message; a child that dies or hangs at start raises `ChildError` with
  one line (the child's own error, if any, is on the inherited stderr).
- `send` / `send_bytes` (blocking: a full pipe is back-pressure, for a feeder thread) return False
  once the child is gone; or, on an asyncio loop, `attach` then `post` (never blocks: what the pipe
  cannot take yet waits in the transport's buffer).
- `recv` / `poll` read the child's replies; `finish` closes the child's input (its end of input:
  write everything, exit) and waits for its exit status; `describe_exit` words one.

Child side, `run_child(name, serve, codec)`: ignores SIGINT/SIGTERM (Ctrl-C on the terminal's
process group must not cut a final write short; the parent closes the pipe when it stops), reads
the config, calls `serve(link, config)`, which calls `link.ready()` once set up, then reads
`link.recv()` until end of input (None: the parent closed the pipe or died) and writes what it
has. Everything the child already wrote stays written whatever happens to either process.
"""

from __future__ import annotations

import asyncio
import logging
import marshal
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from .errors import ShadowReplayError

log = logging.getLogger("shadowreplay.writer_pipe")

READY_TIMEOUT_S = 60.0
READY = ("ready",)


class ChildError(ShadowReplayError):
    """A child writer process could not start, or exited with an error."""


@dataclass(frozen=True)
class Codec:
    name: str
    dumps: Callable[[Any], bytes]
    loads: Callable[[bytes], Any]


PICKLE = Codec("pickle", lambda obj: pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), pickle.loads)
MARSHAL = Codec("marshal", marshal.dumps, marshal.loads)  # plain values only (ValueError otherwise)

_SMALL = struct.Struct("!i")
_LARGE = struct.Struct("!Q")


def frame(data: bytes) -> bytes:
    """`data` as one message of `Connection.send_bytes`' wire format (what `recv_bytes` reads), for
    writers that cannot block (an asyncio pipe transport)."""
    n = len(data)
    if n > 0x7FFFFFFF:
        return _SMALL.pack(-1) + _LARGE.pack(n) + data
    return _SMALL.pack(n) + data


def describe_exit(code: int | None) -> str:
    """'exited with code 1', 'was killed by SIGKILL', 'is still running'."""
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class ChildProcess:
    """The parent's handle on one child writer process (start it again with a new instance)."""

    def __init__(self, name: str, argv: Sequence[str], codec: Codec, env: dict[str, str] | None = None) -> None:
        self.name = name  # for messages: "the writer process"
        self.argv = list(argv)  # after the interpreter: ["-m", "package.module"]
        self.codec = codec
        self.env = env
        self.proc: subprocess.Popen | None = None
        self._to: Connection | None = None
        self._from: Connection | None = None
        self._transport: asyncio.WriteTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_end: Callable[[], None] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc else None

    # ---- start -----------------------------------------------------------------------------------
    def start(self, config: Any, timeout: float = READY_TIMEOUT_S) -> None:
        """Starts the child, sends `config`, waits until the child says it is ready."""
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, *self.argv], stdin=r_in, stdout=w_out, close_fds=True, env=self.env)
        except OSError as e:
            for fd in (r_in, w_in, r_out, w_out):
                os.close(fd)
            raise ChildError(f"cannot start {self.name}: {e.strerror or e}") from None
        os.close(r_in)
        os.close(w_out)
        self._to = Connection(w_in, readable=False)
        self._from = Connection(r_out, writable=False)
        data = self.codec.dumps(config)
        # sent from a thread: a config larger than the pipe must not hang us past `timeout` when
        # the child never reads it
        sender = threading.Thread(target=self.send_bytes, args=(data,), name="shadowreplay-child-config", daemon=True)
        sender.start()
        if not self._from.poll(timeout):
            self.kill()
            raise ChildError(f"{self.name} did not start within {timeout:.0f} s")
        reply = self.recv()
        sender.join(timeout)
        if reply != READY:
            code = self.wait(10.0)
            if code is None:
                self.kill()
            raise ChildError(f"{self.name} {describe_exit(code)} before it was ready")

    # ---- blocking side (a feeder thread) ---------------------------------------------------------
    def encode(self, message: Any) -> bytes:
        return self.codec.dumps(message)

    def send_bytes(self, data: bytes) -> bool:
        """One encoded message; blocks while the pipe is full; False once the child is gone."""
        conn = self._to
        if conn is None or conn.closed:
            return False
        try:
            conn.send_bytes(data)
            return True
        except (OSError, ValueError):  # BrokenPipeError: the child is gone; ValueError: closed meanwhile
            return False

    def send(self, message: Any) -> bool:
        return self.send_bytes(self.codec.dumps(message))

    def poll(self, timeout: float | None = 0.0) -> bool:
        """True when a reply (or the end of the child's output) can be read."""
        conn = self._from
        return conn is not None and not conn.closed and conn.poll(timeout)

    def recv(self) -> Any | None:
        """The child's next reply (blocking), or None once the child's output has ended."""
        conn = self._from
        if conn is None or conn.closed:
            return None
        try:
            return self.codec.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return None

    # ---- asyncio side (never blocks the loop) ----------------------------------------------------
    async def attach(self, on_reply: Callable[[Any], None], on_end: Callable[[], None]) -> None:
        """From now on `post` writes through a non-blocking transport of the running loop, and
        each reply is passed to `on_reply` on the loop; `on_end` runs once when the child's output
        ends (it exited, or is about to)."""
        loop = asyncio.get_running_loop()
        self._loop, self._on_end = loop, on_end
        self._transport, _ = await loop.connect_write_pipe(asyncio.Protocol, self._to)
        fd = self._from.fileno()

        def readable() -> None:
            try:
                while self._from.poll():
                    on_reply(self.codec.loads(self._from.recv_bytes()))
            except (EOFError, OSError):
                loop.remove_reader(fd)
                self._ended()

        loop.add_reader(fd, readable)

    def post(self, data: bytes) -> None:
        """One encoded message, without blocking (after `attach`)."""
        t = self._transport
        if t is not None and not t.is_closing():
            t.write(frame(data))

    def _ended(self) -> None:
        cb, self._on_end = self._on_end, None
        if cb is not None:
            cb()

    # ---- the end ---------------------------------------------------------------------------------
    def close_input(self) -> None:
        """End of input for the child: it writes what it has and exits. What `post` buffered is
        written first."""
        t, self._transport = self._transport, None
        if t is not None:
            t.close()  # closes the connection once its buffer is written
        elif self._to is not None and not self._to.closed:
            self._to.close()

    def wait(self, timeout: float | None) -> int | None:
        """The exit status, or None while it is still running after `timeout` seconds."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def finish(self, timeout: float) -> int | None:
        """Closes the input and waits (bounded) for the child to write everything and exit; its
        exit status, or None when it is still writing after `timeout`."""
        self.close_input()
        return self.wait(timeout)

    def kill(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        self.close()

    def close(self) -> None:
        """Releases the pipes (the child, if running, sees end of input)."""
        self.close_input()
        conn = self._from
        if conn is not None and not conn.closed:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(conn.fileno())
            conn.close()


class ParentLink:
    """The child's end: messages from the parent on fd 0, replies on what was fd 1 (fd 1 itself is
    pointed at stderr, so that a stray print cannot corrupt the framing)."""

    def __init__(self, codec: Codec, in_fd: int = 0, out_fd: int = 1) -> None:
        self.codec = codec
        self._in = Connection(os.dup(in_fd), writable=False)
        self._out = Connection(os.dup(out_fd), readable=False)
        self._out_lock = threading.Lock()  # replies may come from more than one thread
        if out_fd == 1:
            os.dup2(2, 1)

    def poll(self, timeout: float | None = None) -> bool:
        """True when a message (or the end of input) can be read within `timeout` seconds."""
        return self._in.poll(timeout)

    def recv_bytes(self) -> bytes | None:
        """The next message undecoded, or None at end of input (a message cut short counts as the end)."""
        try:
            return self._in.recv_bytes()
        except (EOFError, OSError):
            return None

    def recv(self) -> Any | None:
        data = self.recv_bytes()
        return None if data is None else self.codec.loads(data)

    def reply(self, message: Any) -> None:
        try:
            data = self.codec.dumps(message)
            with self._out_lock:
                self._out.send_bytes(data)
        except OSError:
            pass  # the parent is gone: the files are what matters

    def ready(self) -> None:
        self.reply(READY)


def run_child(name: str, serve: Callable[[ParentLink, Any], int], codec: Codec) -> int:
    """The child's main: reads the config, runs `serve(link, config)`, returns its exit status;
    an error is one line on stderr (never the exception's text for a bug: it could quote content)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    try:
        link = ParentLink(codec)
        config = link.recv()
        if config is None:
            log.error("%s: no configuration received; exiting", name)
            return 2
        return serve(link, config)
    except ShadowReplayError as e:  # e.g. an unreadable key file
        log.error("%s: %s", name, e)
        return 1
    except Exception as e:
        log.error("%s failed: %s", name, type(e).__name__)
        return 1
