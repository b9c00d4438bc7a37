"""Ports for the servers we start lie outside the kernel's ephemeral range, where no outgoing
connection or engine-internal socket can take them between picking and binding."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

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
