"""The door's side of the provider boundary: ``CloudChannel`` hands it chat bodies, it hands the transport only
``ProviderRequest`` objects built by the one allowlist (``gateway.egress.transports.provider_request``)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from collections.abc import AsyncIterator
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, generate_latest

from gateway.egress.transports.openai_http import EDGE_WITHHELD
from gateway.egress.transports.provider_request import WITHHELD, ProviderRequest, ProviderTransport, RequestShape
from router.errors import UpstreamError

log = logging.getLogger("ecgw")

OTHER: Final = "_other"  # the label of every field name the gateway did not choose itself
TOOL_TYPES_DROPPED: Final = "tools[].type"  # the name ``RequestShape`` reports a tool of a dropped type under
_HASH_HEX: Final = 16


class DroppedFields:
    """Counts the request fields the boundary keeps home and logs each once. A request chooses the names, and
    ``/metrics`` and the log are read by people who may not read the requests (a field may be named
    ``patient_jane_roe_hiv_positive``): only the names the gateway itself withholds (``known``) are labels and log
    lines as written; every other name counts under ``_other`` and is logged as a keyed hash of it (``hash_key``;
    the operator, who holds the key, can tell whether a given name was sent), each once, the first ``max_logged``."""

    def __init__(self, registry: CollectorRegistry | None = None, *, side: str = "cloud",
                 hash_key: bytes | None = None, max_logged: int = 1024) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        why = ("not an OpenAI chat parameter the cloud takes, nor named by cloud.extra_body_fields" if side == "cloud"
               else "a field that chooses the edge server's infrastructure")
        self.counter = Counter(f"ecgw_{side}_dropped_fields", f"Request fields kept off the {side} call ({why}): "
                               "a parameter the gateway withholds by its name, any other under _other", ["field"],
                               registry=self.registry)
        self._side = side
        self._known: frozenset[str] = (frozenset(WITHHELD) | {TOOL_TYPES_DROPPED} if side == "cloud"
                                       else frozenset(EDGE_WITHHELD))
        self._hash_key = hash_key if hash_key is not None else os.urandom(32)  # a process's own, when none is given
        self._max_logged = max_logged
        self._logged: set[str] = set()

    def __call__(self, name: str) -> None:
        known = name in self._known
        self.counter.labels(name if known else OTHER).inc()
        named = name if known else "#" + hmac.new(self._hash_key, name.encode("utf-8", "surrogatepass"),
                                                  hashlib.sha256).hexdigest()[:_HASH_HEX]
        if named not in self._logged and len(self._logged) < self._max_logged:
            self._logged.add(named)
            what = f"the request field {name!r}" if known else f"a request field (its name's keyed hash {named})"
            log.warning("the %s call leaves out %s (each time; logged once): %s", self._side, what,
                        "only OpenAI's chat parameters and the fields cloud.extra_body_fields names reach the provider"
                        if self._side == "cloud" else "it would choose the edge server's infrastructure")

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class ProviderBoundary:
    """The cloud upstream ``CloudChannel`` sees: chat bodies in, ``ProviderRequest`` to the transport."""

    side = "cloud"

    def __init__(self, transport: ProviderTransport, shape: RequestShape) -> None:
        self._transport = transport
        self._shape = shape
        self.provider = transport.provider
        self.model = transport.model

    def outgoing(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._shape.outgoing(body)

    async def ready(self) -> tuple[bool, str]:
        return await self._transport.ready()

    async def aclose(self) -> None:
        await self._transport.aclose()

    def _request(self, body: dict[str, Any]) -> ProviderRequest:
        try:
            return self._shape.request(body)
        except ValueError as exc:
            raise UpstreamError(400, f"This request cannot go to the cloud: {exc}.", upstream="cloud",
                                type_="invalid_request_error") from None

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._transport.complete(self._request(body))

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._transport.stream(self._request(body)):
            yield chunk
