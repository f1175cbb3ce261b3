"""The privacy audit's schema, migrated like the metering store's (``accounting.migrations``: an append-only list of
steps, applied once, under the same lock), with its own version table on the same database."""

from __future__ import annotations

from sqlalchemy import Connection
from sqlmodel import SQLModel

from accounting.migrations import Migration

VERSION_TABLE = "ecgw_privacy_schema_version"


def _v1_audit_tables(conn: Connection) -> None:
    from privacy.audit.store import TABLES

    SQLModel.metadata.create_all(conn, tables=TABLES, checkfirst=True)


def _v2_drop_hash_key(conn: Connection) -> None:
    conn.exec_driver_sql("DROP TABLE IF EXISTS privacy_key")  # earlier versions kept the hash key beside the hashes


def _v3_egress(conn: Connection) -> None:
    from privacy.audit.exposure import PrivacyEgress

    SQLModel.metadata.create_all(conn, tables=[PrivacyEgress.__table__], checkfirst=True)  # type: ignore[attr-defined]


AUDIT_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "audit: calls, findings, units", _v1_audit_tables),
    Migration(2, "audit: the hash key leaves the database", _v2_drop_hash_key),
    Migration(3, "audit: egress verdicts (units that left raw)", _v3_egress),
)
