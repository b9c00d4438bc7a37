"""The replayer's pacer (replayer/pacer.py): never early, and the polled lead before each instant."""

from __future__ import annotations

import asyncio
import time

import pytest

from shadowreplay.replayer.pacer import STRATEGIES, Pacer


async def _wait(pacer: Pacer, after_ns: int, poll: bool = True) -> tuple[int, int]:
    """Waits for now + after_ns; returns (target, the instant the wait ended)."""
    t = time.monotonic_ns() + after_ns
    w = pacer.wait_until(t, poll=poll)
    if w is not None:
        await w
    return t, time.monotonic_ns()


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("lead_us", [0, 5_000])
def test_wait_ends_at_or_after_the_instant(strategy, lead_us):
    async def main():
        pacer = Pacer(strategy, lead_us=lead_us)
        try:
            return [await _wait(pacer, 20_000_000) for _ in range(3)]
        finally:
            pacer.close()

    for target, ended in asyncio.run(main()):
        assert ended >= target


def test_a_passed_instant_needs_no_wait():
    pacer = Pacer("timerfd")
    try:
        assert pacer.wait_until(time.monotonic_ns() - 1) is None
    finally:
        pacer.close()


def test_the_lead_is_polled_and_the_loop_keeps_running():
    """With a lead the CPU stays busy (polling) for the last stretch, and callbacks still run in
    it; without one the wait costs next to no CPU time."""

    async def main(lead_us: int):
        pacer = Pacer("timerfd", lead_us=lead_us)
        loop = asyncio.get_running_loop()
        ran_at: list[int] = []
        loop.call_later(0.100, lambda: ran_at.append(time.monotonic_ns()))  # inside the lead
        cpu0 = time.thread_time_ns()
        try:
            target, ended = await _wait(pacer, 120_000_000)
        finally:
            pacer.close()
        return target, ended, time.thread_time_ns() - cpu0, ran_at

    target, ended, cpu_lead, ran_at = asyncio.run(main(60_000))
    assert ended >= target
    assert ran_at and ran_at[0] < target  # the loop was not blocked while polling
    _, _, cpu_sleep, _ = asyncio.run(main(0))
    assert polled(cpu_lead, cpu_sleep), (cpu_lead, cpu_sleep)


def polled(cpu_polling_ns: int, cpu_sleeping_ns: int) -> bool:
    """A wait that polled through its 60 ms lead used the CPU, one that slept did not (~0.5 ms).
    Thread CPU time, not wall time: on a busy machine (the pure tests run beside each other) the
    poller is descheduled for much of the lead (seen: 10.8 ms of CPU in 60 ms), so the bar is
    several times the sleeper's and at least 3 ms, not the lead itself."""
    return cpu_polling_ns > max(4 * cpu_sleeping_ns, 3_000_000)


def test_bad_pacer_settings():
    with pytest.raises(ValueError):
        Pacer("timerfd", lead_us=-1)
    with pytest.raises(ValueError):
        Pacer("nap")
    assert Pacer("sleep", lead_us=1000).lead_ns == 0  # plain sleep: no polling


def test_a_wait_without_polling_sleeps_through_the_lead():
    async def main(poll: bool):
        pacer = Pacer("timerfd", lead_us=60_000)
        cpu0 = time.thread_time_ns()
        try:
            target, ended = await _wait(pacer, 100_000_000, poll)
        finally:
            pacer.close()
        return target, ended, time.thread_time_ns() - cpu0

    t1, e1, cpu_sleeping = asyncio.run(main(False))
    t2, e2, cpu_polling = asyncio.run(main(True))
    assert e1 >= t1 and e2 >= t2
    assert polled(cpu_polling, cpu_sleeping), (cpu_polling, cpu_sleeping)
