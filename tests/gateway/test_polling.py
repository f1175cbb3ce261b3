"""Closing a poll waits for the step under way: the step's thread may be reading a database its owner closes next
(the virtual keys' poll over SQLite: a pool disposed under a running read crashed the process)."""

from __future__ import annotations

import asyncio
import threading

from gateway.state.polling import Poller


async def test_closing_waits_for_the_step_under_way_and_stops_between_steps():
    entered, release = threading.Event(), threading.Event()
    finished: list[int] = []

    def read() -> None:
        entered.set()
        release.wait(30)
        finished.append(1)

    async def step() -> None:
        await asyncio.to_thread(read)

    poller = Poller(step, interval_s=0.01, failing="cannot read")
    poller.start()
    await asyncio.to_thread(entered.wait, 30)
    closing = asyncio.create_task(poller.aclose())
    await asyncio.sleep(0.05)
    assert not closing.done() and not finished  # the read is still running: closing has not returned under it
    release.set()
    await closing
    assert finished == [1]

    idle = Poller(step, interval_s=3600, failing="cannot read")
    idle.start()
    await asyncio.wait_for(idle.aclose(), 5)  # between steps: at once, no step started
    assert finished == [1]
