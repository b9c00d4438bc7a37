"""Free TCP ports for servers this machine starts (vLLM shadows, the recorder's proxy).

A port taken from the kernel with bind(0) lies in the ephemeral range, the range the kernel also
hands out to every outgoing connection and to the internal sockets a vLLM engine opens while it
starts. Between picking such a port and the server binding it, any of those can take it
("address already in use"). Ports below the ephemeral range are never handed out that way, so
they are picked from there (checked free by binding them)."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def _ephemeral_low() -> int | None:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _bindable(port: int, host: str) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct ports that are free now and outside the kernel's ephemeral range."""
    low = _ephemeral_low()
    rnd = random.SystemRandom()
    out: list[int] = []
    if low is not None and low - _LOWEST > 100 * n:
        for _ in range(50 * n):
            p = rnd.randrange(_LOWEST, low)
            if p not in out and _bindable(p, host):
                out.append(p)
                if len(out) == n:
                    return out
    # no range to pick from (not Linux, or an odd range): ports the kernel gives out
    socks = []
    try:
        while len(out) < n:
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
            out.append(s.getsockname()[1])
        return out
    finally:
        for s in socks:
            s.close()


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def listening(port: int, host: str = "127.0.0.1", timeout_s: float = 0.2) -> bool:
    """True when something accepts TCP connections on host:port now."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_listening(port: int, timeout_s: float, alive: Callable[[], None] | None = None, host: str = "127.0.0.1",
                   poll_s: float = 0.05) -> bool:
    """Polls until host:port accepts connections (True) or `timeout_s` passes (False). `alive()` is
    called before each try: it raises to stop early (the server's process exited, say)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if alive is not None:
            alive()
        if listening(port, host):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
