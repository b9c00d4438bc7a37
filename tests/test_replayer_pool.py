"""The keep-alive pool (replayer/client.py) on its own, against the local test server."""

from __future__ import annotations

import asyncio

from shadowreplay.replayer.client import Pool
from shadowreplay.replayer.routes import parse_target
from tests.replayer_helpers import ServerThread


async def settle(pool: Pool, timeout: float = 10.0) -> None:
    async def idle():
        while pool.opening:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(idle(), timeout)


def test_top_ups_started_in_one_loop_iteration_open_one_set_of_connections():
    # Each connection the target closes while a request waits asks for a top-up; a burst of such
    # closes used to start a full set of connects per close (thousands of sockets, then EMFILE).
    async def main(url: str) -> int:
        pool = Pool(parse_target(url), spare=4)
        for _ in range(10):
            pool._open_more()
        await settle(pool)
        n = len(pool.all)
        pool.close()
        return n

    with ServerThread() as srv:
        assert asyncio.run(main(srv.url)) == 4
        assert len(srv.state.connections) == 4

