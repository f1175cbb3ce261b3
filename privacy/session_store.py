"""The session store as every user asks for it (the vault, the unit registry, a policy's session state, budgets):
the protocol every store implements (memory, SQLite, Redis, the sealing wrapper, all in ``gateway``), with the
lifecycle the wiring calls (``verify`` at start, ``aclose`` at the end), and the one error a store raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from privacy.errors import PrivacyError


class SessionStoreUnavailable(PrivacyError):
    """The session store (SQLite file, Redis) cannot be read or written: a step that needs session state (the
    vault, a sticky choice) stops here, so nothing leaves unprotected. ``store`` names it for the 503."""

    def __init__(self, store: str, reason: str) -> None:
        super().__init__(f"the session store ({store}) is unavailable: {reason}")
        self.store = store
        self.reason = reason


class SessionStore(Protocol):
    """Per-session key/value state (plain JSON values), shared across workers and replicas when several serve; the
    one protocol every store (memory, SQLite, Redis, the sealing wrapper) implements and every user asks for."""

    async def get(self, session_id: str, key: str) -> Any | None: ...

    async def set(self, session_id: str, key: str, value: Any) -> None: ...

    async def update(self, session_id: str, key: str, fn: Callable[[Any | None], Any]) -> Any:
        """Atomically replace the value with ``fn(current)`` (plain JSON, None when absent) and return what was
        written. ``fn`` may run more than once (a conflict is retried); its last run is the one written. Raises
        ``SessionStoreUnavailable`` when the store is down."""
        ...

    async def verify(self) -> None:
        """At start: the store is usable as configured (an encrypted store: the key opens what an earlier start
        sealed, else ``privacy.seal.SealBroken``); nothing to check for a plain store."""
        ...

    async def aclose(self) -> None:
        """Release connections and files; the last call on a store."""
        ...
