"""Egress receipts: for every body that leaves for the cloud, a signed statement the client keeps.

A receipt is a JWS in compact form (``header.claims.signature``, base64url without padding), ``alg: EdDSA``
(Ed25519, the checkpoints' key, named by ``kid``). Its claims say what left, never a copy of it:

    rid          the request id (``x-ecgw-request-id``)
    call         the audit's id of the cloud call (``privacy_call.id``)
    ts           when the body was handed to the target (unix seconds)
    target       the configured cloud target it went to
    tier         that target's tier (``cloud.targets.<name>.tier``: ``trusted`` or ``standard``)
    classes      what the body carries by data class: ``{class: {"pseudonymised": n, "raw": n}}`` (counts only)
    body_sha256  SHA-256 of the body's exact bytes (``body_bytes``: the JSON the door hands the provider transport,
                 the bytes the audit seals as its copy)
    placeholders placeholders in it, counted by type
    raw_units    listed units the last check let leave raw (an ``audit`` action), normally none
    verdict      the last check's: ``clean`` (nothing left to find), ``replaced`` (it replaced what it found),
                 ``raw`` (it let listed values leave on purpose), ``unchecked`` (the last check is off),
                 ``unprotected`` (``privacy.enabled: false``)
    checkpoint   the hash of the latest signed checkpoint of the audit chain this worker knows: every client holds
                 anchors that whoever holds the database and the key cannot rewrite without being contradicted

Signing costs one SHA-256 of the body and one Ed25519 signature on the request path; the receipt is an audit record
(``privacy_receipt``), chained like every other, written off the request path. Before a receipt is handed out, its
record and the call's (queued before it) are in the audit writer's journal (``AuditWriter.durable``): a receipt a
client holds is never one whose record a crash of the gateway's process took. Journaling is not the issuer's to wait
for: ``durable()`` journals in a thread while the body travels, and the gateway awaits it just before the headers
that carry the receipt leave (``router.context.RouteTracker.receipts_durable``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import select
from sqlalchemy.engine import Engine

from accounting.errors import EcgwError
from privacy.audit import chain
from privacy.audit.chain import Anchor
from privacy.audit.tables import PrivacyReceipt
from privacy.audit.writer import AuditWriter

HEADER = "x-ecgw-egress-receipt"
VERDICTS = ("clean", "replaced", "raw", "unchecked", "unprotected")


class ReceiptInvalid(EcgwError, ValueError):
    """A receipt that is malformed, signed by an unknown key, or whose signature does not verify."""


def body_bytes(body: Mapping[str, Any]) -> bytes:
    """The exact bytes a receipt's ``body_sha256`` covers and the audit seals: compact JSON, UTF-8 (a lone surrogate
    a client sent, which strict UTF-8 cannot carry, is written as the audit always wrote it)."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def placeholder_counts(placeholders: Iterable[str]) -> dict[str, int]:
    """``{"EMAIL_ADDRESS": 2, …}`` from placeholders such as ``[EMAIL_ADDRESS_003]``. On the request path of every
    protected call, over every placeholder the body holds (an agent step's history: hundreds, the same ones each
    step): each placeholder's type is read once (``_kind``), the counting is ``Counter``'s."""
    return dict(sorted(Counter(map(_kind, placeholders)).items()))


@functools.lru_cache(maxsize=1 << 16)
def _kind(placeholder: str) -> str:
    """``EMAIL_ADDRESS`` of ``[EMAIL_ADDRESS_003]`` (``rfind`` finding no ``_`` leaves the name within brackets)."""
    return placeholder[1:placeholder.rfind("_")] if placeholder.startswith("[") else placeholder


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


@functools.lru_cache(maxsize=64)
def _header(key_id: str) -> str:
    return _b64(orjson.dumps({"alg": "EdDSA", "kid": key_id, "typ": "JWT"}, option=orjson.OPT_SORT_KEYS))


def sign(claims: Mapping[str, Any], signer: chain.ChainSigner) -> str:
    """The compact JWS of ``claims`` (compact JSON, sorted keys; any encoding verifies, since the signature covers
    the encoded text as sent)."""
    signing_input = f"{_header(signer.key_id)}.{_b64(orjson.dumps(dict(claims), option=orjson.OPT_SORT_KEYS))}"
    return f"{signing_input}.{signer.sign(signing_input.encode('ascii'))}"


