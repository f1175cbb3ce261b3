"""Shared test bed: fake upstreams and the gateway, all real HTTP servers on loopback."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from accounting.calls import MemoryMeter
from gateway.app import create_app
from gateway.cli.offline import prepare_offline_environment
from gateway.config.settings import Settings, load_settings
from gateway.service import Services
from privacy import Protector
from tests.door import GuardedCloud, guarded_cloud, guarded_services, guarded_targets
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

prepare_offline_environment()
# `ecgw serve` subprocesses (which inherit this environment) load the detectors' models on first use, as the
# in-process gateways share theirs: a warm-up at every start would cost seconds of CPU per server started.
# tests/privacy/detect/test_warm_start.py checks the warm-up itself.
os.environ.setdefault("ECGW_PRIVACY__WARM_AT_START", "false")

CLOUD_MODEL = "openai/gpt-test"


@pytest.fixture(scope="session")
def _edge_server() -> Iterator[tuple[ModelServer, ThreadedServer]]:
    fake = ModelServer("edge", model="edge-model")
    with ThreadedServer(fake.app) as server:
        yield fake, server


@pytest.fixture(scope="session")
def _cloud_server() -> Iterator[tuple[ModelServer, ThreadedServer]]:
    fake = ModelServer("cloud", model="gpt-test")
    with ThreadedServer(fake.app) as server:
        yield fake, server


@pytest.fixture()
def edge(_edge_server: tuple[ModelServer, ThreadedServer]) -> ModelServer:
    fake, server = _edge_server
    fake.reset()
    fake.url = server.url  # type: ignore[attr-defined]
    return fake


@pytest.fixture()
def cloud(_cloud_server: tuple[ModelServer, ThreadedServer]) -> ModelServer:
    fake, server = _cloud_server
    fake.reset()
    fake.url = server.url  # type: ignore[attr-defined]
    return fake


@dataclass
class RunningGateway:
    url: str
    settings: Settings
    services: Services
    meter: MemoryMeter
    guard: GuardedCloud

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


def settings_for(edge_url: str, cloud_url: str, **overrides: Any) -> Settings:
    sections: dict[str, Any] = {
        "edge": {"base_url": edge_url + "/v1", "model": "edge-model", "read_timeout_s": 5},
        "cloud": {"model": CLOUD_MODEL, "api_base": cloud_url + "/v1", "api_key_env": None, "timeout_s": 5},
        "database_url": "sqlite://",
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(sections.get(key), dict):
            sections[key] = {**sections[key], **value}
        else:
            sections[key] = value
    return load_settings(None, **sections)


def launch_gateway(edge_url: str, cloud_url: str, *, protector: Protector | None = None,
                   **overrides: Any) -> tuple[RunningGateway, ThreadedServer]:
    """A gateway in this process on loopback, its cloud door guarded; the caller stops the server."""
    settings = settings_for(edge_url, cloud_url, **overrides)
    meter = MemoryMeter()
    if settings.cloud.targets:  # every target wears a guard of its own
        guards: list[GuardedCloud] = []
        services = guarded_services(settings, protector=protector, meter=meter,
                                    cloud_transport=guarded_targets(guards))
        guard = guards[0]
    else:
        guard = guarded_cloud(settings)
        services = guarded_services(settings, protector=protector, meter=meter, cloud=guard)
    server = ThreadedServer(create_app(settings, services=services)).start()
    return RunningGateway(url=server.url, settings=settings, services=services, meter=meter, guard=guard), server


@pytest.fixture(scope="module")
def module_gateway(_edge_server: tuple[ModelServer, ThreadedServer],
                   _cloud_server: tuple[ModelServer, ThreadedServer]) -> Iterator[Callable[..., RunningGateway]]:
    """``start_gateway`` for a whole module: one gateway shared by its tests (use the ``cloud`` fixture beside it,
    which resets the recording double before each test)."""
    started: list[ThreadedServer] = []

    def start(*, protector: Protector | None = None, **overrides: Any) -> RunningGateway:
        gw, server = launch_gateway(_edge_server[1].url, _cloud_server[1].url, protector=protector, **overrides)
        started.append(server)
        return gw

    yield start
    for server in started:
        server.stop()


@pytest.fixture()
def start_gateway(edge: ModelServer, cloud: ModelServer) -> Iterator[Callable[..., RunningGateway]]:
    started: list[ThreadedServer] = []

    def start(*, protector: Protector | None = None, **overrides: Any) -> RunningGateway:
        gw, server = launch_gateway(edge.url, cloud.url, protector=protector, **overrides)  # type: ignore[attr-defined]
        started.append(server)
        return gw

    yield start
    for server in started:
        server.stop()


@pytest.fixture()
def gateway(start_gateway: Callable[..., RunningGateway]) -> RunningGateway:
    return start_gateway()
