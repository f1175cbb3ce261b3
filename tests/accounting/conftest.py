"""Fixtures for the metering tests: real SQLite files and a real PostgreSQL (scripts/postgres.sh)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from accounting.factory import build_meter
from accounting.writer import StoreMeter
from gateway.app import create_app
from gateway.config.settings import Settings
from gateway.service import Services
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer
from tests.real_parts import postgres_url as real_postgres_url


@pytest.fixture()
def postgres_url() -> Iterator[str]:
    """A fresh, empty database on the test server, dropped afterwards."""
    server = real_postgres_url()
    name = "ecgw_test_" + uuid.uuid4().hex[:12]
    admin = make_url(server).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield make_url(server).set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'usage.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@dataclass
class MeteredGateway:
    url: str
    settings: Settings
    services: Services
    meter: StoreMeter

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


@pytest.fixture()
def start_metered_gateway(edge: ModelServer, cloud: ModelServer,
                          tmp_path: Path) -> Iterator[Callable[..., MeteredGateway]]:
    """Like ``start_gateway``, but with the real ``StoreMeter`` (SQLite file unless ``database_url`` is given)."""
    started: list[ThreadedServer] = []

    def start(**overrides: Any) -> MeteredGateway:
        overrides.setdefault("database_url", f"sqlite:///{tmp_path / 'gateway.sqlite3'}")
        accounting = {"spill_path": str(tmp_path / "spill.jsonl"), **overrides.pop("accounting", {})}
        settings = settings_for(edge.url, cloud.url, accounting=accounting, **overrides)  # type: ignore[attr-defined]
        meter = build_meter(settings.accounting, database_url=settings.database_url)
        assert isinstance(meter, StoreMeter)
        services = guarded_services(settings, meter=meter)
        server = ThreadedServer(create_app(settings, services=services)).start()
        started.append(server)
        return MeteredGateway(url=server.url, settings=settings, services=services, meter=meter)

    yield start
    for server in started:
        server.stop()
