"""Virtual keys: created at run time by an admin (``POST /admin/v1/keys``, ``ecgw keys create``), each owned by a
tenant, optionally bound to one session, limited to some policies, carrying limits for the budgets, expiring.

The database keeps a keyed hash of each key (HMAC-SHA-256 with the ``virtual-keys`` key derived from the secrets
key), never the key, which is shown once at creation. Every worker keeps the active keys' hashes in memory (a
request costs one HMAC and one dict lookup, no query) and reads them again every ``poll_s`` seconds.

- **Creation holds everywhere at once.** A key a worker does not hold is looked up in the database by its hash
  before the worker refuses it (``fetch``), so a key works on every worker and replica as soon as its create call
  (or ``ecgw keys create``) has returned. Misses are remembered for a while (a secret nobody has been given cannot
  be created later: it is random), so a client retrying a wrong key costs one query, not one per request.
- **Revocation holds everywhere when the revoke call returns.** A worker whose copy is older than
  ``stale_after_s`` (its reads failing: the database is down) refuses every virtual key (503 ``keys_unavailable``)
  rather than honour one that may have been revoked meanwhile, so once that long has passed since the revocation was
  written, every worker has either read it or refuses the key; ``DELETE /admin/v1/keys/{id}`` answers then (and
  ``ecgw keys revoke`` waits as long).
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
from gateway.http.errors import ClientError
from gateway.state.polling import Poller
from gateway.state.tenancy import RuntimeKey
from router.budgets.settings import Limits

log = logging.getLogger("ecgw")

PREFIX = "sk-ecgw-"
POLL_S = 2.0
MISSES_KEPT = 10_000  # hashes of secrets found in no row, remembered ...
MISS_TTL_S = 60.0  # ... this long


def stale_after(poll_s: float) -> float:
    """How old a worker's copy of the keys may be before it refuses them all: two missed polls and a second."""
    return 2 * poll_s + 1.0


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def key_hash(hash_key: bytes, secret: str) -> str:
    return hmac.new(hash_key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def _runtime(key: VirtualKey) -> RuntimeKey:
    limits = Limits.model_validate(key.limits) if key.limits else None
    return RuntimeKey(id=key.id, tenant=key.tenant, session=key.session, policies=key.policies, limits=limits,
                      expires_at=key.expires_at)


class VirtualKeys:
    """The active virtual keys, by hash (``gateway.state.tenancy.RuntimeKeys``)."""

    def __init__(self, db: AdminDatabase, hash_key: bytes, *, poll_s: float = POLL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._hash_key = hash_key
        self._clock = clock
        self._active: dict[str, RuntimeKey] = {}
        self._misses: dict[str, float] = {}  # hash → when it was found in no active row
        self._loaded_at: float | None = None  # when the last full read that succeeded began
        self.stale_after_s = stale_after(poll_s)
        self._poller = Poller(self._reload, interval_s=poll_s,
                              failing="cannot read the virtual keys from the metering database")

    def hash(self, secret: str) -> str:
        return key_hash(self._hash_key, secret)

    def find(self, secret: str) -> RuntimeKey | None:
        if not secret.startswith(PREFIX):
            return None
        self._fresh()
        return self._active.get(self.hash(secret))

    async def fetch(self, secret: str) -> bool:
        """Whether a key this worker does not hold is active in the database (then it holds it from now on)."""
        if not secret.startswith(PREFIX):
            return False
        digest = self.hash(secret)
        now = self._clock()
        missed = self._misses.get(digest)
        if missed is not None and now - missed < MISS_TTL_S:
            return False
        try:
            found = await asyncio.to_thread(self.db.active_key, digest)
        except Exception as exc:  # the database is down: the key can be neither found nor ruled out
            log.warning("cannot look up a virtual key in the metering database: %s", exc)
            raise ClientError(503, "Virtual keys cannot be checked now (the metering database is unreadable). Retry "
                                   "shortly; keys from server.api_keys still work.", type_="api_error",
                              code="keys_unavailable") from None
        if self._loaded_at is not None and now < self._loaded_at:
            # a full read began after this one: it is the fresher word (it drops a key revoked meanwhile)
            return digest in self._active
        if found is None:
            if len(self._misses) >= MISSES_KEPT:
                self._misses.pop(next(iter(self._misses)))  # the oldest: a dict keeps insertion order
            self._misses[digest] = now
            return False
        self.added(found)
        return True

    def _fresh(self) -> None:
        """``ClientError`` 503 when this worker's copy is too old to tell a revoked key from an active one."""
        if self._loaded_at is None:
            return  # not started: nothing was loaded, nothing can be stale (tests that never start it)
        age = self._clock() - self._loaded_at
        if age > self.stale_after_s:
            raise ClientError(503, f"Virtual keys cannot be checked now: this worker last read them {age:.0f} s ago "
                                   "(the metering database is unreadable). Retry shortly; keys from "
                                   "server.api_keys still work.", type_="api_error", code="keys_unavailable")

    def load(self) -> None:
        began = self._clock()
        self._active = {k.key_hash: _runtime(k) for k in self.db.keys(active_only=True)}
        self._loaded_at = began

    def added(self, key: VirtualKey) -> None:
        self._active = {**self._active, key.key_hash: _runtime(key)}
        self._misses.pop(key.key_hash, None)

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
