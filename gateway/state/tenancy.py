"""Who owns a session. With API keys configured, a session belongs to the *tenant* of the key that uses it:
internally it is ``(owner, client's session id)``, so another tenant naming the same id simply has another session
— its own vault, units, sticky route, arm, sketch, report and usage rows. Without keys the gateway is single-tenant
and session ids are used as sent.

- The owner of a named key (``{name, key | key_env, tenant}``) is its tenant, ``t.<tenant>``: every key of a tenant
  shares its history, so a key is rotated without orphaning it. A bare string in ``server.api_keys`` is its own
  tenant; since that name is the secret, its owner is a keyed hash of it, ``o.<hash>`` (as before tenants existed).
  ``owner_moves`` lists what ``gateway.state.owner_migration`` moves when a bare key becomes a named one.

- A key bound to a session (``server.session_keys``, or a virtual key created with ``session``) always works in
  that session, whatever the request names, and is confined to it on every route: naming another session in a path
  or a query is refused (403 ``session_not_allowed``), and reads across sessions (usage, settlement, receipts) see
  that one session only (``Reads``).
- Session ids taken from ``user`` or ``metadata.session_id`` are personal data more often than not (an e-mail,
  a user name): they are always replaced by a keyed hash (``u-…``), which is what is stored and echoed in
  ``x-ecgw-session``. An ``X-Session-Id`` header is the client's own label and is kept as sent.
- ``server.admin_keys`` may read every owner's usage and privacy reports, naming sessions by their internal id
  (``o.<owner>/<id>``, as ``/v1/usage?by=session`` lists them for an admin).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.requests import Request

from gateway.config.settings import ApiKey, ServerSettings, SessionSettings
from gateway.http.errors import ClientError
from gateway.state.sessions import identify_session
from router.budgets.settings import Limits

_OWNER_HEX = 24  # 96 bits of the owner's keyed hash
_ID_HEX = 24


@dataclass(frozen=True)
class RuntimeKey:
    """A virtual key as authentication sees it (``gateway.admin.virtual_keys``)."""

    id: str
    tenant: str
    session: str | None = None
    policies: tuple[str, ...] | None = None  # None: every policy
    limits: Limits | None = None
    expires_at: float | None = None


class RuntimeKeys(Protocol):
    def find(self, secret: str) -> RuntimeKey | None:
        """The key among those this worker holds (``ClientError`` 503 when it cannot tell)."""
        ...

    async def fetch(self, secret: str) -> bool:
        """Whether a key this worker does not hold is active where keys are kept (then it holds it from now on)."""
        ...


@dataclass(frozen=True)
class Identity:
    """The authenticated caller. ``owner`` is None in single-tenant mode (no keys configured). ``name`` is the key's
    configured name (a bare key's is the key itself: never log it; ``label`` is safe to log and audit) and
    ``tenant`` the name of its tenant."""

    key: str | None = field(default=None, repr=False)
    owner: str | None = None
    admin: bool = False
    bound_session: str | None = None
    name: str | None = field(default=None, repr=False)
    tenant: str | None = field(default=None, repr=False)
    label: str | None = None
    policies: tuple[str, ...] | None = None  # a virtual key's allowed policies; None: every policy
    limits: Limits | None = field(default=None, repr=False)  # a virtual key's limits (the budgets')
    shadow: bool = True  # its steps may be shadowed (a key's ``learning.shadow``)

    @property
    def prefix(self) -> str:
        return f"{self.owner}/" if self.owner else ""

    @property
    def confined_to(self) -> str | None:
        """The internal id of the one session a bound key may touch; None for every other caller."""
        return self.prefix + self.bound_session if self.bound_session is not None else None


@dataclass(frozen=True)
class Reads:
    """Which sessions a caller's reads across sessions (usage, settlement, receipts) may see: those under ``prefix``
    (an owner's namespace; None: every owner's), and only ``session`` (an internal id) for a key bound to it."""

    prefix: str | None = None
    session: str | None = None

    def allows(self, session_id: str) -> bool:
        if self.session is not None:
            return session_id == self.session
        return self.prefix is None or session_id.startswith(self.prefix)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a client sent: ``Authorization: Bearer`` (OpenAI's SDKs), else ``x-api-key`` (Anthropic's)."""
    header = headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return headers.get("x-api-key") or None


def _hash(key: bytes, value: str, size: int) -> str:
    return hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:size]


