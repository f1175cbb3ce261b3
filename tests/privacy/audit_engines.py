"""The audit's tests run on both real databases: a SQLite file, and a fresh schema on the shared PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from accounting.database import make_engine
from tests.real_parts import postgres_url


def _pg_schema_url(schema: str) -> str:
    url = postgres_url()
    return url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "sqlite":
        yield make_engine(f"sqlite:///{tmp_path / 'audit.sqlite3'}")
        return
    schema = f"audit_{uuid.uuid4().hex[:12]}"
    admin = make_engine(postgres_url())
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    engine = make_engine(_pg_schema_url(schema))
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as conn:
            # a connection a test left open (idle in a transaction) would hold the drop forever: fail instead
            conn.execute(text("SET LOCAL lock_timeout = '30s'"))
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
