"""The audit at rest: locations without raw object keys, the hash key outside the database, and rows that survive
a database outage (retried, then spilled at shutdown and written at the next start)."""

from __future__ import annotations

import json
import sqlite3
import time

from sqlmodel import Session, select

from accounting.database import make_engine
from privacy.audit import AuditStore, AuditWriter, PrivacyCall, PrivacyFinding, all_findings
from tests.privacy.helpers import protector, units_document

EMAIL_KEY, API_KEY = "alice.private@example.com", "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


async def test_locations_never_hold_raw_object_keys(tmp_path):
    url = f"sqlite:///{tmp_path / 'audit.sqlite3'}"
    p = protector(url, layers={"ner": False})
    await p.register_units("s", units_document())
    arguments = json.dumps({EMAIL_KEY: "call 415-555-0132", "contacts": {API_KEY: "Maria Gonzalez"}})
    body = {"messages": [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "save", "arguments": arguments}}]}],
        # a vendor's JSON document in a string: an object key there is data the last check replaces (a key of the
        # body's own objects is its structure: an e-mail there keeps the step home, privacy.structure)
        "vendor_extra": json.dumps({EMAIL_KEY: "Maria Gonzalez"})}
    await p.protect(body, session_id="s", request_id="r1")
    p.flush()
    with p._audit.store.engine.connect() as conn:
        findings = conn.execute(select(all_findings())).all()  # a call's own rows and its finding sets'
    locations = [f.location for f in findings]
    assert len(findings) >= 3 and any(loc.startswith("messages[0].tool_calls[0].arguments.#") for loc in locations)
    for location in locations:
        assert "alice" not in location and "example" not in location and "sk-live" not in location, location
    await p.aclose()


async def test_the_hash_key_is_not_in_the_database(tmp_path):
    path = tmp_path / "audit.sqlite3"
    old = sqlite3.connect(path)  # a database from a version that kept the key beside the hashes
    old.execute("CREATE TABLE privacy_key (id INTEGER PRIMARY KEY, key TEXT)")
    old.execute("INSERT INTO privacy_key VALUES (1, 'the-old-key')")
    old.commit()
    old.close()
    p = protector(f"sqlite:///{path}", layers={"ner": False})
    await p.register_units("s", units_document())
    p.flush()
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "privacy_unit" in tables and "privacy_key" not in tables
    await p.aclose()


def _call(n: int) -> dict:
    call = PrivacyCall(id=f"call-{n}", session_id="s", request_id=f"r{n}", created_at=float(n), body="{}")
    finding = PrivacyFinding(call_id=call.id, session_id="s", type="PHONE", layer="units", action="pseudonymise",
                             location="messages[0].content", value_hash="h" * 32)
    return {"kind": "call", "call": call.model_dump(), "findings": [finding.model_dump()]}


def _stored(url: str) -> list[str]:
    with Session(make_engine(url)) as db:
        return sorted(c.id for c in db.exec(select(PrivacyCall)).all())


def test_rows_wait_out_an_outage_then_are_written(tmp_path):
    folder = tmp_path / "not-yet"  # the database cannot be opened until this folder exists: an outage
    url = f"sqlite:///{folder / 'audit.sqlite3'}"
    writer = AuditWriter(AuditStore(make_engine(url)), retry_initial_s=0.01, retry_max_s=0.05)
    for n in range(3):
        writer.submit(lambda n=n: _call(n))
    writer.flush()
    assert writer.pending == 3  # kept, not dropped after a few quick retries
    folder.mkdir()
    for _ in range(500):  # the writer retries on its own; wait for it (no timing is asserted)
        if writer.pending == 0:
            break
        time.sleep(0.01)
    assert _stored(url) == ["call-0", "call-1", "call-2"]
    writer.close()


def test_rows_unwritten_at_shutdown_are_spilled_and_written_at_the_next_start(tmp_path):
    folder = tmp_path / "down"
    url = f"sqlite:///{folder / 'audit.sqlite3'}"
    spill = tmp_path / "audit-spill.jsonl"
    writer = AuditWriter(AuditStore(make_engine(url)), spill_path=spill, retry_initial_s=0.01, retry_max_s=0.02,
                         shutdown_timeout_s=0.05)
    for n in range(2):
        writer.submit(lambda n=n: _call(n))
    writer.close()
    assert spill.stat().st_mode & 0o777 == 0o600 and len(spill.read_text().splitlines()) == 2
    folder.mkdir()  # the database is back for the next start
    again = AuditWriter(AuditStore(make_engine(url)), spill_path=spill)
    again.start()
    again.flush()
    assert _stored(url) == ["call-0", "call-1"] and not spill.exists()
    again.close()


