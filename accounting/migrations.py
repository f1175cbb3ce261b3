"""Schema migrations: a versioned table and an append-only list of steps, run at start-up.

Why not alembic: the store is one table; alembic would add a script directory and env.py shipped as package data
and its own configuration, for the same result. Here each step is a function of a connection, recorded in
``ecgw_schema_version`` in the same transaction; steps are written against the schema *as it was* (never the
current ``UsageRecord``), so old databases upgrade step by step. Several workers starting at once are serialised
by an advisory lock on PostgreSQL and by ``IF NOT EXISTS`` + the version row's primary key on SQLite.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Boolean, Column, Connection, Float, Index, Integer, MetaData, String, Table, Text, select, text
from sqlalchemy.engine import Engine

from accounting.errors import EcgwError

VERSION_TABLE = "ecgw_schema_version"
_LOCK_KEY = 0x6563677701  # "ecgw" + 1: the advisory lock id for migrations


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def _v1_usage_records(conn: Connection) -> None:
    meta = MetaData()
    table = Table(
        "ecgw_usage_records", meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("record_id", String(32), nullable=False, unique=True),
        Column("started_at", Float, nullable=False),
        Column("day", String(10), nullable=False),
        Column("request_id", String(64), nullable=False),
        Column("session_id", String(256), nullable=False),
        Column("experiment", String(128)),
        Column("arm", String(128)),
        Column("policy", String(64), nullable=False),
        Column("purpose", String(64), nullable=False),
        Column("side", String(8), nullable=False),
        Column("provider", String(64), nullable=False),
        Column("model", String(256), nullable=False),
        Column("streamed", Boolean, nullable=False),
        Column("status", Integer, nullable=False),
        Column("latency_s", Float, nullable=False),
        Column("ttft_s", Float),
        Column("prompt_tokens", Integer, nullable=False),
        Column("cache_read_tokens", Integer, nullable=False),
        Column("cache_write_tokens", Integer, nullable=False),
        Column("raw_input_tokens", Integer, nullable=False),
        Column("output_tokens", Integer, nullable=False),
        Column("reasoning_tokens", Integer),
        Column("usage_source", String(16), nullable=False),
        Column("cost_usd", Float),
        Column("price_version", String(64)),
        Column("edge_flops", Float),
        Column("flops_formula", String(64)),
    )
    Index("ix_ecgw_usage_records_started_at", table.c.started_at)
    Index("ix_ecgw_usage_records_day", table.c.day)
    Index("ix_ecgw_usage_records_request_id", table.c.request_id)
    Index("ix_ecgw_usage_records_session_id", table.c.session_id)
    meta.create_all(conn, checkfirst=True)


def _v2_request_marks(conn: Connection) -> None:
    meta = MetaData()
    table = Table(
        "ecgw_request_marks", meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("request_id", String(64), nullable=False, unique=True),
        Column("session_id", String(256), nullable=False),
        Column("upstream_calls", Integer, nullable=False),
        Column("finished_at", Float, nullable=False),
    )
    Index("ix_ecgw_request_marks_session_id", table.c.session_id)
    meta.create_all(conn, checkfirst=True)


def _v3_step_records(conn: Connection) -> None:
    meta = MetaData()
    table = Table(
        "ecgw_step_records", meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("request_id", String(64), nullable=False, unique=True),
        Column("session_id", String(256), nullable=False),
        Column("started_at", Float, nullable=False),
        Column("experiment", String(128)),
        Column("arm", String(128)),
        Column("policy", String(64), nullable=False),
        Column("route", String(8), nullable=False),
        Column("decision", String(32)),
        Column("reason", String(64)),
        Column("signal", Text, nullable=False),
        Column("fallback", String(32)),
        Column("status", Integer, nullable=False),
        Column("latency_s", Float, nullable=False),
        Column("trace_id", String(32)),
    )
    Index("ix_ecgw_step_records_started_at", table.c.started_at)
    Index("ix_ecgw_step_records_session_id", table.c.session_id)
    meta.create_all(conn, checkfirst=True)


def _v4_session_grades(conn: Connection) -> None:
    meta = MetaData()
    Table(
        "ecgw_session_grades", meta,
        Column("session_id", String(256), primary_key=True),
        Column("score", Float, nullable=False),
        Column("source", String(128)),
        Column("updated_at", Float, nullable=False),
    )
    meta.create_all(conn, checkfirst=True)


def _v5_usage_deployment(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE ecgw_usage_records ADD COLUMN deployment VARCHAR(64)"))


def _v6_step_features(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE ecgw_step_records ADD COLUMN features TEXT"))
    conn.execute(text("ALTER TABLE ecgw_step_records ADD COLUMN label TEXT"))


def _v7_usage_key(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE ecgw_usage_records ADD COLUMN key_label VARCHAR(64)"))
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_ecgw_usage_records_key_label ON ecgw_usage_records "
                      "(key_label, started_at)"))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "usage records", _v1_usage_records),
    Migration(2, "request marks: how many upstream calls each finished request caused", _v2_request_marks),
    Migration(3, "step decision records", _v3_step_records),
    Migration(4, "session grades", _v4_session_grades),
    Migration(5, "usage records name the edge deployment or cloud target that made the call", _v5_usage_deployment),
    Migration(6, "step records keep numeric features and a shadow call's agreement label", _v6_step_features),
    Migration(7, "usage records name the API key they were made for (its label), so a key's budget counts it alone",
              _v7_usage_key),
)


class SchemaTooNew(EcgwError, RuntimeError):
    pass


def _version_table(name: str = VERSION_TABLE) -> Table:
    return Table(name, MetaData(),
                 Column("version", Integer, primary_key=True, autoincrement=False),
                 Column("description", String(200), nullable=False),
                 Column("applied_at", Float, nullable=False))


def current_version(engine: Engine) -> int:
    versions = _version_table()
    with engine.connect() as conn:
        versions.create(conn, checkfirst=True)
        conn.commit()
        found = conn.execute(select(versions.c.version).order_by(versions.c.version.desc())).first()
    return int(found[0]) if found else 0


def migrate(engine: Engine, migrations: Sequence[Migration] = MIGRATIONS, *,
            version_table: str = VERSION_TABLE) -> list[int]:
    """Apply every migration newer than the database's version; returns the versions applied. Another list of
    migrations on the same database (the privacy audit's) keeps its versions in a ``version_table`` of its own."""
    versions = _version_table(version_table)
    applied: list[int] = []
    known = max((m.version for m in migrations), default=0)
    with engine.connect().execution_options(sqlite_begin="BEGIN IMMEDIATE") as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})  # one lock for every list
        versions.create(conn, checkfirst=True)
        done = {int(v) for v in conn.execute(select(versions.c.version)).scalars()}
        if done and max(done) > known:
            raise SchemaTooNew(f"the database's {version_table} is at version {max(done)}, newer than this ecgw "
                               f"knows ({known}); upgrade ecgw")
        for migration in sorted(migrations, key=lambda m: m.version):
            if migration.version in done:
                continue
            migration.apply(conn)
            conn.execute(versions.insert().values(version=migration.version, description=migration.description,
                                                  applied_at=time.time()))
            applied.append(migration.version)
    return applied
