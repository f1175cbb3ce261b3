"""``PUT /v1/sessions/{session_id}/units``: register a session's listed units (sensitive_items.json schema);
``GET /v1/sessions/{session_id}/privacy``: its exposure; ``DELETE /v1/sessions/{session_id}``: its erasure;
``GET /v1/receipts/{request_id}``: a request's receipts.

The gateway mounts this behind its API keys. Units come only from a request body or config files — never from a
path named in a request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.http.body import BodyReader
from gateway.http.errors import ClientError, error_response
from gateway.state.tenancy import Reads
from privacy import Protector, SessionPrivacy
from privacy.audit import request_receipts
from privacy.detect import UnitsDocument
from privacy.errors import PrivacyUnavailable


def _error(status: int, message: str, code: str) -> Response:
    return error_response(status, message, "invalid_request_error" if status < 500 else code, code=code)


SessionOf = Callable[[Request, str], str]


def _as_named(request: Request, session_id: str) -> str:
    return session_id


UNITS_EXPECT = ('a JSON body in the sensitive_items.json schema: {"items": [{"entity_id", "name", '
                '"sensitive_fields": [{"field", "value", "dimension", "weight"}]}]}')


def units_endpoint(protector: Protector, reader: BodyReader, *, session_of: SessionOf = _as_named
                   ) -> Callable[[Request], Awaitable[Response]]:
    """``session_of`` maps the id in the path to the session it means for this caller (its owner's)."""

    async def put_units(request: Request) -> Response:
        if not isinstance(protector, SessionPrivacy):
            return _error(409, "Privacy protection is disabled (privacy.enabled: false), so units are not used.",
                          "privacy_disabled")
        session_id = request.path_params["session_id"]
        if session_id == "*":  # the audit's name for units from privacy.units_files, which apply to every session
            return _error(400, "'*' is not a session id; name one session (units for every session go in "
                               "privacy.units_files).", "invalid_session_id")
        try:
            document = reader.model(await request.body(), UnitsDocument, expect=UNITS_EXPECT)
        except ClientError as exc:
            return _error(400, exc.message, "invalid_units")
        units = await protector.register_units(session_of(request, session_id), document)
        return JSONResponse({"session_id": session_id, "units": len(units),
                             "unit_ids": [u.unit_id for u in units]})

    return put_units


def session_privacy_endpoint(protector: Protector, *, session_of: SessionOf = _as_named
                             ) -> Callable[[Request], Awaitable[Response]]:
    """``GET /v1/sessions/{session_id}/privacy``: the session's per-unit exposure from the audit (what reached the
    cloud raw vs protected), for harnesses that talk to the gateway over HTTP only."""

    async def get_privacy(request: Request) -> Response:
        if not isinstance(protector, SessionPrivacy):
            return _error(409, "Privacy protection is disabled (privacy.enabled: false), so nothing is audited.",
                          "privacy_disabled")
        session_id = request.path_params["session_id"]
        try:
            report = await protector.session_exposure(session_of(request, session_id))
        except PrivacyUnavailable as exc:
            return _error(503, f"The privacy report cannot be read now: {exc.reason}. Retry later.",
                          "audit_unavailable")
        if report is None:
            return _error(409, "The privacy audit is off (privacy.audit: false); turn it on to measure exposure.",
                          "audit_disabled")
        return JSONResponse({**report, "session_id": session_id})

    return get_privacy


ScopeOf = Callable[[Request], Reads]  # the sessions the caller may see (``gateway.state.tenancy.RequestTenancy.reads``)


def receipts_endpoint(protector: Protector, *, scope: ScopeOf) -> Callable[[Request], Awaitable[Response]]:
    """``GET /v1/receipts/{request_id}``: every egress receipt of one request — those of cloud calls made after its
    response headers had left (an advisor or a delegate mid-stream) included. ``scope``: the sessions the caller may
    see (its owner's; a bound key's one session; every owner's for an admin); another owner's or session's request
    is not found, exactly like one that never was."""

    async def get_receipts(request: Request) -> Response:
        request_id = request.path_params["request_id"]
        if not isinstance(protector, SessionPrivacy):
            return _error(409, "The privacy audit is off, so no receipts are kept.", "audit_disabled")
        try:
            found = await protector.read_audit(request_receipts, request_id, scope(request).allows)
        except Exception as exc:
            return _error(503, f"The receipts cannot be read now ({type(exc).__name__}). Retry later.",
                          "audit_unavailable")
        if found is None:
            return _error(409, "The privacy audit is off (privacy.audit: false), so no receipts are kept.",
                          "audit_disabled")
        if not found:
            return error_response(404, f"No egress receipts for request {request_id!r}: it made no cloud call, or it "
                                       "is not one of this key's requests.", "invalid_request_error",
                                  code="receipts_not_found")
        return JSONResponse({"object": "list", "request_id": request_id, "data": found})

    return get_receipts


def erase_endpoint(protector: Protector, *, session_of: SessionOf) -> Callable[[Request], Awaitable[Response]]:
    """``DELETE /v1/sessions/{session_id}``: the session's vault and units forgotten, its audited content (sealed
    bodies, findings) tombstoned with the chain intact. Its owner names it as usual; an admin by its internal id."""

    async def erase(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if not isinstance(protector, SessionPrivacy):
            return _error(409, "Privacy protection and its audit are off, so nothing of a session is kept to erase.",
                          "privacy_disabled")
        try:
            calls = await protector.erase_session(session_of(request, session_id))
        except PrivacyUnavailable as exc:
            return _error(503, f"The session cannot be erased now: {exc.reason}. Retry later; nothing was half-erased "
                               "in the audit.", "audit_unavailable")
        return JSONResponse({"session_id": session_id, "erased": True, "calls_erased": calls or 0})

    return erase
