"""Several upstreams behind one channel: what a channel needs from a pool (edge replicas, cloud targets).

A pool plans the members to try for one call, in order; the channel tries them, meters each attempt under the
member that made it, and moves on only while nothing has reached the client and the failure is one another
member may not share (``retryable``). The pool learns each outcome (health, cool-down, in-flight counts).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from router.chat_shapes import aclose
from router.errors import UpstreamError


class Upstream(Protocol):
    """A model server. Implementations live in ``gateway.egress.transports``; they set ``model`` in the body."""

    side: str
    provider: str
    model: str

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]: ...

    def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]: ...

    async def aclose(self) -> None:
        """Close its connections; the last call on an upstream."""
        ...


@dataclass(frozen=True)
class Relayed:
    """A piece of an upstream's stream relayed as it came: ``data``, the SSE bytes the client gets (the upstream's
    own events wherever they already meet the stream guarantees — one id, a finish_reason, ``[DONE]`` — and those
    repaired where they do not), and ``chunks``, the chat chunks they carry as the upstream sent them (metering)."""

    data: bytes
    chunks: list[dict[str, Any]]

    def then(self, more: Relayed) -> Relayed:
        """This piece and ``more`` as one."""
        return Relayed(self.data + more.data, self.chunks + more.chunks)


class Relay(Protocol):
    """An upstream that can relay its chat stream's bytes instead of chunks (``EdgeChannel.relay``): no chunk is
    parsed into the pipeline and serialised again, for a step whose chunks nothing between needs to change."""

    def relays(self, body: dict[str, Any]) -> bool:
        """Whether a stream of ``body`` can be relayed (no switch of this server rewrites its chunks)."""
        ...

    def relay(self, body: dict[str, Any], *, usage: bool) -> AsyncIterator[Relayed]:
        """The stream of ``body`` in pieces, ending with ``data: [DONE]``; ``usage``: the client asked for the
        usage chunk (``stream_options.include_usage``), else it is read for metering and left out."""
        ...


@dataclass(frozen=True)
class Call:
    """What a pool may know about one call: whose session it is (affinity), and the configured target a policy
    or an experiment arm named (``cloud_target``; never a request's own words)."""

    session_id: str  # owner-namespaced
    owner: str | None = None
    target: str | None = None


@dataclass(frozen=True)
class Member:
    """One deployment or target: its configured name and its transport. ``salted``: the edge server takes vLLM's
    ``cache_salt`` (prefix caches shared within a tenant only)."""

    name: str
    upstream: Upstream
    salted: bool = False
    first_token_timeout_s: float | None = None  # a stream that sends no token by then fails (and falls back)
    relay: Relay | None = None  # its transport, where it can relay a stream's bytes (``Relay``)
    tier: str = "standard"  # a cloud target's (``cloud.targets.<name>.tier``): which data classes it may receive


class Pool(Protocol):
    side: str
    model: str  # the first member's: what policies name in their own bookkeeping

    def plan(self, call: Call) -> Sequence[Member]: ...

    def begin(self, member: Member) -> None: ...

    def end(self, member: Member, failure: UpstreamError | None) -> None: ...


TARGET_KNOB = "cloud_target"  # in policy.knobs.<policy> and an arm's knobs: the target that policy escalates to


def without_target(knobs: Mapping[str, Any]) -> dict[str, Any]:
    """A policy's own knobs: ``cloud_target`` belongs to the cloud door, not to the policy."""
    return {k: v for k, v in knobs.items() if k != TARGET_KNOB}


def retryable(exc: UpstreamError) -> bool:
    """A failure another member may not share: rate limited, the server failed, timed out or was unreachable.
    A 4xx other than 429 is about the request itself and would fail everywhere."""
    return exc.status == 429 or exc.status >= 500


def cache_salt(owner: str | None) -> str:
    """vLLM's ``cache_salt`` for one tenant: requests with different salts never share a cached prefix, so a
    tenant cannot learn from a cache hit that another tenant sent a prefix. ``owner`` is already a keyed hash."""
    return hashlib.sha256(b"ecgw cache salt\0" + (owner or "anonymous").encode()).hexdigest()[:32]


class Single:
    """One upstream as a pool of one (the shorthand configurations, and the upstreams tests hand in)."""

    def __init__(self, upstream: Upstream, name: str = "default", *, salted: bool = False) -> None:
        self.side = upstream.side
        self.model = upstream.model
        self.upstream = upstream
        self._members = (Member(name, upstream, salted),)

    def plan(self, call: Call) -> Sequence[Member]:
        return self._members

    def begin(self, member: Member) -> None:
        return None

    def end(self, member: Member, failure: UpstreamError | None) -> None:
        return None


def _has_token(chunk: dict[str, Any]) -> bool:
    if chunk.get("usage"):
        return True
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        if choice.get("finish_reason") or delta.get("tool_calls") or any(
                delta.get(key) for key in ("content", "reasoning_content", "reasoning")):
            return True
    return False


def relayed_token(piece: Relayed) -> bool:
    return any(_has_token(chunk) for chunk in piece.chunks)


Item = TypeVar("Item")


async def first_token_within(stream: AsyncIterator[Item], seconds: float | None, *, side: str, name: str,
                             token: Callable[[Item], bool] = _has_token,  # type: ignore[assignment]
                             ) -> AsyncGenerator[Item, None]:
    """``stream``, failing with a 504 when no chunk carries a token within ``seconds`` (None: no deadline). The
    chunks before the first token (a role-only opening) are held back, so nothing has reached the consumer when
    the deadline passes and the call can still go elsewhere. ``token``: whether an item carries one (a relayed
    stream's pieces: ``relayed_token``)."""
    iterator = stream.__aiter__()
    try:
        if seconds is not None:
            held: list[Item] = []
            try:
                async with asyncio.timeout(seconds):
                    while not held or not token(held[-1]):
                        held.append(await iterator.__anext__())
            except StopAsyncIteration:
                pass
            except TimeoutError:
                raise UpstreamError(504, f"The {side} upstream {name} sent no token within {seconds:g} s "
                                         "(its first_token_timeout_s).", upstream=side,
                                    type_="upstream_timeout") from None
            for chunk in held:
                yield chunk
        async for chunk in iterator:
            yield chunk
    finally:
        await aclose(iterator)
