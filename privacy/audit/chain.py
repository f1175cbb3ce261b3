"""The tamper-evident trail: every audit record gets an entry in one hash chain per database, and the gateway
signs checkpoints of the chain's head.

One chain per database, not per owner: several workers (and replicas) write the same database, and one sequence
makes a removed, inserted or reordered record visible as a broken link whoever wrote it; per-owner chains would
let a whole owner's chain vanish between checkpoints unnoticed, and the audit's rows carry sessions, not owners.
Appending takes the database's write lock (``pg_advisory_xact_lock``, SQLite's ``BEGIN IMMEDIATE``) on the writer
thread, in the record's own transaction — off the request path.

An entry's ``digest`` is the SHA-256 of the record's rows as stored (``record_digest``), its ``hash`` covers its
sequence number, kind, reference, digest, time and the predecessor's ``hash``. A checkpoint signs (Ed25519, key
derived from the secrets key: ``audit-sign``) the head's sequence number and hash, chained to the checkpoint
before it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from sqlalchemy import Connection, select, text

from privacy.audit.tables import PrivacyChain, PrivacyCheckpoint, PrivacySigningKey, insert_rows

GENESIS = "0" * 64
_LOCK_KEY = 0x6563677702  # "ecgw" + 2: the advisory lock id for appending to the chain
_CALL_UNCHAINED = ("prompt_tokens", "completion_tokens", "cached_tokens")  # the ``usage`` record's, chained apart


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8",
                                                                                               "surrogatepass")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def call_digest(call: dict[str, Any], findings: list[dict[str, Any]]) -> str:
    """A call's row (its token counts aside: the ``usage`` record sets them later) and its findings, in order."""
    head = {k: v for k, v in call.items() if k not in _CALL_UNCHAINED}
    return sha256(canonical([head, [{k: v for k, v in f.items() if k != "id"} for f in findings]]))


_CALL_CONTENT = ("body", "erased_by")  # what an erasure may change: the chain covers ``body_digest`` instead
ERASED_BODY = '{"erased": true}'  # an erased call's body: still JSON for every reader