def bare_owner(owner_key: bytes, secret: str) -> str:
    """The owner of a bare key (and of every key before tenants existed): a keyed hash of the key."""
    return "o." + _hash(owner_key, "key\0" + secret, _OWNER_HEX)


def tenant_owner(tenant: str) -> str:
    return "t." + tenant


def key_owner(owner_key: bytes, key: ApiKey) -> str:
    return tenant_owner(key.tenant) if key.named else bare_owner(owner_key, key.secret)


def owner_moves(server: ServerSettings, owner_key: bytes) -> dict[str, str]:
    """``{old owner: new owner}`` for every named key: the hash its secret had as a bare key, and its tenant."""
    return {bare_owner(owner_key, k.secret): tenant_owner(k.tenant)
            for k in (*server.keys(), *server.admins()) if k.named}


_OWNER_PART = re.compile(r"[otk]\.[^/]+(?=/)")  # bare key's hash, tenant, bound key's hash — then "/"


def owner_of(session_id: str) -> str:
    """The owner of an internal session id (``o.<hash>/…``, ``t.<tenant>/…``, ``k.<hash>/…``); "" for the ids of
    single-tenant mode. Privacy shares detections within one owner only (``privacy.protector``'s ``scope_of``)."""
    match = _OWNER_PART.match(session_id)
    return match.group(0) if match else ""


MAX_SESSION_ID = 512  # characters; a session id is echoed in a header and kept in every record


def checked_id(client_id: str) -> str:
    """A client's session id, refused (400) when it is longer than ``MAX_SESSION_ID``."""
    if len(client_id) > MAX_SESSION_ID:
        raise ClientError(400, f"The session id is {len(client_id)} characters long; use at most {MAX_SESSION_ID}.",
                          param="session_id", code="invalid_session_id")
    return client_id


def from_header(value: str) -> str:
    """A header value as the client wrote it: HTTP headers arrive decoded as Latin-1, so UTF-8 ids (``café``) are
    read back as UTF-8 rather than kept as mojibake (which the echo would then percent-encode twice)."""
    if value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


