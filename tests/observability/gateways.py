"""A gateway for the observability tests: like conftest's, but with what these tests inject (a tracer, a real
metering store on SQLite, the privacy audit in the same file) — every part real except the cloud provider."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from accounting.calls import Meter
from gateway.app import create_app
from gateway.service import Services
from gateway.telemetry.tracing import Tracing
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer


@contextmanager
def running_gateway(edge: ModelServer, cloud: ModelServer, *, meter: Meter | None = None,
                    tracing: Tracing | None = None, **overrides: Any) -> Iterator[tuple[str, Services]]:
    settings = settings_for(edge.url, cloud.url, **overrides)  # type: ignore[attr-defined]
    services = guarded_services(settings, meter=meter, tracing=tracing)
    server = ThreadedServer(create_app(settings, services=services)).start()
    try:
        yield server.url, services
    finally:
        server.stop()
