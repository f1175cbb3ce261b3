"""Which policy serves a request: header, model alias, sticky session choice, configured default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.errors import ClientError
from gateway.settings import ConfigError
from router.policy import PolicyRegistry
from router.step import SessionState

ALIAS_PREFIX = "ecgw/"
STICKY_KEY = "policy"


class PolicyChooser:
    def __init__(self, registry: PolicyRegistry, default: str, *, edge_model: str, cloud_model: str) -> None:
        if default not in registry:
            raise ConfigError(f"policy.default is {default!r}; expected one of {', '.join(registry.names)}")
        self._registry = registry
        self._default = default
        # A client that names one of the configured models directly gets that side, unprotected by no policy.
        self._direct = {edge_model: "edge-only", cloud_model: "cloud-only"}

    def _check(self, name: str, where: str) -> str:
        if name not in self._registry:
            raise ClientError(400, f"Unknown policy {name!r} in {where}; valid policies: "
                                   f"{', '.join(self._registry.names)}.", param=where, code="unknown_policy")
        return name

    def explicit(self, headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
        header = headers.get("x-ecgw-policy")
        if header:
            return self._check(header.strip(), "X-ECGW-Policy")
        model = body.get("model")
        if isinstance(model, str):
            if model.startswith(ALIAS_PREFIX):
                return self._check(model[len(ALIAS_PREFIX):], "model")
            if model in self._direct and self._direct[model] in self._registry:
                return self._direct[model]
        return None

    async def choose(self, headers: Mapping[str, str], body: Mapping[str, Any], session: SessionState) -> str:
        """An explicit choice wins and becomes the session's; otherwise the session keeps what it had."""
        name = self.explicit(headers, body)
        sticky = await session.get(STICKY_KEY)
        if name is None:
            if isinstance(sticky, str) and sticky in self._registry:
                return sticky
            name = self._default
        if name != sticky:
            await session.set(STICKY_KEY, name)
        return name

    def model_ids(self) -> list[str]:
        return [ALIAS_PREFIX + name for name in self._registry.names] + list(self._direct)
