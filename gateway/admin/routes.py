"""``/admin/v1``: reload the configuration, create, list and revoke virtual keys. Every route needs an admin key
(``server.admin_keys``; with none configured they are closed), and every call — refused ones too — is audited
(who: the key's name, never the key; what; when; the status). Bodies are read by the one body reader
(``gateway.http.body``), as on every other route."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.admin.database import AdminDatabase
from gateway.admin.virtual_keys import VirtualKeys, new_secret
from gateway.config.settings import NAME_PATTERN, ConfigError
from gateway.http.body import BodyReader
from gateway.http.errors import ClientError, error_response
from gateway.http.failures import client_failure
from gateway.live.limits import check_countable
from gateway.live.reload import Reloader, reload_endpoint
from gateway.live.snapshot import Configuration
from gateway.state.tenancy import Identity
from router.budgets.settings import Limits

log = logging.getLogger("ecgw")

Handler = Callable[[Request], Awaitable[Response]]


def admin_action(action: str, handler: Handler, db: AdminDatabase) -> Handler:
    async def endpoint(request: Request) -> Response:
        identity: Identity = request.state.identity
        who = identity.label or "anonymous"
        if not identity.admin:
            response = error_response(403, "This needs an admin key (server.admin_keys).", "permission_error",
                                      code="admin_key_required")
        else:
            try:
                response = await handler(request)
            except ClientError as exc:  # a body the reader refused: answered here, so that it is audited too
                failure = client_failure(exc)
                response = error_response(failure.status, failure.message, failure.type, param=failure.param,
                                          code=failure.code)
        target = getattr(request.state, "audit_target", None) or request.path_params.get("key_id")
        try:
            await asyncio.to_thread(db.record, who=who, action=action, target=target, status=response.status_code,
                                    detail=getattr(request.state, "audit_detail", None))
        except Exception:  # the action stands; its record is in the log instead
            log.exception("admin action %s by %s on %s (status %d) could not be audited", action, who, target,
                          response.status_code)
        return response

    return endpoint


class NewKey(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(pattern=NAME_PATTERN)
    session: str | None = Field(None, min_length=1, max_length=512)
    policies: list[str] | None = Field(None, min_length=1)
    limits: Limits | None = None  # the budgets' shape (``limits.keys.<name>``), checked like config
    expires_at: datetime | None = None

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("give a time zone (an ISO 8601 time ending in Z or +hh:mm)")
        return value


def _bad(message: str, param: str | None) -> Response:
    return error_response(400, message, "invalid_request_error", param=param, code="invalid_value")


NEW_KEY = 'a JSON object {"tenant": ..., "session"?, "policies"?, "limits"?, "expires_at"?}'


def parse_new_key(raw: bytes, policies: list[str], reader: BodyReader) -> NewKey | Response:
    """``ClientError`` (the reader's) for a body that is not a JSON object; a 400 naming the field otherwise."""
    body = reader.object(raw, expect=NEW_KEY)
    try:
        new = NewKey.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        param = ".".join(str(p) for p in error["loc"]) or None
        return _bad(f"{param}: {error['msg']}.", param)
    unknown = [p for p in new.policies or () if p not in policies]
    if unknown:
        return _bad(f"policies: unknown {', '.join(unknown)}; the policies are {', '.join(policies)}.", "policies")
    return new


def keys_routes(db: AdminDatabase, keys: VirtualKeys, config: Configuration, reader: BodyReader) -> list[Route]:
    async def create(request: Request) -> Response:
        new = parse_new_key(await request.body(), config.current().policies.names, reader)
        if isinstance(new, Response):
            return new
        if new.expires_at is not None and new.expires_at.timestamp() <= time.time():
            return _bad("expires_at: the time has passed.", "expires_at")
        if new.limits is not None:
            try:
                check_countable("limits", new.limits, config.current().settings)
            except ConfigError as exc:
                return _bad(f"{exc}.", str(exc).split(":", 1)[0])
        secret = new_secret()
        key = await asyncio.to_thread(
            db.create, key_hash=keys.hash(secret), tenant=new.tenant, session=new.session, policies=new.policies,
            limits=new.limits.model_dump(mode="json", exclude_none=True) if new.limits is not None else None,
            expires_at=new.expires_at.timestamp() if new.expires_at else None,
            created_by=request.state.identity.label or "admin")
        keys.added(key)
        request.state.audit_target = key.id
        return JSONResponse({"id": key.id, "key": secret}, status_code=201)

    async def listed(request: Request) -> Response:
        return JSONResponse({"data": [k.listed() for k in await asyncio.to_thread(db.keys)]})

    async def revoke(request: Request) -> Response:
        key_id = request.path_params["key_id"]
        if not await asyncio.to_thread(db.revoke, key_id):
            return error_response(404, f"No active virtual key {key_id}; GET /admin/v1/keys lists them.",
                                  "invalid_request_error", param="id", code="not_found")
        keys.revoked(key_id)
        # at once here; the answer waits until every other worker and replica has read it or refuses virtual keys
        await asyncio.sleep(keys.stale_after_s)
        return JSONResponse({"id": key_id, "revoked": True})

    return [
        Route("/admin/v1/keys", admin_action("keys.create", create, db), methods=["POST"]),
        Route("/admin/v1/keys", admin_action("keys.list", listed, db), methods=["GET"]),
        Route("/admin/v1/keys/{key_id}", admin_action("keys.revoke", revoke, db), methods=["DELETE"]),
    ]


def admin_routes(db: AdminDatabase, keys: VirtualKeys, config: Configuration, reloader: Reloader,
                 reader: BodyReader) -> list[Route]:
    return [Route("/admin/v1/reload", admin_action("config.reload", reload_endpoint(reloader), db), methods=["POST"]),
            *keys_routes(db, keys, config, reader)]
