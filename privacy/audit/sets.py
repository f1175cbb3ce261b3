"""Finding sets: the findings of one slot of a session's bodies, written once for the session.

An agent re-sends its system prompt (and every tool result so far) at every step, so each call carried the same
hundreds of finding rows again (~750 for a 20 KB system prompt: most of the audit writer's CPU per call). The
findings of a slot that a cached scrub result holds — its full location, type, layer, action, keyed hash, unit — are
a ``FindingSet`` instead, made once per scrub result and location; its id is the digest of its rows
(``chain.set_digest``), so it names the same rows wherever it is written, in any worker or replica, and the rows
carry the session, so a set is never another session's. The store writes a set's rows only when the database does
not hold them yet (``privacy_finding_set``) and each call its references (``privacy_call_set``); the call's chained
``findings_digest`` covers the sets' ids (``chain.findings_digest``), and ``verify`` checks each set's rows against
its id. ``all_findings`` is what every reader counts: a call's own rows and those of the sets it references, as the
rows it would have written itself.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Subquery, select, union_all

from accounting.durable import Serialised
from privacy.audit import chain
from privacy.audit.tables import PrivacyCallSet, PrivacyFinding, PrivacyFindingSet

SET_COLUMNS = ("session_id", "type", "layer", "action", "location", "value_hash", "unit_id", "field", "dimension")


class FindingSet(Serialised):
    """A slot's findings as stored (``SET_COLUMNS``), their digest (the set's id) and their JSON: every call record of
    the session carries the set (a crash's replay, or an erasure in between, may need its rows again), and the
    journal writes those bytes as they are (``accounting.durable.Serialised``) instead of encoding ~750 rows a call
    again. Read back from a journal or a spill file, a set is its rows (``rows_of``). Not a dataclass: orjson would
    write one field by field."""

    __slots__ = ("id", "rows")

    def __init__(self, id: str, rows: list[dict[str, Any]], json: bytes) -> None:  # noqa: A002 (the set's id)
        super().__init__(json)
        self.id = id
        self.rows = rows

    @classmethod
    def of(cls, rows: list[dict[str, Any]]) -> FindingSet:
        stored = [{name: row.get(name) for name in SET_COLUMNS} for row in rows]
        return cls(chain.set_digest(stored), stored, orjson.dumps(stored))

    def plain(self) -> list[dict[str, Any]]:
        return self.rows


def rows_of(carried: FindingSet | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A set's rows as a call record carries them: the set itself, or its rows read back."""
    return carried.rows if isinstance(carried, FindingSet) else carried


def all_findings() -> Subquery:
    """Every call's findings as ``privacy_finding``'s columns (its id aside): its own rows and its sets' rows. A
    database from before finding sets has the former alone."""
    own = PrivacyFinding.__table__  # type: ignore[attr-defined]
    sets, refs = PrivacyFindingSet.__table__, PrivacyCallSet.__table__  # type: ignore[attr-defined]
    columns = ("call_id", *SET_COLUMNS)
    return union_all(
        select(*(own.c[name] for name in columns)),
        select(refs.c.call_id, *(sets.c[name] for name in SET_COLUMNS))
        .select_from(refs.join(sets, sets.c.set_id == refs.c.set_id)),
    ).subquery("findings")
