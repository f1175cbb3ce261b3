"""What start-up built is out of the cyclic collector's sight (``gateway.app.freeze_startup_heap``): a full
collection on the event loop would walk it all again and again."""

from __future__ import annotations

import gc


def test_the_heap_built_at_start_up_is_frozen(gateway):
    assert gc.get_freeze_count() > 10_000  # the gateway's parts, its libraries included
