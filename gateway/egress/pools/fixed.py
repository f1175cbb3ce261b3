"""One given upstream as a managed pool (the ones tests and benchmarks hand to ``build_services``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from gateway.egress.pools.lifecycle import Sharing
from router.upstreams import Single, Upstream

log = logging.getLogger("ecgw")


class ReadyUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...


class Fixed(Single):
    def __init__(self, upstream: ReadyUpstream, name: str = "default", *, salted: bool = False) -> None:
        super().__init__(upstream, name, salted=salted)
        self._ready_upstream = upstream

    async def start(self) -> None:
        return None

    async def stop_checks(self) -> None:
        return None

    def shares(self, upstream: object) -> bool:
        return upstream is self.upstream

    async def retire(self, alive: Sequence[Sharing]) -> None:
        if not any(pool.shares(self.upstream) for pool in alive):
            await self.aclose()

    async def ready(self) -> tuple[bool, str]:
        return await self._ready_upstream.ready()

    def status(self) -> dict[str, dict[str, object]]:
        return {}

    def exposition(self) -> bytes:
        return b""

    async def aclose(self) -> None:
        await self.upstream.aclose()
