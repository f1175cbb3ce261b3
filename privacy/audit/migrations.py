"""The privacy audit's schema, migrated like the metering store's (``accounting.migrations``: an append-only list of
steps, applied once, under the same lock), with its own version table on the same database.

Each step is written against the schema *as it was* when it was added, never against today's models
(``privacy.audit.tables``): a later change to a model is a new step, and old databases upgrade step by step. A test
holds a migrated database equal to the models.
"""

from __future__ import annotations

from sqlalchemy import Column, Connection, Float, Index, Integer, MetaData, String, Table

from accounting.migrations import Migration

VERSION_TABLE = "ecgw_privacy_schema_version"


def _v1_audit_tables(conn: Connection) -> None:
    meta = MetaData()
    Table(
        "privacy_call", meta,
        Column("id", String, primary_key=True),
        Column("session_id", String, nullable=False),
        Column("request_id", String, nullable=False),
        Column("experiment", String),
        Column("created_at", Float, nullable=False),
        Column("body", String, nullable=False),
        Column("findings", Integer, nullable=False),
        Column("prompt_tokens", Integer),
        Column("completion_tokens", Integer),
        Column("cached_tokens", Integer),
        Index("ix_privacy_call_session_id", "session_id"),
        Index("ix_privacy_call_request_id", "request_id"),
        Index("ix_privacy_call_experiment", "experiment"),
    )
    Table(
        "privacy_finding", meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("call_id", String, nullable=False),
        Column("session_id", String, nullable=False),
        Column("type", String, nullable=False),
        Column("layer", String, nullable=False),
        Column("action", String, nullable=False),
        Column("location", String, nullable=False),
        Column("value_hash", String, nullable=False),
        Column("unit_id", String),
        Column("field", String),
        Column("dimension", String),
        Index("ix_privacy_finding_call_id", "call_id"),
        Index("ix_privacy_finding_session_id", "session_id"),
    )
    Table(
        "privacy_unit", meta,
        Column("session_id", String, primary_key=True),
        Column("unit_id", String, primary_key=True),
        Column("entity_id", String, nullable=False),
        Column("field", String, nullable=False),
        Column("dimension", String),
        Column("weight", Float, nullable=False),
        Column("value_hash", String, nullable=False),
    )
    meta.create_all(conn, checkfirst=True)


def _v2_drop_hash_key(conn: Connection) -> None:
    conn.exec_driver_sql("DROP TABLE IF EXISTS privacy_key")  # earlier versions kept the hash key beside the hashes


def _v3_egress(conn: Connection) -> None:
    meta = MetaData()
    Table(
        "privacy_egress", meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("call_id", String, nullable=False),
        Column("session_id", String, nullable=False),
        Column("unit_id", String, nullable=False),
        Column("created_at", Float, nullable=False),
        Index("ix_privacy_egress_call_id", "call_id"),
        Index("ix_privacy_egress_session_id", "session_id"),
    )
    meta.create_all(conn, checkfirst=True)


