"""What start-up built is out of the cyclic collector's sight (``gateway.app.freeze_startup_heap``): a full
collection on the event loop would walk it all again and again."""

from __future__ import annotations

import gc

from gateway.app import YOUNG_COLLECTION


def test_the_heap_built_at_start_up_is_frozen(gateway):
    assert gc.get_freeze_count() > 10_000  # the gateway's parts, its libraries included


def test_the_youngest_generation_is_collected_less_often_than_every_700_allocations(gateway):
    assert gc.get_threshold()[0] == YOUNG_COLLECTION > 700  # what a request queues is not walked every few requests


def test_a_stopped_app_puts_the_collectors_thresholds_back(edge, cloud):
    """The thresholds are the process's: a gateway embedded in another program (a test's) leaves none behind."""
    from tests.conftest import launch_gateway

    saved = gc.get_threshold()
    gc.set_threshold(700, *saved[1:])  # CPython's default, whatever gateways earlier tests started
    try:
        _, server = launch_gateway(edge.url, cloud.url)
        assert gc.get_threshold()[0] == YOUNG_COLLECTION
        server.stop()
        assert gc.get_threshold() == (700, *saved[1:])
    finally:
        gc.set_threshold(*saved)