def parse(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a receipt, unverified. Raises ``ReceiptInvalid`` for anything that is not one."""
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise ReceiptInvalid("not a receipt: a JWS in compact form has three dot-separated parts")
    try:
        header, claims = (json.loads(chain.b64decode(p)) for p in parts[:2])
    except (ValueError, binascii.Error):
        raise ReceiptInvalid("not a receipt: its header or claims are not base64url JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise ReceiptInvalid("not a receipt: its header and claims must be JSON objects")
    return header, claims


def verify(token: str, keys: Mapping[str, Ed25519PublicKey]) -> dict[str, Any]:
    """The claims of a receipt whose signature verifies with the key its ``kid`` names among ``keys`` (key id →
    public key); ``ReceiptInvalid`` saying why otherwise."""
    header, claims = parse(token)
    if header.get("alg") != "EdDSA":
        raise ReceiptInvalid(f"the receipt's alg is {header.get('alg')!r}, not EdDSA")
    public = keys.get(str(header.get("kid")))
    if public is None:
        raise ReceiptInvalid(f"the receipt is signed by key {header.get('kid')!r}, not by "
                             f"{', '.join(sorted(keys)) or 'any key given'}")
    signing_input, _, signature = token.strip().rpartition(".")
    if not chain.signature_valid(public, signature, signing_input.encode("ascii")):
        raise ReceiptInvalid("the receipt's signature does not verify: it was altered or forged")
    return claims


def verdict(*, checked: bool, protected: bool, replaced: bool, let_through: bool) -> str:
    """The last check's verdict on one body (``raw``: it let something leave as it was, on purpose)."""
    if not protected:
        return "unprotected"
    if not checked:
        return "unchecked"
    if let_through:
        return "raw"
    return "replaced" if replaced else "clean"


class CallReceipts:
    """The receipts of one protected call: one each time its body is handed to a target (a fallback is another
    handing-over). ``data`` is ``body_bytes(body)``, made once; a target that gets another body (provider state
    dropped for a fallback) gets the hash of what it got."""

    def __init__(self, issuer: ReceiptIssuer, *, call_id: str, request_id: str, session_id: str,
                 body: Mapping[str, Any], data: bytes, placeholders: Mapping[str, int], raw_units: Iterable[str],
                 verdict: str, classes: Mapping[str, Mapping[str, int]]) -> None:
        self._issuer = issuer
        self._call = (call_id, request_id, session_id)
        self._body, self._data = body, data
        self._placeholders, self._raw_units, self._verdict = placeholders, sorted(raw_units), verdict
        self._classes = classes

    def issue(self, target: str, sent: Mapping[str, Any], *, tier: str) -> str:
        call_id, request_id, session_id = self._call
        return self._issuer.issue(call_id=call_id, request_id=request_id, session_id=session_id, target=target,
                                  body=self._data if sent is self._body else body_bytes(sent),
                                  placeholders=self._placeholders, raw_units=self._raw_units, verdict=self._verdict,
                                  tier=tier, classes=self._classes)

    async def durable(self) -> None:
        """The receipts issued so far, and the call's records queued before them, are journaled (in a thread, so the
        upstream call goes on meanwhile): no response may carry a receipt before this returns."""
        await asyncio.to_thread(self._issuer.durable)


class ReceiptIssuer:
    """Signs a receipt on the request path and queues it on the audit writer as a chained record. ``anchor`` holds
    the signing key and the latest checkpoint's hash (the store keeps both current)."""

    def __init__(self, anchor: Anchor, audit: AuditWriter, *, clock: Callable[[], float] = time.time) -> None:
        self._anchor = anchor
        self._audit = audit
        self._clock = clock

    def issue(self, *, call_id: str, request_id: str, session_id: str, target: str, body: bytes,
              placeholders: Mapping[str, int], raw_units: Iterable[str], verdict: str, tier: str = "standard",
              classes: Mapping[str, Mapping[str, int]] | None = None) -> str:
        at = round(self._clock(), 3)
        claims = {"rid": request_id, "call": call_id, "ts": at, "target": target, "tier": tier,
                  "classes": {name: dict(counts) for name, counts in (classes or {}).items()},
                  "body_sha256": chain.sha256(body), "placeholders": dict(placeholders),
                  "raw_units": sorted(raw_units), "verdict": verdict, "checkpoint": self._anchor.checkpoint}
        token = sign(claims, self._anchor.signer)
        row = {"id": uuid.uuid4().hex, "call_id": call_id, "request_id": request_id, "session_id": session_id,
               "created_at": at, "target": target, "token": token}
        record = {"kind": "receipt", "row": row}
        self._audit.submit(lambda: record)  # journaled by ``durable``, before the client can hold the receipt
        return token

    def durable(self) -> None:
        """Every receipt issued so far, and the records queued before it, journaled (``AuditWriter.durable``)."""
        self._audit.durable()


def request_receipts(engine: Engine, open_body: object, request_id: str,
                     scope: Callable[[str], bool] | None) -> list[dict[str, Any]]:
    """Every receipt of one request, oldest first, as ``GET /v1/receipts/{request_id}`` lists them: only those of
    sessions ``scope`` allows (an owner's, or a bound key's one session; None: every owner's). ``open_body`` is
    unused (receipts hold no body): the signature of the audit's reads."""
    table = PrivacyReceipt.__table__  # type: ignore[attr-defined]
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(
            select(table).where(table.c.request_id == request_id).order_by(table.c.created_at, table.c.id))]
    return [{"id": r["id"], "call_id": r["call_id"], "target": r["target"], "created_at": r["created_at"],
             "receipt": r["token"], "claims": parse(r["token"])[1]}
            for r in rows if scope is None or scope(str(r["session_id"]))]
