"""Three stub edge replicas on loopback (real HTTP, OpenAI's wire format, a real prefix memory each)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.egress.pools.rendezvous import rank
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

NAMES = ("a", "b", "c")


@pytest.fixture(scope="session")
def _replicas() -> Iterator[dict[str, tuple[ModelServer, ThreadedServer]]]:
    servers: dict[str, tuple[ModelServer, ThreadedServer]] = {}
    try:
        for name in NAMES:
            fake = ModelServer(f"edge-{name}", model="edge-model")
            servers[name] = (fake, ThreadedServer(fake.app).start())
        yield servers
    finally:
        for _, server in servers.values():
            server.stop()


@pytest.fixture()
def replicas(_replicas: dict[str, tuple[ModelServer, ThreadedServer]]) -> dict[str, ModelServer]:
    out = {}
    for name, (fake, server) in _replicas.items():
        fake.reset()
        fake.url = server.url  # type: ignore[attr-defined]
        out[name] = fake
    return out


def deployment(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "base_url": url + "/v1", "model": "edge-model", **extra}


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def session_on(name: str, members: list[tuple[str, float]], *, prefix: str = "s") -> str:
    """A session id whose owner-less affinity ranks ``name`` first among ``members``."""
    for n in range(10_000):
        candidate = f"{prefix}-{n}"
        if members[rank(candidate, members)[0]][0] == name:
            return candidate
    raise AssertionError(f"no session maps to {name}")
