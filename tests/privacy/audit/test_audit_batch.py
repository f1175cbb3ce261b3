"""Audit records that queue up while the writer thread is busy go in one transaction, on real SQLite and real
PostgreSQL: the chain they make verifies as if each had its own, a checkpoint among them signs the records before
it, a retried batch writes each record once, and a batch that fails leaves nothing behind."""

from __future__ import annotations

import functools
import threading
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from privacy.audit import AuditStore, AuditWriter, ChainSigner, verify_trail
from privacy.audit.receipts import sign
from tests.privacy.audit_engines import engine

__all__ = ["engine"]

SEED = bytes(range(32))


class CountingStore(AuditStore):
    """An audit store that remembers how many records each transaction wrote."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, signer=ChainSigner(SEED))
        self.batches: list[int] = []

    def apply_many(self, records: list[dict[str, Any]]) -> None:
        super().apply_many(records)
        self.batches.append(len(records))


def _records(signer: ChainSigner) -> list[dict[str, Any]]:
    """A step's records: units, a call, its receipt, egress verdicts and usage; a checkpoint; another call."""
    receipt = {"id": "rc1", "call_id": "c1", "request_id": "r1", "session_id": "s1", "created_at": 1000.2,
               "target": "primary", "token": sign({"rid": "r1", "call": "c1"}, signer)}
    return [
        {"kind": "units", "session_id": "s1", "units": [
            {"session_id": "s1", "unit_id": "u1", "entity_id": "e1", "field": "phone", "dimension": None,
             "weight": 1.0, "value_hash": "x1"}]},
        _call("c1", 1000.0),
        {"kind": "receipt", "row": receipt},
        {"kind": "egress", "rows": [{"call_id": "c1", "session_id": "s1", "unit_id": "u1", "created_at": 1000.5}]},
        {"kind": "usage", "call_id": "c1", "usage": {"prompt_tokens": 10, "completion_tokens": 3}},
        {"kind": "checkpoint"},
        _call("c2", 1001.0),
    ]


def _call(call_id: str, at: float) -> dict[str, Any]:
    return {"kind": "call", "call": {"id": call_id, "session_id": "s1", "request_id": f"r-{call_id}",
                                     "created_at": at, "body": '{"messages": []}', "findings": 1},
            "findings": [{"call_id": call_id, "session_id": "s1", "type": "EMAIL_ADDRESS", "layer": "patterns",
                          "action": "pseudonymise", "location": "messages[0].content", "value_hash": "h"}]}


def _count(engine: Engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one())


def test_records_queued_while_the_writer_is_busy_go_in_one_transaction_and_verify(engine: Engine) -> None:
    store = CountingStore(engine)
    writer = AuditWriter(store)
    busy = threading.Event()
    writer.read(busy.wait)  # the writer thread is busy: what is submitted now queues up behind it
    for record in _records(ChainSigner(SEED)):
        writer.submit(functools.partial(dict, record))
    busy.set()
    writer.flush()
    writer.close()
    assert store.batches == [7]
    report = verify_trail(engine, ChainSigner(SEED).public)
    assert report.intact, report.breaks
    assert (report.entries, report.checkpoints, report.receipts) == (6, 1, 1)  # units, call, receipt, egress, usage, call
    with engine.connect() as conn:  # the checkpoint signed the head as it was when its turn came: the 5th entry
        assert conn.execute(text("SELECT head_seq FROM privacy_checkpoint")).scalar_one() == 5
    assert store.anchor is not None and store.anchor.checkpoint == report.checkpoint_hashes[-1]


def test_a_retried_batch_writes_each_record_once(engine: Engine) -> None:
    store = AuditStore(engine, signer=ChainSigner(SEED))
    records = [r for r in _records(ChainSigner(SEED)) if r["kind"] not in ("units", "usage", "checkpoint")]
    store.apply_many(records)
    store.apply_many(records)  # the database took it, but the answer was lost: the writer tries again
    report = verify_trail(engine, ChainSigner(SEED).public)
    assert report.intact, report.breaks
    assert report.entries == 4
    assert (_count(engine, "privacy_call"), _count(engine, "privacy_receipt"), _count(engine, "privacy_egress")) == (
        2, 1, 1)


def test_a_batch_that_fails_leaves_none_of_its_records(engine: Engine) -> None:
    store = AuditStore(engine, signer=ChainSigner(SEED))
    store.apply(_call("c0", 999.0))
    with pytest.raises(ValueError, match="unknown audit record kind"):
        store.apply_many([*_records(ChainSigner(SEED)), {"kind": "nonsense"}])
    assert (_count(engine, "privacy_call"), _count(engine, "privacy_chain"), _count(engine, "privacy_checkpoint")) == (
        1, 1, 0)
    assert store.anchor is not None and store.anchor.checkpoint == "0" * 64  # no checkpoint named that was not kept


def test_a_calls_findings_digest_is_rows_digest_with_its_rows_remembered_across_calls() -> None:
    """The store digests a call's findings from JSON made once per repeated row (``FindingsCodec``): byte for byte
    ``chain.rows_digest`` at every call, with other call ids, values JSON escapes, and values that are no strings
    (never remembered: ``1`` and ``True`` are equal keys, not equal JSON); the driver's parameters in column order."""
    import random

    from privacy.audit import chain, finding_row
    from privacy.audit.store import _FINDING_COLUMNS, FindingsCodec

    rng = random.Random(3)
    texts = ["PERSON", "messages[0].content", 'a "quoted" \\ path', "名前", "\u2028", "x\ud800y", "", "0"]
    odd: list[Any] = [None, 1, True, 1.0, "1"]
    codec = FindingsCodec(entries=50)
    pool = [finding_row(call_id="", session_id=rng.choice(texts), type=rng.choice(texts), layer="patterns",
                        action=rng.choice(texts), location=rng.choice(texts), value_hash=rng.choice(texts),
                        unit_id=rng.choice(odd + texts), field=rng.choice(odd), dimension=rng.choice(odd))
            for _ in range(40)]
    pool += [{**pool[0], "field": equal} for equal in (1, True, 1.0)]  # equal keys, three JSON texts
    for call in range(30):
        call_id: Any = rng.choice([f"call-{call}", "c\"é", 7, None])
        rows = [{**rng.choice(pool), "call_id": call_id} for _ in range(rng.randint(0, 60))]
        digest, params = codec.encode(rows)
        assert digest == chain.rows_digest(rows)
        assert params == [tuple(row[c] for c in _FINDING_COLUMNS) for row in rows]


def test_a_call_with_hundreds_of_findings_keeps_their_order_and_verifies(engine: Engine) -> None:
    """A call's findings go in many rows a statement (SQLite) or one executemany: stored in the order given (the
    digest the chain covers is over that order), every one of them, and the trail verifies."""
    record = _call("c-many", 1000.0)
    record["findings"] = [{**record["findings"][0], "value_hash": f"h{i}", "location": f"messages[{i % 7}].content"}
                          for i in range(150)]
    AuditStore(engine, signer=ChainSigner(SEED)).apply(record)
    report = verify_trail(engine, ChainSigner(SEED).public)
    assert report.intact, report.breaks
    with engine.connect() as conn:
        stored = [row[0] for row in conn.execute(text("SELECT value_hash FROM privacy_finding ORDER BY id"))]
    assert stored == [f"h{i}" for i in range(150)]