def _v4_chain(conn: Connection) -> None:
    meta = MetaData()
    Table(
        "privacy_chain", meta,
        Column("seq", Integer, primary_key=True, autoincrement=False),
        Column("kind", String, nullable=False),
        Column("ref", String, nullable=False),
        Column("digest", String, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("prev", String, nullable=False),
        Column("hash", String, nullable=False),
        Index("ix_privacy_chain_ref", "ref"),
    )
    Table(
        "privacy_checkpoint", meta,
        Column("seq", Integer, primary_key=True, autoincrement=False),
        Column("head_seq", Integer, nullable=False),
        Column("head_hash", String, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("prev", String, nullable=False),
        Column("key_id", String, nullable=False),
        Column("signature", String, nullable=False),
        Column("hash", String, nullable=False),
    )
    meta.create_all(conn, checkfirst=True)


def _v5_receipts(conn: Connection) -> None:
    meta = MetaData()
    Table(
        "privacy_receipt", meta,
        Column("id", String, primary_key=True),
        Column("call_id", String, nullable=False),
        Column("request_id", String, nullable=False),
        Column("session_id", String, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("target", String, nullable=False),
        Column("token", String, nullable=False),
        Index("ix_privacy_receipt_call_id", "call_id"),
        Index("ix_privacy_receipt_request_id", "request_id"),
        Index("ix_privacy_receipt_session_id", "session_id"),
    )
    meta.create_all(conn, checkfirst=True)


def _v6_erasable_calls(conn: Connection) -> None:
    """A call's content (its sealed body, its findings) can be dropped with the chain intact: the chained digest
    covers digests kept beside the content, and an erasure is a chained record of its own."""
    for column, kind in (("body_digest", "VARCHAR"), ("findings_digest", "VARCHAR"), ("erased_by", "VARCHAR")):
        conn.exec_driver_sql(f"ALTER TABLE privacy_call ADD COLUMN {column} {kind}")
    meta = MetaData()
    Table(
        "privacy_erasure", meta,
        Column("id", String, primary_key=True),
        Column("reason", String, nullable=False),
        Column("session_id", String),
        Column("created_at", Float, nullable=False),
        Column("calls", Integer, nullable=False),
        Column("calls_digest", String, nullable=False),
    )
    meta.create_all(conn, checkfirst=True)


def _v7_signing_keys(conn: Connection) -> None:
    meta = MetaData()
    Table(
        "privacy_signing_key", meta,
        Column("generation", Integer, primary_key=True, autoincrement=False),
        Column("key_id", String, nullable=False),
        Column("public_pem", String, nullable=False),
        Column("created_at", Float, nullable=False),
    )
    meta.create_all(conn, checkfirst=True)


def _v8_inbound(conn: Connection) -> None:
    meta = MetaData()
    Table(
        "privacy_inbound", meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("call_id", String, nullable=False),
        Column("session_id", String, nullable=False),
        Column("request_id", String, nullable=False),
        Column("owner", String, nullable=False),
        Column("type", String, nullable=False),
        Column("layer", String, nullable=False),
        Column("location", String, nullable=False),
        Column("action", String, nullable=False),
        Column("created_at", Float, nullable=False),
        Index("ix_privacy_inbound_call_id", "call_id"),
        Index("ix_privacy_inbound_session_id", "session_id"),
        Index("ix_privacy_inbound_owner", "owner"),
    )
    meta.create_all(conn, checkfirst=True)


def _v9_finding_sets(conn: Connection) -> None:
    """The findings of a slot a session sends again and again (its system prompt, each tool result) are written once
    per session as a finding set, and each call references the sets it sent."""
    meta = MetaData()
    Table(
        "privacy_finding_set", meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("set_id", String, nullable=False),
        Column("session_id", String, nullable=False),
        Column("type", String, nullable=False),
        Column("layer", String, nullable=False),
        Column("action", String, nullable=False),
        Column("location", String, nullable=False),
        Column("value_hash", String, nullable=False),
        Column("unit_id", String),
        Column("field", String),
        Column("dimension", String),
        Index("ix_privacy_finding_set_set_id", "set_id"),
        Index("ix_privacy_finding_set_session_id", "session_id"),
    )
    Table(
        "privacy_call_set", meta,
        Column("call_id", String, primary_key=True),
        Column("position", Integer, primary_key=True, autoincrement=False),
        Column("set_id", String, nullable=False),
        Index("ix_privacy_call_set_set_id", "set_id"),
    )
    meta.create_all(conn, checkfirst=True)


AUDIT_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "audit: calls, findings, units", _v1_audit_tables),
    Migration(2, "audit: the hash key leaves the database", _v2_drop_hash_key),
    Migration(3, "audit: egress verdicts (units that left raw)", _v3_egress),
    Migration(4, "audit: the tamper-evident chain and its signed checkpoints", _v4_chain),
    Migration(5, "audit: signed egress receipts", _v5_receipts),
    Migration(6, "audit: erasable content (digests beside it, erasure records)", _v6_erasable_calls),
    Migration(7, "audit: generations of the signing key (rotation)", _v7_signing_keys),
    Migration(8, "audit: inbound findings (what cloud answers carried that no request did)", _v8_inbound),
    Migration(9, "audit: finding sets (a session's repeated findings written once, referenced per call)",
              _v9_finding_sets),
)
