"""What a policy receives for one agent step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from privacy.session_store import SessionStore
from router.context import CallContext, RouteTracker

if TYPE_CHECKING:
    from router.channels import Channel


@dataclass
class SessionState:
    """A session's slice of the session store, as a policy sees it."""

    session_id: str
    store: SessionStore

    async def get(self, key: str) -> Any | None:
        return await self.store.get(self.session_id, key)

    async def set(self, key: str, value: Any) -> None:
        await self.store.set(self.session_id, key, value)

    async def update(self, key: str, fn: Callable[[Any | None], Any]) -> Any:
        """Atomic read-modify-write across every worker and replica (see ``SessionStore.update``)."""
        return await self.store.update(self.session_id, key, fn)

    async def keep_first(self, key: str, value: Any) -> Any:
        """``value`` unless the session already holds one for ``key`` (another worker decided first): what the
        session holds afterwards. For decisions made once per session (a route, a sketch)."""
        return await self.update(key, lambda current: value if current is None else current)


@dataclass
class DecisionNote:
    """What the policy decided for one step and on what signal (entropy vs τ, a judge's score, advisor
    consultations…): recorded per step for the dashboard and the traces. Numbers and labels only, never content."""

    decision: str | None = None  # the side the policy chose ("edge", "cloud") or its own verb ("plan", "advise")
    reason: str | None = None
    signal: dict[str, float | int | str | bool | None] = field(default_factory=dict)
    # What the policy measured that a learned router may read (``router.learning.features``): entropy statistics
    # of the edge's first tokens. Numbers only.
    features: dict[str, float] = field(default_factory=dict)

    def count(self, name: str) -> None:
        self.signal[name] = int(self.signal.get(name) or 0) + 1


@dataclass
class Step:
    """One client request: the body as the client sent it, the session, and the two channels."""

    request: dict[str, Any]
    context: CallContext
    session: SessionState
    edge: Channel
    cloud: Channel
    route: RouteTracker
    knobs: dict[str, Any] = field(default_factory=dict)
    note: DecisionNote = field(default_factory=DecisionNote)

    def decided(self, decision: str, reason: str, **signal: float | int | str | bool | None) -> None:
        """A policy says what it decided and why (see ``DecisionNote``)."""
        self.note.decision, self.note.reason = decision, reason
        self.note.signal.update(signal)

    @property
    def stream(self) -> bool:
        return bool(self.request.get("stream"))
