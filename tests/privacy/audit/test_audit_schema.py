"""The audit's tables are migrated like the metering store's: versioned steps applied once, on the same database,
with a version table of their own (metering's versions are untouched)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from accounting.database import make_engine
from accounting.store import UsageStore
from privacy.audit import AuditStore
from privacy.audit.tables import TABLES


def test_the_audit_schema_is_versioned_beside_the_metering_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gw.sqlite3'}"
    engine = make_engine(url)
    with engine.begin() as conn:  # a database from before: the hash key rested beside the hashes
        conn.execute(text("CREATE TABLE privacy_key (id INTEGER PRIMARY KEY, key BLOB)"))
    metering = UsageStore.from_url(url)
    metering_versions = metering.open()
    AuditStore(engine).ensure()
    AuditStore(engine).ensure()  # a second start (another worker) applies nothing again
    tables = set(inspect(engine).get_table_names())
    assert {"privacy_call", "privacy_finding", "privacy_unit", "privacy_egress"} <= tables
    assert "privacy_key" not in tables
    with engine.connect() as conn:
        audit = [r[0] for r in conn.execute(text("SELECT version FROM ecgw_privacy_schema_version ORDER BY 1"))]
        usage = [r[0] for r in conn.execute(text("SELECT version FROM ecgw_schema_version ORDER BY 1"))]
    assert audit == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert usage == metering_versions
    metering.dispose()


def _schema(engine: Engine) -> dict[str, object]:
    found = inspect(engine)
    return {table: ([(c["name"], str(c["type"]), c["nullable"]) for c in found.get_columns(table)],
                    found.get_pk_constraint(table)["constrained_columns"],
                    sorted((i["name"], tuple(i["column_names"])) for i in found.get_indexes(table)))
            for table in sorted(found.get_table_names()) if table.startswith("privacy_")}


def test_the_migrations_build_exactly_the_tables_the_code_writes(tmp_path: Path) -> None:
    """The steps are written against the schema of their day; a model changed without a new step fails here."""
    migrated = make_engine(f"sqlite:///{tmp_path / 'migrated.sqlite3'}")
    AuditStore(migrated).ensure()
    modelled = make_engine(f"sqlite:///{tmp_path / 'modelled.sqlite3'}")
    SQLModel.metadata.create_all(modelled, tables=TABLES)
    assert _schema(migrated) == _schema(modelled)
    assert set(_schema(migrated)) == {"privacy_call", "privacy_finding", "privacy_unit", "privacy_egress",
                                      "privacy_receipt", "privacy_erasure", "privacy_inbound", "privacy_signing_key",
                                      "privacy_chain", "privacy_checkpoint", "privacy_finding_set",
                                      "privacy_call_set"}
