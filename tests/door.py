"""A guard around the cloud upstream: every call must come through ``CloudChannel`` (protect → upstream →
restore → meter). Every gateway the test suite starts is built by ``guarded_services``, so it wears the guard and
the whole suite checks the invariant."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

from gateway.app import build_services
from gateway.config.settings import CloudSettings, Settings
from gateway.egress.doors import configured_transport
from gateway.egress.transports.provider_request import ProviderRequest
from gateway.service import Services
from router.channels import CloudChannel


class DoorViolation(AssertionError):
    pass


def _called_through_cloud_channel() -> bool:
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        if isinstance(frame.f_locals.get("self"), CloudChannel):
            return True
        frame = frame.f_back
    return False


class GuardedCloud:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.side = inner.side
        self.provider = inner.provider
        self.model = inner.model
        self.calls = 0

    async def ready(self) -> tuple[bool, str]:
        result: tuple[bool, str] = await self._inner.ready()
        return result

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def complete(self, request: ProviderRequest) -> dict[str, Any]:
        if not _called_through_cloud_channel():
            raise DoorViolation("the cloud upstream was called outside CloudChannel")
        if not isinstance(request, ProviderRequest):
            raise DoorViolation("the cloud transport was handed something other than a ProviderRequest")
        self.calls += 1
        result: dict[str, Any] = await self._inner.complete(request)
        return result

    async def stream(self, request: ProviderRequest) -> AsyncIterator[dict[str, Any]]:
        if not _called_through_cloud_channel():
            raise DoorViolation("the cloud upstream was called outside CloudChannel")
        if not isinstance(request, ProviderRequest):
            raise DoorViolation("the cloud transport was handed something other than a ProviderRequest")
        self.calls += 1
        async for chunk in self._inner.stream(request):
            yield chunk


def guarded_cloud(settings: Settings) -> GuardedCloud:
    return GuardedCloud(configured_transport(settings.cloud))


def guarded_targets(guards: list[GuardedCloud]) -> Any:
    """A cloud transport factory for ``cloud.targets``: every target's transport wears the guard (kept in
    ``guards``, in the targets' order)."""
    def make(settings: CloudSettings) -> GuardedCloud:
        guards.append(GuardedCloud(configured_transport(settings)))
        return guards[-1]

    return make


def guarded_services(settings: Settings, **parts: Any) -> Services:
    """``build_services`` for tests: the cloud upstream always wears the guard (a given one must already); with
    ``cloud_transport`` (several targets), every target's must."""
    if parts.get("cloud_transport") is not None:
        return build_services(settings, **parts)
    cloud = parts.setdefault("cloud", guarded_cloud(settings))
    if not isinstance(cloud, GuardedCloud):
        raise TypeError("a test gateway's cloud upstream must be a GuardedCloud")
    return build_services(settings, **parts)
