"""Is a client's usage complete? Request settlement across every worker, without sleeping.

Each worker buffers usage records and writes them in batches, so a usage read that one worker answers cannot see
what another still holds. Instead of a barrier between workers, every request ends with a *mark*: when a chat
request has finished (its stream too), the worker that served it queues ``(request_id, session_id, upstream
calls it caused)`` behind that request's own records (``StoreMeter.settle``). A request is **settled** when its
mark is in the store and as many usage records carry its id — whichever worker served it, and however many
internal calls (probes, plans, advice, delegation) it made.

Clients learn request ids from the ``x-ecgw-request-id`` header every response carries (errors too), and ask
``POST /v1/usage/requests`` with ``{"request_ids": [...]}``: the answer says which are still pending and, in the
same read, the usage of exactly those requests (``accounting.reports.derive`` of the store's SQL sums), so a
figure is only trusted once ``settled`` is true. ``eval`` polls it with a bounded wait.
"""

from __future__ import annotations

from typing import Any

from accounting.reports import derive
from accounting.store import UsageStore

MAX_REQUEST_IDS = 2000  # per question; an agent run makes tens of requests


def settlement_report(store: UsageStore, request_ids: list[str], *, session_prefix: str | None = None,
                      session_id: str | None = None) -> dict[str, Any]:
    """``session_prefix``: the caller's own sessions (``gateway.state.tenancy``), ``session_id``: its one session (a key
    bound to it); another owner's or session's request is unknown."""
    state = store.settlement(request_ids, session_prefix=session_prefix, session_id=session_id)
    pending = [{"request_id": rid, "expected_calls": expected, "recorded_calls": recorded}
               for rid, (expected, recorded) in state.items() if expected is None or expected != recorded]
    usage = derive(store.totals(list(state), session_prefix=session_prefix, session_id=session_id)) if state else None
    return {"object": "usage.requests", "requests": len(state), "settled": not pending, "pending": pending,
            "usage": usage}
