"""The gateway's parts, built once from settings and shared by every request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from accounting.calls import Meter
from gateway.policy_choice import PolicyChooser
from gateway.settings import Settings
from privacy.protection import Protector
from router.channels import Upstream
from router.policy import PolicyRegistry
from router.step import SessionStateStore


class ManagedUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...


@dataclass
class Services:
    settings: Settings
    edge: ManagedUpstream
    cloud: ManagedUpstream
    policies: PolicyRegistry
    chooser: PolicyChooser
    protector: Protector
    meter: Meter
    sessions: SessionStateStore

    async def aclose(self) -> None:
        for upstream in (self.edge, self.cloud):
            closer: Any = getattr(upstream, "aclose", None)
            if closer is not None:
                await closer()
