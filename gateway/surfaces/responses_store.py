"""Responses the gateway stored (``store``, on by default), so that ``previous_response_id`` can continue them.

Each response is one record in the session store, under a session of its own (``ecgw-response:<id>``) and the key
``STORED_RESPONSE_KEY``, so it expires with the store's TTL like any session state, and a follow-up that names it
finds it whichever session header it carries. A record holds the request's input items and the response's output
items (raw client data, like the vault: encrypted when the store seals this key), the id it continued, the
session it ran in, and its owner (the keyed hash ``Tenancy`` gives the API key that created it): another key
gets a 404, as for an unknown id. Chains are walked back at read time, so a long conversation is not copied into
every record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.http.errors import ClientError
from privacy.session_store import SessionStore

STORED_RESPONSE_KEY = "stored_response"
MAX_CHAIN = 10_000  # responses walked back from one previous_response_id (a cycle cannot be built, but be safe)


def _session(response_id: str) -> str:
    return f"ecgw-response:{response_id}"


@dataclass
class History:
    items: list[dict[str, Any]]
    session_id: str | None


class ResponseStore:
    def __init__(self, store: SessionStore) -> None:
        self._store = store

    async def save(self, response_id: str, *, owner: str, session_id: str, previous: str | None,
                   input_items: list[dict[str, Any]], output: list[dict[str, Any]]) -> None:
        record = {"owner": owner, "session": session_id, "previous": previous, "input": input_items,
                  "output": output}
        await self._store.set(_session(response_id), STORED_RESPONSE_KEY, record)

    async def history(self, response_id: str, *, owner: str, session: str | None = None) -> History:
        """Every item of the chain ending at ``response_id``, oldest first; 404 when it is unknown, expired,
        another key's, or (``session``: a key bound to that one session) of another session."""
        chain: list[dict[str, Any]] = []
        current: str | None = response_id
        while current is not None and len(chain) < MAX_CHAIN:
            record = await self._store.get(_session(current), STORED_RESPONSE_KEY)
            if not isinstance(record, dict) or record.get("owner") != owner or (
                    session is not None and record.get("session") != session):
                raise ClientError(404, f"Previous response {current!r} is not stored here (unknown, expired, or "
                                       "created with store: false or another key). Send the whole conversation "
                                       "in 'input' instead.", param="previous_response_id",
                                  code="previous_response_not_found")
            chain.append(record)
            current = record.get("previous")
        items: list[dict[str, Any]] = []
        for record in reversed(chain):
            items.extend(record.get("input") or ())
            items.extend(record.get("output") or ())
        return History(items, chain[0].get("session") if chain else None)
