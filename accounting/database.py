"""Engines for the metering store: a SQLite file (WAL) by default, PostgreSQL (psycopg 3) by URL."""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.engine.url import URL
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool
from sqlmodel import create_engine

from accounting.errors import EcgwError


class StoreUnavailable(EcgwError, RuntimeError):
    """The metering database cannot be reached or used; the message names the URL with its password hidden."""


def _url(database_url: str) -> URL:
    try:
        url = make_url(database_url)
    except ArgumentError:
        raise StoreUnavailable(f"database_url {database_url!r} is not a database URL; use sqlite:///file.sqlite3 "
                               "or postgresql://user:pass@host:5432/db") from None
    if url.drivername in ("postgresql", "postgres", "postgresql+psycopg2"):
        url = url.set(drivername="postgresql+psycopg")
    return url


def safe_url(database_url: str) -> str:
    """The URL with its password replaced by ``***``."""
    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<invalid database URL>"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Python's sqlite3 would run DDL outside any transaction; let SQLAlchemy's begin() decide instead.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    """``BEGIN``, or ``BEGIN IMMEDIATE`` (a write lock up front) where a connection asks for it: migrations."""
    conn.exec_driver_sql(conn.get_execution_options().get("sqlite_begin", "BEGIN"))


def create_private(path: str) -> None:
    """Create the SQLite file at ``path`` readable by its owner only (0600) before SQLite opens it — SQLite's own
    default follows the umask (0644: every local user could read metering, audit or session rows); its WAL and
    shared-memory files take the database file's mode. A file that exists is left as its operator set it."""
    if path in ("", ":memory:") or path.startswith("file:"):
        return
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError:  # a missing folder, say: SQLite's own open says so, with the path
        pass


def make_engine(database_url: str) -> Engine:
    url = _url(database_url)
    if url.get_backend_name() == "sqlite":
        memory = url.database in (None, "", ":memory:")
        if not memory and url.database:
            create_private(url.database)
        engine = create_engine(url, connect_args={"check_same_thread": False},
                               poolclass=StaticPool if memory else None)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    if url.get_backend_name() == "postgresql":
        return create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2,
                             connect_args={"connect_timeout": 5})
    raise StoreUnavailable(f"database_url {safe_url(database_url)}: unsupported database "
                           f"{url.get_backend_name()!r}; use sqlite or postgresql")
