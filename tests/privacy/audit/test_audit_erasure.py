"""Erasure and retention on real SQLite and PostgreSQL: a session's (or an old call's) sealed body and findings
become a tombstone, the chain still verifies and says how many calls were erased, and a tombstone no erasure made —
or an erasure's list of calls rewritten — is named."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from privacy.audit import AuditStore, ChainSigner, verify_trail
from privacy.audit.chain import ERASED_BODY
from tests.privacy.audit_engines import engine

__all__ = ["engine"]

SEED = bytes(range(32))


def _call(call_id: str, session: str, at: float) -> dict[str, Any]:
    return {"kind": "call", "call": {"id": call_id, "session_id": session, "request_id": f"r-{call_id}",
                                     "created_at": at, "body": '{"messages": ["sealed"]}', "findings": 1},
            "findings": [{"call_id": call_id, "session_id": session, "type": "EMAIL_ADDRESS", "layer": "patterns",
                          "action": "pseudonymise", "location": "messages[0].content", "value_hash": "h"}]}


def _filled(engine: Engine) -> AuditStore:
    store = AuditStore(engine, signer=ChainSigner(SEED))
    store.apply({"kind": "units", "session_id": "s1", "units": [
        {"session_id": "s1", "unit_id": "u1", "entity_id": "e1", "field": "phone", "dimension": None,
         "weight": 1.0, "value_hash": "x1"}]})
    store.apply(_call("c1", "s1", 1000.0))
    store.apply({"kind": "usage", "call_id": "c1", "usage": {"prompt_tokens": 10, "completion_tokens": 3}})
    store.apply({"kind": "tool_restore", "findings": [  # findings written after their call: chained again
        {"call_id": "c1", "session_id": "s1", "type": "API_KEY", "layer": "restore", "action": "restored_into_tool",
         "location": "tool_calls[run].arguments", "value_hash": "k"}]})
    store.apply({"kind": "egress", "rows": [{"call_id": "c1", "session_id": "s1", "unit_id": "u1",
                                             "created_at": 1000.5}]})
    store.apply(_call("c2", "s2", 5000.0))
    store.apply({"kind": "checkpoint"})
    return store


def _rows(engine: Engine, sql: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def test_erasing_a_session_tombstones_its_content_and_the_chain_still_verifies(engine: Engine) -> None:
    store = _filled(engine)
    public = ChainSigner(SEED).public
    assert verify_trail(engine, public).intact
    assert store.erase(reason="session", session_id="s1") == 1
    store.apply({"kind": "checkpoint"})
    report = verify_trail(engine, public)
    assert report.intact, report.breaks
    assert (report.erased, report.erasures) == (1, 1)
    assert _rows(engine, "SELECT id, body FROM privacy_call ORDER BY id") == [
        ("c1", ERASED_BODY), ("c2", '{"messages": ["sealed"]}')]
    assert _rows(engine, "SELECT call_id FROM privacy_finding") == [("c2",)]
    assert _rows(engine, "SELECT unit_id FROM privacy_unit") == []
    assert _rows(engine, "SELECT prompt_tokens FROM privacy_call WHERE id = 'c1'") == [(10,)]  # counts stay

    erasure = _rows(engine, "SELECT id FROM privacy_erasure")[0][0]
    with engine.begin() as conn:  # the holder of the database tombstones another call under that erasure
        conn.execute(text(f"UPDATE privacy_call SET body = '{ERASED_BODY}', erased_by = '{erasure}' WHERE id = 'c2'"))
        conn.execute(text("DELETE FROM privacy_finding WHERE call_id = 'c2'"))
    assert [str(b) for b in verify_trail(engine, public).breaks] == [
        f"altered: erasure {erasure} (session): the calls it tombstoned are not the ones it recorded"]
    with engine.begin() as conn:
        conn.execute(text("UPDATE privacy_call SET erased_by = 'made-up' WHERE id = 'c2'"))
    assert [str(b) for b in verify_trail(engine, public).breaks] == [
        "altered: calls c2: tombstoned by erasure made-up, which does not exist"]


def test_retention_tombstones_calls_older_than_its_cutoff_only(engine: Engine) -> None:
    store = _filled(engine)
    store.apply({"kind": "retention", "before": 3000.0})
    store.apply({"kind": "retention", "before": 3000.0})  # nothing older is left: no second erasure
    report = verify_trail(engine, ChainSigner(SEED).public)
    assert report.intact, report.breaks
    assert (report.erased, report.erasures) == (1, 1)
    assert _rows(engine, "SELECT reason, session_id, calls FROM privacy_erasure") == [("retention", None, 1)]
    assert _rows(engine, "SELECT id FROM privacy_call WHERE erased_by IS NOT NULL") == [("c1",)]
    assert _rows(engine, "SELECT unit_id FROM privacy_unit") == [("u1",)]  # units are not findings: kept


def test_a_body_altered_under_its_digest_is_named(engine: Engine) -> None:
    _filled(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE privacy_call SET body = '{\"messages\": [\"other\"]}' WHERE id = 'c2'"))
    assert [str(b) for b in verify_trail(engine, ChainSigner(SEED).public).breaks] == [
        "altered: seq 6 (call c2): the call record's rows differ from what was chained"]
