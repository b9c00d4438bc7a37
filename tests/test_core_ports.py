"""Ports for the servers we start lie outside the kernel's ephemeral range, where no outgoing
connection or engine-internal socket can take them between picking and binding."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from shadowreplay import ports
from shadowreplay.ports import free_ports


def test_ports_are_free_distinct_and_below_the_ephemeral_range():
    range_file = Path("/proc/sys/net/ipv4/ip_local_port_range")
    if not range_file.exists():
        pytest.skip("no Linux ephemeral port range here")
    low = int(range_file.read_text().split()[0])
    ports = free_ports(20)
    assert len(set(ports)) == 20
    assert all(10_000 <= p < low for p in ports)
    for p in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))  # free right now


def test_a_port_in_use_is_never_handed_out(monkeypatch):
    import shadowreplay.ports as P

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        monkeypatch.setattr(P, "_LOWEST", taken)
        monkeypatch.setattr(P, "_ephemeral_low", lambda: taken + 101)  # the range is [taken, taken + 101)
        ports = free_ports(1)
        assert ports[0] != taken and taken <= ports[0] < taken + 101


def test_wait_listening_sees_a_server_come_up_and_stops_when_told():
    import threading

    (port,) = free_ports(1)
    assert not ports.listening(port)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tries = []

    def alive() -> None:
        tries.append(1)
        if len(tries) == 3:  # the server comes up while we wait
            srv.bind(("127.0.0.1", port))
            srv.listen()

    with srv:
        assert ports.wait_listening(port, 10, alive=alive, poll_s=0.01) and len(tries) == 3
        assert ports.listening(port)
    assert not ports.wait_listening(port, 0.05, poll_s=0.01)  # gone again: times out

    stopped = threading.Event()

    def dead() -> None:
        stopped.set()
        raise RuntimeError("the server's process exited")

    with pytest.raises(RuntimeError, match="exited"):
        ports.wait_listening(port, 10, alive=dead)
    assert stopped.is_set()