def content_digest(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass"))


def erasable_call_digest(call: dict[str, Any]) -> str:
    """A call's row from schema step 6 on: its content by the digests kept beside it (``body_digest``,
    ``findings_digest``), so its body and findings can be tombstoned with the chain intact."""
    head = {k: v for k, v in call.items() if k not in _CALL_UNCHAINED and k not in _CALL_CONTENT}
    return sha256(canonical(["call:v2", head]))


def ids_digest(call_ids: list[str]) -> str:
    """The calls an erasure tombstoned, by id."""
    return sha256(canonical(sorted(call_ids)))


def usage_digest(prompt: int | None, completion: int | None, cached: int | None) -> str:
    return sha256(canonical([prompt, completion, cached]))


def rows_digest(rows: list[dict[str, Any]]) -> str:
    """Egress rows of a call (in order) or a session's units (sorted by unit id by the caller), ids aside (a row
    without one — a call's hundreds of findings as written — is not copied)."""
    return sha256(canonical([{k: v for k, v in r.items() if k != "id"} if "id" in r else r for r in rows]))


def set_digest(rows: list[dict[str, Any]]) -> str:
    """A finding set's rows (in order), their numbering and set id aside: the set's id as written
    (``privacy.audit.sets``), and what its rows must still hash to."""
    return sha256(canonical(["set:v1", [{k: v for k, v in r.items() if k not in ("id", "set_id")} for r in rows]]))


def findings_digest(own: str, set_ids: list[str]) -> str:
    """What a call's ``findings_digest`` covers: its own rows (``own``, their ``rows_digest``) alone, as before
    finding sets; with the sets it references, their ids (each its rows' digest) in order too."""
    return sha256(canonical(["findings:v2", own, set_ids])) if set_ids else own


def entry_hash(seq: int, kind: str, ref: str, digest: str, created_at: float, prev: str) -> str:
    return sha256(canonical([seq, kind, ref, digest, created_at, prev]))


def checkpoint_message(seq: int, head_seq: int, head_hash: str, created_at: float, prev: str) -> bytes:
    return b"ecgw-audit-checkpoint:v1:" + canonical([seq, head_seq, head_hash, created_at, prev])


def lock(conn: Connection) -> None:
    """The chain's write lock, for the rest of this transaction (SQLite: the caller began ``BEGIN IMMEDIATE``)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})


def append(conn: Connection, kind: str, ref: str, digest: str, created_at: float) -> None:
    """Add an entry after the head, inside the caller's locked transaction."""
    links = Links(conn)
    links.append(kind, ref, digest, created_at)
    links.flush()


_HEAD = f"SELECT seq, hash FROM {PrivacyChain.__tablename__} ORDER BY seq DESC LIMIT 1"


class Links:
    """Entries appended inside one locked transaction: the head read once, the entries inserted in one statement
    (``flush``, before anything reads the chain and before the commit) — a batch of records costs the writer thread
    two statements for the chain, not two a record."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._head: tuple[int, str] | None = None
        self._entries: list[dict[str, Any]] = []

    def append(self, kind: str, ref: str, digest: str, created_at: float) -> None:
        if self._head is None:  # the driver's own statement: SQLAlchemy built and compiled the select per batch
            head = self._conn.exec_driver_sql(_HEAD).first()
            self._head = (int(head[0]), str(head[1])) if head else (0, GENESIS)
        seq, prev = self._head[0] + 1, self._head[1]
        entry = entry_hash(seq, kind, ref, digest, created_at, prev)
        self._entries.append({"seq": seq, "kind": kind, "ref": ref, "digest": digest, "created_at": created_at,
                              "prev": prev, "hash": entry})
        self._head = (seq, entry)

    def flush(self) -> None:
        if self._entries:
            insert_rows(self._conn, PrivacyChain, self._entries)
            self._entries = []


class ChainSigner:
    """Ed25519 from a 32-byte seed (``Keys.derive("audit-sign")``): nothing to store, the same key on every worker
    that shares the secrets key."""

    def __init__(self, seed: bytes) -> None:
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self.public = self._key.public_key()
        self.key_id = key_id(self.public)

    def sign(self, message: bytes) -> str:
        return base64.urlsafe_b64encode(self._key.sign(message)).decode("ascii").rstrip("=")

    def public_pem(self) -> str:
        return public_pem(self.public)


class SigningKeys:
    """The signing key of each generation, derived from the secrets key (``derive``): generation 1 is
    ``audit-sign`` (the key before rotation existed), generation n ≥ 2 ``audit-sign-n``. Rotating
    (``ecgw audit rotate-key``) records the next generation in ``privacy_signing_key``; every worker signs with the
    latest from its next checkpoint on, and every older key still verifies what it signed."""

    def __init__(self, derive: Callable[[str], bytes]) -> None:
        self._derive = derive
        self._signers: dict[int, ChainSigner] = {}

    def signer(self, generation: int) -> ChainSigner:
        if generation not in self._signers:
            self._signers[generation] = ChainSigner(self._derive("audit-sign" if generation <= 1
                                                                 else f"audit-sign-{generation}"))
        return self._signers[generation]

    def ring(self, generations: int) -> dict[str, Ed25519PublicKey]:
        """key id → public key of generations 1..``generations``."""
        return {s.key_id: s.public for s in (self.signer(g) for g in range(1, max(generations, 1) + 1))}


def current_generation(conn: Connection) -> int:
    """The latest generation ``ecgw audit rotate-key`` recorded (1 before any rotation)."""
    table = PrivacySigningKey.__table__  # type: ignore[attr-defined]
    latest = conn.execute(select(table.c.generation).order_by(table.c.generation.desc()).limit(1)).first()
    return int(latest[0]) if latest else 1


def rotate(conn: Connection, keys: SigningKeys, created_at: float) -> ChainSigner:
    """Record the next generation (inside the caller's locked transaction) and return its signer."""
    table = PrivacySigningKey.__table__  # type: ignore[attr-defined]
    current = current_generation(conn)
    if conn.execute(select(table.c.generation).limit(1)).first() is None:  # generation 1, recorded on first use
        first = keys.signer(1)
        conn.execute(table.insert(), [{"generation": 1, "key_id": first.key_id, "public_pem": first.public_pem(),
                                       "created_at": created_at}])
    signer = keys.signer(current + 1)
    conn.execute(table.insert(), [{"generation": current + 1, "key_id": signer.key_id,
                                   "public_pem": signer.public_pem(), "created_at": created_at}])
    return signer


class Anchor:
    """What the request path signs with, shared with the audit's writer thread: the signing key and the hash of the
    latest signed checkpoint (``GENESIS`` until one is known), which the store keeps current as it signs."""

    def __init__(self, signer: ChainSigner) -> None:
        self.signer = signer
        self.checkpoint = GENESIS


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return sha256(raw)[:16]


def public_pem(public: Ed25519PublicKey) -> str:
    return public.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def load_public_pem(data: bytes) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(data)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return key


def load_public_pems(data: bytes) -> list[Ed25519PublicKey]:
    """Every Ed25519 public key in a file of one or more PEM blocks (``ecgw audit public-key --all``)."""
    blocks = re.findall(rb"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----", data, re.S)
    if not blocks:
        raise ValueError("no PEM public key found (expected -----BEGIN PUBLIC KEY-----)")
    return [load_public_pem(block) for block in blocks]


def b64decode(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def signature_valid(public: Ed25519PublicKey, signature: str, message: bytes) -> bool:
    try:
        public.verify(b64decode(signature), message)
    except (InvalidSignature, ValueError):
        return False
    return True


def write_checkpoint(conn: Connection, signer: ChainSigner, created_at: float) -> str | None:
    """Sign the head, inside the caller's locked transaction (nothing new when the head is signed already). The hash
    of the latest checkpoint, new or not; None while there is none (an empty chain)."""
    chain, points = PrivacyChain.__table__, PrivacyCheckpoint.__table__  # type: ignore[attr-defined]
    head = conn.execute(select(chain.c.seq, chain.c.hash).order_by(chain.c.seq.desc()).limit(1)).first()
    last = conn.execute(select(points.c.seq, points.c.head_seq, points.c.hash)
                        .order_by(points.c.seq.desc()).limit(1)).first()
    if head is None or (last is not None and int(last[1]) == int(head[0])):
        return None if last is None else str(last[2])
    seq, prev = (int(last[0]) + 1, str(last[2])) if last else (1, GENESIS)
    message = checkpoint_message(seq, int(head[0]), str(head[1]), created_at, prev)
    signed = sha256(message)
    conn.execute(points.insert(), [{"seq": seq, "head_seq": int(head[0]), "head_hash": str(head[1]),
                                    "created_at": created_at, "prev": prev, "key_id": signer.key_id,
                                    "signature": signer.sign(message), "hash": signed}])
    return signed
