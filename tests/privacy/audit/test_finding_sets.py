"""Finding sets on real SQLite and PostgreSQL: a session's repeated findings written once and referenced by each call
that sent them; every reader counts them as the call's own; tampering with a referenced set, its rows or a call's
references is named by the verifier; erasure and retention take the sets no remaining call references; a database
and a spill file from before sets still read and verify."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.engine import Engine

from privacy.audit import AuditStore, ChainSigner, FindingSet, all_findings, verify_trail
from tests.privacy.audit_engines import engine

__all__ = ["engine"]

SEED = bytes(range(32))
PROMPT = FindingSet.of([{"session_id": "s1", "type": "EMAIL_ADDRESS", "layer": "patterns", "action": "pseudonymise",
                         "location": "messages[0].content", "value_hash": f"h{i}"} for i in range(3)])
TOOL = FindingSet.of([{"session_id": "s1", "type": "PHONE_NUMBER", "layer": "patterns", "action": "pseudonymise",
                       "location": "messages[2].content", "value_hash": "p"}])
OTHER = FindingSet.of([{**row, "session_id": "s2"} for row in PROMPT.rows])  # the same prompt in another session


def _call(call_id: str, session: str, at: float, sets: list[FindingSet], own: int = 0) -> dict[str, Any]:
    return {"kind": "call", "call": {"id": call_id, "session_id": session, "request_id": f"r-{call_id}",
                                     "created_at": at, "body": '{"messages": []}',
                                     "findings": own + sum(len(s.rows) for s in sets)},
            "findings": [{"call_id": call_id, "session_id": session, "type": "API_KEY", "layer": "lastcheck",
                          "action": "pseudonymise", "location": "messages[1].content", "value_hash": "k"}] * own,
            "sets": [[s.id, s.rows] for s in sets]}


def _filled(engine: Engine) -> AuditStore:
    store = AuditStore(engine, signer=ChainSigner(SEED))
    store.apply(_call("c1", "s1", 1000.0, [PROMPT]))
    store.apply_many([_call("c2", "s1", 1001.0, [PROMPT, TOOL], own=1), _call("c3", "s2", 1002.0, [OTHER])])
    store.apply(_call("c4", "s1", 5000.0, [PROMPT, TOOL]))
    store.apply({"kind": "checkpoint"})
    return store


def _rows(engine: Engine, sql: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def _sql(engine: Engine, statement: str) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement))


def _breaks(engine: Engine) -> list[str]:
    return sorted(str(b) for b in verify_trail(engine, ChainSigner(SEED).public).breaks)


def test_each_set_is_written_once_and_each_call_reads_as_all_of_its_findings(engine: Engine) -> None:
    _filled(engine)
    assert _rows(engine, "SELECT set_id, COUNT(*) FROM privacy_finding_set GROUP BY set_id ORDER BY 2, 1") == sorted(
        [(TOOL.id, 1), (PROMPT.id, 3), (OTHER.id, 3)], key=lambda r: (r[1], r[0]))
    found = all_findings()
    with engine.connect() as conn:
        per_call = dict(conn.execute(select(found.c.call_id, text("COUNT(*)")).group_by(found.c.call_id)).all())
    assert per_call == {"c1": 3, "c2": 5, "c3": 3, "c4": 4}
    assert per_call == dict(_rows(engine, "SELECT id, findings FROM privacy_call"))
    assert verify_trail(engine, ChainSigner(SEED).public).intact


def test_a_referenced_set_altered_removed_or_unreferenced_is_named(engine: Engine) -> None:
    _filled(engine)
    _sql(engine, f"UPDATE privacy_finding_set SET type = 'NOTHING' WHERE set_id = '{TOOL.id}'")
    assert _breaks(engine) == [f"altered: seq {seq} (call {c}): the call record's rows differ from what was chained"
                               for seq, c in ((2, "c2"), (4, "c4"))]
    _sql(engine, f"DELETE FROM privacy_finding_set WHERE set_id = '{TOOL.id}'")  # its rows gone: the calls differ
    assert _breaks(engine) == [f"altered: seq {seq} (call {c}): the call record's rows differ from what was chained"
                               for seq, c in ((2, "c2"), (4, "c4"))]


def test_a_reference_removed_or_added_is_named(engine: Engine) -> None:
    _filled(engine)
    _sql(engine, "DELETE FROM privacy_call_set WHERE call_id = 'c4' AND position = 1")
    assert _breaks(engine) == ["altered: seq 4 (call c4): the call record's rows differ from what was chained"]
    _sql(engine, f"INSERT INTO privacy_call_set (call_id, position, set_id) VALUES ('c1', 1, '{TOOL.id}')")
    assert _breaks(engine) == [f"altered: seq {seq} (call {c}): the call record's rows differ from what was chained"
                               for seq, c in ((1, "c1"), (4, "c4"))]


def test_a_set_no_call_references_is_named(engine: Engine) -> None:
    _filled(engine)
    _sql(engine, "INSERT INTO privacy_finding_set (set_id, session_id, type, layer, action, location, value_hash) "
                 "VALUES ('planted', 's9', 'PERSON', 'ner', 'audit', 'messages[0].content', 'x')")
    assert _breaks(engine) == ["inserted: finding set planted: a finding set no call references"]


def test_erasing_a_session_takes_its_sets_and_retention_only_those_no_kept_call_references(engine: Engine) -> None:
    store = _filled(engine)
    assert store.erase(reason="retention", before=1001.5) == 2  # c1, c2: their sets are c4's too
    assert {r[0] for r in _rows(engine, "SELECT set_id FROM privacy_finding_set")} == {PROMPT.id, TOOL.id, OTHER.id}
    assert _rows(engine, "SELECT call_id FROM privacy_finding") == []  # c2's own row
    assert store.erase(reason="retention", before=1002.5) == 1  # c3: the last of s2's calls
    assert {r[0] for r in _rows(engine, "SELECT set_id FROM privacy_finding_set")} == {PROMPT.id, TOOL.id}
    assert store.erase(reason="session", session_id="s1") == 1  # c4
    assert _rows(engine, "SELECT COUNT(*) FROM privacy_finding_set") == [(0,)]
    assert _rows(engine, "SELECT COUNT(*) FROM privacy_call_set") == [(0,)]
    report = verify_trail(engine, ChainSigner(SEED).public)
    assert report.intact and report.erased == 4, report.breaks
    store.apply(_call("c5", "s1", 6000.0, [PROMPT]))  # the session goes on: its set is written again
    assert _rows(engine, "SELECT COUNT(*) FROM privacy_finding_set") == [(3,)]
    assert verify_trail(engine, ChainSigner(SEED).public).intact


def test_a_call_record_from_before_sets_is_written_and_verified_as_before(engine: Engine) -> None:
    """A spill file or journal from an earlier version holds call records without ``sets``."""
    store = AuditStore(engine, signer=ChainSigner(SEED))
    old = _call("c1", "s1", 1000.0, [], own=2)
    del old["sets"]
    store.apply(old)
    store.apply({"kind": "tool_restore", "findings": [  # findings written after their call: chained again
        {"call_id": "c1", "session_id": "s1", "type": "API_KEY", "layer": "restore", "action": "restored_into_tool",
         "location": "tool_calls[run].arguments", "value_hash": "k"}]})
    store.apply(_call("c2", "s1", 1001.0, [PROMPT]))
    store.apply({"kind": "tool_restore", "findings": [
        {"call_id": "c2", "session_id": "s1", "type": "API_KEY", "layer": "restore", "action": "restored_into_tool",
         "location": "tool_calls[run].arguments", "value_hash": "k"}]})
    assert _rows(engine, "SELECT COUNT(*) FROM privacy_finding_set") == [(3,)]
    assert verify_trail(engine, ChainSigner(SEED).public).intact
    _sql(engine, f"UPDATE privacy_finding_set SET value_hash = 'other' WHERE set_id = '{PROMPT.id}'")
    assert _breaks(engine) == ["altered: seq 4 (call c2): the call record's rows differ from what was chained"]


def test_a_call_record_carrying_its_sets_journals_and_spills_as_their_rows(engine: Engine, tmp_path: Path) -> None:
    """In the process a record carries the set itself (its JSON made once); the journal and the spill file hold its
    rows, and a record read back from either is written and verified like the one handed over."""
    import logging

    import orjson

    from accounting.durable import Journal, SpillFile

    record = _call("c1", "s1", 1000.0, [])
    record["sets"] = [[PROMPT.id, PROMPT], [TOOL.id, TOOL]]
    plain = {**record, "sets": [[PROMPT.id, PROMPT.rows], [TOOL.id, TOOL.rows]]}
    journal = Journal(tmp_path / "audit.journal", log=logging.getLogger("test"))
    journal.append([record])
    assert [orjson.loads(line) for line in journal.path.read_bytes().splitlines()] == [plain]
    journal.close()
    spill = SpillFile(tmp_path / "audit.spill")
    assert spill.append([record]) == 1
    claim = spill.claim()
    assert claim is not None and claim.records == [plain]
    store = AuditStore(engine, signer=ChainSigner(SEED))
    store.apply(claim.records[0])
    store.apply({**record, "call": {**record["call"], "id": "c2"}})
    assert _rows(engine, "SELECT COUNT(*) FROM privacy_finding_set") == [(4,)]
    assert _rows(engine, "SELECT COUNT(*) FROM privacy_call_set") == [(4,)]
    assert verify_trail(engine, ChainSigner(SEED).public).intact
