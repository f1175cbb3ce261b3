"""The privacy hook inside the cloud channel (the protocols the router sees; ``privacy.protector`` implements them):
protect what leaves, restore what comes back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from privacy.classes.names import ANYONE, Who

T = TypeVar("T")

if TYPE_CHECKING:
    from privacy.detect import Unit, UnitsDocument


class StreamRestorer(Protocol):
    """Restores placeholders in stream chunks; may hold text back until a placeholder is complete."""

    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]: ...

    def flush(self) -> list[dict[str, Any]]: ...

    def close(self) -> None:
        """The stream stopped (ended, broke or was cancelled): what it owes the audit is recorded now."""
        ...


class ReceiptSource(Protocol):
    """Signs the egress receipts of one call (``privacy.audit.receipts``)."""

    def issue(self, target: str, sent: dict[str, Any], *, tier: str) -> str: ...

    async def durable(self) -> None:
        """The receipts issued so far have their audit records journaled."""
        ...


class Protection(Protocol):
    """One protected request: the body that may leave, the way back, and the receipt of each handing-over."""

    body: dict[str, Any]

    def restore(self, response: dict[str, Any]) -> dict[str, Any]: ...

    def stream_restorer(self) -> StreamRestorer: ...

    def receipt(self, target: str, sent: dict[str, Any], *, tier: str) -> str | None:
        """The signed receipt of ``sent`` (this body, as one target gets it) handed to ``target`` of ``tier``; None
        without an audit to keep it in. Not for the client before ``durable`` returned."""
        ...

    async def durable(self) -> None:
        """Every receipt ``receipt`` gave has its audit record (and its call's) journaled, safe from a crash of the
        process: awaited before a response that carries one leaves."""
        ...

    def permits(self, tier: str) -> bool:
        """Whether this body may go to a target of ``tier`` as it is (``privacy.classes``)."""
        ...


class Protector(Protocol):
    """Raises ``router.errors.PrivacyUnavailable``-like errors when it cannot protect (fail closed)."""

    async def protect(self, body: dict[str, Any], *, session_id: str, request_id: str,
                      experiment: str | None = None, tiers: Sequence[str] = ("standard",),
                      who: Who = ANYONE) -> Protection:
        """``body`` protected for the first of ``tiers`` (the call's targets', in order) that ``who``'s class
        policy lets it reach; ``privacy.classes.policy.ClassBlocked`` when it may reach none."""
        ...

    async def classes(self, body: dict[str, Any], *, session_id: str, who: Who = ANYONE) -> frozenset[str]:
        """The data classes ``body`` holds as ``who``'s protection would find them (nothing recorded, nothing
        sent); raises ``privacy.errors.PrivacyError`` when protection cannot run or would not let it leave."""
        ...

    def load_models(self) -> None:
        """Load the detectors' models and dictionaries now, blocking (seconds): ``ecgw serve`` calls it before it
        forks its workers, which then share them; ``start`` loads them when this was not called."""
        ...

    def models_loaded_in(self) -> int | None:
        """The pid of the process that loaded the models ahead of the first request (this one, or the one a worker
        was forked from); None when none was (no detector has one, or ``privacy.warm_at_start`` is off)."""
        ...

    async def start(self) -> None:
        """Start what needs the running event loop (the audit's writer); called once, before the first call."""
        ...

    async def aclose(self) -> None:
        """Flush the audit and stop; nothing queued is lost."""
        ...

    def exposition(self) -> bytes:
        """Its Prometheus metrics (the last check's hits), for ``/metrics``; empty when it keeps none."""
        ...


@runtime_checkable
class SessionPrivacy(Protocol):
    """A protector that keeps per-session units and an audit to report from (not the plain pass-through)."""

    async def register_units(self, session_id: str, document: UnitsDocument) -> list[Unit]: ...

    async def session_exposure(self, session_id: str) -> dict[str, Any] | None:
        """The session's per-unit exposure (``privacy.audit.session_report``); None when the audit is off."""
        ...

    async def erase_session(self, session_id: str) -> int | None:
        """Forget the session's vault and units, and tombstone its audited content (the chain intact); how many
        cloud calls' content was erased, None when the audit is off."""
        ...

    async def read_audit(self, read: Callable[..., T], *args: Any) -> T | None:
        """``read(engine, open_body, *args)`` over the audit (the dashboard's reads, ``privacy.audit.dashboard``), after
        every write queued before it; None when the audit is off."""
        ...


class _PassThroughRestorer:
    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        return [chunk]

    def flush(self) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        return None


class PassThroughProtection:
    def __init__(self, body: dict[str, Any], receipts: ReceiptSource | None = None) -> None:
        self.body = body
        self._receipts = receipts

    def receipt(self, target: str, sent: dict[str, Any], *, tier: str) -> str | None:
        return None if self._receipts is None else self._receipts.issue(target, sent, tier=tier)

    async def durable(self) -> None:
        if self._receipts is not None:
            await self._receipts.durable()

    def permits(self, tier: str) -> bool:
        return True  # nothing was looked for (privacy.enabled: false): no class to keep off a tier

    def restore(self, response: dict[str, Any]) -> dict[str, Any]:
        return response

    def stream_restorer(self) -> StreamRestorer:
        return _PassThroughRestorer()


class PassThroughProtector:
    """Sends the body unchanged. Only for `privacy.enabled: false`; every cloud call still passes here."""

    async def protect(self, body: dict[str, Any], *, session_id: str, request_id: str,
                      experiment: str | None = None, tiers: Sequence[str] = ("standard",),
                      who: Who = ANYONE) -> Protection:
        return PassThroughProtection(body)

    async def classes(self, body: dict[str, Any], *, session_id: str, who: Who = ANYONE) -> frozenset[str]:
        return frozenset()  # nothing is looked for (privacy.enabled: false)

    def load_models(self) -> None:
        return None

    def models_loaded_in(self) -> int | None:
        return None

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def exposition(self) -> bytes:
        return b""
