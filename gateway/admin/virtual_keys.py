"""Virtual keys: created at run time by an admin (``POST /admin/v1/keys``, ``ecgw keys create``), each owned by a
tenant, optionally bound to one session, limited to some policies, carrying limits for the budgets, expiring.

The database keeps a keyed hash of each key (HMAC-SHA-256 with the ``virtual-keys`` key derived from the secrets
key), never the key, which is shown once at creation. Every worker keeps the active keys' hashes in memory (a
request costs one HMAC and one dict lookup, no query) and reads them again every ``poll_s`` seconds, so a key
created or revoked on one replica works, or stops working, on every replica within that time; on the replica
that made the change it takes effect at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable

from gateway.admin.database import AdminDatabase, VirtualKey
from gateway.polling import Poller
from gateway.tenancy import RuntimeKey
from router.budgets.settings import Limits

log = logging.getLogger("ecgw")

PREFIX = "sk-ecgw-"
POLL_S = 2.0


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def key_hash(hash_key: bytes, secret: str) -> str:
    return hmac.new(hash_key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def _runtime(key: VirtualKey) -> RuntimeKey:
    limits = Limits.model_validate(key.limits) if key.limits else None
    return RuntimeKey(id=key.id, tenant=key.tenant, session=key.session, policies=key.policies, limits=limits,
                      expires_at=key.expires_at)


class VirtualKeys:
    """The active virtual keys, by hash (``gateway.tenancy.RuntimeKeys``)."""

    def __init__(self, db: AdminDatabase, hash_key: bytes, *, poll_s: float = POLL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._hash_key = hash_key
        self._clock = clock
        self._active: dict[str, RuntimeKey] = {}
        self._poller = Poller(self._reload, interval_s=poll_s,
                              failing="cannot read the virtual keys from the metering database")

    def hash(self, secret: str) -> str:
        return key_hash(self._hash_key, secret)

    def find(self, secret: str) -> RuntimeKey | None:
        if not secret.startswith(PREFIX):
            return None
        return self._active.get(self.hash(secret))

    def load(self) -> None:
        self._active = {k.key_hash: _runtime(k) for k in self.db.keys(active_only=True)}

    def added(self, key: VirtualKey) -> None:
        self._active = {**self._active, key.key_hash: _runtime(key)}

    def revoked(self, key_id: str) -> None:
        self._active = {h: k for h, k in self._active.items() if k.id != key_id}

    async def start(self) -> None:
        await asyncio.to_thread(self.db.open)
        await asyncio.to_thread(self.load)
        self._poller.start()

    async def _reload(self) -> None:
        await asyncio.to_thread(self.load)

    async def aclose(self) -> None:
        await self._poller.aclose()
        await asyncio.to_thread(self.db.dispose)
