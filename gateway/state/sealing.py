"""Session state encrypted at rest: a wrapper around any persistent session store.

Every value is sealed with AES-256-GCM (``cryptography``) before it reaches the inner store, bound to its session
and key (associated data), so a value copied to another session or altered on disk does not open. Pseudonym
vaults, registered units and sketch plans hold personal data; sticky routes and arms do not, but sealing every
value keeps the rule simple. A value that does not open fails the step closed (``SealBroken`` is a
``PrivacyUnavailable``: 503, nothing sent, nothing overwritten). The memory store needs none of this.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from privacy.seal import SealBroken, Sealer
from privacy.session_store import SessionStore

__all__ = ["SealBroken", "SealedStore"]

log = logging.getLogger("ecgw")

_CHECK_SESSION = "\0ecgw"
_CHECK_KEY = "key-check"
_CHECK_VALUE = "the secrets key opens this store"


class SealedStore:
    def __init__(self, inner: SessionStore, key: bytes) -> None:
        self.inner = inner
        self._sealer = Sealer(key)
        self._warned = False

    @staticmethod
    def _aad(session_id: str, key: str) -> bytes:
        return session_id.encode("utf-8", "surrogatepass") + b"\0" + key.encode("utf-8", "surrogatepass")

    def seal(self, session_id: str, key: str, value: Any) -> str:
        plain = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        return self._sealer.seal(plain, self._aad(session_id, key))

    def open(self, session_id: str, key: str, stored: Any) -> Any:
        if stored is None:
            return None
        if not Sealer.is_sealed(stored):
            # Written in plain text by a version before encryption: not used, and replaced (sealed) when the
            # session next writes this key, so no raw value stays behind.
            if not self._warned:
                self._warned = True
                log.warning("session store holds unencrypted state from an older version; it is ignored and "
                            "replaced as sessions write again")
            return None
        return json.loads(self._sealer.open(stored, self._aad(session_id, key), what=f"session state {key!r}"))

    async def get(self, session_id: str, key: str) -> Any | None:
        return self.open(session_id, key, await self.inner.get(session_id, key))

    async def set(self, session_id: str, key: str, value: Any) -> None:
        await self.inner.set(session_id, key, self.seal(session_id, key, value))

    async def update(self, session_id: str, key: str, fn: Callable[[Any | None], Any]) -> Any:
        """The inner store's atomic update, on plain values: ``fn`` sees the opened value, its result is sealed. An
        unchanged value hands back the stored ciphertext as it is, so the inner store sees no change to write."""

        def sealed(stored: Any | None) -> Any:
            current = self.open(session_id, key, stored)
            new = fn(current)
            return stored if stored is not None and new == current else self.seal(session_id, key, new)

        return self.open(session_id, key, await self.inner.update(session_id, key, sealed))

    async def verify(self) -> None:
        """At start: the key opens what an earlier start sealed (raises ``SealBroken``), or marks the store."""
        stored = await self.inner.get(_CHECK_SESSION, _CHECK_KEY)
        if stored is not None:
            self.open(_CHECK_SESSION, _CHECK_KEY, stored)
        # (re)written on every start, so the store's expiry never forgets it
        await self.inner.set(_CHECK_SESSION, _CHECK_KEY, self.seal(_CHECK_SESSION, _CHECK_KEY, _CHECK_VALUE))

    async def aclose(self) -> None:
        await self.inner.aclose()
