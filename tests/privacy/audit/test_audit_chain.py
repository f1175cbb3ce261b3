"""The tamper-evident trail on real SQLite and real PostgreSQL: every record chained, checkpoints signed, and each
kind of tampering (altered, removed, inserted, reordered; a forged or removed checkpoint) named by the verifier
and by ``ecgw audit verify`` (exit 1)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from accounting.database import make_engine
from privacy.audit import AuditStore, ChainSigner, verify_trail
from tests.privacy.audit_engines import engine

__all__ = ["engine"]  # the fixture: every test here runs on real SQLite and real PostgreSQL

SEED = bytes(range(32))


def _call(call_id: str, at: float, findings: int = 2) -> dict[str, Any]:
    return {"kind": "call", "call": {"id": call_id, "session_id": "s1", "request_id": f"r-{call_id}",
                                     "created_at": at, "body": '{"messages": []}', "findings": findings},
            "findings": [{"call_id": call_id, "session_id": "s1", "type": "EMAIL_ADDRESS", "layer": "patterns",
                          "action": "pseudonymise", "location": f"messages[{i}].content", "value_hash": f"h{i}"}
                         for i in range(findings)]}


def _fill(store: AuditStore) -> None:
    store.apply({"kind": "units", "session_id": "s1", "units": [
        {"session_id": "s1", "unit_id": "u1", "entity_id": "e1", "field": "phone", "dimension": None,
         "weight": 1.0, "value_hash": "x1"}]})
    store.apply(_call("c1", 1000.0))
    store.apply({"kind": "usage", "call_id": "c1", "usage": {"prompt_tokens": 10, "completion_tokens": 3}})
    store.apply({"kind": "egress", "rows": [{"call_id": "c1", "session_id": "s1", "unit_id": "u1",
                                             "created_at": 1000.5}]})
    store.apply({"kind": "checkpoint"})
    store.apply(_call("c2", 1001.0))
    store.apply(_call("c3", 1002.0))
    store.apply({"kind": "checkpoint"})


def _breaks(engine: Engine) -> list[str]:
    return [str(b) for b in verify_trail(engine, ChainSigner(SEED).public).breaks]


def _sql(engine: Engine, statement: str) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement))


@pytest.fixture
def filled(engine: Engine) -> Engine:
    store = AuditStore(engine, signer=ChainSigner(SEED))
    _fill(store)
    return engine


def test_an_untouched_trail_verifies_with_every_record_chained_and_two_checkpoints(filled: Engine) -> None:
    report = verify_trail(filled, ChainSigner(SEED).public)
    assert report.intact, report.breaks
    assert report.entries == 6 and report.checkpoints == 2  # units, call, usage, egress, call, call
    assert len(report.checkpoint_hashes) == 2


def test_an_altered_finding_is_named_by_its_call(filled: Engine) -> None:
    _sql(filled, "UPDATE privacy_finding SET type = 'NOTHING' WHERE call_id = 'c2'")
    assert _breaks(filled) == ["altered: seq 5 (call c2): the call record's rows differ from what was chained"]


def test_altered_token_counts_and_units_are_named(filled: Engine) -> None:
    _sql(filled, "UPDATE privacy_call SET prompt_tokens = 1 WHERE id = 'c1'")
    _sql(filled, "UPDATE privacy_unit SET weight = 0 WHERE unit_id = 'u1'")
    assert sorted(_breaks(filled)) == [
        "altered: seq 1 (units s1): the units record's rows differ from what was chained",
        "altered: seq 3 (usage c1): the usage record's rows differ from what was chained"]


def test_a_deleted_call_is_named_removed(filled: Engine) -> None:
    _sql(filled, "DELETE FROM privacy_finding WHERE call_id = 'c3'")
    _sql(filled, "DELETE FROM privacy_call WHERE id = 'c3'")
    assert _breaks(filled) == ["removed: seq 6 (call c3): the call record's rows are gone"]


def test_a_deleted_record_and_its_chain_entry_break_the_link_after_it(filled: Engine) -> None:
    _sql(filled, "DELETE FROM privacy_finding WHERE call_id = 'c2'")
    _sql(filled, "DELETE FROM privacy_call WHERE id = 'c2'")
    _sql(filled, "DELETE FROM privacy_chain WHERE seq = 5")
    assert _breaks(filled) == ["removed: seq 6 (call c3): seq 5..5 are missing"]


def test_the_last_records_removed_with_their_entries_are_caught_by_the_checkpoint(filled: Engine) -> None:
    _sql(filled, "DELETE FROM privacy_finding WHERE call_id IN ('c2', 'c3')")
    _sql(filled, "DELETE FROM privacy_call WHERE id IN ('c2', 'c3')")
    _sql(filled, "DELETE FROM privacy_chain WHERE seq >= 5")
    assert _breaks(filled) == ["removed: checkpoint 2 (head seq 6): the signed head, seq 6, is not in the chain"]


def test_an_inserted_call_and_an_inserted_finding_are_named(filled: Engine) -> None:
    _sql(filled, "INSERT INTO privacy_call (id, session_id, request_id, created_at, body, findings) "
                 "VALUES ('forged', 's1', 'r-x', 1003.0, '{}', 0)")
    _sql(filled, "INSERT INTO privacy_finding (call_id, session_id, type, layer, action, location, value_hash) "
                 "VALUES ('c1', 's1', 'PERSON', 'ner', 'audit', 'messages[9].content', 'hx')")
    assert sorted(_breaks(filled)) == [
        "altered: seq 2 (call c1): the call record's rows differ from what was chained",
        "inserted: call forged: a cloud call that is not in the chain"]


def test_reordered_chain_entries_are_named_reordered(filled: Engine) -> None:
    _sql(filled, "UPDATE privacy_chain SET seq = -1 WHERE seq = 5")
    _sql(filled, "UPDATE privacy_chain SET seq = 5 WHERE seq = 6")
    _sql(filled, "UPDATE privacy_chain SET seq = 6 WHERE seq = -1")
    found = _breaks(filled)
    assert "reordered: seq 5 (call c3): it follows seq 6 in the chain, not seq 4" in found
    assert any(b.startswith("reordered: seq 6 (call c2)") for b in found)


def test_a_rewritten_chain_fails_its_signed_checkpoint_and_a_forged_signature_fails(filled: Engine) -> None:
    """Whoever holds the database rewrites a record and recomputes every hash after it: the checkpoint signed the
    old head. Signing again needs the private key: a checkpoint signed by another key is named."""
    from privacy.audit import chain

    _sql(filled, "UPDATE privacy_finding SET type = 'NOTHING' WHERE call_id = 'c2'")
    with filled.begin() as conn:
        rows = [dict(r._mapping) for r in conn.execute(text("SELECT * FROM privacy_chain ORDER BY seq"))]
        findings = [dict(r._mapping) for r in conn.execute(
            text("SELECT * FROM privacy_finding WHERE call_id = 'c2' ORDER BY id"))]
        conn.execute(text("UPDATE privacy_call SET findings_digest = :d WHERE id = 'c2'"),
                     {"d": chain.rows_digest(findings)})
        call = dict(conn.execute(text("SELECT * FROM privacy_call WHERE id = 'c2'")).one()._mapping)
        prev = rows[3]["hash"]
        for row in rows[4:]:
            digest = chain.erasable_call_digest(call) if row["ref"] == "c2" else row["digest"]
            new = chain.entry_hash(row["seq"], row["kind"], row["ref"], digest, row["created_at"], prev)
            conn.execute(text("UPDATE privacy_chain SET digest = :d, prev = :p, hash = :h WHERE seq = :s"),
                         {"d": digest, "p": prev, "h": new, "s": row["seq"]})
            prev = new
    assert _breaks(filled) == ["altered: checkpoint 2 (head seq 6): the chain up to the signed head was rewritten"]
    forger = ChainSigner(secrets.token_bytes(32))
    with filled.begin() as conn:
        conn.execute(text("DELETE FROM privacy_checkpoint WHERE seq = 2"))
        chain.write_checkpoint(conn, forger, 2000.0)
    assert _breaks(filled) == [f"checkpoint: checkpoint 2 (head seq 6): signed by key {forger.key_id}, "
                               f"not {ChainSigner(SEED).key_id}"]
    _sql(filled, f"UPDATE privacy_checkpoint SET key_id = '{ChainSigner(SEED).key_id}' WHERE seq = 2")
    assert _breaks(filled) == ["checkpoint: checkpoint 2 (head seq 6): the signature does not verify (forged or "
                               "altered)"]


def test_a_removed_checkpoint_is_named(filled: Engine) -> None:
    _sql(filled, "DELETE FROM privacy_checkpoint WHERE seq = 1")
    assert _breaks(filled) == ["checkpoint: checkpoint 2 (head seq 6): it does not follow checkpoint 0 (one was "
                               "removed, inserted or reordered)"]


def test_a_checkpoint_is_not_repeated_for_a_head_already_signed(engine: Engine) -> None:
    store = AuditStore(engine, signer=ChainSigner(SEED))
    store.apply({"kind": "checkpoint"})  # an empty chain: nothing to sign
    store.apply(_call("c1", 1000.0))
    store.apply({"kind": "checkpoint"})
    store.apply({"kind": "checkpoint"})
    assert verify_trail(engine, ChainSigner(SEED).public).checkpoints == 1


def _ecgw(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The real command line, in this process (a subprocess per call costs ~15 s of imports on a loaded box)."""
    from gateway.cli.main import main

    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def test_ecgw_audit_verify_and_public_key_on_a_gateway_configuration(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI finds the same key the gateway signs with (derived from the secrets key beside the database),
    prints it as PEM, and exits 1 naming the break once a row is altered."""
    from gateway.state.keys import Keys

    master = secrets.token_bytes(32)
    (tmp_path / "ecgw.key").write_text(master.hex() + "\n")
    (tmp_path / "ecgw.key").chmod(0o600)
    database = tmp_path / "audit.sqlite3"
    config = tmp_path / "config.yaml"
    config.write_text(f"database_url: sqlite:///{database}\nsecrets:\n  key_file: {tmp_path / 'ecgw.key'}\n")
    engine = make_engine(f"sqlite:///{database}")
    _fill(AuditStore(engine, signer=ChainSigner(Keys(master, "test").derive("audit-sign"))))

    code, pem = _ecgw(capsys, "audit", "public-key", "--config", str(config))
    assert code == 0, pem
    assert pem.startswith("-----BEGIN PUBLIC KEY-----")
    code, ok = _ecgw(capsys, "audit", "verify", "--config", str(config))
    assert code == 0, ok
    assert "intact: 6 records, 2 signed checkpoints" in ok

    _sql(engine, "UPDATE privacy_call SET body = '{\"messages\": [\"raw\"]}' WHERE id = 'c3'")
    code, broken = _ecgw(capsys, "audit", "verify", "--config", str(config))
    assert code == 1
    assert "BROKEN altered: seq 6 (call c3)" in broken
    code, since = _ecgw(capsys, "audit", "verify", "--config", str(config), "--since", "1003")
    assert code == 0, since  # the altered call is older than --since; the links still hold

    (tmp_path / "other.pem").write_text(ChainSigner(secrets.token_bytes(32)).public_pem())
    code, other = _ecgw(capsys, "audit", "verify", "--config", str(config), "--public-key",
                        str(tmp_path / "other.pem"))
    assert code == 1 and "signed by key" in other


def test_inbound_findings_are_chained_and_their_tampering_named(engine: Engine) -> None:
    from privacy.audit import inbound_record

    store = AuditStore(engine, signer=ChainSigner(SEED))
    store.apply(_call("c1", 1000.0))
    record = inbound_record(call_id="c1", session_id="s1", request_id="r-c1", owner="", action="audit",
                            created_at=1000.5, found=[("US_SSN", "patterns", "choices[0].content")] * 2)
    assert record is not None
    store.apply(record)
    store.apply(record)  # a retried record is written once
    assert verify_trail(engine, ChainSigner(SEED).public).intact
    _sql(engine, "UPDATE privacy_inbound SET type = 'NOTHING' WHERE id = 1")
    _sql(engine, "INSERT INTO privacy_inbound (call_id, session_id, request_id, owner, type, layer, location, "
                 "action, created_at) VALUES ('c9', 's1', 'r', '', 'X', 'patterns', 'choices[0].content', 'audit', 1)")
    assert sorted(_breaks(engine)) == [
        "altered: seq 2 (inbound c1): the inbound record's rows differ from what was chained",
        "inserted: inbound findings of call c9: inbound rows that are not in the chain"]
