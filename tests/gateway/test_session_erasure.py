"""``DELETE /v1/sessions/{id}`` and ``privacy.retention_days`` over real HTTP: the session's vault and units go,
its audited bodies and findings become tombstones, another tenant reaches only its own session, the receipts
still verify and so does the chain; a gateway started with a retention tombstones what is older at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from sqlalchemy import text

from accounting.database import make_engine
from privacy.audit import AuditStore, ChainSigner, verify_trail
from privacy.audit.chain import ERASED_BODY
from privacy.vault import VAULT_KEY
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply
from tests.gateway.test_egress_receipts import _chat, _claims, _gateway
from tests.privacy.helpers import UNITS

ALICE = {"Authorization": "Bearer sk-alice"}


def test_an_owner_erases_a_session_and_the_trail_still_verifies(start_gateway: Callable[..., RunningGateway],
                                                               cloud: ModelServer, tmp_path: Path) -> None:
    gw, keys = _gateway(start_gateway, tmp_path, privacy={"layers": {"ner": False}})
    assert httpx.put(f"{gw.url}/v1/sessions/s1/units", json=UNITS, headers=ALICE).status_code == 200
    cloud.script(Reply("ok"))
    answer = _chat(gw, "sk-alice", "Mail Maria.Gonzalez@acme-mail.com about it.")
    receipt = answer.headers["x-ecgw-egress-receipt"]
    gw.services.protector.flush()  # type: ignore[attr-defined]
    engine = make_engine(f"sqlite:///{tmp_path / 'gw.sqlite3'}")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM privacy_finding_set")).scalar_one() > 0
    assert _vault(gw, "t.alice/s1") is not None  # the vault holds the address

    other = httpx.delete(f"{gw.url}/v1/sessions/s1", headers={"Authorization": "Bearer sk-bob"})
    assert other.status_code == 200 and other.json()["calls_erased"] == 0  # bob's own (empty) s1
    erased = httpx.delete(f"{gw.url}/v1/sessions/s1", headers=ALICE)
    assert erased.status_code == 200, erased.text
    assert erased.json() == {"session_id": "s1", "erased": True, "calls_erased": 1}
    assert _vault(gw, "t.alice/s1") is None

    with engine.connect() as conn:
        assert conn.execute(text("SELECT body FROM privacy_call")).scalar_one() == ERASED_BODY
        for table in ("privacy_finding_set", "privacy_call_set"):  # the message's findings were a finding set
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0, table
        assert conn.execute(text("SELECT count(*) FROM privacy_finding")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM privacy_unit WHERE session_id = 't.alice/s1'")).scalar_one() == 0
    report = verify_trail(engine, ChainSigner(keys.derive("audit-sign")).public)
    assert report.intact and (report.erased, report.receipts) == (1, 1), report.breaks
    assert _claims(receipt, keys)["rid"] == answer.headers["x-ecgw-request-id"]  # the client's proof still holds


def _vault(gw: RunningGateway, session: str) -> object:
    """The session's vault as the gateway's store holds it (a memory store: read from this thread)."""
    return asyncio.run(gw.services.sessions.get(session, VAULT_KEY))


def test_a_gateway_started_with_a_retention_tombstones_older_calls(start_gateway: Callable[..., RunningGateway],
                                                                  tmp_path: Path) -> None:
    from gateway.state.keys import Keys

    master = bytes(range(32))
    (tmp_path / "ecgw.key").write_text(master.hex() + "\n")
    (tmp_path / "ecgw.key").chmod(0o600)
    engine = make_engine(f"sqlite:///{tmp_path / 'gw.sqlite3'}")
    store = AuditStore(engine, signer=ChainSigner(Keys(master, "test").derive("audit-sign")))
    for call_id, age_days in (("old", 10), ("new", 1)):
        store.apply({"kind": "call", "findings": [], "call": {
            "id": call_id, "session_id": "t.alice/s", "request_id": f"r-{call_id}",
            "created_at": time.time() - age_days * 86400, "body": "{}", "findings": 0}})
    gw = start_gateway(database_url=f"sqlite:///{tmp_path / 'gw.sqlite3'}",
                       secrets={"key_file": str(tmp_path / "ecgw.key")}, privacy={"retention_days": 7})
    gw.services.protector.flush()  # type: ignore[attr-defined]
    with engine.connect() as conn:
        assert [tuple(r) for r in conn.execute(text("SELECT id, erased_by IS NOT NULL FROM privacy_call "
                                                    "ORDER BY id"))] == [("new", False), ("old", True)]
    assert verify_trail(engine, store.signer.public).intact  # type: ignore[union-attr]
