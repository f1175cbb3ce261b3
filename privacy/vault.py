"""The pseudonym vault of a session: ``[TYPE_NNN]`` placeholders, stable for the session's life.

It lives in the gateway's session store (JSON), so every worker serving the session sees the same placeholders.
Placeholders are never reused; the same vault key (a normalised value, or a listed unit's id) always gets the
same placeholder.
"""

from __future__ import annotations

from typing import Any, Protocol

VAULT_KEY = "privacy.vault"


class SessionStore(Protocol):
    async def get(self, session_id: str, key: str) -> Any | None: ...

    async def set(self, session_id: str, key: str, value: Any) -> None: ...


class Vault:
    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = data or {}
        self.by_key: dict[str, str] = dict(data.get("keys") or {})
        self.values: dict[str, str] = dict(data.get("values") or {})
        self.counters: dict[str, int] = dict(data.get("counters") or {})
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
        return {"keys": self.by_key, "values": self.values, "counters": self.counters}

    @classmethod
    async def load(cls, store: SessionStore, session_id: str) -> Vault:
        data = await store.get(session_id, VAULT_KEY)
        return cls(data if isinstance(data, dict) else None)

    async def save(self, store: SessionStore, session_id: str) -> None:
        if self.changed:
            await store.set(session_id, VAULT_KEY, self.to_json())
            self.changed = False