def test_a_long_outage_moves_records_to_the_spill_file_not_memory_and_back_in_order(tmp_path):
    folder = tmp_path / "down"
    url = f"sqlite:///{folder / 'audit.sqlite3'}"
    spill = tmp_path / "audit-spill.jsonl"
    writer = AuditWriter(AuditStore(make_engine(url)), spill_path=spill, retry_initial_s=0.01, retry_max_s=0.02,
                         shutdown_timeout_s=0.05, max_pending=3)
    for n in range(5):
        writer.submit(lambda n=n: _call(n))
    writer.flush()
    assert writer.pending < 5 and len(spill.read_text().splitlines()) >= 4
    folder.mkdir()  # back while still running: the spilled records go first, then the rest, in order
    writer.submit(lambda: _call(5))
    for _ in range(500):
        if writer.pending == 0:
            break
        time.sleep(0.01)
    assert _stored(url) == [f"call-{n}" for n in range(6)] and not spill.exists()
    writer.close()


async def test_a_spill_file_holds_nothing_raw(tmp_path):
    import os

    from gateway.state.sessions import MemorySessionStore
    from privacy.factory import build_privacy_protector
    from privacy.settings import PrivacySettings
    from tests.privacy.helpers import UNITS

    spill = tmp_path / "audit-spill.jsonl"
    settings = PrivacySettings(layers={"ner": False}, audit_spill_path=str(spill), audit_shutdown_timeout_s=0.05,
                               audit_retry_max_s=0.05)
    p = build_privacy_protector(settings, database_url=f"sqlite:///{tmp_path / 'down' / 'a.sqlite3'}",
                                sessions=MemorySessionStore(), hash_key=os.urandom(32), seal_key=os.urandom(32))
    await p.register_units("s", units_document())
    arguments = json.dumps({EMAIL_KEY: "Maria Gonzalez"})
    body = {"messages": [{"role": "user", "content": "415-555-0132, Maria Gonzalez, unlisted Ms Jane Roe"},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]}
    await p.protect(body, session_id="s", request_id="r")
    await p.aclose()  # the database never came up: everything is spilled
    data = spill.read_bytes()
    assert data.count(b"\n") >= 2
    raw = [f["value"] for item in UNITS["items"] for f in item["sensitive_fields"]] + [EMAIL_KEY, "Jane Roe"]
    for value in raw:
        assert value.encode() not in data and json.dumps(value).strip('"').encode() not in data, value


def test_a_receipt_is_journaled_with_its_calls_record_by_durable_while_the_writer_is_busy(tmp_path):
    import threading

    from privacy.audit import ChainSigner, ReceiptIssuer

    store = AuditStore(make_engine(f"sqlite:///{tmp_path / 'audit.sqlite3'}"), signer=ChainSigner(bytes(range(32))))
    writer = AuditWriter(store, spill_path=tmp_path / "audit-spill.jsonl")
    inside, busy = threading.Event(), threading.Event()
    writer.read(lambda: (inside.set(), busy.wait()))  # the writer thread is busy (a slow transaction): it builds
    inside.wait()  # and journals nothing now
    writer.submit(lambda: _call(1))
    assert store.anchor is not None
    issuer = ReceiptIssuer(store.anchor, writer)
    issuer.issue(call_id="call-1", request_id="r1", session_id="s", target="primary", body=b"{}", placeholders={},
                 raw_units=[], verdict="clean")
    journal = writer.journal
    assert journal is not None
    assert not journal.path.exists() or not journal.path.read_text()  # signing waits for no write
    issuer.durable()  # what the gateway awaits (in a thread) before the headers with the receipt leave
    lines = [json.loads(line) for line in journal.path.read_text().splitlines()]
    assert [(r["kind"], r.get("call", {}).get("id") or r.get("row", {}).get("call_id")) for r in lines] == [
        ("call", "call-1"), ("receipt", "call-1")]
    busy.set()
    writer.close()
    assert _stored(f"sqlite:///{tmp_path / 'audit.sqlite3'}") == ["call-1"] and not journal.path.exists()
