"""Fixed, UTC-aligned windows: a window's start and end for a moment in time.

``1h`` and ``1d`` start on the hour and at midnight UTC; ``30d`` on 30-day periods counted from the Unix epoch
(also midnight UTC); ``session`` never resets (its counter belongs to one session); the rate limits' minute
starts on the minute.
"""

from __future__ import annotations

import math

SECONDS = {"1m": 60, "1h": 3600, "1d": 86400, "30d": 30 * 86400}


def window_start(window: str, now: float) -> int:
    """The start of the window that holds ``now`` (unix seconds); 0 for ``session``."""
    size = SECONDS.get(window)
    if size is None:
        return 0
    return int(now // size) * size


def window_end(window: str, now: float) -> int | None:
    """When the window that holds ``now`` ends (its counter resets); None for ``session``."""
    size = SECONDS.get(window)
    if size is None:
        return None
    return window_start(window, now) + size


def seconds_left(window: str, now: float) -> int:
    """Whole seconds until the window resets (at least 1), for ``Retry-After``."""
    end = window_end(window, now)
    return 0 if end is None else max(1, math.ceil(end - now))
