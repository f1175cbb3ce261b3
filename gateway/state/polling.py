"""A background poll: every ``interval_s``, one awaitable step; a step that fails is logged and tried again at the
next poll, never ends the loop; closing waits for a step under way (its work may run on a thread, over a database
the owner closes next: a step cancelled mid-way would leave that thread reading a closed pool). What a worker learns from a shared place (the configuration version in the session
store, the virtual keys in the metering database) it learns this way."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("ecgw")


class Poller:
    def __init__(self, step: Callable[[], Awaitable[None]], *, interval_s: float, failing: str) -> None:
        self._step = step
        self._interval_s = interval_s
        self._failing = failing  # the warning logged when a step fails ("cannot read …")
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._interval_s)
                return  # closing, between steps
            try:
                await self._step()
            except Exception:  # a source that cannot be read now is read again at the next poll
                log.warning(self._failing, exc_info=True)

    async def aclose(self) -> None:
        """Stop polling: at once between steps; after the step under way, which ends as it would have."""
        if self._task is not None:
            self._stop.set()
            await self._task
            self._task = None