class Tenancy:
    def __init__(self, server: ServerSettings, sessions: SessionSettings, *, owner_key: bytes,
                 session_id_key: bytes, runtime: RuntimeKeys | None = None, clock: Callable[[], float] = time.time
                 ) -> None:
        self._sessions = sessions
        self._runtime = runtime
        self._clock = clock
        self._id_key = session_id_key
        # Every configured key's identity, worked out once: a request then costs one dict lookup, no hashing.
        self._identities: dict[str, Identity] = {}
        admins = {k.secret for k in server.admins()}
        for key in (*server.keys(), *server.admins()):
            owner = key_owner(owner_key, key)
            label = key.name if key.named else owner  # a bare key's name is the secret itself
            self._identities[key.secret] = Identity(key.secret, owner, admin=key.secret in admins, name=key.name,
                                                    tenant=key.tenant, label=label, shadow=key.shadow)
        for secret, bound in server.session_keys.items():  # every key bound to one session shares it
            owner = "k." + _hash(owner_key, "bound\0" + bound, _OWNER_HEX)
            self._identities[secret] = Identity(secret, owner, bound_session=bound, name=secret, label=owner)

    def configured(self) -> list[Identity]:
        """Every key of ``server.api_keys`` as the gateway knows it (for reports across keys: their labels only)."""
        return [i for i in self._identities.values() if not i.admin and i.bound_session is None]

    def authenticate(self, headers: Mapping[str, str]) -> Identity:
        """The caller; ``ClientError`` 401 (OpenAI's shape) when keys are configured and this one is not."""
        key = presented_key(headers)
        if not self._identities:
            return Identity(key)
        if key is None:
            raise ClientError(401, "Missing API key: send 'Authorization: Bearer <key>' with a key from "
                                   "server.api_keys.", type_="authentication_error", code="invalid_api_key")
        identity = self._identities.get(key)
        if identity is None and self._runtime is not None and (found := self._runtime.find(key)) is not None:
            if found.expires_at is not None and found.expires_at <= self._clock():
                raise ClientError(401, f"The API key {found.id} has expired; ask an admin for a new one.",
                                  type_="authentication_error", code="expired_api_key")
            return Identity(key, tenant_owner(found.tenant), bound_session=found.session, name=found.id,
                            tenant=found.tenant, label=found.id, policies=found.policies, limits=found.limits)
        if identity is None:
            raise ClientError(401, "Invalid API key: use a key listed in server.api_keys.",
                              type_="authentication_error", code="invalid_api_key")
        return identity

    async def resolve(self, headers: Mapping[str, str]) -> Identity:
        """``authenticate``, except that a key this worker does not hold is first looked for where virtual keys are
        kept: one created a moment ago on another worker or replica works at once."""
        try:
            return self.authenticate(headers)
        except ClientError as exc:
            key = presented_key(headers)
            if exc.code != "invalid_api_key" or key is None or self._runtime is None:
                raise
            if not await self._runtime.fetch(key):
                raise
        return self.authenticate(headers)

    def session(self, identity: Identity, headers: Mapping[str, str], body: Mapping[str, Any], *,
                hint: str | None = None) -> tuple[str, str]:
        """``(internal session id, id to echo)`` for a step; ``hint`` is a surface's own session header."""
        if identity.bound_session is not None:
            client = identity.bound_session
        else:
            client, source = identify_session(headers, body, fingerprint_fallback=self._sessions.fingerprint_fallback,
                                              hint=hint)
            if source in ("user", "metadata"):
                client = "u-" + _hash(self._id_key, checked_id(client), _ID_HEX)
            elif source in ("header", "surface"):
                client = checked_id(from_header(client))
        return identity.prefix + client, client

    def named(self, identity: Identity, client_id: str) -> str:
        """The internal id of a session a request names in its path (units, privacy report): always the caller's
        own, so naming another owner's id reaches an independent, empty session. A bound key may name its own
        session only (403 otherwise)."""
        if identity.bound_session is not None and client_id != identity.bound_session:
            raise ClientError(403, f"This key is bound to the session {identity.bound_session!r} and may name no "
                                   "other; use a key of the tenant that is not bound to a session.",
                              type_="permission_error", param="session_id", code="session_not_allowed")
        return identity.prefix + checked_id(client_id)

    def readable(self, identity: Identity, client_id: str) -> str:
        """Like ``named``, except that an admin names any session by its internal id."""
        return client_id if identity.admin else self.named(identity, client_id)

    def reads(self, identity: Identity) -> Reads:
        """The sessions this caller may see in reads across sessions: all (an admin, single-tenant mode), its
        owner's, or its one bound session."""
        if identity.owner is None or identity.admin:
            return Reads()
        return Reads(identity.prefix, identity.confined_to)


class RequestTenancy:
    """``Tenancy`` for endpoints behind ``gateway.routes.gatekeeper``, which leaves the caller in
    ``request.state.identity``."""

    def __init__(self, tenancy: Tenancy) -> None:
        self._t = tenancy

    def own(self, request: Request, session_id: str) -> str:
        return self._t.named(request.state.identity, session_id)

    def readable(self, request: Request, session_id: str) -> str:
        return self._t.readable(request.state.identity, session_id)

    def reads(self, request: Request) -> Reads:
        return self._t.reads(request.state.identity)
