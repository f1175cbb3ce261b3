"""A bare key turned into a named one: its history (session state, metering and audit rows) moves from the owner
it had (a keyed hash of the key) to its tenant, and a rotated key of that tenant carries on with it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from gateway.app import create_app
from gateway.config.settings import Settings
from gateway.state.keys import load_keys
from gateway.state.owner_migration import migrate_owners, move_sessions
from gateway.state.redis_sessions import RedisSessionStore
from gateway.state.sealing import SealedStore
from gateway.state.stores import session_store_kind
from gateway.state.tenancy import bare_owner
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.replicas import fresh_redis

EMAIL = "alice@example.com"


def _settings(tmp: Path, edge: ModelServer, cloud: ModelServer, keys: list[Any]) -> Settings:
    return settings_for(edge.url, cloud.url,  # type: ignore[attr-defined]
                        server={"api_keys": keys},
                        sessions={"store": "sqlite", "sqlite_path": str(tmp / "sessions.sqlite3")},
                        database_url=f"sqlite:///{tmp / 'gw.sqlite3'}",
                        secrets={"key_file": str(tmp / "ecgw.key")},
                        privacy={"layers": {"ner": False}, "audit_spill_path": None},
                        accounting={"spill_path": None})


def _chat(url: str, key: str, *, model: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": f"Write to {EMAIL}"}]}
    if model:
        body["model"] = model
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {key}", "X-Session-Id": "run-1"})


def _serve(settings: Settings) -> ThreadedServer:
    return ThreadedServer(create_app(settings, services=guarded_services(settings))).start()


def _session_ids(tmp: Path) -> set[str]:
    engine = create_engine(f"sqlite:///{tmp / 'gw.sqlite3'}")
    try:
        with engine.connect() as db:
            tables = [r[0] for r in db.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))]
            found: set[str] = set()
            for table in tables:
                columns = [r[1] for r in db.execute(text(f"PRAGMA table_info({table})"))]
                if "session_id" in columns:
                    found |= {r[0] for r in db.execute(text(f"SELECT session_id FROM {table}"))}  # noqa: S608
            return found
    finally:
        engine.dispose()


def test_a_bare_keys_history_moves_to_its_tenant_and_a_rotated_key_continues_it(tmp_path, edge, cloud):
    before = _settings(tmp_path, edge, cloud, ["sk-old"])
    server = _serve(before)
    try:
        cloud.script(Reply(content="sent"))
        assert _chat(server.url, "sk-old", model="ecgw/cloud-only").status_code == 200  # sticky: cloud-only
    finally:
        server.stop()
    keys = load_keys(before, persistent_sessions=True)
    old = bare_owner(keys.derive("owner"), "sk-old")
    assert {s.split("/")[0] for s in _session_ids(tmp_path)} == {old}  # metering and audit rows

    after = _settings(tmp_path, edge, cloud, [{"name": "old", "key": "sk-old", "tenant": "acme"},
                                              {"name": "new", "key": "sk-new", "tenant": "acme"}])
    moved = migrate_owners(after, keys, store_kind=session_store_kind(after))
    assert moved.rows >= 2 and moved.sessions == 1 and moved.kept == 0
    assert {s.split("/")[0] for s in _session_ids(tmp_path)} == {"t.acme"}
    assert migrate_owners(after, keys, store_kind="sqlite").rows == 0  # once only

    rotated = _settings(tmp_path, edge, cloud, [{"name": "new", "key": "sk-new", "tenant": "acme"}])
    server = _serve(rotated)
    try:
        cloud.script(Reply(content="again"))
        answer = _chat(server.url, "sk-new")  # the session's sticky choice and vault opened under the tenant
        assert answer.status_code == 200 and answer.headers["x-ecgw-policy"] == "cloud-only", answer.text
        assert EMAIL not in str(cloud.requests[-1])
        usage = httpx.get(server.url + "/v1/usage?by=session", headers={"Authorization": "Bearer sk-new"}).json()
        assert "run-1" in str(usage)
    finally:
        server.stop()


def test_sessions_in_redis_move_resealed(tmp_path):
    url = fresh_redis()
    store = RedisSessionStore(url, pool_size=2)
    sealed = SealedStore(store, b"k" * 32)

    async def run() -> tuple[Any, Any, list[str]]:
        try:
            await sealed.set("o.abc/run-1", "vault", {"EMAIL_1": EMAIL})
            await sealed.set("o.abc/run-1", "policy", "cloud-only")
            await sealed.set("t.acme/run-1", "policy", "edge-only")  # the tenant's own value wins
            await sealed.set("o.other/run-1", "policy", "sketch")
            assert await move_sessions(store, sealed, {"o.abc": "t.acme"}) == 1
            return (await sealed.get("t.acme/run-1", "vault"), await sealed.get("t.acme/run-1", "policy"),
                    sorted(await store.sessions_under("")))
        finally:
            await store.aclose()

    vault, policy, left = asyncio.run(run())
    assert vault == {"EMAIL_1": EMAIL} and policy == "edge-only" and left == ["o.other/run-1", "t.acme/run-1"]
