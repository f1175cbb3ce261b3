"""The pseudonym vault of a session: ``[TYPE_NNN]`` placeholders, stable for the session's life.

It lives in the gateway's session store (JSON), so every worker serving the session sees the same placeholders.
Placeholders are never reused; the same vault key (a normalised value, or a listed unit's id) always gets the
same placeholder. New placeholders are allocated only inside the store's atomic ``update`` (``allocate``), against
the freshest vault, so two workers or replicas scrubbing steps of one session at once never give one placeholder
to two values.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from privacy.session_store import SessionStore

VAULT_KEY = "privacy.vault"

T = TypeVar("T")


class Vault:
    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = data or {}
        self.by_key: dict[str, str] = dict(data.get("keys") or {})
        self.values: dict[str, str] = dict(data.get("values") or {})
        self.counters: dict[str, int] = dict(data.get("counters") or {})
        # Which life of the session's vault this is: drawn anew whenever a vault starts empty (a new session, or
        # one erased or expired and begun again under the same id), so nothing remembered of an earlier vault (the
        # last check's search lists) is taken for this one's. Vaults written before it had none: "".
        self.epoch: str = str(data.get("epoch") or ("" if data else secrets.token_hex(8)))
        self.stored = bool(data)  # read from the store (else a vault the store does not hold yet)
        self.changed = False

    def placeholder(self, type_: str, key: str, value: str) -> str:
        existing = self.by_key.get(key)
        if existing is not None:
            return existing
        n = self.counters.get(type_, 0) + 1
        self.counters[type_] = n
        placeholder = f"[{type_}_{n:03d}]"
        self.by_key[key] = placeholder
        self.values[placeholder] = value
        self.changed = True
        return placeholder

    def to_json(self) -> dict[str, Any]:
        return {"keys": self.by_key, "values": self.values, "counters": self.counters, "epoch": self.epoch}


async def allocate(store: SessionStore, session_id: str, apply: Callable[[Vault], T]) -> tuple[Vault, T]:
    """Run ``apply`` (which may hand out placeholders) against the session's freshest vault, as one atomic
    update of the store; the vault and ``apply``'s result of the run that was written. ``apply`` must be pure
    apart from the vault it is given: it may run more than once. A vault that gains nothing is not written."""
    outcome: list[tuple[Vault, T]] = []

    def step(current: Any | None) -> Any | None:
        vault = Vault(current if isinstance(current, dict) else None)
        outcome.append((vault, apply(vault)))
        return vault.to_json() if vault.changed else current

    await store.update(session_id, VAULT_KEY, step)
    return outcome[-1]


async def read(store: SessionStore, session_id: str) -> Vault | None:
    """The session's vault as it is stored now; None when it has none. Read only: a placeholder is handed out only
    inside ``allocate``'s atomic update."""
    current = await store.get(session_id, VAULT_KEY)
    return Vault(current) if isinstance(current, dict) else None
