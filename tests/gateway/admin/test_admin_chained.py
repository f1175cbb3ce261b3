"""Admin actions are records of the audit's trail: each one chained in its own transaction, so a rewritten,
deleted or slipped-in admin action is named by ``verify_trail`` (real SQLite and PostgreSQL)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from gateway.admin.database import AdminDatabase
from privacy.audit import AuditStore, ChainSigner, verify_trail
from tests.privacy.audit_engines import engine

__all__ = ["engine"]

SEED = bytes(range(32))


def _breaks(engine: Engine) -> list[str]:
    return [str(b) for b in verify_trail(engine, ChainSigner(SEED).public).breaks]


def test_admin_actions_are_chained_and_tampering_with_them_is_named(engine: Engine) -> None:
    db = AdminDatabase(engine)
    db.open()
    db.record(who="root", action="keys.create", target="vk_1", status=201)
    db.record(who="root", action="config.reload", target=None, status=200)
    AuditStore(engine, signer=ChainSigner(SEED)).apply({"kind": "checkpoint"})
    report = verify_trail(engine, ChainSigner(SEED).public)
    assert report.intact and report.entries == 2, report.breaks

    with engine.begin() as conn:
        conn.execute(text("UPDATE ecgw_admin_actions SET who = 'someone-else' WHERE action = 'keys.create'"))
    assert _breaks(engine) == ["altered: seq 1 (admin 1): the admin record's rows differ from what was chained"]
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM ecgw_admin_actions WHERE action = 'keys.create'"))
        conn.execute(text("INSERT INTO ecgw_admin_actions (at, who, action, status) "
                          "VALUES (1.0, 'root', 'keys.revoke', 200)"))
    assert sorted(_breaks(engine)) == ["inserted: admin action 3: an admin action that is not in the chain",
                                       "removed: seq 1 (admin 1): the admin record's rows are gone"]
